//! What the session asks of a model and what comes back, in our own words.
//!
//! Plain data shared by the pure session core and the providers: the core
//! builds a [`ModelRequest`] and folds [`ModelEvent`]s; each provider module
//! translates them to and from its wire format. Nothing here does I/O.

use crate::protocol::{BlockKind, Message, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a tool comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolOrigin {
    /// Compiled into agentbus (`read_file`, `bash`, ...).
    Builtin,
    /// A tool of the named MCP server. `writes`: the server marks it as
    /// changing things (`readOnlyHint: false` or `destructiveHint: true`),
    /// so its calls are checkpointed like a command's.
    Mcp {
        server: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        writes: bool,
    },
}

/// The tools a session offers the model, shared (not copied) between the
/// catalog, every session and every model request.
pub type ToolList = std::sync::Arc<Vec<ToolSpec>>;

/// A tool as the model sees it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by (unique among a session's tools).
    pub name: String,
    /// What it does and when to use it, for the model.
    pub description: String,
    /// JSON Schema of the arguments object, shared: a session offers the
    /// same schemas on every model call, so copying a tool list copies no
    /// schema.
    pub input_schema: std::sync::Arc<Value>,
    pub origin: ToolOrigin,
}

impl ToolSpec {
    /// The first sentence (or line) of the description, for listings.
    pub fn summary(&self) -> &str {
        let line = self.description.lines().next().unwrap_or_default();
        // A sentence ends at ". ", but not after an abbreviation.
        let end = line.match_indices(". ").map(|(i, _)| i).find(|&i| {
            let before = &line[..=i];
            !["e.g.", "i.e.", "etc.", "vs."]
                .iter()
                .any(|abbreviation| before.ends_with(abbreviation))
        });
        match end {
            Some(end) => &line[..=end],
            None => line,
        }
    }
}

/// One model call: everything a provider needs, nothing provider-specific.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelRequest {
    /// Name of the model profile to call.
    pub profile: String,
    /// The system prompt (empty: none).
    pub system_prompt: String,
    /// The conversation as this request carries it (pruned or summarised
    /// to fit the context window).
    pub messages: Vec<Message>,
    /// The tools offered.
    pub tools: ToolList,
    /// What ties this request to the requests before it for the provider's
    /// prompt cache (the session's id; OpenAI's `prompt_cache_key`). Empty:
    /// a request nothing will read back from a cache (a compaction's
    /// summary), which marks nothing for caching.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub cache_key: String,
    /// A lower output cap than the profile's for this request alone (a
    /// compaction's summary is kept short); `None`: the profile's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

impl ModelRequest {
    /// The output cap of this request: the lower of its own and `profile`'s
    /// (`None` when neither sets one).
    pub fn output_cap(&self, profile: Option<u32>) -> Option<u32> {
        match (self.max_output_tokens, profile) {
            (Some(own), Some(profile)) => Some(own.min(profile)),
            (own, profile) => own.or(profile),
        }
    }
}

/// One item of a model's streamed answer, normalised across providers.
/// Blocks are numbered from 0 in the order they open.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ModelEvent {
    /// A text, thinking or tool-use block opens.
    BlockStart { index: usize, block: BlockKind },
    /// More text for a text block.
    TextDelta { index: usize, text: String },
    /// More reasoning for a thinking block.
    ThinkingDelta { index: usize, text: String },
    /// The provider's signature over a thinking block (Anthropic's
    /// `signature_delta`): opaque, kept with the block, never shown.
    ThinkingSignature { index: usize, signature: String },
    /// A whole block of encrypted reasoning (Anthropic's
    /// `redacted_thinking`): kept with the message, never shown.
    RedactedThinking { index: usize, data: String },
    /// A whole OpenAI reasoning item (the Responses wire's, with its
    /// `encrypted_content`): kept with the message, never shown (its
    /// summary streams as a thinking block of its own before it).
    ReasoningItem {
        index: usize,
        id: String,
        summary: Vec<String>,
        encrypted_content: String,
    },
    /// More of a tool call's JSON arguments (a fragment).
    ToolInputDelta { index: usize, partial_json: String },
    /// The block is complete.
    BlockStop { index: usize },
    /// Token counts so far; later reports overwrite earlier non-zero fields.
    Usage(Usage),
    /// The provider will try again after `delay_ms`; everything streamed in
    /// this call so far is void.
    Retrying {
        attempt: u32,
        delay_ms: u64,
        reason: String,
    },
    /// The answer is complete. `finish_reason` is normalised where known
    /// (`end_turn`, `tool_use`, `max_tokens`) and the provider's word otherwise.
    Finished { finish_reason: String },
}

