//! What the core asks its driver to do.

use crate::model::{GrantedCall, ModelRequest};
use crate::protocol::{AgentMessage, InputId};
use serde::Serialize;

/// One request from [`step`](super::step) to the driver, performed in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Publish an event (persisting it first when its type is persisted).
    Emit {
        turn_id: Option<InputId>,
        message: AgentMessage,
    },
    /// Start a streaming model call; feed its events back as
    /// [`Input::Model`](super::Input::Model) with the same `request_id`.
    CallModel {
        request_id: u64,
        request: ModelRequest,
    },
    /// Stop the model call `request_id`; its later events are ignored.
    CancelModel { request_id: u64 },
    /// Run these calls (concurrently) with what each was granted; feed
    /// each outcome back as [`Input::ToolFinished`](super::Input::ToolFinished).
    /// A batch may start in parts: a call that waited for approval joins
    /// its batch later.
    RunTools {
        batch_id: u64,
        calls: Vec<GrantedCall>,
    },
    /// Stop every still-running call of `batch_id`.
    CancelTools { batch_id: u64 },
    /// Feed [`Input::ApprovalTimedOut`](super::Input::ApprovalTimedOut)
    /// after `after_ms`, unless the request is settled first (a late one is
    /// ignored).
    ApprovalTimer { request_id: String, after_ms: u64 },
    /// Feed [`Input::McpWaitTimedOut`](super::Input::McpWaitTimedOut)
    /// after `after_ms`: the longest turn `turn_id`'s first model call
    /// waits for MCP servers on their first start (a late one is ignored).
    McpWaitTimer { turn_id: InputId, after_ms: u64 },
    /// Add `rule` to `[permissions] allow` in the workspace's
    /// `.agentbus.toml`; answer with
    /// [`Input::RuleSaved`](super::Input::RuleSaved).
    SaveRule { rule: String },
    /// Run the hooks of `event` about `tool` (if any) with `fields`, the
    /// event's part of the JSON they read; answer with
    /// [`Input::HookDone`](super::Input::HookDone) and the same `hook_id`.
    RunHook {
        hook_id: u64,
        event: crate::protocol::hook::HookEvent,
        tool: Option<String>,
        fields: serde_json::Map<String, serde_json::Value>,
    },
    /// Perform a command that needs the store; answer with
    /// [`Input::CommandDone`](super::Input::CommandDone). The queue waits.
    SessionCommand {
        input_id: InputId,
        command: SessionCommand,
    },
}

/// Commands the core cannot answer alone: they read or write stored sessions.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum SessionCommand {
    /// Create a new session for the front end to switch to.
    New,
    /// List the stored sessions.
    List,
    /// Find a stored session (id or unique prefix) to switch to.
    Resume { id: String },
    /// Copy this session up to `at_seq` (default: now) into a new session.
    Fork { at_seq: Option<u64> },
    /// Export this session to a file (relative to the workspace).
    Save { path: String },
    /// Import a file as a new session to switch to.
    Load { path: String },
    /// The user turns and what each changed (`seq` `None`), or a rewind to
    /// before turn `seq`.
    Rewind {
        seq: Option<u64>,
        mode: crate::protocol::checkpoint::RewindMode,
        overwrite: bool,
    },
    /// Take back the last turn's file changes.
    Undo { overwrite: bool },
}

impl SessionCommand {
    /// The slash command it came from.
    pub fn name(&self) -> &'static str {
        match self {
            SessionCommand::New => "new",
            SessionCommand::List => "sessions",
            SessionCommand::Resume { .. } => "resume",
            SessionCommand::Fork { .. } => "fork",
            SessionCommand::Save { .. } => "save",
            SessionCommand::Load { .. } => "load",
            SessionCommand::Rewind { .. } => "rewind",
            SessionCommand::Undo { .. } => "undo",
        }
    }
}
