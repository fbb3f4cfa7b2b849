//! `/new` — starts a new conversation: empty history, usage from zero.

use super::{SlashCommand, no_arguments, reply};
use crate::protocol::{ControlCommand, SystemEvent, SystemSubtype};
use crate::session::{SessionState, SessionUsage};

pub const COMMAND: SlashCommand = SlashCommand {
    name: "new",
    usage: "/new",
    summary: "start a new conversation",
    parse: |args| no_arguments("new", args, ControlCommand::NewConversation),
};

pub fn apply(state: &mut SessionState) -> SystemEvent {
    state.history.clear();
    state.usage = SessionUsage::default();
    reply(
        SystemSubtype::NewConversation,
        "New conversation started.",
        None,
    )
}
