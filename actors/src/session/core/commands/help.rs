//! `/help` — lists the slash commands with a line each.

use super::{COMMANDS, SlashCommand, no_arguments, reply};
use crate::protocol::{ControlCommand, SystemEvent, SystemSubtype};
use serde_json::json;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "help",
    usage: "/help",
    summary: "list the commands",
    parse: |args| no_arguments("help", args, ControlCommand::Help),
};

/// The user sees one line per command: usage, then what it does.
pub fn apply() -> SystemEvent {
    let width = COMMANDS.iter().map(|c| c.usage.len()).max().unwrap_or(0);
    let lines: Vec<String> = COMMANDS
        .iter()
        .map(|c| format!("  {:width$}  {}", c.usage, c.summary))
        .collect();
    let data: Vec<_> = COMMANDS
        .iter()
        .map(|c| json!({"command": c.usage, "description": c.summary}))
        .collect();
    reply(
        SystemSubtype::Help,
        format!("Commands:\n{}", lines.join("\n")),
        Some(json!(data)),
    )
}
