//! Approval requests as the terminal front ends show and answer them: what
//! the call would do (the command, or the diff of an edit), the answer
//! keys (`y` once, `a` always, `s` always and save, `n` no — `n: why` tells
//! the model why), and the rejection `run` sends, since nobody can answer
//! there.

use super::attached::Attached;
use agentbus_engine::protocol::{
    AgentMessage, ApprovalChoice, ApprovalDecision, ApprovalRequestEvent, ApprovalResolved,
    EventEnvelope,
};

/// The approval request a chat's next line answers, followed from the
/// session's events: a request of one of the chat's own inputs opens it,
/// its `approval_resolved` (whoever answered) or the chat's answer closes it.
#[derive(Debug, Default)]
pub struct Asking(Option<ApprovalRequestEvent>);

impl Asking {
    /// Follow `event` (`ours`: it belongs to an input of this chat);
    /// returns a request that now waits for this chat's answer.
    pub fn observe<'e>(
        &mut self,
        event: &'e EventEnvelope,
        ours: bool,
    ) -> Option<&'e ApprovalRequestEvent> {
        match &event.message {
            AgentMessage::ApprovalRequest(request) if ours => {
                self.0 = Some(request.clone());
                Some(request)
            }
            AgentMessage::System(s) => {
                if let Some(resolved) = s.payload::<ApprovalResolved>()
                    && self
                        .0
                        .as_ref()
                        .is_some_and(|open| open.request_id == resolved.request_id)
                {
                    self.0 = None;
                }
                None
            }
            _ => None,
        }
    }

    /// Whether the next line is an answer.
    pub fn is_open(&self) -> bool {
        self.0.is_some()
    }

    /// Answer with a typed line; `Err` is what to tell the user (not an
    /// answer, or the session refused it). Sent, the request is closed here
    /// (its `approval_resolved` follows).
    pub async fn answer(&mut self, attached: &Attached, line: &str) -> Result<(), String> {
        let Some(request_id) = self.0.as_ref().map(|r| r.request_id.clone()) else {
            return Err("no approval request is waiting".into());
        };
        let decision = parse_answer(line)?;
        attached
            .decide(&request_id, decision)
            .await
            .map_err(|e| format!("{e:#}"))?;
        self.0 = None;
        Ok(())
    }

    /// Reject the waiting request, if any, because nobody can answer it any
    /// more (`nobody` says why): see [`reject_unattended`].
    pub async fn reject_unattended(&mut self, attached: &Attached, nobody: Unattended) {
        if let Some(request) = self.0.take() {
            reject_unattended(attached, &request, nobody).await;
        }
    }
}

/// Why nobody can answer an approval request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unattended {
    /// `agentbus run` asks nobody.
    Run,
    /// A piped chat whose input has ended (end of file, or `/quit`).
    InputEnded,
}

/// What the call would do, a few lines: the command, the edit as a diff,
/// the file a write creates, or the arguments.
pub fn describe(request: &ApprovalRequestEvent) -> Vec<String> {
    let text = |key: &str| request.input.get(key).and_then(|v| v.as_str());
    let path = text("path").unwrap_or("?");
    match request.name.as_str() {
        "bash" => {
            let mut lines: Vec<String> = text("command")
                .unwrap_or_default()
                .lines()
                .map(|l| format!("  $ {l}"))
                .collect();
            if let Some(why) = text("justification") {
                lines.push(format!("  (outside the sandbox: {why})"));
            }
            lines
        }
        "edit_file" => {
            let (old, new) = (
                text("old_string").unwrap_or(""),
                text("new_string").unwrap_or(""),
            );
            let mut lines = vec![format!("  {path}")];
            let diff = similar::TextDiff::from_lines(old, new);
            for change in diff.iter_all_changes() {
                let sign = match change.tag() {
                    similar::ChangeTag::Delete => '-',
                    similar::ChangeTag::Insert => '+',
                    similar::ChangeTag::Equal => ' ',
                };
                lines.push(format!("  {sign}{}", change.value().trim_end_matches('\n')));
            }
            lines
        }
        "write_file" => {
            let content = text("content").unwrap_or("");
            let mut lines = vec![format!(
                "  {path} ({})",
                agentbus_engine::text::count(content.lines().count() as u64, "line")
            )];
            lines.extend(content.lines().take(8).map(|l| format!("  +{l}")));
            if content.lines().count() > 8 {
                lines.push("  …".into());
            }
            lines
        }
        _ => vec![format!("  {}", request.input)],
    }
}

/// The answer keys this request takes.
pub fn keys(request: &ApprovalRequestEvent) -> String {
    let mut keys = vec!["y once".to_string()];
    if request.options.contains(&ApprovalChoice::AllowAlways) {
        let rule = request.suggested_rule.as_deref().unwrap_or(&request.name);
        keys.push(format!("a always `{rule}`"));
        keys.push("s always + save to .agentbus.toml".into());
    }
    keys.push("n no (n: why, for the model)".into());
    format!("Allow? {}", keys.join(" · "))
}

