//! The conversation state the core owns. Serialisable (that is what `/debug`
//! shows), and free of secrets by construction: model profiles appear here
//! only as [`ModelInfo`], which has no key.

use super::agents::AgentSet;
use super::context::compaction::CompactionCall;
use super::context::state::ContextState;
use super::custom_commands::CustomCommands;
use super::instructions::Instructions;
use super::permission::{PermissionConfig, PermissionState};
use super::skills::Skills;
use super::turn::Turn;
use crate::protocol::{
    ContextConfig, InputId, McpServerStatus, Message, ModelInfo, SessionId, Usage, UserInput,
};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// Settings fixed when the session is created.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionConfig {
    /// The configured prompt (an agent with a prompt of its own replaces
    /// it).
    pub system_prompt: String,
    /// The prompts of the MCP servers, appended to whichever prompt the
    /// agent starts from (empty: none).
    pub tool_prompts: String,
    /// The named agents the session can run as.
    pub agents: AgentSet,
    /// The custom slash commands (Markdown files) read when the session
    /// was created or loaded.
    pub commands: CustomCommands,
    /// Offer the `task` tool (sub-agents). Off in child sessions: a child
    /// never starts children of its own (depth 1).
    pub task_tool: bool,
    /// Offer the plan tool, `todo_write` (`plan.rs`). Off where
    /// `disallowed_tools` names it, and for embedded agents.
    pub plan_tool: bool,
    /// The instruction files (`AGENTS.md`, `CLAUDE.md`) read when the
    /// session was created or loaded, appended to `system_prompt`.
    pub instructions: Instructions,
    /// The skills (`SKILL.md` folders) read when the session was created
    /// or loaded: listed after the instructions, loaded by the `skill`
    /// tool (offered when there are any).
    #[serde(skip_serializing_if = "Skills::is_empty")]
    pub skills: Skills,
    /// Most model calls one turn may make.
    pub max_steps: u32,
    /// Emit `stream_event`s (false: only whole messages).
    pub include_partial_messages: bool,
    /// Every configured profile, for `/model` and `/models`.
    /// Shared by every session of the node (the settings' profiles).
    pub models: Arc<[ModelInfo]>,
    /// The workspace directory, shown at session start.
    pub workspace: String,
    /// `[context]` as configured globally (profiles and the session may
    /// override keys; see `context::config`).
    pub context: ContextConfig,
    /// The instructions a summary is written with.
    pub compact_prompt: String,
    /// The mode it starts in, the rules, the roots, the sandbox.
    pub permissions: PermissionConfig,
    /// The longest the first model call waits for MCP servers on their
    /// first start (`[mcp] first_turn_wait_secs`; 0: it never waits).
    pub mcp_first_turn_wait_ms: u64,
    /// The hooks the session runs (the workspace's only once trusted),
    /// and what it says at start about those it does not.
    pub hooks: crate::protocol::hook::HookSet,
}

impl SessionConfig {
    /// The system prompt every request of `agent` starts from: the
    /// agent's own prompt or else the configured one, then the MCP
    /// servers' prompts (the configured ones', then `server_prompts`, those
    /// of the servers given to the session), then the instructions, then
    /// the skills' listing.
    pub fn base_prompt<'a>(
        &'a self,
        agent: &str,
        server_prompts: &str,
    ) -> std::borrow::Cow<'a, str> {
        let definition = self.agents.get(agent);
        let prompt = definition
            .and_then(|a| a.prompt.as_deref())
            .unwrap_or(&self.system_prompt);
        // An agent not given the `skill` tool is not told of skills.
        let skills =
            !self.skills.is_empty() && super::agents::allows(definition, super::skills::SKILL_TOOL);
        if self.instructions.is_empty()
            && self.tool_prompts.is_empty()
            && server_prompts.is_empty()
            && !skills
        {
            std::borrow::Cow::Borrowed(prompt)
        } else {
            std::borrow::Cow::Owned(format!(
                "{prompt}{}{server_prompts}{}{}",
                self.tool_prompts,
                self.instructions.section(),
                if skills {
                    self.skills.section()
                } else {
                    String::new()
                }
            ))
        }
    }
}

/// Token usage of the session.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SessionUsage {
    pub total: Usage,
    pub last_turn: Usage,
    pub model_calls: u64,
    pub turns: u64,
    /// US dollars spent on turns whose profile has prices; `None` until one has.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// What the session knows about waiting for MCP servers (the rules are in
/// `mcp_wait.rs`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct McpWait {
    /// Servers on their first start, as the tool catalog last said.
    pub first_start: BTreeSet<String>,
    /// The session's first turn has begun: no later turn waits.
    pub spent: bool,
}

