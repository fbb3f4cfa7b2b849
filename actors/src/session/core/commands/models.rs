//! `/models` — lists the configured model profiles, marking the current one
//! and those whose API key agentbus's environment lacks.

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
            let key = m
                .key_missing
                .as_ref()
                .map(|var| format!(" (needs {var}, which is not set)"))
                .unwrap_or_default();
            format!(
                "{mark} {} — {} via {} at {}{key}",
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
            key_missing: m.key_missing.clone(),
        })
        .collect();
    SystemEvent::new(
        format!("Model profiles (* = current):\n{}", lines.join("\n")),
        &ModelList(entries),
    )
}
