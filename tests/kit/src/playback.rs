//! Which scripted response answers a request: consumption in order, `match`
//! routing, and the exhaustion message. Kept apart from the HTTP server so
//! the routing rules are plain, testable logic.

use crate::script::{Script, ScriptedResponse};

/// The script being played, with what has been consumed.
#[derive(Debug)]
pub(crate) struct Playback {
    responses: Vec<ScriptedResponse>,
    consumed: Vec<bool>,
    served: usize,
}

impl Playback {
    pub(crate) fn new(script: Script) -> Playback {
        let consumed = vec![false; script.responses.len()];
        Playback {
            responses: script.responses,
            consumed,
            served: 0,
        }
    }

    /// Consumes and returns the response for a request whose last user text
    /// is `last_user`: the first unconsumed response whose `match` it
    /// contains, else the first unconsumed one without `match`. When there is
    /// none, the error says why.
    pub(crate) fn next(
        &mut self,
        last_user: Option<&str>,
    ) -> Result<(usize, ScriptedResponse), String> {
        let open = |index: &usize| !self.consumed[*index];
        let matched = (0..self.responses.len()).filter(open).find(|&index| {
            match (&self.responses[index].match_text, last_user) {
                (Some(wanted), Some(text)) => text.contains(wanted.as_str()),
                _ => false,
            }
        });
        let chosen = matched.or_else(|| {
            (0..self.responses.len())
                .filter(open)
                .find(|&index| self.responses[index].match_text.is_none())
        });
        match chosen {
            Some(index) => {
                self.consumed[index] = true;
                self.served += 1;
                Ok((index, self.responses[index].clone()))
            }
            None => Err(self.exhausted(last_user)),
        }
    }

    fn exhausted(&self, last_user: Option<&str>) -> String {
        let mut message = format!(
            "scripted model: script exhausted after {} responses",
            self.served
        );
        let waiting: Vec<&str> = self
            .responses
            .iter()
            .zip(&self.consumed)
            .filter(|(_, consumed)| !**consumed)
            .filter_map(|(response, _)| response.match_text.as_deref())
            .collect();
        if !waiting.is_empty() {
            message.push_str(&format!(
                " (unconsumed responses wait for a last user message containing {waiting:?}; \
                 this request's was {last_user:?})"
            ));
        }
        message
    }

    /// Responses not consumed yet.
    pub(crate) fn remaining(&self) -> usize {
        self.consumed.iter().filter(|consumed| !**consumed).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn playback(toml: &str) -> Playback {
        Playback::new(Script::from_toml_str(toml).expect("valid script"))
    }

    #[test]
    fn in_order_then_exhausted() {
        let mut playback = playback("[[response]]\ntext='a'\n[[response]]\ntext='b'");
        assert_eq!(playback.next(None).map(|(i, _)| i), Ok(0));
        assert_eq!(playback.remaining(), 1);
        assert_eq!(playback.next(Some("x")).map(|(i, _)| i), Ok(1));
        assert_eq!(
            playback.next(None).map(|(i, _)| i),
            Err("scripted model: script exhausted after 2 responses".into())
        );
    }

    #[test]
    fn match_routes_and_others_take_the_rest() {
        let mut playback = playback(
            "[[response]]\nmatch='alpha'\ntext='a1'\n\
             [[response]]\ntext='plain'\n\
             [[response]]\nmatch='beta'\ntext='b1'\n\
             [[response]]\nmatch='alpha'\ntext='a2'",
        );
        let mut pick = |text: &str| playback.next(Some(text)).map(|(i, _)| i);
        assert_eq!(pick("about beta"), Ok(2));
        assert_eq!(pick("about alpha"), Ok(0));
        assert_eq!(pick("alpha again"), Ok(3));
        assert_eq!(pick("gamma"), Ok(1));
        let error = pick("alpha").expect_err("exhausted");
        assert!(error.contains("after 4 responses"), "{error}");
    }

    #[test]
    fn exhaustion_names_waiting_matches() {
        let mut playback = playback("[[response]]\nmatch='alpha'\ntext='a'");
        let error = playback.next(Some("beta")).expect_err("no match");
        assert!(error.contains("after 0 responses"), "{error}");
        assert!(
            error.contains("[\"alpha\"]") && error.contains("\"beta\""),
            "{error}"
        );
        assert_eq!(playback.remaining(), 1);
    }
}
