//! What `agentbus run` shows without `--json`: only the answer. The final
//! assistant text (or a command's reply) goes to stdout; retry notices and
//! store failures go to stderr as they happen, so a script reading stdout
//! gets the answer and nothing else.

use super::Output;
use crate::frontend::InputEnd;
use agentbus_actors::protocol::{AgentMessage, ErrorKind, EventEnvelope, SystemSubtype};
use std::io::Write;

/// The answer on stdout, notices on stderr.
pub struct Answer;

impl Output for Answer {
    fn event(&mut self, event: &EventEnvelope) -> std::io::Result<()> {
        match &event.message {
            AgentMessage::System(s) if s.subtype == SystemSubtype::Retrying => {
                eprintln!("agentbus: {}", s.message);
            }
            AgentMessage::Error(e) if e.kind == ErrorKind::Store => {
                eprintln!("agentbus: {}", e.message);
            }
            _ => {}
        }
        Ok(())
    }

    fn ended(&mut self, end: &InputEnd) -> std::io::Result<()> {
        let text = match end {
            InputEnd::Result(r) => r.text.clone(),
            InputEnd::Reply(s) if s.subtype != SystemSubtype::Notice => s.message.clone(),
            InputEnd::Reply(_) => String::new(),
        };
        if !text.is_empty() {
            let mut out = std::io::stdout();
            writeln!(out, "{}", text.trim_end())?;
        }
        Ok(())
    }
}
