//! [`AgentError`]: why the library face could not do what was asked. Each
//! message names what was being done to what, and what to do about it.

use super::state::AgentState;
use crate::protocol::InputId;
use crate::provider::ProviderError;
use std::path::PathBuf;

/// Why an [`Agent`](super::Agent) (or its builder, or an
/// [`AgentState`]) could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// [`AgentBuilder::build`](super::AgentBuilder::build) was called
    /// without a provider.
    #[error(
        "the agent has no model provider; call `.provider(...)` on the builder (e.g. `Provider::openai(base_url, model)?` or a `ScriptedProvider`)"
    )]
    NoProvider,

    /// Two tools given to the builder share a name (the model calls tools
    /// by name, so each must be unique).
    #[error(
        "two tools are named `{name}`; tool names must be unique (rename one, or leave one out)"
    )]
    DuplicateTool {
        /// The name given twice.
        name: String,
    },

    /// The model provider could not be set up.
    #[error("could not set up the model provider: {0}")]
    Provider(#[source] ProviderError),

    /// A setting given to the builder means nothing.
    #[error("invalid agent setting: {0}")]
    InvalidConfig(String),

    /// The workspace is not a directory the tools can work in.
    #[error("the workspace {} cannot be used: {detail}", path.display())]
    Workspace {
        /// The directory given (or the current directory).
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },

    /// The conversation cannot be continued yet: a turn (or a compaction
    /// or session command) is still in progress in this state. A state is
    /// like this when it was taken with
    /// [`AgentRun::snapshot`](super::AgentRun::snapshot) before the run
    /// ended.
    #[error(
        "cannot continue the conversation: input {input_id} has not finished (waiting for {waiting_for}); drive its run to the end first, or save and load the state (loading closes an unfinished turn as failed)"
    )]
    TurnNotFinished {
        /// The input (query or command) still in progress.
        input_id: InputId,
        /// What it is waiting for.
        waiting_for: String,
    },

    /// The conversation cannot be continued yet: inputs are queued that
    /// have not run.
    #[error(
        "cannot continue the conversation: {queued} queued input(s) have not run yet (first: input {first}); drive the run that queued them to the end first"
    )]
    InputsQueued {
        /// How many inputs wait in the queue.
        queued: usize,
        /// The id of the first of them.
        first: InputId,
    },

    /// The turn ended with `stop_reason: error` (the provider failed for
    /// good, after its retries). The conversation state, with the failed
    /// turn closed, can still be continued.
    #[error("the turn failed: {error}")]
    TurnFailed {
        /// What went wrong (the `result` event's `error`).
        error: String,
        /// The conversation, including the failed turn.
        state: Box<AgentState>,
    },

    /// The run stopped before its turn ended: nothing was left running
    /// that could finish it (a bug in a provider's stream or in the
    /// driver).
    #[error("the run stopped before its turn ended: {0}")]
    Stalled(String),

    /// A saved state used a tool that was not given when it was loaded.
    #[error(
        "the saved conversation used the tool `{name}`, which was not given (given: {}); pass every tool the conversation was saved with",
        if given.is_empty() { "none".to_string() } else { given.join(", ") }
    )]
    MissingTool {
        /// The tool the saved state offered.
        name: String,
        /// The names of the tools that were given.
        given: Vec<String>,
    },

    /// A saved state could not be read: not JSON, not this format, or a
    /// version this library does not know.
    #[error("not a saved agent state: {0}")]
    StateFormat(String),

    /// The state could not be turned into JSON.
    #[error("could not serialise the agent state: {0}")]
    Serialize(#[source] serde_json::Error),

    /// A file could not be read or written.
    #[error("could not {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`read`, `write`, ...).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        #[source]
        source: std::io::Error,
    },
}

impl AgentError {
    /// The conversation state a failed turn left, if this error carries
    /// one ([`AgentError::TurnFailed`]).
    pub fn state(&self) -> Option<&AgentState> {
        match self {
            AgentError::TurnFailed { state, .. } => Some(state),
            _ => None,
        }
    }

    /// The conversation state a failed turn left, taken out of the error.
    pub fn into_state(self) -> Option<AgentState> {
        match self {
            AgentError::TurnFailed { state, .. } => Some(*state),
            _ => None,
        }
    }
}
