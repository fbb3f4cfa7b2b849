//! What a session publishes: [`AgentMessage`]s, each in an [`EventEnvelope`].
//!
//! Every event, `stream_event`s included, takes the next `seq` of its session,
//! so a live subscriber sees 1, 2, 3, ... with no gap while one process
//! drives the session; a seq is never given twice, and a session loaded
//! after a crash continues above every seq the dead process may have shown
//! (a gap then, never a lost event). Serialised as JSON with
//! a snake_case `type` tag and the envelope fields inline:
//!
//! ```json
//! {"session_id":"…","seq":7,"turn_id":2,"at":"2026-11-22T10:00:00Z",
//!  "type":"tool_result","call_id":"call_1","name":"bash","is_error":false,
//!  "output":"hello\n","duration_ms":12}
//! ```

use super::{
    ApprovalChoice, ContentBlock, ContextUsage, PermissionMode, SessionId, StopReason, SystemEvent,
    Usage,
};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One published event with its place in the session's sequence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EventEnvelope {
    pub session_id: SessionId,
    /// Per-session and increasing, starting at 1; never given twice (gaps:
    /// unstored deltas in a replay, a reload after a crash).
    pub seq: u64,
    /// The input (query or control command) this event belongs to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<u64>,
    /// When the session produced the event.
    #[serde(serialize_with = "super::time::serialize")]
    pub at: DateTime<Utc>,
    #[serde(flatten)]
    pub message: AgentMessage,
}

/// The events of a session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentMessage {
    /// Session lifecycle, answers to control commands, notices. Persisted.
    System(SystemEvent),
    /// A query was accepted into the history. Persisted.
    User(UserEvent),
    /// Partial output while the model streams. Not persisted; front ends
    /// render it live and replace it with the `assistant` event that follows.
    StreamEvent(StreamEvent),
    /// One complete assistant message. Persisted.
    Assistant(AssistantEvent),
    /// One tool call finished. Persisted. Emitted in the order of the calls
    /// in the assistant message.
    ToolResult(ToolResultEvent),
    /// A tool call waits for the user's decision (an
    /// [`ApprovalDecision`](super::ApprovalDecision)); the other calls of its
    /// batch go on. A `system` event of subtype `approval_resolved` with the
    /// same `request_id` closes it. Persisted.
    ApprovalRequest(ApprovalRequestEvent),
    /// The turn ended. Exactly one per accepted query. Persisted.
    Result(ResultEvent),
    /// Something failed that the user must see. Persisted.
    Error(ErrorEvent),
}

impl AgentMessage {
    /// Whether the event belongs in the durable log (all but `stream_event`).
    pub fn is_persisted(&self) -> bool {
        !matches!(self, AgentMessage::StreamEvent(_))
    }

    /// The wire name of the event type.
    pub fn type_name(&self) -> &'static str {
        match self {
            AgentMessage::System(_) => "system",
            AgentMessage::User(_) => "user",
            AgentMessage::StreamEvent(_) => "stream_event",
            AgentMessage::Assistant(_) => "assistant",
            AgentMessage::ToolResult(_) => "tool_result",
            AgentMessage::ApprovalRequest(_) => "approval_request",
            AgentMessage::Result(_) => "result",
            AgentMessage::Error(_) => "error",
        }
    }
}

/// A `user` event: a query as the user gave it, entering the history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct UserEvent {
    /// What the user typed; front ends show this. For a slash command
    /// that runs as a query (`/init`, a custom command such as
    /// `/review src/main.rs`) it is the command line, as Claude Code shows
    /// it.
    pub text: String,
    /// What the model received instead of `text`, when that differs: the
    /// command's prompt, its arguments filled in. The history holds this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// The images the model received with it (their bytes too: a reloaded
    /// session sends them again).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<super::Image>,
    /// The name of the API token that sent it (through `agentbus serve`);
    /// absent for a front end in the same process, or a sub-agent's task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl UserEvent {
    /// A query the model receives as typed.
    pub fn new(text: impl Into<String>) -> Self {
        UserEvent {
            text: text.into(),
            prompt: None,
            images: Vec::new(),
            by: None,
        }
    }

    /// The text the model received: the prompt, else what was typed.
    pub fn model_text(&self) -> &str {
        self.prompt.as_deref().unwrap_or(&self.text)
    }
}

