//! What `agentbus run` shows without `--json`: only the answer. The final
//! assistant text (or a command's reply) goes to stdout; what happens on the
//! way goes to stderr as it happens — retries, store failures, and the
//! session's notices during the turn (a compaction, a request shortened,
//! a wait for MCP servers) —
//! so a script reading stdout gets the answer and nothing else.
//!
//! On a terminal (with colour allowed: no `NO_COLOR`, no `TERM=dumb`) the
//! answer is rendered as Markdown to the terminal's width; anywhere else —
//! a pipe, a file — it is the text exactly as the model wrote it.

use super::Output;
use super::markdown::MarkdownStream;
use super::render::compaction_summary;
use super::reply::ScreenSize;
use crate::frontend::common::input_ends::InputEnd;
use agentbus_engine::protocol::context::Compacted;
use agentbus_engine::protocol::{
    AgentMessage, ErrorKind, EventEnvelope, InputId, SystemEvent, SystemSubtype,
};
use std::io::{IsTerminal, Write};

/// The answer on stdout, notices on stderr.
#[derive(Debug, Default)]
pub struct Answer {
    /// The query whose turn runs (its `user` event seen, its `result` not).
    turn: Option<InputId>,
}

impl Answer {
    /// What stderr says about `s`, if anything.
    fn notice(&self, s: &SystemEvent, in_turn: bool) -> Option<String> {
        match s.subtype {
            SystemSubtype::Retrying => Some(s.message.clone()),
            // A command's reply (`/compact`'s among them) is its answer, on
            // stdout: only what a turn says on the way goes here.
            SystemSubtype::Notice | SystemSubtype::Compacting | SystemSubtype::McpWaiting
                if in_turn =>
            {
                Some(s.message.clone())
            }
            SystemSubtype::Compacted if in_turn => Some(
                s.payload::<Compacted>()
                    .map_or_else(|| s.message.clone(), |c| compaction_summary(&c)),
            ),
            _ => None,
        }
    }
}

impl Output for Answer {
    fn event(&mut self, event: &EventEnvelope) -> std::io::Result<()> {
        let in_turn = event.turn_id.is_some() && event.turn_id == self.turn;
        match &event.message {
            AgentMessage::User(_) => self.turn = event.turn_id,
            AgentMessage::Result(_) if in_turn => self.turn = None,
            AgentMessage::System(s) => {
                if let Some(text) = self.notice(s, in_turn) {
                    eprintln!("agentbus: {text}");
                }
            }
            AgentMessage::Error(e) if e.kind == ErrorKind::Store => {
                eprintln!("agentbus: {}", e.message);
            }
            _ => {}
        }
        Ok(())
    }

    fn ended(&mut self, end: &InputEnd) -> std::io::Result<()> {
        // The model's answer is Markdown; a command's reply is plain text,
        // broken at words to the terminal's width.
        let (text, markdown) = match end {
            InputEnd::Result(r) => (r.text.clone(), true),
            InputEnd::Reply(s) if s.subtype != SystemSubtype::Notice => {
                (super::wrap::to_terminal(&s.message), false)
            }
            InputEnd::Reply(_) => (String::new(), false),
        };
        if text.is_empty() {
            return Ok(());
        }
        let mut out = std::io::stdout().lock();
        let text = text.trim_end();
        if markdown && styled_terminal(out.is_terminal()) {
            let layout = ScreenSize::of_terminal().layout();
            for line in MarkdownStream::render_all(text, layout) {
                writeln!(out, "{line}")?;
            }
        } else {
            writeln!(out, "{text}")?;
        }
        out.flush()
    }
}

/// Whether output to a terminal (`terminal`) may be styled: not with
/// `NO_COLOR` set, nor on a terminal that says it is dumb.
fn styled_terminal(terminal: bool) -> bool {
    terminal
        && std::env::var_os("NO_COLOR").is_none()
        && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentbus_engine::protocol::{SessionId, UserEvent};

    fn env(turn_id: Option<InputId>, message: AgentMessage) -> EventEnvelope {
        EventEnvelope {
            session_id: SessionId::from("s"),
            seq: 1,
            turn_id,
            at: chrono::Utc::now(),
            message,
        }
    }

    #[test]
    fn only_what_a_turn_says_on_the_way_goes_to_stderr() {
        let compacted = SystemEvent {
            subtype: SystemSubtype::Compacted,
            message: "Conversation compacted: about 9000 → 900 tokens.".into(),
            data: Some(serde_json::json!({
                "trigger": "auto", "first_seq": 1, "last_seq": 9, "first_kept": 4,
                "summary": "s", "tokens_before": 9_000, "tokens_after": 900,
            })),
            by: None,
        };
        let notice = SystemEvent::bare(SystemSubtype::Compacting, "Compacting the conversation.");
        let mut answer = Answer::default();
        // Before the turn (a command's reply): nothing on stderr.
        assert_eq!(answer.notice(&notice, false), None);
        assert_eq!(answer.notice(&compacted, false), None);
        let user = AgentMessage::User(UserEvent::new("hi"));
        answer.event(&env(Some(4), user)).unwrap();
        assert_eq!(answer.turn, Some(4));
        assert_eq!(
            answer.notice(&notice, true).as_deref(),
            Some("Compacting the conversation.")
        );
        assert_eq!(
            answer.notice(&compacted, true).as_deref(),
            Some("conversation compacted: ~9,000 → 900 tokens (auto)")
        );
        let waiting = SystemEvent::new(
            "Waiting up to 10 s for the MCP server `x` to start.",
            &agentbus_engine::protocol::system::McpWaiting {
                servers: vec!["x".into()],
                max_wait_ms: 10_000,
            },
        );
        assert_eq!(
            answer.notice(&waiting, true).as_deref(),
            Some("Waiting up to 10 s for the MCP server `x` to start.")
        );
    }
}
