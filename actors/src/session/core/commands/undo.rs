//! `/undo [--force]` — takes back the file changes of the last turn that
//! changed files (and is not taken back already); the conversation stays.
//! A file changed since by someone else is left alone unless `--force`.

use super::syntax::SlashCommand;
use crate::protocol::ControlCommand;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "undo",
    usage: "/undo [--force]",
    summary: "take back the file changes of the last turn that made some",
    parse,
};

fn parse(args: &str) -> Result<ControlCommand, String> {
    match args.trim() {
        "" => Ok(ControlCommand::Undo { overwrite: false }),
        "--force" | "force" => Ok(ControlCommand::Undo { overwrite: true }),
        other => Err(format!("/undo takes only --force, not `{other}`.")),
    }
}
