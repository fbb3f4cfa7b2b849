//! `/save PATH` — exports this session as a versioned JSON document
//! (metadata and events; never tools or secrets).

use super::{SlashCommand, one_argument, reply};
use crate::protocol::{ControlCommand, SystemEvent, SystemSubtype};
use serde_json::json;

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
    reply(
        SystemSubtype::Saved,
        format!("Saved {events} events to {path}."),
        Some(json!({"path": path, "events": events})),
    )
}
