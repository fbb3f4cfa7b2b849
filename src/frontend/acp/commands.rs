//! Our slash commands as the editor offers them
//! (`available_commands_update`): every command of the session's table
//! except those an editor does not run (`prompt.rs`: the ones that switch
//! sessions, and `/quit`), each with the hint of its arguments.
//!
//! Pure.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, UnstructuredCommandInput,
};
use agentbus_actors::runtime::COMMANDS;

/// The commands an editor may offer, in `/help`'s order.
pub fn available() -> Vec<AvailableCommand> {
    COMMANDS
        .iter()
        .filter(|c| !super::prompt::NOT_IN_EDITOR.contains(&c.name))
        .map(|c| {
            let command = AvailableCommand::new(c.name, c.summary);
            match hint(c.usage) {
                Some(hint) => command.input(AvailableCommandInput::Unstructured(
                    UnstructuredCommandInput::new(hint),
                )),
                None => command,
            }
        })
        .collect()
}

/// What follows the name in a command's usage (`/model [NAME]` → `[NAME]`).
fn hint(usage: &str) -> Option<String> {
    let (_, args) = usage.trim().split_once(char::is_whitespace)?;
    let args = args.trim();
    (!args.is_empty()).then(|| args.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_that_switch_sessions_are_not_offered() {
        let names: Vec<String> = available().iter().map(|c| c.name.clone()).collect();
        for offered in [
            "help", "mode", "usage", "context", "compact", "init", "clear",
        ] {
            assert!(names.iter().any(|n| n == offered), "{offered}: {names:?}");
        }
        for hidden in ["new", "resume", "fork", "load", "quit"] {
            assert!(!names.iter().any(|n| n == hidden), "{hidden}: {names:?}");
        }
    }

    #[test]
    fn arguments_become_the_input_hint() {
        let mode = available().into_iter().find(|c| c.name == "mode").unwrap();
        let Some(AvailableCommandInput::Unstructured(input)) = mode.input else {
            panic!("/mode takes an argument");
        };
        assert!(!input.hint.is_empty());
        let help = available().into_iter().find(|c| c.name == "help").unwrap();
        assert!(help.input.is_none());
    }
}