/// An input waiting in the session's FIFO.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueuedInput {
    pub input_id: InputId,
    pub input: UserInput,
}

/// The whole state of one session.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionState {
    pub session_id: SessionId,
    pub config: SessionConfig,
    /// The current model profile's name.
    pub model: String,
    /// The named agent it runs as.
    pub agent: String,
    /// Every tool of the catalog (the agent may be offered fewer: see
    /// [`offered_tools`](Self::offered_tools)).
    pub tools: crate::model::ToolList,
    /// How each MCP server is doing, as last reported to this session.
    pub mcp_servers: BTreeMap<String, McpServerStatus>,
    /// The prompts of the MCP servers given to this session alone, as the
    /// catalog last said (appended after the configured servers' prompts).
    pub server_prompts: String,
    /// Which servers are on their first start, and whether the first turn
    /// (the one that may wait for them) has begun.
    pub mcp_wait: McpWait,
    pub history: Vec<Message>,
    pub usage: SessionUsage,
    pub queue: VecDeque<QueuedInput>,
    pub turn: Option<Turn>,
    /// What the session keeps about its context window (the summary, the
    /// token counts).
    pub context: ContextState,
    /// A compaction whose model call is running.
    pub compacting: Option<CompactionCall>,
    /// A session command the driver is performing; the queue waits for it.
    pub pending_command: Option<InputId>,
    /// The permission mode now, and the rules "allow always" added.
    pub permissions: PermissionState,
    /// The hook runs it waits for, and what `SessionStart` hooks added.
    pub hooks: super::hooks::HookState,
    /// The model's checklist, as its last `todo_write` call left it
    /// (`plan.rs`).
    pub plan: Vec<crate::protocol::PlanItem>,
    /// What its tool calls' checkpoints kept (for `/debug`).
    pub checkpoints: CheckpointStats,
    pub(super) next_input_id: InputId,
    pub(super) next_request_id: u64,
}

impl SessionState {
    /// A fresh session with an empty history.
    pub fn new(
        session_id: SessionId,
        config: SessionConfig,
        model: String,
        tools: crate::model::ToolList,
    ) -> Self {
        SessionState {
            session_id,
            permissions: PermissionState::new(&config.permissions),
            config,
            model,
            agent: super::agents::DEFAULT_AGENT.to_string(),
            tools,
            mcp_servers: BTreeMap::new(),
            server_prompts: String::new(),
            mcp_wait: McpWait::default(),
            history: Vec::new(),
            usage: SessionUsage::default(),
            queue: VecDeque::new(),
            turn: None,
            context: ContextState::default(),
            compacting: None,
            pending_command: None,
            hooks: Default::default(),
            plan: Vec::new(),
            checkpoints: CheckpointStats::default(),
            next_input_id: 1,
            next_request_id: 1,
        }
    }

    /// The id the next submitted input will get.
    pub fn next_input_id(&self) -> InputId {
        self.next_input_id
    }

    /// Whether a turn or a session command is running.
    pub fn is_busy(&self) -> bool {
        self.turn.is_some() || self.pending_command.is_some() || self.compacting.is_some()
    }

    /// The batch of tool calls running now, if any: once a batch is no
    /// longer running, its calls' cancellation can be let go.
    pub fn running_tool_batch(&self) -> Option<u64> {
        match &self.turn.as_ref()?.phase {
            super::turn::Phase::RunningTools { batch_id, .. } => Some(*batch_id),
            super::turn::Phase::Attaching(attaching) => Some(attaching.batch_id),
            super::turn::Phase::Streaming { .. }
            | super::turn::Phase::Compacting
            | super::turn::Phase::WaitingForMcp
            | super::turn::Phase::PromptHook(_)
            | super::turn::Phase::StopHook { .. } => None,
        }
    }

    /// The model call streaming now, if any: once a call is no longer
    /// streaming, its cancellation can be let go.
    pub fn running_model_call(&self) -> Option<u64> {
        if let Some(compaction) = &self.compacting {
            return Some(compaction.request_id);
        }
        match &self.turn.as_ref()?.phase {
            super::turn::Phase::Streaming { request_id, .. } => Some(*request_id),
            super::turn::Phase::RunningTools { .. }
            | super::turn::Phase::Attaching(_)
            | super::turn::Phase::Compacting
            | super::turn::Phase::WaitingForMcp
            | super::turn::Phase::PromptHook(_)
            | super::turn::Phase::StopHook { .. } => None,
        }
    }

    /// How many tool calls of the running batch wait for the user's
    /// approval.
    pub fn pending_approvals(&self) -> u32 {
        match self.turn.as_ref().map(|t| &t.phase) {
            Some(super::turn::Phase::RunningTools { calls, .. }) => {
                calls.iter().filter(|c| c.waiting.is_some()).count() as u32
            }
            _ => 0,
        }
    }

