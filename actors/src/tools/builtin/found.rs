//! The error of a file tool given something it must not open: a device,
//! FIFO or socket (which could block a read forever). What is at a path is
//! found by `tools/confine.rs` when the tool opens it; each tool words its
//! own advice.

use super::ToolError;
use std::path::Path;

/// The error for a device, FIFO or socket where `tool` (which `does`
/// something to regular files only) was given one.
pub fn special_file(path: &Path, tool: &str, does: &str) -> ToolError {
    ToolError::failed(format!(
        "{} is not a regular file (it is a device, FIFO or socket); {tool} only {does} regular \
         files",
        path.display()
    ))
}
