//! Refusals the file tools share: something they must not open (a device,
//! FIFO or socket, which could block a read forever), and any change in
//! plan mode. What is at a path is found by `tools/confine.rs` when the
//! tool opens it; each tool words its own advice.

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

/// The error of a tool asked to change `path` in plan mode
/// (`Grant::read_only`).
pub fn plan_mode_refusal(verb: &str, path: &Path) -> ToolError {
    ToolError::failed(format!(
        "refusing to {verb} {}: plan mode is read-only, so no file may be changed; present the \
         change as part of your plan instead",
        path.display()
    ))
}