/// A `stream_event`: one piece of the assistant message being streamed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamEvent {
    pub event: StreamDelta,
}

/// The kind of block a `block_start` opens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BlockKind {
    Text,
    /// The model's reasoning (its deltas are `thinking_delta`s); it comes
    /// before the text it leads to.
    Thinking,
    ToolUse {
        id: String,
        name: String,
    },
}

/// Deltas of a streaming assistant message, by block index (blocks are
/// numbered from 0 in the order they open).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamDelta {
    /// A text, thinking or tool-use block opens.
    BlockStart { index: usize, block: BlockKind },
    /// More text for a text block.
    TextDelta { index: usize, text: String },
    /// More of the model's reasoning for a thinking block: front ends show
    /// it as thinking (dimmed, or an editor's thought), never as the answer.
    ThinkingDelta { index: usize, text: String },
    /// More of a tool call's JSON arguments (a fragment, not valid JSON alone).
    ToolInputDelta { index: usize, partial_json: String },
    /// The block is complete.
    BlockStop { index: usize },
    /// Everything streamed since the last `assistant` event is void (the
    /// provider attempt failed and is being retried): front ends erase it.
    Discard { reason: String },
}

/// An `assistant` event: one complete assistant message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AssistantEvent {
    pub content: Vec<ContentBlock>,
    /// The model profile that produced it.
    pub model: String,
    /// Tokens of this model call.
    pub usage: Usage,
    /// Why the model stopped: `end_turn`, `tool_use`, `max_tokens`, or the
    /// provider's own word. `interrupted` when the user cut it short.
    pub finish_reason: String,
    /// The message is the part that streamed before an interrupt.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// How full the context is with this message in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
}

/// A `tool_result` event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResultEvent {
    pub call_id: String,
    pub name: String,
    pub is_error: bool,
    /// What the model reads: the tool's output, or the error explained.
    pub output: String,
    pub duration_ms: u64,
    /// The call was cancelled by an interrupt (then `is_error` is true too).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
    /// What the call changed in the workspace, kept to be taken back
    /// (`None`: it changes no files, or changed none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<super::checkpoint::CheckpointRef>,
}

/// An `approval_request` event: the call waits for an approval decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequestEvent {
    /// What the decision names (`POST .../approvals/{request_id}`).
    pub request_id: String,
    /// The tool call waiting.
    pub call_id: String,
    /// The tool.
    pub name: String,
    /// Its arguments, as the model wrote them.
    pub input: Value,
    /// Why it asks: the mode, the rule, or what is special about the call.
    #[serde(default)]
    pub reason: String,
    /// The answers that make sense (`allow_always` is missing when no rule
    /// could stand for the call, e.g. a command outside the sandbox).
    #[serde(default = "all_choices")]
    pub options: Vec<ApprovalChoice>,
    /// The rule `allow_always` adds (`bash(rm:*)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_rule: Option<String>,
    /// The mode that would have run the call without asking, if one would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_mode: Option<PermissionMode>,
    /// Set when a sub-agent's child session asks: the child's id (the
    /// request is re-told on the parent's stream as `CHILD/REQUEST`;
    /// answering it on the parent passes the decision to the child).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_session: Option<super::SessionId>,
}

fn all_choices() -> Vec<ApprovalChoice> {
    vec![
        ApprovalChoice::AllowOnce,
        ApprovalChoice::AllowAlways,
        ApprovalChoice::Reject,
    ]
}

/// A `result` event: the turn is over.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultEvent {
    pub stop_reason: StopReason,
    /// The final assistant text of the turn (the last assistant message's text).
    pub text: String,
    /// Tokens summed over the turn's model calls.
    pub usage: Usage,
    /// Model calls made in this turn.
    pub steps: u32,
    pub duration_ms: u64,
    /// For `stop_reason: error`, what went wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How full the context is at the end of the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
}

/// Where an `error` came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The model provider failed (unreachable, refused, broken stream).
    Provider,
    /// The configuration is wrong (unknown profile, missing key).
    Config,
    /// The session could not be saved (the database refused a write).
    Store,
    /// A message too long for the model's context window: nothing was
    /// sent; the message says the sizes and the ways out.
    Context,
    /// The session itself failed (a bug, or an actor died).
    Internal,
}

/// An `error` event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorEvent {
    pub kind: ErrorKind,
    pub message: String,
}
