//! What the core reacts to.

use crate::model::{ModelEvent, ToolOutcome};
use crate::protocol::{ApprovalDecision, InputId, McpServerStatus, SystemEvent, UserInput};
use std::collections::{BTreeMap, BTreeSet};

/// One input to [`step`](super::step).
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// The session came to life: created, or `resumed` from the store.
    Started { resumed: bool },
    /// A front end submitted a query or control command. The driver takes
    /// `input_id` from [`SessionState::next_input_id`](super::SessionState::next_input_id).
    Submit { input_id: InputId, input: UserInput },
    /// Cancel the running turn now.
    Interrupt,
    /// The process is stopping: cancel the running turn and answer every
    /// queued input without running it.
    Shutdown,
    /// The model call `request_id` streamed an event.
    Model { request_id: u64, event: ModelEvent },
    /// The model call `request_id` failed for good. `too_long`: the
    /// provider refused the request as longer than its context window,
    /// with the sizes it stated.
    ModelFailed {
        request_id: u64,
        error: String,
        too_long: Option<crate::model::ContextRefusal>,
    },
    /// The hooks of [`Effect::RunHook`](super::Effect::RunHook) `hook_id`
    /// ran: what they answered, folded, and each run's report.
    HookDone {
        hook_id: u64,
        answer: crate::protocol::hook::HookAnswer,
        ran: Vec<crate::protocol::hook::HookRan>,
    },
    /// Hooks the driver ran on its own (after a tool call, for a
    /// notification, a compaction): told on the stream.
    HooksRan {
        turn_id: Option<InputId>,
        ran: Vec<crate::protocol::hook::HookRan>,
    },
    /// One call of tool batch `batch_id` finished.
    ToolFinished {
        batch_id: u64,
        call_id: String,
        outcome: ToolOutcome,
        /// What it changed in the workspace, as kept (the driver's
        /// checkpoint), for its `tool_result` event.
        checkpoint: Option<crate::protocol::checkpoint::CheckpointRef>,
    },
    /// The driver performed the session command of input `input_id`.
    /// A child session of a `task` call of batch `batch_id` started or
    /// ended (its outcome comes as the call's `ToolFinished`).
    Subagent {
        batch_id: u64,
        update: SubagentUpdate,
    },
    CommandDone {
        input_id: InputId,
        reply: SystemEvent,
    },
    /// A front end answered approval request `request_id` (bypassing the
    /// queue). Answers to a request already settled are ignored: the first
    /// wins (the driver can tell with
    /// [`SessionState::is_waiting_for`](super::SessionState::is_waiting_for)).
    Approval {
        request_id: String,
        decision: ApprovalDecision,
    },
    /// The approval timer of `request_id` ran out.
    ApprovalTimedOut { request_id: String },
    /// The driver tried to save an allow rule to the workspace's
    /// `.agentbus.toml`: `Ok(path)` or why not.
    RuleSaved {
        rule: String,
        result: Result<String, String>,
    },
    /// The tools or the MCP servers changed (a server came up, crashed,
    /// changed its tool list). Also fed once right after `Started`.
    CatalogChanged {
        tools: crate::model::ToolList,
        servers: BTreeMap<String, McpServerStatus>,
        /// The servers on their first start: starting, and never ready,
        /// restarting or failed before (the first turn waits for them).
        first_start: BTreeSet<String>,
        /// The prompts of the MCP servers given to this session alone (an
        /// editor's), for its system prompt.
        prompts: String,
    },
    /// The session was given MCP servers of its own (an editor's), or had
    /// some taken away, while it ran: its next turn waits for those still
    /// on their first start, as a first turn does. `notices` (what the
    /// driver found out about them: a name a configured server has) are
    /// shown.
    ServersGiven { notices: Vec<String> },
    /// The timer of [`Effect::McpWaitTimer`](super::Effect::McpWaitTimer)
    /// for turn `turn_id` ran out.
    McpWaitTimedOut { turn_id: InputId },
}

/// What the driver reports about a child session of a `task` call.
#[derive(Clone, Debug, PartialEq)]
pub enum SubagentUpdate {
    Started(crate::protocol::SubagentStarted),
    Finished(crate::protocol::SubagentFinished),
    /// The child asks for approval: re-told on the parent's stream as
    /// `CHILD/REQUEST`, tagged with the child.
    Approval {
        child: crate::protocol::SessionId,
        agent: String,
        request: crate::protocol::ApprovalRequestEvent,
    },
    /// A request of the child's was settled (by whichever front end, or
    /// its timeout): re-told on the parent's stream, so every front end of
    /// the parent closes it.
    Resolved {
        child: crate::protocol::SessionId,
        /// The child's `approval_resolved` event.
        event: crate::protocol::SystemEvent,
    },
}
