//! Why a tool call failed, in words the model reads: what was wrong and
//! what was expected.

/// Why a tool call failed. The message is what the model reads, so it names
/// what was wrong and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("invalid arguments for {tool}: {detail}")]
    InvalidArguments { tool: String, detail: String },
    #[error("{0}")]
    Failed(String),
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cancelled")]
    Cancelled,
}

impl ToolError {
    pub fn failed(msg: impl Into<String>) -> Self {
        ToolError::Failed(msg.into())
    }

    pub fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        ToolError::Io {
            action,
            path: path.display().to_string(),
            source,
        }
    }
}
