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

/// A blob marked used within this long is never deleted, not even by the
/// deletion of the one session that referred to it: another session may
/// have found it held and count on it for a checkpoint it is taking.
pub const BLOB_GRACE: chrono::Duration = chrono::Duration::hours(1);

/// A blob asked about (`missing_blobs`) is marked used again only when its
/// mark is older than this: a look at a workspace of 10,000 unchanged
/// files then writes nothing (an update rewrites the row, bytes and all).
/// Well inside [`BLOB_GRACE`], so a blob asked about is safe for 50
/// minutes at least.
pub const MARK_AFTER: chrono::Duration = chrono::Duration::minutes(10);

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

impl FileKind {
    /// As the store keeps it (and as serde writes it): `file`,
    /// `executable`, `symlink`.
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::File => "file",
            FileKind::Executable => "executable",
            FileKind::Symlink => "symlink",
        }
    }

    /// What [`as_str`](Self::as_str) gave, back; `None` for anything else.
    pub fn parse(text: &str) -> Option<FileKind> {
        match text {
            "file" => Some(FileKind::File),
            "executable" => Some(FileKind::Executable),
            "symlink" => Some(FileKind::Symlink),
            _ => None,
        }
    }
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

/// One side (`before` or `after`) of a stored change, from its three
/// columns (hash, kind, size), as every backend stores it: all NULL is no
/// version, all set is one. Anything else — some set and some not, a kind
/// this code does not know, a negative size — is why the row does not
/// decode.
pub(super) fn stored_version(
    side: &str,
    hash: Option<String>,
    kind: Option<String>,
    size: Option<i64>,
) -> Result<Option<FileVersion>, String> {
    match (hash, kind, size) {
        (None, None, None) => Ok(None),
        (Some(hash), Some(kind), Some(size)) => {
            let kind = FileKind::parse(&kind)
                .ok_or_else(|| format!("{side}_kind {kind:?} is not a kind of file"))?;
            let size =
                u64::try_from(size).map_err(|_| format!("{side}_size is negative ({size})"))?;
            Ok(Some(FileVersion { hash, kind, size }))
        }
        _ => Err(format!(
            "{side}_hash, {side}_kind and {side}_size must be set together"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_stored_as_their_serde_names() {
        for kind in [FileKind::File, FileKind::Executable, FileKind::Symlink] {
            let json = serde_json::to_string(&kind).expect("json");
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
            assert_eq!(FileKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(FileKind::parse("File"), None);
    }

    #[test]
    fn a_stored_side_is_all_null_or_all_set() {
        assert_eq!(stored_version("before", None, None, None), Ok(None));
        let version = stored_version(
            "after",
            Some("ab".to_string()),
            Some("symlink".to_string()),
            Some(3),
        );
        assert_eq!(
            version,
            Ok(Some(FileVersion {
                hash: "ab".to_string(),
                kind: FileKind::Symlink,
                size: 3,
            }))
        );
        let half = stored_version("before", Some("ab".to_string()), None, Some(3));
        assert!(half.is_err_and(|e| e.contains("set together")));
        let unknown = stored_version(
            "after",
            Some("ab".to_string()),
            Some("fifo".to_string()),
            Some(3),
        );
        assert!(unknown.is_err_and(|e| e.contains("\"fifo\"")));
        let negative = stored_version(
            "after",
            Some("ab".to_string()),
            Some("file".to_string()),
            Some(-1),
        );
        assert!(negative.is_err_and(|e| e.contains("negative")));
    }
}
