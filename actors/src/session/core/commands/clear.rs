//! `/clear` — empties the history back to the system prompt, and drops the
//! model's plan (front ends drop theirs on `cleared`). Usage totals stay
//! (they count what was spent).

use super::syntax::{SlashCommand, no_arguments};
use crate::protocol::{ControlCommand, SystemEvent, SystemSubtype};
use crate::session::core::SessionState;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "clear",
    usage: "/clear",
    summary: "forget the conversation (keeps the system prompt)",
    parse: |args| no_arguments("clear", args, ControlCommand::Clear),
};

/// The user sees how many messages were dropped.
pub fn apply(state: &mut SessionState) -> SystemEvent {
    let dropped = state.history.len();
    state.history.clear();
    state.context.clear();
    state.plan.clear();
    SystemEvent::bare(
        SystemSubtype::Cleared,
        format!(
            "Conversation cleared ({} dropped).",
            crate::text::count(dropped as u64, "message")
        ),
    )
}
