//! Slash commands, parsed once here for every front end.
//!
//! One command, one file: each file holds the command's [`SlashCommand`]
//! entry (name, usage, summary, parser; `syntax` has what they share) and
//! its `apply`, a pure function of
//! the session state that returns the one `system` event the user sees —
//! or, for commands that read or write stored sessions (`/new`,
//! `/sessions`, `/resume`, `/fork`, `/save`, `/load`), the
//! [`SessionCommand`] the driver performs, plus the builder of the reply
//! the driver sends back; `/init` and the custom commands (`custom.rs`;
//! the Markdown files the session read, `custom_commands.rs`) become a
//! query.
//! Adding a command means adding a file, a [`ControlCommand`] variant, a line
//! in [`COMMANDS`] and a line in [`apply`].
//!
//! Text is a slash command when it starts with `/` followed by a word of
//! letters and dashes (so `/etc/hosts is odd` stays a query), or by the
//! name of one of the session's custom commands. A built-in name always
//! means the built-in command.

pub mod agent;
mod clear;
mod compact;
mod context;
pub mod custom;
mod debug;
pub mod fork;
#[cfg(test)]
mod fuzz_tests;
mod help;
pub mod init;
pub mod load;
mod mode;
mod model;
mod models;
pub mod new;
mod quit;
pub mod resume;
pub mod rewind;
pub mod save;
pub mod sessions;
mod syntax;
mod tools;
mod undo;
mod usage;

pub use syntax::{CommandQuery, SlashCommand};

use crate::protocol::{ControlCommand, SystemEvent, SystemSubtype};
use crate::session::core::custom_commands::CustomCommands;
use crate::session::core::{SessionCommand, SessionState};

/// Every slash command, in the order `/help` lists them.
pub const COMMANDS: &[SlashCommand] = &[
    help::COMMAND,
    quit::COMMAND,
    clear::COMMAND,
    new::COMMAND,
    model::COMMAND,
    models::COMMAND,
    mode::COMMAND,
    agent::COMMAND,
    tools::COMMAND,
    usage::COMMAND,
    context::COMMAND,
    compact::COMMAND,
    init::COMMAND,
    debug::COMMAND,
    sessions::COMMAND,
    resume::COMMAND,
    fork::COMMAND,
    rewind::COMMAND,
    undo::COMMAND,
    save::COMMAND,
    load::COMMAND,
];

/// What applying a command produced.
#[derive(Debug, PartialEq)]
pub enum Applied {
    /// The reply, ready.
    Reply(SystemEvent),
    /// The driver must perform this with the store, then reply.
    NeedsStore(SessionCommand),
    /// Compact the conversation now (the reply comes when the summary is
    /// written).
    Compact { focus: Option<String> },
    /// Run this as a query: an ordinary turn (`/init`, a custom command).
    Query(CommandQuery),
}

/// `None` when `text` is not a slash command; otherwise the parsed command,
/// or the notice to show (unknown command, bad arguments). Knows the
/// built-in commands only: a session parses with
/// [`parse_with`] and its own custom commands.
pub fn parse(text: &str) -> Option<Result<ControlCommand, String>> {
    parse_with(text, &CustomCommands::default())
}

/// Whether `name` (lower case) is a built-in command's.
pub fn is_built_in(name: &str) -> bool {
    COMMANDS.iter().any(|c| c.name == name)
}

/// [`parse`], knowing the session's `custom` commands too.
pub fn parse_with(text: &str, custom: &CustomCommands) -> Option<Result<ControlCommand, String>> {
    let rest = text.trim_start().strip_prefix('/')?;
    let (name, args) = match rest.find(char::is_whitespace) {
        Some(i) => (&rest[..i], rest[i..].trim()),
        None => (rest, ""),
    };
    if !is_built_in(&name.to_ascii_lowercase())
        && let Some(command) = custom.find(name)
    {
        return Some(Ok(ControlCommand::Custom {
            name: command.name.clone(),
            arguments: args.to_string(),
        }));
    }
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphabetic() || c == '-') {
        return None;
    }
    let name = name.to_ascii_lowercase();
    Some(match COMMANDS.iter().find(|c| c.name == name) {
        Some(command) => (command.parse)(args),
        None => Err(format!(
            "Unknown command /{name}. Type /help for the list of commands; it was not sent to the model."
        )),
    })
}

