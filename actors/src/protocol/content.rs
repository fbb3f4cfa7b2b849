//! Content shared by events and history: blocks of assistant output, token
//! usage and the reasons a turn stops.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::ops::AddAssign;

/// One block of an assistant message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text for the user.
    Text { text: String },
    /// The model's reasoning before it answers: Anthropic's extended
    /// thinking, or the `reasoning_content` / `reasoning` of an
    /// OpenAI-compatible server. Front ends show it as thinking, never as the
    /// answer. `signature` is Anthropic's seal over it: a signed block goes
    /// back to Anthropic verbatim with its message (a tool round needs it);
    /// an unsigned one is never sent back to any provider.
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider encrypted (Anthropic's `redacted_thinking`):
    /// kept opaque so that it can go back with its message, never shown.
    RedactedThinking { data: String },
    /// An OpenAI reasoning item (the Responses wire's `reasoning` output
    /// item), kept opaque so that it goes back in place with its message,
    /// as OpenAI wants across a tool round — and only to the Responses
    /// wire: the other wires skip it. `encrypted_content` is the reasoning
    /// itself, sealed by OpenAI; `summary` the summary texts it came with
    /// (front ends show them from the thinking block streamed before it,
    /// never from this block).
    ReasoningItem {
        id: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        summary: Vec<String>,
        encrypted_content: String,
    },
    /// A request to run a tool. `input` is the JSON object of arguments; when
    /// the model sent arguments that are not valid JSON, `input` is the raw
    /// text as a JSON string (and the call got an error result).
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

impl ContentBlock {
    /// The text of a text block, or `None`.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            ContentBlock::Text { text } => Some(text),
            ContentBlock::Thinking { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::ReasoningItem { .. }
            | ContentBlock::ToolUse { .. } => None,
        }
    }

    /// The reasoning of a thinking block, or `None` (redacted thinking and
    /// reasoning items have none to show).
    pub fn as_thinking(&self) -> Option<&str> {
        match self {
            ContentBlock::Thinking { thinking, .. } => Some(thinking),
            ContentBlock::Text { .. }
            | ContentBlock::RedactedThinking { .. }
            | ContentBlock::ReasoningItem { .. }
            | ContentBlock::ToolUse { .. } => None,
        }
    }
}

/// An image attached to a user query (`run --image`, an `@pic.png`
/// mention, the HTTP API's `images`): sent to the model as image content
/// when the profile allows images (`images = true`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    /// Where it came from: the path as given, or empty (sent over HTTP).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`, as its bytes
    /// say (never taken from the name).
    pub media_type: String,
    /// The bytes, base64 (standard alphabet, padded). Kept in the store so
    /// that a reloaded session sends the same image again.
    pub data: String,
}

/// Tokens counted by the provider. Zero where the provider does not report a
/// figure; cache figures are omitted from JSON when zero. The input is split
/// as Anthropic splits it (OpenAI's figures are brought to the same shape):
/// `input_tokens` is what was neither read from the prompt cache nor
/// written to it, so the whole input is the sum of the three.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Input tokens not read from the prompt cache nor written to it.
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Input tokens read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_creation_input_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// All input tokens: uncached, read from the cache and written to it.
    pub fn all_input(&self) -> u64 {
        self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens
    }

    /// The share of the input read from the prompt cache (0 to 1); `None`
    /// when there was no input.
    pub fn cache_read_share(&self) -> Option<f64> {
        let all = self.all_input();
        (all > 0).then(|| self.cache_read_input_tokens as f64 / all as f64)
    }

    /// Every field of `other` that is non-zero replaces the one in `self`.
    /// Providers that report cumulative figures use this.
    pub fn overwrite_with(&mut self, other: Usage) {
        if other.input_tokens != 0 {
            self.input_tokens = other.input_tokens;
        }
        if other.output_tokens != 0 {
            self.output_tokens = other.output_tokens;
        }
        if other.cache_read_input_tokens != 0 {
            self.cache_read_input_tokens = other.cache_read_input_tokens;
        }
        if other.cache_creation_input_tokens != 0 {
            self.cache_creation_input_tokens = other.cache_creation_input_tokens;
        }
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.cache_read_input_tokens += rhs.cache_read_input_tokens;
        self.cache_creation_input_tokens += rhs.cache_creation_input_tokens;
    }
}

/// Why a turn ended. Cancellation is a normal outcome, not an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its answer.
    EndTurn,
    /// The turn used its `max_steps` model calls; tool results of the last
    /// step are in the history, the model was not called again.
    MaxSteps,
    /// The user interrupted the turn.
    Cancelled,
    /// The provider failed for good (after retries) or the session hit an
    /// internal error; an `error` event precedes the `result`.
    Error,
}

impl StopReason {
    /// The snake_case name used on the wire.
    pub fn as_str(&self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxSteps => "max_steps",
            StopReason::Cancelled => "cancelled",
            StopReason::Error => "error",
        }
    }
}
