//! `/new` — starts a new session. The current one stays stored (and can be
//! resumed); front ends switch to the new one (`data.switch_to`).

use super::syntax::{SlashCommand, no_arguments};
use crate::protocol::system::NewConversation;
use crate::protocol::{ControlCommand, SessionId, SystemEvent};

pub const COMMAND: SlashCommand = SlashCommand {
    name: "new",
    usage: "/new",
    summary: "start a new session (this one stays stored)",
    parse: |args| no_arguments("new", args, ControlCommand::NewConversation),
};

/// The reply once the store made the session.
pub fn created(id: &SessionId) -> SystemEvent {
    SystemEvent::new(
        format!("New session {id} started."),
        &NewConversation {
            switch_to: id.clone(),
        },
    )
}
