//! What is at a path, for the file tools' checks before they act: nothing,
//! a directory, a regular file, or something they must not open (a device,
//! FIFO or socket, which could block a read forever).
//!
//! Only looks (one `metadata` call); each tool words its own advice.

use super::ToolError;
use std::path::Path;

pub enum Found {
    Nothing,
    Directory,
    RegularFile,
    /// A device, FIFO or socket.
    Special,
}

/// Look at `path`; an error other than "not found" is `action`'s I/O error.
pub fn look(path: &Path, action: &'static str) -> Result<Found, ToolError> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Ok(Found::Directory),
        Ok(meta) if meta.is_file() => Ok(Found::RegularFile),
        Ok(_) => Ok(Found::Special),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Found::Nothing),
        Err(e) => Err(ToolError::io(action, path, e)),
    }
}

/// The error for a [`Found::Special`] where `tool` (which `does` something to
/// regular files only) was given one.
pub fn special_file(path: &Path, tool: &str, does: &str) -> ToolError {
    ToolError::failed(format!(
        "{} is not a regular file (it is a device, FIFO or socket); {tool} only {does} regular \
         files",
        path.display()
    ))
}
