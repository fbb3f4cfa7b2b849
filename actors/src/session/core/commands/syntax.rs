//! What every slash command is made of: its entry in the table, and the
//! argument parsers the commands share. (The table itself and the
//! dispatch are `mod.rs`; a command's file never needs them.)

use crate::permissions::Rule;
use crate::protocol::ControlCommand;
use crate::protocol::system::CommandEntry;

/// A command that runs as a query (`/init`, a custom command): an
/// ordinary turn whose `user` event shows `typed` while the model
/// receives `prompt`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CommandQuery {
    /// The command line, as the user typed it (what front ends show).
    pub typed: String,
    /// What the model receives (and the history keeps).
    pub prompt: String,
    /// The model profile this turn alone runs on.
    pub model: Option<String>,
    /// Allow rules in force for this turn alone.
    pub allowed_tools: Vec<Rule>,
    /// Notices shown as the turn starts, after its `user` event (what of
    /// the command is not applied).
    pub notices: Vec<String>,
}

/// A slash command as the user types it.
pub struct SlashCommand {
    /// The word after `/`.
    pub name: &'static str,
    /// How to type it, e.g. `/model [NAME]`.
    pub usage: &'static str,
    /// One line for `/help`.
    pub summary: &'static str,
    /// Turn the text after the name into a command, or explain the mistake.
    pub parse: fn(args: &str) -> Result<ControlCommand, String>,
}

impl SlashCommand {
    /// How `/help`, `session_started` and the web page list it.
    pub fn entry(&self) -> CommandEntry {
        CommandEntry {
            command: self.usage.to_string(),
            description: self.summary.to_string(),
            name: self.name.to_string(),
            source: None,
        }
    }
}

/// A one-argument parser: the whole rest of the line, required.
pub fn one_argument(name: &str, what: &str, args: &str) -> Result<String, String> {
    let arg = args.trim();
    if arg.is_empty() {
        Err(format!("/{name} needs {what}."))
    } else {
        Ok(arg.to_string())
    }
}

/// Parser for commands that take no arguments.
pub fn no_arguments(
    name: &str,
    args: &str,
    command: ControlCommand,
) -> Result<ControlCommand, String> {
    if args.is_empty() {
        Ok(command)
    } else {
        Err(format!("/{name} takes no arguments (got `{args}`)."))
    }
}
