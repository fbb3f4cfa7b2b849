//! `/help` — lists the slash commands with a line each.

use super::syntax::{SlashCommand, no_arguments};
use crate::protocol::system::{CommandEntry, CommandList};
use crate::protocol::{ControlCommand, SystemEvent};

pub const COMMAND: SlashCommand = SlashCommand {
    name: "help",
    usage: "/help",
    summary: "list the commands",
    parse: |args| no_arguments("help", args, ControlCommand::Help),
};

/// The user sees one line per command of `table`: usage, then what it does.
pub fn apply(table: &[SlashCommand]) -> SystemEvent {
    let width = table.iter().map(|c| c.usage.len()).max().unwrap_or(0);
    let lines: Vec<String> = table
        .iter()
        .map(|c| format!("  {:width$}  {}", c.usage, c.summary))
        .collect();
    let entries = table
        .iter()
        .map(|c| CommandEntry {
            command: c.usage.to_string(),
            description: c.summary.to_string(),
        })
        .collect();
    SystemEvent::new(
        format!("Commands:\n{}", lines.join("\n")),
        &CommandList(entries),
    )
}
