//! What the core asks its driver to do.

use crate::model::{ModelRequest, ToolCall};
use crate::protocol::{AgentMessage, InputId};

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
    /// Run these calls (concurrently); feed each outcome back as
    /// [`Input::ToolFinished`](super::Input::ToolFinished).
    RunTools { batch_id: u64, calls: Vec<ToolCall> },
    /// Stop every still-running call of `batch_id`.
    CancelTools { batch_id: u64 },
}
