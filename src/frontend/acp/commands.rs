//! Our slash commands as the editor offers them
//! (`available_commands_update`): every built-in command except those an
//! editor does not run (`prompt.rs`: the ones that switch sessions, and
//! `/quit`), then the session's custom commands (its `session_started`
//! lists them), each with the hint of its arguments. `/rewind` and `/undo`
//! are offered (`/rewind SEQ` rewinds the code alone there: `prompt.rs`).
//!
//! Pure.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, UnstructuredCommandInput,
};
use agentbus_engine::protocol::system::CommandEntry;
use agentbus_engine::runtime::COMMANDS;

/// The commands an editor may offer, in `/help`'s order: the built-in
/// ones, then `custom`, the session's own.
pub fn available(custom: &[CommandEntry]) -> Vec<AvailableCommand> {
    let built_in = COMMANDS
        .iter()
        .filter(|c| !super::prompt::NOT_IN_EDITOR.contains(&c.name))
        .map(|c| offered(c.name, c.summary, hint(c.usage)));
    let custom = custom
        .iter()
        .map(|c| offered(&c.name, &c.description, c.argument_hint()));
    built_in.chain(custom).collect()
}

fn offered(name: &str, description: &str, hint: Option<&str>) -> AvailableCommand {
    let command = AvailableCommand::new(name, description);
    match hint {
        Some(hint) => command.input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new(hint),
        )),
        None => command,
    }
}

/// What follows the name in a command's usage (`/model [NAME]` → `[NAME]`).
fn hint(usage: &str) -> Option<&str> {
    let (_, args) = usage.trim().split_once(char::is_whitespace)?;
    Some(args.trim()).filter(|args| !args.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_that_switch_sessions_are_not_offered() {
        let names: Vec<String> = available(&[]).iter().map(|c| c.name.clone()).collect();
        for offered in [
            "help", "mode", "usage", "context", "compact", "init", "clear", "rewind", "undo",
        ] {
            assert!(names.iter().any(|n| n == offered), "{offered}: {names:?}");
        }
        for hidden in ["new", "resume", "fork", "load", "quit"] {
            assert!(!names.iter().any(|n| n == hidden), "{hidden}: {names:?}");
        }
    }

    #[test]
    fn custom_commands_follow_the_built_in_ones() {
        let review = CommandEntry {
            command: "/review [file]".into(),
            description: "Review a file".into(),
            name: "review".into(),
            source: Some("/ws/.claude/commands/review.md".into()),
        };
        let offered = available(&[review]);
        let last = offered.last().expect("commands");
        assert_eq!(last.name, "review");
        assert_eq!(last.description, "Review a file");
        let Some(AvailableCommandInput::Unstructured(input)) = &last.input else {
            panic!("/review takes an argument");
        };
        assert_eq!(input.hint, "[file]");
    }

    #[test]
    fn arguments_become_the_input_hint() {
        let mode = available(&[])
            .into_iter()
            .find(|c| c.name == "mode")
            .unwrap();
        let Some(AvailableCommandInput::Unstructured(input)) = mode.input else {
            panic!("/mode takes an argument");
        };
        assert!(!input.hint.is_empty());
        let help = available(&[])
            .into_iter()
            .find(|c| c.name == "help")
            .unwrap();
        assert!(help.input.is_none());
    }
}
