//! `/resume ID` — switches to a stored session (id or unique prefix).

use super::sessions::SessionSummary;
use super::{SlashCommand, one_argument, reply};
use crate::protocol::{ControlCommand, SystemEvent, SystemSubtype};
use serde_json::json;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "resume",
    usage: "/resume ID",
    summary: "switch to a stored session (see /sessions)",
    parse: |args| {
        one_argument("resume", "a session id (or the start of one)", args)
            .map(|id| ControlCommand::Resume { id })
    },
};

/// The reply once the store found the session.
pub fn found(record: &SessionSummary) -> SystemEvent {
    reply(
        SystemSubtype::Resumed,
        format!(
            "Resuming session {} ({}, {} events).",
            record.id,
            record.title.as_deref().unwrap_or("untitled"),
            record.events
        ),
        Some(json!({"switch_to": &record.id, "title": record.title})),
    )
}
