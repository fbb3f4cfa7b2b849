//! `/help` — lists the slash commands with a line each: the built-in ones,
//! then the session's custom commands with the file each comes from, then
//! its skills (each also `/NAME`) with their `SKILL.md`, then the command
//! files that could not be used.

use super::syntax::{SlashCommand, no_arguments};
use crate::protocol::system::{CommandEntry, CommandList};
use crate::protocol::{ControlCommand, SystemEvent};
use crate::session::core::custom_commands::CustomCommands;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "help",
    usage: "/help",
    summary: "list the commands",
    parse: |args| no_arguments("help", args, ControlCommand::Help),
};

/// The user sees one line per command of `table`: usage, then what it does;
/// then one per custom command, with its file.
pub fn apply(table: &[SlashCommand], custom: &CustomCommands) -> SystemEvent {
    let mut entries: Vec<CommandEntry> = table.iter().map(SlashCommand::entry).collect();
    entries.extend(custom.entries());
    let width = entries.iter().map(|c| c.command.len()).max().unwrap_or(0);
    let line = |c: &CommandEntry| {
        let line = format!("  {:width$}  {}", c.command, c.description);
        match &c.source {
            Some(source) => format!("{} ({source})", line.trim_end()),
            None => line,
        }
    };
    let skill_names: Vec<&str> = custom
        .commands
        .iter()
        .filter(|c| c.skill)
        .map(|c| c.name.as_str())
        .collect();
    let (built_in, own): (Vec<&CommandEntry>, Vec<&CommandEntry>) =
        entries.iter().partition(|c| c.source.is_none());
    let (skills, own): (Vec<&CommandEntry>, Vec<&CommandEntry>) = own
        .into_iter()
        .partition(|c| skill_names.contains(&c.name.as_str()));
    let mut text = format!(
        "Commands:\n{}",
        built_in
            .into_iter()
            .map(line)
            .collect::<Vec<_>>()
            .join("\n")
    );
    if !own.is_empty() {
        text.push_str("\nCustom commands:\n");
        text.push_str(&own.into_iter().map(line).collect::<Vec<_>>().join("\n"));
    }
    if !skills.is_empty() {
        text.push_str("\nSkills (the model loads them itself when a task matches):\n");
        text.push_str(&skills.into_iter().map(line).collect::<Vec<_>>().join("\n"));
    }
    if !custom.problems.is_empty() {
        text.push_str("\nCommand files not used:");
        for problem in &custom.problems {
            text.push_str(&format!("\n  {problem}"));
        }
    }
    SystemEvent::new(text, &CommandList(entries))
}
