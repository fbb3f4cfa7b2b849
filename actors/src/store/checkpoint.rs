//! What the store keeps so a session's changes to its workspace can be
//! taken back: content-addressed blobs (a file's bytes under their SHA-256,
//! shared by every checkpoint and session that saw the same bytes) and
//! checkpoints (which files one tool call changed, from which version to
//! which). Plain data, the same for every backend.
//!
//! Never holds a path outside the workspace (paths are relative, `/`
//! separated) and never touches the user's `.git`.

use crate::protocol::SessionId;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What kind of thing a path was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// A regular file.
    File,
    /// A regular file with an executable bit.
    Executable,
    /// A symbolic link; its blob is the link's target, as bytes.
    Symlink,
}

/// One version of a path: its bytes (by hash) and kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileVersion {
    /// SHA-256 of the bytes, lower-case hex: the blob's key.
    pub hash: String,
    pub kind: FileKind,
    /// The blob's length in bytes.
    pub size: u64,
}

/// One path a checkpoint saw change. `None` on a side: the path did not
/// exist then (created: `before` is `None`; deleted: `after` is `None`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileChange {
    /// Relative to the session's workspace, `/` separated.
    pub path: String,
    pub before: Option<FileVersion>,
    pub after: Option<FileVersion>,
}

/// What one tool call (or a background command, seen at its turn's end)
/// changed in the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Unique (a UUID v7, so ids sort in creation order).
    pub id: String,
    pub session_id: SessionId,
    /// The seq of the `user` event of the turn it belongs to.
    pub turn_seq: u64,
    /// The tool call it was taken for, if any.
    pub call_id: Option<String>,
    /// The tool's name (`write_file`, `bash`, an MCP tool's name).
    pub tool: String,
    pub created_at: DateTime<Utc>,
    /// Every path it saw change, in path order.
    pub changes: Vec<FileChange>,
    /// Its changes were taken back (a rewind of the code, or `/undo`).
    pub undone: bool,
}

/// What the checkpoint tables hold, for `/debug` and `sessions gc`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointUsage {
    pub checkpoints: u64,
    pub blobs: u64,
    /// Total bytes of every blob.
    pub blob_bytes: u64,
}

/// What a collection of unreferenced blobs removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Collected {
    pub blobs: u64,
    pub bytes: u64,
}
