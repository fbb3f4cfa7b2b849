//! File-system work of a tool, off the async runtime.

use crate::tools::ToolError;

/// Run a tool's file-system work on a blocking thread; the thread dying
/// (a panic) is the tool's error, named after the tool.
pub async fn blocking<T: Send + 'static>(
    tool: &str,
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ToolError::failed(format!("{tool} stopped unexpectedly: {e}")))?
}
