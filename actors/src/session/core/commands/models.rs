//! `/models` — lists the configured model profiles, marking the current one.

use super::syntax::{SlashCommand, no_arguments};
use crate::protocol::system::{ModelEntry, ModelList};
use crate::protocol::{ControlCommand, SystemEvent};
use crate::session::core::SessionState;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "models",
    usage: "/models",
    summary: "list the model profiles",
    parse: |args| no_arguments("models", args, ControlCommand::ListModels),
};

pub fn apply(state: &SessionState) -> SystemEvent {
    let lines: Vec<String> = state
        .config
        .models
        .iter()
        .map(|m| {
            let mark = if m.name == state.model { "*" } else { " " };
            format!(
                "{mark} {} — {} via {} at {}",
                m.name, m.model, m.provider, m.base_url
            )
        })
        .collect();
    let entries = state
        .config
        .models
        .iter()
        .map(|m| ModelEntry {
            name: m.name.clone(),
            provider: m.provider.clone(),
            model: m.model.clone(),
            base_url: m.base_url.clone(),
            current: m.name == state.model,
        })
        .collect();
    SystemEvent::new(
        format!("Model profiles (* = current):\n{}", lines.join("\n")),
        &ModelList(entries),
    )
}
