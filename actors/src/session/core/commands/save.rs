//! `/save PATH` — exports this session as a versioned JSON document
//! (metadata and events; never tools or secrets).

use super::syntax::{SlashCommand, one_argument};
use crate::protocol::system::Saved;
use crate::protocol::{ControlCommand, SystemEvent};

pub const COMMAND: SlashCommand = SlashCommand {
    name: "save",
    usage: "/save PATH",
    summary: "export this session to a JSON file",
    parse: |args| {
        one_argument("save", "a file path", args).map(|path| ControlCommand::Save { path })
    },
};

/// The reply once the file is written.
pub fn saved(path: &str, events: usize) -> SystemEvent {
    SystemEvent::new(
        format!(
            "Saved {} to {path}.",
            crate::text::count(events as u64, "event")
        ),
        &Saved {
            path: path.to_string(),
            events,
        },
    )
}