/// An answer typed as a line: `y`, `a`, `s`, `n`, `n: message` (also
/// `yes`, `always`, `no`, `no, message`).
pub fn parse_answer(line: &str) -> Result<ApprovalDecision, String> {
    let line = line.trim();
    let (word, rest) = match line.find([' ', ':', ',']) {
        Some(i) => (
            &line[..i],
            line[i + 1..].trim_start_matches([':', ',', ' ']),
        ),
        None => (line, ""),
    };
    let choice = match word.to_ascii_lowercase().as_str() {
        "y" | "yes" => ApprovalDecision::new(ApprovalChoice::AllowOnce),
        "a" | "always" => ApprovalDecision::new(ApprovalChoice::AllowAlways),
        "s" | "save" => ApprovalDecision {
            decision: ApprovalChoice::AllowAlways,
            message: None,
            save: true,
            by: None,
        },
        "n" | "no" => ApprovalDecision {
            decision: ApprovalChoice::Reject,
            message: (!rest.trim().is_empty()).then(|| rest.trim().to_string()),
            save: false,
            by: None,
        },
        _ => {
            return Err(format!(
                "`{line}` is not an answer: type y (once), a (always), s (always, saved) or n (no; `n: why` tells the model why)"
            ));
        }
    };
    if !rest.is_empty() && choice.decision != ApprovalChoice::Reject {
        return Err(format!(
            "`{line}`: only a rejection takes a message (`n: why`)"
        ));
    }
    Ok(choice)
}

/// Reject `request` because nobody can answer it (`nobody` says why);
/// returns what was said, which the model reads too. Another client may
/// have answered first: that is fine.
pub async fn reject_unattended(
    attached: &Attached,
    request: &ApprovalRequestEvent,
    nobody: Unattended,
) -> String {
    let why = unattended_rejection(request, nobody);
    let _ = attached
        .decide(&request.request_id, ApprovalDecision::reject(why.clone()))
        .await;
    why
}

/// Why a call was rejected where nobody can answer (`agentbus run`, a piped
/// chat whose input has ended), and what would allow it: for the model (it
/// reads it) and the user (it is printed).
fn unattended_rejection(request: &ApprovalRequestEvent, nobody: Unattended) -> String {
    let rule = request
        .suggested_rule
        .iter()
        .map(|r| format!("--allow '{r}'"));
    let mode = request
        .suggested_mode
        .iter()
        .map(|m| format!("--permission-mode {m}"));
    let ways: Vec<String> = rule.chain(mode).collect();
    let how = if ways.is_empty() {
        "it can only run where someone can approve it (agentbus chat on a terminal, or the web page)"
            .to_string()
    } else {
        format!("to allow it, run again with {}", ways.join(" or "))
    };
    let nobody = match nobody {
        Unattended::Run => "agentbus run cannot ask anyone",
        Unattended::InputEnded => "the chat's input has ended, so nobody can answer",
    };
    format!(
        "{} was not run: it needs approval ({}), and {nobody}; {how}.",
        request.name, request.reason
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentbus_engine::protocol::PermissionMode;
    use serde_json::json;

    fn request(name: &str, input: serde_json::Value) -> ApprovalRequestEvent {
        ApprovalRequestEvent {
            request_id: "t1-c1".into(),
            call_id: "c1".into(),
            name: name.into(),
            input,
            reason: "default mode asks".into(),
            options: vec![
                ApprovalChoice::AllowOnce,
                ApprovalChoice::AllowAlways,
                ApprovalChoice::Reject,
            ],
            suggested_rule: Some("bash(cargo test:*)".into()),
            suggested_mode: Some(PermissionMode::Bypass),
            child_session: None,
        }
    }

    #[test]
    fn answers_parse_with_and_without_a_message() {
        assert_eq!(
            parse_answer("y").unwrap().decision,
            ApprovalChoice::AllowOnce
        );
        assert_eq!(
            parse_answer(" Always ").unwrap().decision,
            ApprovalChoice::AllowAlways
        );
        assert!(parse_answer("s").unwrap().save);
        let no = parse_answer("n: use trash-cli instead").unwrap();
        assert_eq!(no.message.as_deref(), Some("use trash-cli instead"));
        assert_eq!(parse_answer("no").unwrap().message, None);
        assert!(parse_answer("maybe").unwrap_err().contains("y (once)"));
        assert!(parse_answer("y please").is_err());
    }

    #[test]
    fn an_edit_shows_as_a_diff_and_a_command_as_itself() {
        let edit = request(
            "edit_file",
            json!({"path": "a.txt", "old_string": "one two\n", "new_string": "one TWO\n"}),
        );
        assert_eq!(describe(&edit), ["  a.txt", "  -one two", "  +one TWO"]);
        let bash = request("bash", json!({"command": "rm -rf build"}));
        assert_eq!(describe(&bash), ["  $ rm -rf build"]);
    }

    #[test]
    fn the_unattended_rejection_names_the_flag_that_allows_it() {
        let bash = request("bash", json!({"command": "cargo test"}));
        let text = unattended_rejection(&bash, Unattended::Run);
        assert!(text.contains("--allow 'bash(cargo test:*)'"), "{text}");
        assert!(text.contains("--permission-mode bypass"), "{text}");
        assert!(text.contains("agentbus run cannot ask anyone"), "{text}");
        let piped = unattended_rejection(&bash, Unattended::InputEnded);
        assert!(
            piped.contains("the chat's input has ended, so nobody can answer"),
            "{piped}"
        );
        assert_eq!(
            piped.split_once("; ").map(|(_, how)| how),
            text.split_once("; ").map(|(_, how)| how),
            "the same way out as run's"
        );
    }
}
