//! The session's settings as ACP config options: three pickers an editor
//! shows side by side — the permission mode, the named agent, the model
//! profile — and the input that switches each.
//!
//! Editors that know config options show these instead of the single mode
//! picker ([`super::modes`]), which mixes modes and agents in one list.
//! Selecting a value sends the same control a user would type (`/mode`,
//! `/agent`, `/model`), so the session tells every front end what changed.
//!
//! Pure; it never talks to a session.

use super::modes;
use crate::frontend::common::backend::Choices;
use agent_client_protocol::v1::schema::{
    SessionConfigId, SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption,
};
use agentbus_engine::protocol::PermissionMode;

pub const MODE: &str = "mode";
pub const AGENT: &str = "agent";
pub const MODEL: &str = "model";

/// What the session runs with now, as its events told it.
#[derive(Clone, Copy, Debug)]
pub struct Current<'a> {
    pub mode: PermissionMode,
    /// `None` until the session said (a session starts as `build`).
    pub agent: Option<&'a str>,
    pub model: Option<&'a str>,
}

/// Every picker, its current value marked. The agent and model pickers are
/// left out when there is nothing to choose from or the current value is
/// not known yet.
pub fn options(current: Current<'_>, choices: &Choices) -> Vec<SessionConfigOption> {
    let mut options = vec![mode_picker(current.mode)];
    if !choices.agents.is_empty() {
        let agents = choices
            .agents
            .iter()
            .map(|a| {
                SessionConfigSelectOption::new(a.name.clone(), a.name.clone())
                    .description(non_empty(&a.description))
            })
            .collect::<Vec<_>>();
        options.push(
            SessionConfigOption::select(
                AGENT,
                "Agent",
                current.agent.unwrap_or("build").to_string(),
                agents,
            )
            .description("The named agent: its prompt, tools, model and mode".to_string())
            .category(SessionConfigOptionCategory::Other("agent".into())),
        );
    }
    if let Some(model) = current.model
        && !choices.models.is_empty()
    {
        let models = choices
            .models
            .iter()
            .map(|m| SessionConfigSelectOption::new(m.clone(), m.clone()))
            .collect::<Vec<_>>();
        options.push(
            SessionConfigOption::select(MODEL, "Model", model.to_string(), models)
                .description("The model profile the next request uses".to_string())
                .category(SessionConfigOptionCategory::Model),
        );
    }
    options
}

fn mode_picker(current: PermissionMode) -> SessionConfigOption {
    let modes = modes::PERMISSION_MODES
        .into_iter()
        .map(|mode| {
            SessionConfigSelectOption::new(mode.as_str(), modes::title(mode))
                .description(mode.describe().to_string())
        })
        .collect::<Vec<_>>();
    SessionConfigOption::select(MODE, "Mode", current.as_str(), modes)
        .description("What runs without asking first".to_string())
        .category(SessionConfigOptionCategory::Mode)
}

fn non_empty(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_string())
}

/// The input that sets option `id` to `value`, or why it cannot be set.
pub fn switch_input(
    id: &SessionConfigId,
    value: &SessionConfigOptionValue,
    choices: &Choices,
) -> Result<String, String> {
    let Some(value) = value.as_value_id() else {
        return Err(format!(
            "option `{}` takes one of its values' ids, not a boolean",
            id.0
        ));
    };
    let value = &*value.0;
    match &*id.0 {
        MODE => modes::switch_input(&modes::id_of_str(value), choices),
        AGENT => {
            if choices.agents.iter().any(|a| a.name == value) {
                Ok(format!("/agent {value}"))
            } else {
                Err(format!(
                    "no agent `{value}`; expected one of {}",
                    choices
                        .agents
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            }
        }
        MODEL => {
            if choices.models.iter().any(|m| m == value) {
                Ok(format!("/model {value}"))
            } else {
                Err(format!(
                    "no model profile `{value}`; expected one of {}",
                    choices.models.join(", ")
                ))
            }
        }
        other => Err(format!(
            "no option `{other}`; expected one of {MODE}, {AGENT}, {MODEL}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{SessionConfigKind, SessionConfigSelectOptions};
    use agentbus_engine::protocol::AgentInfo;

    fn choices() -> Choices {
        Choices {
            agents: ["build", "plan", "reviewer"]
                .into_iter()
                .map(|name| AgentInfo {
                    name: name.into(),
                    description: format!("the {name} agent"),
                    source: "built-in".into(),
                })
                .collect(),
            models: vec!["fast".into(), "smart".into()],
        }
    }

    fn picked(option: &SessionConfigOption) -> (String, Vec<String>) {
        let SessionConfigKind::Select(select) = &option.kind else {
            panic!("{option:?}");
        };
        let SessionConfigSelectOptions::Ungrouped(values) = &select.options else {
            panic!("{option:?}");
        };
        (
            select.current_value.0.to_string(),
            values.iter().map(|v| v.value.0.to_string()).collect(),
        )
    }

    #[test]
    fn mode_agent_and_model_are_offered_with_what_is_in_force() {
        let current = Current {
            mode: PermissionMode::AcceptEdits,
            agent: Some("reviewer"),
            model: Some("smart"),
        };
        let options = options(current, &choices());
        let ids: Vec<&str> = options.iter().map(|o| &*o.id.0).collect();
        assert_eq!(ids, [MODE, AGENT, MODEL]);
        assert_eq!(
            picked(&options[0]),
            (
                "accept-edits".into(),
                vec![
                    "default".into(),
                    "accept-edits".into(),
                    "plan".into(),
                    "bypass".into()
                ]
            )
        );
        assert_eq!(picked(&options[1]).0, "reviewer");
        assert_eq!(picked(&options[1]).1, ["build", "plan", "reviewer"]);
        assert_eq!(
            picked(&options[2]),
            ("smart".into(), vec!["fast".into(), "smart".into()])
        );
    }

    #[test]
    fn without_agents_or_a_known_model_only_the_mode_is_offered() {
        let current = Current {
            mode: PermissionMode::Default,
            agent: None,
            model: None,
        };
        let options = options(current, &Choices::default());
        assert_eq!(options.len(), 1);
        assert_eq!(&*options[0].id.0, MODE);
    }

    #[test]
    fn each_option_switches_with_its_command_and_a_wrong_value_is_named() {
        let c = choices();
        let set = |id: &str, value: &str| {
            switch_input(
                &SessionConfigId::new(id),
                &SessionConfigOptionValue::from(value),
                &c,
            )
        };
        assert_eq!(set(MODE, "plan").unwrap(), "/mode plan");
        assert_eq!(set(AGENT, "reviewer").unwrap(), "/agent reviewer");
        assert_eq!(set(MODEL, "fast").unwrap(), "/model fast");
        let err = set(AGENT, "nobody").unwrap_err();
        assert!(
            err.contains("`nobody`") && err.contains("reviewer"),
            "{err}"
        );
        let err = set(MODEL, "huge").unwrap_err();
        assert!(err.contains("`huge`") && err.contains("smart"), "{err}");
        let err = set("colour", "red").unwrap_err();
        assert!(err.contains("`colour`"), "{err}");
        let err = switch_input(
            &SessionConfigId::new(MODE),
            &SessionConfigOptionValue::boolean(true),
            &c,
        )
        .unwrap_err();
        assert!(err.contains("boolean"), "{err}");
    }
}
