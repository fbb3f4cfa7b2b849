//! `/sessions` — lists the stored sessions, most recent first.

use super::syntax::{SlashCommand, no_arguments};
use crate::protocol::system::{SessionList, SessionSummary};
use crate::protocol::{ControlCommand, SystemEvent};

pub const COMMAND: SlashCommand = SlashCommand {
    name: "sessions",
    usage: "/sessions",
    summary: "list the stored sessions (resume one with /resume ID)",
    parse: |args| no_arguments("sessions", args, ControlCommand::ListSessions),
};

/// The user sees one line per session: short id, when, title.
pub fn listing(records: &[SessionSummary], current: &str) -> SystemEvent {
    let lines: Vec<String> = records
        .iter()
        .map(|r| {
            let mark = if r.id.0 == current { "*" } else { " " };
            format!(
                "{mark} {}  {}  {:>4} events  {}",
                r.id.short(),
                r.updated_at.format("%Y-%m-%d %H:%M"),
                r.events,
                r.title.as_deref().unwrap_or("(untitled)")
            )
        })
        .collect();
    SystemEvent::new(
        if lines.is_empty() {
            "No stored sessions.".to_string()
        } else {
            format!(
                "Sessions (* = this one; /resume ID switches):\n{}",
                lines.join("\n")
            )
        },
        &SessionList(records.to_vec()),
    )
}
