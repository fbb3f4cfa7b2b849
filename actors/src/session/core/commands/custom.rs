//! `/NAME [ARGUMENTS]` — runs one of the session's custom commands
//! (`custom_commands.rs`): an ordinary turn whose `user` event shows the
//! command line, as Claude Code does, while the model receives the
//! command's prompt with the arguments filled in. The file's `model` (a
//! profile of ours) answers that query alone, its `allowed-tools` are
//! allow rules for that turn alone; what of the file is not applied is
//! said as the turn starts.

use super::syntax::CommandQuery;
use crate::protocol::{SystemEvent, SystemSubtype};
use crate::session::core::SessionState;
use crate::session::core::custom_commands::expand;

/// What running `/name arguments` sends, or the notice when the session
/// has no such command (a control command sent by name).
pub fn run(
    state: &SessionState,
    name: &str,
    arguments: &str,
) -> Result<CommandQuery, Box<SystemEvent>> {
    let Some(command) = state.config.commands.find(name) else {
        return Err(Box::new(SystemEvent::bare(
            SystemSubtype::Notice,
            format!(
                "Unknown command /{name}. Type /help for the list of commands; it was not sent to the model."
            ),
        )));
    };
    let arguments = arguments.trim();
    let typed = if arguments.is_empty() {
        format!("/{}", command.name)
    } else {
        format!("/{} {arguments}", command.name)
    };
    let mut notices: Vec<String> = command
        .notes
        .iter()
        .map(|note| format!("/{}: {note}", command.name))
        .collect();
    let model = match command.model.as_deref() {
        Some(model) if state.config.models.iter().any(|m| m.name == model) => {
            Some(model.to_string())
        }
        Some(model) => {
            notices.push(format!(
                "/{}: `model: {model}` ({}) is not a model profile here, so the session's model ({}) answers. Profiles: {}.",
                command.name,
                command.source,
                state.model,
                profile_names(state)
            ));
            None
        }
        None => None,
    };
    Ok(CommandQuery {
        typed,
        prompt: if command.skill {
            crate::session::core::skills::expand(&command.prompt, arguments)
        } else {
            expand(&command.prompt, arguments)
        },
        model,
        allowed_tools: command.allowed_tools.clone(),
        notices,
    })
}

fn profile_names(state: &SessionState) -> String {
    let names: Vec<&str> = state
        .config
        .models
        .iter()
        .map(|m| m.name.as_str())
        .collect();
    names.join(", ")
}
