//! Why a tool call failed, in words the model reads: what was wrong and
//! what was expected.

/// Why a tool call failed. The message is what the model reads, so it names
/// what was wrong and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments do not fit the tool: `detail` says what was expected.
    #[error("invalid arguments for {tool}: {detail}")]
    InvalidArguments { tool: String, detail: String },
    /// The call failed; the text is what the model reads.
    #[error("{0}")]
    Failed(String),
    /// A file operation failed (`action` is e.g. `read`).
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The call was cancelled (interrupt or timeout).
    #[error("cancelled")]
    Cancelled,
}

impl ToolError {
    /// [`ToolError::Failed`] with this message.
    pub fn failed(msg: impl Into<String>) -> Self {
        ToolError::Failed(msg.into())
    }

    /// [`ToolError::Io`] for `action` on `path`.
    pub fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        ToolError::Io {
            action,
            path: path.display().to_string(),
            source,
        }
    }
}
