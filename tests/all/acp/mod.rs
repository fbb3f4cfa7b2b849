//! `agentbus acp`, the Agent Client Protocol agent, driven as editors
//! drive it.
//!
//! - [`acpx`]: the npm client `acpx` (what `scripts/acpx.sh` installs, or
//!   `$AGENTBUS_ACPX`) runs `agentbus acp` against the scripted model and
//!   prints the raw JSON-RPC traffic, which the tests read: a prompt with a
//!   tool call, a cancel mid-reply, permission requests answered by
//!   `--approve-all` and `--deny-all`, a stored session loaded again, the
//!   editor's MCP servers.
//! - [`protocol`]: what acpx cannot reach, with the crate's own client
//!   side ([`editor`]): the replay of `session/load`, `session/set_mode`,
//!   "allow always", a cancelled permission request, the file tools going
//!   through the editor's `fs/*`, and `--attach` to a real `agentbus serve`.
//! - [`rewind`]: `/rewind` and `/undo` as an editor offers and runs them.

mod acpx;
pub(crate) mod editor;
mod pickers;
mod protocol;
mod rewind;

use serde_json::Value;

/// The JSON-RPC messages of a connection, in the order they passed.
#[derive(Debug, Default)]
pub struct Traffic(pub Vec<Value>);

impl Traffic {
    /// Every message, one JSON object per line; other lines are skipped.
    pub fn parse(text: &str) -> Traffic {
        Traffic(
            text.lines()
                .filter(|l| l.trim_start().starts_with('{'))
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect(),
        )
    }

    /// The requests (or notifications) of `method`.
    pub fn calls(&self, method: &str) -> Vec<&Value> {
        self.0.iter().filter(|m| m["method"] == method).collect()
    }

    /// The answer to the first request of `method`.
    pub fn answer_to(&self, method: &str) -> &Value {
        let request = self
            .calls(method)
            .into_iter()
            .find(|m| m.get("id").is_some())
            .unwrap_or_else(|| panic!("no {method} request in:\n{self}"));
        self.0
            .iter()
            .find(|m| m.get("method").is_none() && m["id"] == request["id"])
            .unwrap_or_else(|| panic!("no answer to {method} in:\n{self}"))
    }

    /// The `update` of every `session/update` of kind `kind`.
    pub fn updates(&self, kind: &str) -> Vec<&Value> {
        self.calls("session/update")
            .into_iter()
            .map(|m| &m["params"]["update"])
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    }

    /// The text of every `agent_message_chunk`, joined.
    pub fn agent_text(&self) -> String {
        self.updates("agent_message_chunk")
            .iter()
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    }

    /// The stop reason the prompt answered with.
    pub fn stop_reason(&self) -> &str {
        let answer = self.answer_to("session/prompt");
        answer["result"]["stopReason"]
            .as_str()
            .unwrap_or_else(|| panic!("the prompt was not answered with a stop reason: {answer}"))
    }
}

impl std::fmt::Display for Traffic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for message in &self.0 {
            writeln!(f, "{message}")?;
        }
        Ok(())
    }
}