    /// Nothing running and nothing queued.
    pub fn is_idle(&self) -> bool {
        !self.is_busy() && self.queue.is_empty()
    }

    /// Add a finished turn's usage (and its cost, when the profile has
    /// prices) to the session's totals.
    pub(super) fn count_turn(&mut self, usage: crate::protocol::Usage) {
        if let Some(pricing) = self.current_model().and_then(|m| m.pricing) {
            *self.usage.cost_usd.get_or_insert(0.0) += pricing.cost(&usage);
        }
        self.usage.total += usage;
        self.usage.last_turn = usage;
        self.usage.turns += 1;
    }

    /// Add a model call made outside any turn's count (a compaction) to
    /// the session's totals.
    pub(super) fn count_call(&mut self, usage: Usage) {
        if let Some(pricing) = self.current_model().and_then(|m| m.pricing) {
            *self.usage.cost_usd.get_or_insert(0.0) += pricing.cost(&usage);
        }
        self.usage.total += usage;
        self.usage.model_calls += 1;
    }

    /// The definition of the agent the session runs as (`None`: a name no
    /// longer defined; it then runs like `build`).
    pub fn current_agent(&self) -> Option<&crate::protocol::AgentDefinition> {
        self.config.agents.get(&self.agent)
    }

    /// The tools the model is offered: the catalog's, as the agent limits
    /// them.
    pub fn offered_tools(&self) -> crate::model::ToolList {
        let agent = self.current_agent();
        let tools = super::agents::offered(agent, &self.tools);
        let tools = super::plan::offer(self.plan_tool_given(), tools);
        let task = self.config.task_tool && super::agents::allows(agent, super::agents::TASK_TOOL);
        let skill = self.skill_tool();
        if !task && !skill {
            return tools;
        }
        let mut with_task = tools.to_vec();
        if task {
            with_task.push(super::agents::task_spec(&self.config.agents));
        }
        if skill {
            with_task.push(self.config.skills.tool_spec());
        }
        std::sync::Arc::new(with_task)
    }

    /// Whether the model is offered the `skill` tool: the session has
    /// skills and the agent is not denied the tool.
    pub fn skill_tool(&self) -> bool {
        !self.config.skills.is_empty()
            && super::agents::allows(self.current_agent(), super::skills::SKILL_TOOL)
    }

    /// Whether the model may call `todo_write`: the session has the plan
    /// tool and the agent's tool list allows it.
    pub fn plan_tool_given(&self) -> bool {
        self.config.plan_tool
            && super::agents::allows(self.current_agent(), crate::protocol::plan::TODO_WRITE)
    }

    /// Most model calls a turn may make: the agent's limit, else
    /// `max_steps`.
    pub fn max_steps(&self) -> u32 {
        self.current_agent()
            .and_then(|a| a.max_steps)
            .unwrap_or(self.config.max_steps)
            .max(1)
    }

    /// The system prompt the agent's requests start from.
    pub fn base_prompt(&self) -> std::borrow::Cow<'_, str> {
        let prompt = self.config.base_prompt(&self.agent, &self.server_prompts);
        if self.hooks.session_context.is_empty() {
            return prompt;
        }
        std::borrow::Cow::Owned(format!(
            "{prompt}\n\n# Session start hooks\n{}",
            self.hooks.session_context.join("\n\n")
        ))
    }

    /// The current profile's description, if it is configured.
    pub fn current_model(&self) -> Option<&ModelInfo> {
        self.config.models.iter().find(|m| m.name == self.model)
    }

    pub(super) fn take_request_id(&mut self) -> u64 {
        let id = self.next_request_id;
        self.next_request_id += 1;
        id
    }
}

/// What a session's checkpoints kept, counted from its `tool_result`
/// events (`/debug`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CheckpointStats {
    /// Tool calls whose changes were kept.
    pub kept: u64,
    /// Files they changed (a file changed twice counts twice).
    pub files: u64,
    /// A limit of `[checkpoints]` was hit and the user was told.
    pub limit_said: bool,
    /// The bytes of blobs its checkpoints keep, as last told.
    pub bytes: u64,
}

impl CheckpointStats {
    /// Count one call's checkpoint.
    pub fn count(&mut self, checkpoint: &crate::protocol::checkpoint::CheckpointRef) {
        if !checkpoint.files.is_empty() {
            self.kept += 1;
            self.files += checkpoint.files.len() as u64;
        }
        if checkpoint.session_bytes > 0 {
            self.bytes = checkpoint.session_bytes;
        }
    }
}
