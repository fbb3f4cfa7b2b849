//! The session modes an editor offers (its mode picker): what a session
//! can switch between, and the input that switches.
//!
//! The permission modes (`default`, `accept-edits`, `plan`, `bypass`) come
//! first, switched with `/mode NAME`; then the named agents as
//! `agent:NAME`, switched with `/agent NAME` (an agent may bring its own
//! mode: `plan` does). The mode marked current is the permission mode in
//! force — it is what decides what runs without asking. Editors that know
//! config options show mode and agent as separate pickers instead
//! ([`super::config_options`]).
//!
//! Pure; it never talks to a session.

use crate::frontend::common::backend::Choices;
use agent_client_protocol::v1::schema::{SessionMode, SessionModeId, SessionModeState};
use agentbus_engine::protocol::PermissionMode;

/// The permission modes, in the order pickers show them.
pub const PERMISSION_MODES: [PermissionMode; 4] = [
    PermissionMode::Default,
    PermissionMode::AcceptEdits,
    PermissionMode::Plan,
    PermissionMode::Bypass,
];

/// The prefix of an agent's mode id.
const AGENT_PREFIX: &str = "agent:";

/// The mode id of a permission mode (its name, as `/mode` takes it).
pub fn id_of(mode: PermissionMode) -> SessionModeId {
    SessionModeId::new(mode.as_str())
}

/// A mode id from its text.
pub fn id_of_str(id: &str) -> SessionModeId {
    SessionModeId::new(id)
}

/// Every mode a session offers, the permission mode in force marked
/// current.
pub fn available(current: PermissionMode, choices: &Choices) -> SessionModeState {
    let permission = PERMISSION_MODES.into_iter().map(|mode| {
        SessionMode::new(id_of(mode), title(mode)).description(mode.describe().to_string())
    });
    let agents = choices.agents.iter().map(|agent| {
        let description = if agent.description.is_empty() {
            format!("Switch to the `{}` agent", agent.name)
        } else {
            agent.description.clone()
        };
        SessionMode::new(
            SessionModeId::new(format!("{AGENT_PREFIX}{}", agent.name)),
            format!("Agent: {}", agent.name),
        )
        .description(description)
    });
    SessionModeState::new(id_of(current), permission.chain(agents).collect())
}

/// What the picker shows.
pub fn title(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::Default => "Ask before edits",
        PermissionMode::AcceptEdits => "Accept edits",
        PermissionMode::Plan => "Plan (read-only)",
        PermissionMode::Bypass => "Bypass permissions",
    }
}

/// The input that switches to mode `id`, or why there is no such mode.
pub fn switch_input(id: &SessionModeId, choices: &Choices) -> Result<String, String> {
    if let Some(name) = id.0.strip_prefix(AGENT_PREFIX)
        && choices.agents.iter().any(|a| a.name == name)
    {
        return Ok(format!("/agent {name}"));
    }
    match id.0.parse::<PermissionMode>() {
        Ok(mode) => Ok(format!("/mode {mode}")),
        Err(_) => {
            let agents = choices
                .agents
                .iter()
                .map(|a| format!(", {AGENT_PREFIX}{}", a.name))
                .collect::<String>();
            Err(format!(
                "unknown mode `{}`; expected one of default, accept-edits, plan, bypass{agents}",
                id.0
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentbus_engine::protocol::AgentInfo;

    fn choices() -> Choices {
        Choices {
            agents: ["build", "reviewer"]
                .into_iter()
                .map(|name| AgentInfo {
                    name: name.into(),
                    description: String::new(),
                    source: "built-in".into(),
                })
                .collect(),
            models: Vec::new(),
        }
    }

    #[test]
    fn permission_modes_then_agents_are_offered_and_the_mode_in_force_marked() {
        let state = available(PermissionMode::Plan, &choices());
        assert_eq!(state.current_mode_id, SessionModeId::new("plan"));
        let ids: Vec<&str> = state.available_modes.iter().map(|m| &*m.id.0).collect();
        assert_eq!(
            ids,
            [
                "default",
                "accept-edits",
                "plan",
                "bypass",
                "agent:build",
                "agent:reviewer"
            ]
        );
        assert!(
            state
                .available_modes
                .iter()
                .all(|m| m.description.is_some())
        );
    }

    #[test]
    fn a_mode_id_switches_with_mode_or_agent_and_a_wrong_one_is_named() {
        let c = choices();
        assert_eq!(
            switch_input(&SessionModeId::new("accept-edits"), &c).unwrap(),
            "/mode accept-edits"
        );
        assert_eq!(
            switch_input(&SessionModeId::new("agent:reviewer"), &c).unwrap(),
            "/agent reviewer"
        );
        let err = switch_input(&SessionModeId::new("yolo"), &c).unwrap_err();
        assert!(
            err.contains("`yolo`") && err.contains("bypass") && err.contains("agent:reviewer"),
            "{err}"
        );
        let err = switch_input(&SessionModeId::new("agent:nobody"), &c).unwrap_err();
        assert!(err.contains("`agent:nobody`"), "{err}");
    }
}
