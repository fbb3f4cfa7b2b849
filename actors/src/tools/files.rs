//! Where the file tools read and write text when a front end holds the
//! files: the seam for an editor.
//!
//! By default `read_file`, `write_file` and `edit_file` work on the disk. A
//! front end whose user edits the same files (an editor over the Agent
//! Client Protocol, where a file may have unsaved changes) can give a
//! session a [`FileAccess`]: those three tools then read and write the text
//! through it, so the agent sees what the user sees and its writes land in
//! the editor's buffers. Everything else stays as it is: a path is still
//! checked against the roots on the disk first (`confine.rs`), plan mode
//! still refuses writes, and `bash`, `list_dir`, `glob` and `grep` still
//! work on the disk.
//!
//! An implementation must never touch a path the tools did not pass it, and
//! must answer every call (an error is an answer); a call the user
//! interrupts is abandoned by the tool, not by the implementation.

use futures::future::BoxFuture;
use std::path::Path;
use std::sync::Arc;

/// Reads and writes whole text files for the file tools of one session.
pub trait FileAccess: Send + Sync + 'static {
    /// Who holds the files, for messages the model reads ("the editor").
    fn holder(&self) -> &str;
    /// The whole text of the file at `path` (absolute), as the holder has
    /// it (with unsaved changes).
    fn read_text(&self, path: &Path) -> BoxFuture<'static, Result<String, FileAccessError>>;
    /// Replace the whole text of the file at `path` (absolute), creating it
    /// if it does not exist.
    fn write_text(
        &self,
        path: &Path,
        text: String,
    ) -> BoxFuture<'static, Result<(), FileAccessError>>;
}

/// The holder of the files refused or failed a read or write; the message
/// is its own words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FileAccessError {
    pub message: String,
}

impl FileAccessError {
    pub fn new(message: impl Into<String>) -> Self {
        FileAccessError {
            message: message.into(),
        }
    }
}

/// A session's file access as a tool call carries it: the disk, or a front
/// end's.
#[derive(Clone, Default)]
pub enum Files {
    /// The file system, through `confine.rs`.
    #[default]
    Disk,
    /// A front end that holds the files.
    Held(Arc<dyn FileAccess>),
}

impl std::fmt::Debug for Files {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Files::Disk => f.write_str("Disk"),
            Files::Held(access) => write!(f, "Held({})", access.holder()),
        }
    }
}

impl Files {
    /// The front end's access, when it holds the files.
    pub fn held(&self) -> Option<&Arc<dyn FileAccess>> {
        match self {
            Files::Disk => None,
            Files::Held(access) => Some(access),
        }
    }
}
