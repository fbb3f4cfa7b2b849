//! The conversation history as the model sees it: provider-neutral messages
//! that each provider module translates to its wire format.
//!
//! Invariant kept by the session core: every `ToolUse` block in an assistant
//! message is followed (before the next user or assistant message) by exactly
//! one `ToolResult` with its id, and no `ToolResult` appears without its call.

use super::ContentBlock;
use serde::{Deserialize, Serialize};

/// One entry of the history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// A user query, with the images attached to it.
    User {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<super::Image>,
    },
    /// A complete assistant message, or the part of one that streamed before
    /// an interrupt (`interrupted: true`).
    Assistant {
        content: Vec<ContentBlock>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        interrupted: bool,
    },
    /// The result of one tool call.
    ToolResult {
        call_id: String,
        name: String,
        output: String,
        is_error: bool,
    },
}

impl Message {
    /// A user query without images.
    pub fn user(text: impl Into<String>) -> Self {
        Message::User {
            text: text.into(),
            images: Vec::new(),
        }
    }
}
