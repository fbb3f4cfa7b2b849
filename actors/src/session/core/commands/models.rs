//! `/models` — lists the configured model profiles, marking the current one.

use super::{SlashCommand, no_arguments, reply};
use crate::protocol::{ControlCommand, SystemEvent, SystemSubtype};
use crate::session::core::SessionState;
use serde_json::json;

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
    let data: Vec<_> = state
        .config
        .models
        .iter()
        .map(|m| {
            json!({
                "name": m.name, "provider": m.provider, "model": m.model,
                "base_url": m.base_url, "current": m.name == state.model,
            })
        })
        .collect();
    reply(
        SystemSubtype::Models,
        format!("Model profiles (* = current):\n{}", lines.join("\n")),
        Some(json!(data)),
    )
}
