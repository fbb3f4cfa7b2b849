//! `/resume ID` — switches to a stored session (id or unique prefix).

use super::syntax::{SlashCommand, one_argument};
use crate::protocol::system::{Resumed, SessionSummary};
use crate::protocol::{ControlCommand, SystemEvent};

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
    SystemEvent::new(
        format!(
            "Resuming session {} ({}, {}).",
            record.id,
            record.title.as_deref().unwrap_or("untitled"),
            crate::text::count(record.events, "event")
        ),
        &Resumed {
            switch_to: record.id.clone(),
            title: record.title.clone(),
        },
    )
}