/// Apply a control command to the session.
pub fn apply(command: &ControlCommand, state: &mut SessionState) -> Applied {
    let reply = match command {
        ControlCommand::Help => help::apply(COMMANDS, &state.config.commands),
        ControlCommand::Quit => quit::apply(),
        ControlCommand::Clear => clear::apply(state),
        ControlCommand::SwitchModel { name } => model::switch(state, name),
        ControlCommand::ShowModel => model::show(state),
        ControlCommand::ListModels => models::apply(state),
        ControlCommand::ListTools => tools::apply(state),
        ControlCommand::Usage => usage::apply(state),
        ControlCommand::Debug { full } => debug::apply(state, *full),
        ControlCommand::Context => context::apply(state),
        ControlCommand::SetMode { mode } => mode::set(state, *mode),
        ControlCommand::ShowMode => mode::show(state),
        ControlCommand::SwitchAgent { name } => agent::switch(state, name),
        ControlCommand::ListAgents => agent::list(state),
        ControlCommand::Compact { focus } => {
            return Applied::Compact {
                focus: focus.clone(),
            };
        }
        ControlCommand::Init => return Applied::Query(init::apply(state)),
        ControlCommand::Custom { name, arguments } => {
            return match custom::run(state, name, arguments) {
                Ok(query) => Applied::Query(query),
                Err(notice) => Applied::Reply(*notice),
            };
        }
        ControlCommand::NewConversation => return Applied::NeedsStore(SessionCommand::New),
        ControlCommand::ListSessions => return Applied::NeedsStore(SessionCommand::List),
        ControlCommand::Resume { id } => {
            return Applied::NeedsStore(SessionCommand::Resume { id: id.clone() });
        }
        ControlCommand::Fork { at_seq } => {
            return Applied::NeedsStore(SessionCommand::Fork { at_seq: *at_seq });
        }
        ControlCommand::Rewind {
            seq,
            mode,
            overwrite,
        } => {
            return Applied::NeedsStore(SessionCommand::Rewind {
                seq: *seq,
                mode: mode.unwrap_or_default(),
                overwrite: *overwrite,
            });
        }
        ControlCommand::Undo { overwrite } => {
            return Applied::NeedsStore(SessionCommand::Undo {
                overwrite: *overwrite,
            });
        }
        ControlCommand::Save { path } => {
            return Applied::NeedsStore(SessionCommand::Save { path: path.clone() });
        }
        ControlCommand::Load { path } => {
            return Applied::NeedsStore(SessionCommand::Load { path: path.clone() });
        }
    };
    Applied::Reply(reply)
}

/// The reply of a session command that failed (unknown id, unreadable file).
pub fn failed(name: &str, error: impl std::fmt::Display) -> SystemEvent {
    SystemEvent::bare(SystemSubtype::Notice, format!("/{name} failed: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_commands_parse_with_and_without_arguments() {
        assert_eq!(parse("/clear"), Some(Ok(ControlCommand::Clear)));
        assert_eq!(parse("  /CLEAR  "), Some(Ok(ControlCommand::Clear)));
        assert_eq!(
            parse("/model fast"),
            Some(Ok(ControlCommand::SwitchModel {
                name: "fast".into()
            }))
        );
        assert_eq!(parse("/model"), Some(Ok(ControlCommand::ShowModel)));
    }

    #[test]
    fn unknown_commands_and_bad_arguments_are_notices() {
        let err = parse("/foo bar").unwrap().unwrap_err();
        assert!(err.contains("Unknown command /foo"), "{err}");
        let err = parse("/clear everything").unwrap().unwrap_err();
        assert!(err.contains("takes no arguments"), "{err}");
    }

    #[test]
    fn paths_and_plain_text_are_not_commands() {
        assert_eq!(parse("/etc/hosts looks odd"), None);
        assert_eq!(parse("hello /clear"), None);
        assert_eq!(parse("/"), None);
        assert_eq!(parse("/ spaced"), None);
    }

    #[test]
    fn every_command_is_listed_once() {
        let mut names: Vec<_> = COMMANDS.iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), COMMANDS.len());
    }
}