/// The provider refused a request as longer than the model's context
/// window, with the sizes its message stated (each `None` when it did not
/// say): what the session learns so that the next request fits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextRefusal {
    /// The provider's own count of the request's input tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// The model's context window (input and output together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// The output tokens the provider counted into the window (the
    /// request's output cap).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// The most input tokens the provider takes, when it states that
    /// rather than the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_limit: Option<u64>,
}

impl ContextRefusal {
    /// The most input tokens a request may carry by what the provider
    /// said, given the output cap `output` of the profile (used when the
    /// provider did not say what it counted for the output).
    pub fn input_budget(&self, output: u64) -> Option<u64> {
        self.input_limit.or_else(|| {
            self.window
                .map(|window| window.saturating_sub(self.output_tokens.unwrap_or(output)))
        })
    }
}

/// A tool call the model asked for, with arguments parsed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id (its result answers it).
    pub id: String,
    /// The tool called.
    pub name: String,
    /// The arguments object.
    pub input: Value,
}

/// What a call may do beyond the usual limits, as its permission check
/// (the mode, the rules, the user's approval) settled it. The default
/// grants nothing: file tools stay inside the workspace and the write
/// roots, and commands run in the sandbox.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// File tools may read or write outside the workspace and the write
    /// roots (a rule or the user allowed this path).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_roots: bool,
    /// `bash` runs outside the sandbox (the user approved the escalation,
    /// or the sandbox is off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsandboxed: bool,
    /// Nothing may be written at all (plan mode): commands run in a
    /// read-only sandbox.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// A call cleared to run, with what it was granted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GrantedCall {
    pub call: ToolCall,
    #[serde(default)]
    pub grant: Grant,
}

/// How one tool call ended, as the model will read it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolOutcome {
    /// What the model reads: the output, or the failure explained.
    pub output: String,
    /// The call failed.
    pub is_error: bool,
    /// How long it ran.
    pub duration_ms: u64,
}

/// What a tool call interrupted by the user answers.
pub const INTERRUPTED: &str = "cancelled: the user interrupted the turn";

/// The tool a session runs to read an image for an `@pic.png` mention;
/// never offered to a model, and a model's call to it is refused.
pub const READ_IMAGE: &str = "read_image";

/// What `read_file` says (after the path) when the path is a directory:
/// the session then lists an `@` mention with `list_dir` instead.
pub const NOT_A_FILE: &str = "is a directory, not a file";

/// What `read_file`'s output says when lines of the file were left out (a
/// long file): the session tells the user an `@` mention was capped.
pub const MORE_LINES_REMAIN: &str = "More lines remain";

impl ToolOutcome {
    /// A failed call that did not run (or not measurably): `output` says
    /// why.
    pub fn error(output: impl Into<String>) -> ToolOutcome {
        ToolOutcome {
            output: output.into(),
            is_error: true,
            duration_ms: 0,
        }
    }

    /// The executor could not be asked to run the call.
    pub fn executor_unavailable(reason: impl std::fmt::Display) -> ToolOutcome {
        ToolOutcome::error(format!("the tool executor is unavailable: {reason}"))
    }
}
