//! `/agent [NAME]` — lists the named agents (with their descriptions, the
//! active one marked, and any agent file that could not be used), or
//! switches to one: its prompt, tools, model and permission mode apply
//! from the next model call; the history is kept.

use super::syntax::SlashCommand;
use crate::protocol::{AgentList, AgentSwitched, ControlCommand, SystemEvent, SystemSubtype};
use crate::session::core::SessionState;

pub const COMMAND: SlashCommand = SlashCommand {
    name: "agent",
    usage: "/agent [NAME]",
    summary: "list the named agents, or switch to one (build, plan, your own)",
    parse,
};

fn parse(args: &str) -> Result<ControlCommand, String> {
    let name = args.trim();
    if name.is_empty() {
        return Ok(ControlCommand::ListAgents);
    }
    if name.split_whitespace().nth(1).is_some() {
        return Err(format!(
            "/agent takes one agent name, got `{name}`. Type /agent to list them."
        ));
    }
    Ok(ControlCommand::SwitchAgent { name: name.into() })
}

/// Make `name` the session's agent: its model (when it names a configured
/// profile) and its permission mode (else the configured one) apply.
/// `Err`: no agent has that name (the message lists the agents).
pub fn select(state: &mut SessionState, name: &str) -> Result<AgentSwitched, String> {
    let Some(agent) = state.config.agents.get(name).cloned() else {
        return Err(format!(
            "Unknown agent `{name}`; agents: {}.",
            state.config.agents.names()
        ));
    };
    let previous = std::mem::replace(&mut state.agent, agent.name.clone());
    if let Some(model) = agent
        .model
        .filter(|m| state.config.models.iter().any(|p| &p.name == m))
    {
        state.model = model;
    }
    state.permissions.mode = agent
        .permission_mode
        .unwrap_or(state.config.permissions.mode);
    Ok(AgentSwitched {
        agent: agent.name,
        previous: Some(previous),
        model: state.model.clone(),
        permission_mode: state.permissions.mode,
    })
}

/// Switch agents.
pub fn switch(state: &mut SessionState, name: &str) -> SystemEvent {
    match select(state, name) {
        Ok(switched) => {
            let notes = state
                .current_agent()
                .map(|a| {
                    a.notes
                        .iter()
                        .map(|n| format!("\n  note: {n}"))
                        .collect::<String>()
                })
                .unwrap_or_default();
            let message = format!(
                "Agent {} (was {}): model {}, permission mode {}.{notes}",
                switched.agent,
                switched.previous.as_deref().unwrap_or("none"),
                switched.model,
                switched.permission_mode
            );
            SystemEvent::new(message, &switched)
        }
        Err(why) => SystemEvent::bare(SystemSubtype::Notice, format!("/agent: {why}")),
    }
}

/// The agents, the active one marked, and the files that could not be
/// used.
pub fn list(state: &SessionState) -> SystemEvent {
    let agents = &state.config.agents;
    let mut lines: Vec<String> = agents
        .agents
        .iter()
        .map(|a| {
            let mark = if a.name == state.agent { "*" } else { " " };
            format!("{mark} {} — {} ({})", a.name, a.description, a.source)
        })
        .collect();
    for problem in &agents.problems {
        lines.push(format!("! {problem}"));
    }
    let message = format!(
        "Agents (* is active; /agent NAME switches):\n{}",
        lines.join("\n")
    );
    SystemEvent::new(
        message,
        &AgentList {
            agents: agents.agents.iter().map(|a| a.info()).collect(),
            active: state.agent.clone(),
            problems: agents.problems.clone(),
        },
    )
}
