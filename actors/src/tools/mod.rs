//! Tools: what the model can call, whatever the tool's origin.
//!
//! [`Tool`] is the one interface the executor runs: a spec the model sees,
//! an optional time limit of the tool's own, and an async call that never
//! panics on bad input. [`builtin`] holds the file and shell tools every
//! session has; MCP servers add theirs ([`crate::mcp`]). The
//! [`registry`] names every tool (clashes renamed predictably, see
//! [`naming`]) and the [`executor`] runs the calls: timeouts, cancellation,
//! output limits, and every failure turned into a result the model reads.
//!
//! Relative paths resolve against the workspace ([`ToolContext::resolve`]).
//! File tools work only inside the workspace and the write roots, checked
//! on what they actually open (`confine`); `bash` commands run in a
//! Landlock sandbox that lets them write only there and in the temporary
//! directories ([`sandbox`]). A call's `Grant` lifts either. The permission
//! layer only decides the grant; enforcing it is the tools' own, so a call
//! stays confined whoever allowed it.
//!
//! Tools hold no state of their own; what one session keeps between calls
//! travels with each call as a per-session handle: its file access
//! ([`Files`]) and its background commands ([`BackgroundCommands`]).

pub mod background;
pub mod builtin;
pub mod environment;
pub mod executor;
pub mod naming;
pub mod registry;
#[cfg(test)]
pub(crate) mod test_tools;

mod confine;
mod context;
mod error;
pub mod files;
mod output;
mod process;
pub mod sandbox;

pub use background::BackgroundCommands;
pub use context::ToolContext;
pub use error::ToolError;
pub use files::{FileAccess, FileAccessError, Files};
pub use output::truncate_middle;

use crate::model::ToolSpec;
use futures::future::BoxFuture;
use serde_json::Value;
use std::time::Duration;

/// What a tool returns to the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutput {
    /// What the model reads.
    pub text: String,
    /// The tool ran but the outcome is a failure the model should notice
    /// (e.g. a command that exited non-zero).
    pub is_error: bool,
}

impl ToolOutput {
    /// A successful call's output.
    pub fn ok(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: false,
        }
    }

    /// A call that ran and failed (the model should notice), saying why.
    pub fn error(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            is_error: true,
        }
    }
}

/// A tool the executor can run, whatever its origin.
pub trait Tool: Send + Sync + 'static {
    /// What the model sees: name, description, JSON Schema of the
    /// arguments.
    fn spec(&self) -> ToolSpec;
    /// How long one call may run when the tool has a limit of its own (an
    /// MCP server's `tool_timeout_secs`); `None`: `[tools] timeout_secs`.
    fn time_limit(&self) -> Option<Duration> {
        None
    }
    /// Whether its output reaches the caller whole instead of cut to
    /// `[tools] max_output_bytes` (an image read for an `@` mention, bounded
    /// by its own cap).
    fn whole_output(&self) -> bool {
        false
    }
    /// Run one call with `input`, the model's arguments (not yet checked
    /// against the schema: say what is wrong with
    /// [`ToolError::InvalidArguments`]). Never panic on bad input; stop
    /// when `ctx.cancel` fires. Errors become error results the model
    /// reads.
    fn call(
        &self,
        input: Value,
        ctx: ToolContext,
    ) -> BoxFuture<'static, Result<ToolOutput, ToolError>>;
}
