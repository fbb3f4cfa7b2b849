//! Named agents in a session: the built-in `build` and `plan`, the set a
//! session was started with, and what the active agent changes in a model
//! request — the system prompt it starts from, the tools offered, the step
//! limit.
//!
//! Exists so that one session can run as different agents (OpenCode's
//! `build`/`plan`, Claude Code's sub-agent files) while the rules stay in
//! the pure core: the definitions are read by the I/O layer
//! (`workspace_files::agent_files`, the binary's configuration) and arrive here as
//! data. Never reads a file, never decides where definitions come from.

use crate::model::{ToolList, ToolSpec};
use crate::protocol::{AgentDefinition, PermissionMode};
use serde::Serialize;

/// The tool that runs a named agent in a child session.
pub const TASK_TOOL: &str = "task";

/// The agent sessions start as.
pub const DEFAULT_AGENT: &str = "build";

/// The built-in planning agent.
pub const PLAN_AGENT: &str = "plan";

/// The plan agent's prompt (placeholders `{workspace}`, `{os}` and
/// `{date}` are filled in where the definitions are loaded).
pub const PLAN_PROMPT: &str = include_str!("../../../../config/prompts/plan.md");

/// `build` and `plan`, as every session has them (a configuration or a
/// file may redefine either).
pub fn builtin() -> Vec<AgentDefinition> {
    vec![
        AgentDefinition {
            name: DEFAULT_AGENT.into(),
            description: "The default agent: reads, edits and runs commands in the workspace to do the task.".into(),
            source: "built-in".into(),
            ..AgentDefinition::default()
        },
        AgentDefinition {
            name: PLAN_AGENT.into(),
            description: "Plans without changing anything: investigates with read-only tools (permission mode plan) and answers with a plan.".into(),
            prompt: Some(PLAN_PROMPT.into()),
            permission_mode: Some(PermissionMode::Plan),
            source: "built-in".into(),
            ..AgentDefinition::default()
        },
    ]
}

/// The agents a session can run as, and the definitions that could not be
/// used.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgentSet {
    /// By name; a later definition of a name replaced an earlier one.
    pub agents: Vec<AgentDefinition>,
    /// Each a sentence naming the file and the field that was wrong.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl Default for AgentSet {
    fn default() -> Self {
        AgentSet {
            agents: builtin(),
            problems: Vec::new(),
        }
    }
}

impl AgentSet {
    /// `definitions` over the built-in ones, in order (a later one of the
    /// same name wins).
    pub fn with(definitions: Vec<AgentDefinition>, problems: Vec<String>) -> Self {
        let mut set = AgentSet {
            problems,
            ..AgentSet::default()
        };
        for definition in definitions {
            set.insert(definition);
        }
        set
    }

    /// Add a definition, replacing one of the same name in place.
    pub fn insert(&mut self, definition: AgentDefinition) {
        match self.agents.iter_mut().find(|a| a.name == definition.name) {
            Some(slot) => *slot = definition,
            None => self.agents.push(definition),
        }
    }

    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// The names, comma-separated (for "unknown agent" messages).
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.agents.iter().map(|a| a.name.as_str()).collect();
        names.join(", ")
    }
}

/// The `task` tool as the model sees it: its description lists the agents
/// it can run.
pub fn task_spec(set: &AgentSet) -> ToolSpec {
    let names: Vec<&str> = set.agents.iter().map(|a| a.name.as_str()).collect();
    let listed: String = set
        .agents
        .iter()
        .map(|a| format!("\n- {}: {}", a.name, a.description))
        .collect();
    ToolSpec {
        name: TASK_TOOL.into(),
        description: format!(
            "Hand a self-contained task to a named agent, which works on it in a session of its own (with its own tools) and answers with its final report, which becomes this call's result. Give it everything it needs in `prompt`: it does not see this conversation. Several task calls in one reply run at once.\n\nAgents:{listed}"
        ),
        input_schema: std::sync::Arc::new(serde_json::json!({
            "type": "object",
            "properties": {
                "description": {"type": "string", "description": "A short (3-5 words) description of the task"},
                "prompt": {"type": "string", "description": "The task for the agent, complete in itself"},
                "agent": {"type": "string", "enum": names, "description": "Which agent does it"}
            },
            "required": ["description", "prompt", "agent"],
            "additionalProperties": false
        })),
        origin: crate::model::ToolOrigin::Builtin,
    }
}

/// Whether `pattern` (a tool name, or a prefix ending in `*`) matches
/// `tool`.
fn matches(pattern: &str, tool: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => tool.starts_with(prefix),
        None => pattern == tool,
    }
}

/// Whether `agent` may use `tool`: in its allow list (when it has one) and
/// not in its deny list.
pub fn allows(agent: Option<&AgentDefinition>, tool: &str) -> bool {
    let Some(agent) = agent else { return true };
    let allowed = agent
        .tools
        .as_ref()
        .is_none_or(|list| list.iter().any(|p| matches(p, tool)));
    allowed && !agent.disallowed_tools.iter().any(|p| matches(p, tool))
}

/// The tools `agent` is offered, out of `tools`.
pub fn offered(agent: Option<&AgentDefinition>, tools: &ToolList) -> ToolList {
    let limited = agent.is_some_and(|a| a.tools.is_some() || !a.disallowed_tools.is_empty());
    if !limited {
        return tools.clone();
    }
    let kept: Vec<ToolSpec> = tools
        .iter()
        .filter(|t| allows(agent, &t.name))
        .cloned()
        .collect();
    std::sync::Arc::new(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: std::sync::Arc::new(serde_json::json!({"type": "object"})),
            origin: crate::model::ToolOrigin::Builtin,
        }
    }

    #[test]
    fn an_allow_list_and_a_deny_list_limit_the_tools_offered() {
        let tools: ToolList = std::sync::Arc::new(vec![
            tool("read_file"),
            tool("bash"),
            tool("mcp__gh__issue"),
            tool("mcp__gh__pr"),
        ]);
        let agent = AgentDefinition {
            tools: Some(vec!["read_file".into(), "mcp__gh__*".into()]),
            disallowed_tools: vec!["mcp__gh__pr".into()],
            ..AgentDefinition::default()
        };
        let names: Vec<String> = offered(Some(&agent), &tools)
            .iter()
            .map(|t| t.name.clone())
            .collect();
        assert_eq!(names, ["read_file", "mcp__gh__issue"]);
        assert_eq!(offered(None, &tools).len(), 4);
        assert!(!allows(Some(&agent), "bash"));
    }

    #[test]
    fn a_later_definition_replaces_a_built_in_one() {
        let set = AgentSet::with(
            vec![AgentDefinition {
                name: "plan".into(),
                description: "mine".into(),
                ..AgentDefinition::default()
            }],
            Vec::new(),
        );
        assert_eq!(set.agents.len(), 2);
        assert_eq!(
            set.get("plan").map(|a| a.description.as_str()),
            Some("mine")
        );
        assert_eq!(set.names(), "build, plan");
    }
}
