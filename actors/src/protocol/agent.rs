//! Named agents as data: what an agent is (a system prompt, a tool allow
//! list, a model, a permission mode, a step limit), as sessions keep and
//! show it, and the payloads of the `system` events about them.
//!
//! Plain data. Where definitions come from (the built-in `build` and
//! `plan`, `[agents.NAME]` in the configuration, `.agentbus/agents/*.md`
//! and `.claude/agents/*.md`) is the loaders' business; what selecting one
//! does to a session is the core's (`session::core::agents`).

use super::PermissionMode;
use serde::{Deserialize, Serialize};

/// One named agent, resolved: every tool name is agentbus's own (Claude
/// Code's `Read`, `Bash`, ... are mapped when the file is read).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentDefinition {
    pub name: String,
    /// When to use it (shown by `/agent`, and to the model in the `task`
    /// tool's description).
    pub description: String,
    /// The system prompt; `None`: the configured one. Project
    /// instructions (`AGENTS.md`) and MCP servers' prompts are appended
    /// either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Only these tools are offered (`None`: every tool). An entry ending
    /// in `*` matches every tool whose name starts with the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// Never offered (same patterns as `tools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disallowed_tools: Vec<String>,
    /// A model profile; `None`: the session keeps its model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The permission mode selecting it switches to; `None`: the
    /// configured mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<PermissionMode>,
    /// Most model calls per turn (`None`: `max_steps`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Where it was defined: `built-in`, a configuration file, or the path
    /// of its Markdown file.
    pub source: String,
    /// What the user should know about how the definition was read, e.g.
    /// "model `sonnet` is Claude Code's: the session's model is kept".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl AgentDefinition {
    /// The short description front ends list.
    pub fn info(&self) -> AgentInfo {
        AgentInfo {
            name: self.name.clone(),
            description: self.description.clone(),
            source: self.source.clone(),
        }
    }
}

/// An agent as listed (`/agent`, the runtime's list, ACP modes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub name: String,
    pub description: String,
    /// `built-in`, a configuration file, or the Markdown file's path.
    pub source: String,
}

/// `system` subtype `agent`: the session switched agents (`/agent NAME`,
/// the `switch_agent` control command). Persisted; loading the session
/// folds it (agent, model and mode come back).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentSwitched {
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// The model profile the session runs with now.
    pub model: String,
    /// The permission mode now.
    pub permission_mode: PermissionMode,
}

/// `system` subtype `agents`: `/agent` without a name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentList {
    pub agents: Vec<AgentInfo>,
    /// The session's agent.
    pub active: String,
    /// Agent files that could not be used, each naming the file and the
    /// field.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// `system` subtype `subagent_started`: a `task` call of this session
/// started a child session running a named agent. Front ends follow the
/// child on its own stream (`child`). Persisted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SubagentStarted {
    pub child: super::SessionId,
    /// The `task` call it runs for.
    pub call_id: String,
    pub agent: String,
    /// The call's short description of the task.
    pub description: String,
}

/// `system` subtype `subagent_finished`: the child session's turn ended;
/// its final text is the `task` call's result. Its usage is counted in
/// this session's turn. Persisted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubagentFinished {
    pub child: super::SessionId,
    pub call_id: String,
    pub agent: String,
    pub stop_reason: super::StopReason,
    pub usage: super::Usage,
}
