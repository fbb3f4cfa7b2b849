//! `/model [NAME]` — shows the current model profile, or switches to
//! another one. The history is kept: the next model call uses the new profile.
//!
//! A profile whose API key agentbus's environment lacks is refused, saying
//! which variable to set: keys are read from the environment agentbus was
//! started with, which cannot change while it runs, so after such a switch
//! every message would fail. (OpenCode offers only the models of providers
//! it has credentials for; Claude Code never leaves you on a model it
//! cannot call.)

use super::syntax::SlashCommand;
use crate::protocol::system::{CurrentModel, ModelSwitched};
use crate::protocol::{ControlCommand, SystemEvent, SystemSubtype};
use crate::session::core::SessionState;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "model",
    usage: "/model [NAME]",
    summary: "show the model profile, or switch to NAME (history is kept)",
    parse,
};

fn parse(args: &str) -> Result<ControlCommand, String> {
    match args.split_whitespace().collect::<Vec<_>>().as_slice() {
        [] => Ok(ControlCommand::ShowModel),
        [name] => Ok(ControlCommand::SwitchModel {
            name: name.to_string(),
        }),
        _ => Err(format!(
            "/model takes one profile name (got `{args}`); /models lists them."
        )),
    }
}

/// Switch, or explain which names exist.
pub fn switch(state: &mut SessionState, name: &str) -> SystemEvent {
    if !state.config.models.iter().any(|m| m.name == name) {
        let names: Vec<&str> = state
            .config
            .models
            .iter()
            .map(|m| m.name.as_str())
            .collect();
        return SystemEvent::bare(
            SystemSubtype::Notice,
            format!(
                "Unknown model profile `{name}`; the model stays {}. Configured profiles: {}.",
                state.model,
                names.join(", ")
            ),
        );
    }
    if let Some(var) = state
        .config
        .models
        .iter()
        .find(|m| m.name == name)
        .and_then(|m| m.key_missing.as_ref())
    {
        return SystemEvent::bare(
            SystemSubtype::Notice,
            format!(
                "Model profile `{name}` needs an API key in {var}, which is not set, so the model stays {}: \
                 every message to `{name}` would fail. Set {var} and start agentbus again (export {var}=...), \
                 or pick a profile that works (/models).",
                state.model
            ),
        );
    }
    let previous = std::mem::replace(&mut state.model, name.to_string());
    let detail = state
        .current_model()
        .map(|m| format!(" ({} via {})", m.model, m.provider))
        .unwrap_or_default();
    let message = format!("Model switched from {previous} to {name}{detail}.");
    let switched = ModelSwitched {
        model: name.to_string(),
        previous,
    };
    SystemEvent::new(message, &switched)
}

/// The current profile.
pub fn show(state: &SessionState) -> SystemEvent {
    match state.current_model() {
        Some(m) => SystemEvent::new(
            format!(
                "Model: {} ({} via {} at {}).",
                m.name, m.model, m.provider, m.base_url
            ),
            &CurrentModel::Configured(Box::new(m.clone())),
        ),
        None => SystemEvent::new(
            format!("Model: {} (not a configured profile).", state.model),
            &CurrentModel::Unknown {
                name: state.model.clone(),
            },
        ),
    }
}
