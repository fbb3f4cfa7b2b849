//! The running turn: from an accepted query to its `result`.

use super::partial::PartialMessage;
use crate::model::ToolOutcome;
use crate::protocol::{InputId, Usage};
use serde::Serialize;

/// A turn in progress.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Turn {
    /// The query's input id (the envelope's `turn_id`).
    pub id: InputId,
    pub started_at_ms: u64,
    /// Model calls made so far.
    pub steps: u32,
    /// Tokens summed over this turn's model calls.
    pub usage: Usage,
    /// Text of the latest assistant message that had text.
    pub last_text: String,
    pub phase: Phase,
}

/// What the turn is waiting for.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum Phase {
    /// A model call is streaming.
    Streaming {
        request_id: u64,
        partial: PartialMessage,
    },
    /// The tool calls of the last assistant message are running.
    RunningTools {
        batch_id: u64,
        calls: Vec<PendingCall>,
    },
}

/// A tool call of the running batch.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PendingCall {
    pub id: String,
    pub name: String,
    pub outcome: Option<ToolOutcome>,
    /// Its `tool_result` has been emitted and recorded.
    pub recorded: bool,
}
