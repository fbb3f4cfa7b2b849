//! `/load PATH` — imports a session file (from `/save` or `agentbus
//! sessions export`) as a new session and switches to it. A malformed file
//! or one from a newer agentbus changes nothing.

use super::syntax::{SlashCommand, one_argument};
use crate::protocol::system::Loaded;
use crate::protocol::{ControlCommand, SessionId, SystemEvent};

pub const COMMAND: SlashCommand = SlashCommand {
    name: "load",
    usage: "/load PATH",
    summary: "import a saved session as a new one and switch to it",
    parse: |args| {
        one_argument("load", "a file path", args).map(|path| ControlCommand::Load { path })
    },
};

/// The reply once the store imported the file.
pub fn loaded(new: &SessionId, path: &str, events: usize) -> SystemEvent {
    SystemEvent::new(
        format!(
            "Loaded {} from {path} as new session {new}.",
            crate::text::count(events as u64, "event")
        ),
        &Loaded {
            switch_to: new.clone(),
            events,
        },
    )
}
