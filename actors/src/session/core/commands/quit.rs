//! `/quit` — the front end that typed it exits; the session is untouched.

use super::syntax::{SlashCommand, no_arguments};
use crate::protocol::{ControlCommand, SystemEvent, SystemSubtype};

pub const COMMAND: SlashCommand = SlashCommand {
    name: "quit",
    usage: "/quit",
    summary: "leave this front end (the session stays)",
    parse: |args| no_arguments("quit", args, ControlCommand::Quit),
};

/// Front ends exit when they see the `quit` event of their own input.
pub fn apply() -> SystemEvent {
    SystemEvent::bare(SystemSubtype::Quit, "Goodbye.")
}
