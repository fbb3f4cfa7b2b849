//! Taking back what a session did to its workspace: what each user turn
//! changed (from its checkpoints), what a rewind to a turn would do (each
//! path's action and diff), and doing it.
//!
//! A path returns to its version before the first checkpoint of the turns
//! rewound (created since: removed; deleted since: written back). Only
//! paths this session's checkpoints name are touched, and only when they
//! are as the session left them: one changed since by someone else (another
//! session, an editor) is a conflict, left alone unless the caller says to
//! overwrite. Nothing is written through a symlink that leads out of the
//! workspace. The conversation side of a rewind (a fork) is the caller's.

use super::diff;
use super::scan;
use crate::protocol::checkpoint::{
    ChangedFile, FileAction, RewindFile, RewindMode, RewindReport, TurnChanges,
};
use crate::protocol::{AgentMessage, EventEnvelope, SessionId};
use crate::store::checkpoint::{Checkpoint, FileKind, FileVersion};
use crate::store::{SessionStore, StoreError};
use std::collections::BTreeMap;
use std::path::Path;

/// Why a rewind could not be done.
#[derive(Debug, thiserror::Error)]
pub enum RewindError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "event {seq} is not the start of a user turn of this session (see /rewind for the list)"
    )]
    NotATurn { seq: u64 },
    #[error(
        "nothing to undo: no turn of this session changed files that are not taken back already"
    )]
    NothingToUndo,
    #[error("the bytes of {path} as they were are missing from the store (blob {hash})")]
    MissingBlob { path: String, hash: String },
    #[error("cannot write {path}: {detail}")]
    Write { path: String, detail: String },
    #[error("looking at the workspace failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// The user turns of a log: seq and text, in order.
pub fn user_turns(events: &[EventEnvelope]) -> Vec<(u64, String)> {
    events
        .iter()
        .filter_map(|e| match &e.message {
            AgentMessage::User(user) => Some((e.seq, user.text.clone())),
            _ => None,
        })
        .collect()
}

/// What a version is after a checkpoint: its `after`, or (`effective`)
/// its `before` when it was undone.
fn left(checkpoint: &Checkpoint, i: usize, effective: bool) -> Option<FileVersion> {
    let change = &checkpoint.changes[i];
    if effective && checkpoint.undone {
        change.before.clone()
    } else {
        change.after.clone()
    }
}

/// Per path, across `checkpoints` (oldest first): the first version before
/// them and the last one they left.
type Span = BTreeMap<String, (Option<FileVersion>, Option<FileVersion>)>;

fn span<'a>(checkpoints: impl Iterator<Item = &'a Checkpoint>, effective: bool) -> Span {
    let mut span = Span::new();
    for checkpoint in checkpoints {
        for (i, change) in checkpoint.changes.iter().enumerate() {
            let after = left(checkpoint, i, effective);
            span.entry(change.path.clone())
                .and_modify(|(_, last)| *last = after.clone())
                .or_insert((change.before.clone(), after));
        }
    }
    span
}

/// The turn (its user seq) a checkpoint belongs to: the last one starting
/// at or before its `turn_seq`.
fn turn_of(turns: &[(u64, String)], turn_seq: u64) -> Option<u64> {
    turns
        .iter()
        .rev()
        .find(|(seq, _)| *seq <= turn_seq)
        .map(|(seq, _)| *seq)
}

async fn bytes(
    store: &dyn SessionStore,
    path: &str,
    version: Option<&FileVersion>,
) -> Result<Option<Vec<u8>>, RewindError> {
    let Some(version) = version else {
        return Ok(None);
    };
    match store.blob(&version.hash).await? {
        Some(bytes) => Ok(Some(bytes)),
        None => Err(RewindError::MissingBlob {
            path: path.to_string(),
            hash: version.hash.clone(),
        }),
    }
}

/// Each user turn of `events` and what it changed, oldest first.
pub async fn turns(
    store: &dyn SessionStore,
    session: &SessionId,
    events: &[EventEnvelope],
) -> Result<Vec<TurnChanges>, RewindError> {
    let turns = user_turns(events);
    let checkpoints = store.checkpoints(session).await?;
    let mut out = Vec::with_capacity(turns.len());
    for (seq, text) in &turns {
        let own: Vec<&Checkpoint> = checkpoints
            .iter()
            .filter(|c| turn_of(&turns, c.turn_seq) == Some(*seq))
            .collect();
        let mut files: Vec<ChangedFile> = Vec::new();
        // What the turn did, whether or not it was undone since.
        for (path, (before, after)) in span(own.iter().copied(), false) {
            if before == after {
                continue;
            }
            let old = bytes(store, &path, before.as_ref()).await.ok().flatten();
            let new = bytes(store, &path, after.as_ref()).await.ok().flatten();
            files.push(diff::changed(&path, old.as_deref(), new.as_deref()));
        }
        out.push(TurnChanges {
            seq: *seq,
            prompt: crate::text::ellipsize(text, 120),
            undone: !own.is_empty() && own.iter().all(|c| c.undone),
            files,
        });
    }
    Ok(out)
}

/// One path's plan: what it returns to, what the session left, and what
/// is there now.
struct Planned {
    path: String,
    target: Option<FileVersion>,
    action: FileAction,
    /// Kept for writing back.
    target_bytes: Option<Vec<u8>>,
}

fn same(a: Option<&FileVersion>, b: Option<&FileVersion>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.hash == b.hash && a.kind == b.kind,
        _ => false,
    }
}

/// What a rewind of session `session`'s files to before turn `seq` would
/// do (`report.preview` set), and the plan to do it.
async fn plan(
    store: &dyn SessionStore,
    session: &SessionId,
    workspace: &Path,
    seq: u64,
    events: &[EventEnvelope],
) -> Result<(RewindReport, Vec<Planned>, Vec<String>), RewindError> {
    let turns = user_turns(events);
    let Some((_, prompt)) = turns.iter().find(|(s, _)| *s == seq) else {
        return Err(RewindError::NotATurn { seq });
    };
    let checkpoints = store.checkpoints(session).await?;
    let later: Vec<&Checkpoint> = checkpoints.iter().filter(|c| c.turn_seq >= seq).collect();
    let ids: Vec<String> = later.iter().map(|c| c.id.clone()).collect();
    let mut report = RewindReport {
        seq,
        preview: true,
        prompt: prompt.clone(),
        cannot_restore: cannot_restore(events, seq),
        ..RewindReport::default()
    };
    let mut planned = Vec::new();
    for (path, (target, expected)) in span(later.into_iter(), true) {
        if !scan::parent_inside(workspace, &path) {
            report.cannot_restore.push(format!(
                "{path}: a directory above it is now a symlink or not a directory; left alone"
            ));
            continue;
        }
        let (root, rel) = (workspace.to_path_buf(), path.clone());
        let now = tokio::task::spawn_blocking(move || scan::read_now(&root, &rel))
            .await?
            .map_err(|e| RewindError::Write {
                path: path.clone(),
                detail: e.to_string(),
            })?;
        let (current, current_bytes) = match now {
            Some((v, b)) => (Some(v), Some(b)),
            None => (None, None),
        };
        let target_bytes = bytes(store, &path, target.as_ref()).await?;
        let action = if same(current.as_ref(), target.as_ref()) {
            FileAction::Unchanged
        } else if same(current.as_ref(), expected.as_ref()) {
            match (&target, &current) {
                (None, _) => FileAction::Remove,
                (_, None) => FileAction::Recreate,
                _ => FileAction::Restore,
            }
        } else {
            FileAction::Conflict
        };
        let (diff_text, binary) = if action == FileAction::Conflict {
            // What someone else changed since this session left it.
            let left_bytes = bytes(store, &path, expected.as_ref()).await?;
            (
                diff::unified(&path, left_bytes.as_deref(), current_bytes.as_deref()),
                diff::is_binary(left_bytes.as_deref(), current_bytes.as_deref()),
            )
        } else {
            (
                diff::unified(&path, current_bytes.as_deref(), target_bytes.as_deref()),
                diff::is_binary(current_bytes.as_deref(), target_bytes.as_deref()),
            )
        };
        report.files.push(RewindFile {
            path: path.clone(),
            action,
            diff: diff_text,
            binary,
        });
        planned.push(Planned {
            path,
            target,
            action,
            target_bytes,
        });
    }
    Ok((report, planned, ids))
}

/// What the turns from `seq` on did that no rewind takes back, said
/// plainly.
pub fn cannot_restore(events: &[EventEnvelope], seq: u64) -> Vec<String> {
    let mut commands = 0u64;
    let mut fetched = 0u64;
    let mut other: BTreeMap<String, u64> = BTreeMap::new();
    for event in events.iter().filter(|e| e.seq >= seq) {
        let AgentMessage::ToolResult(result) = &event.message else {
            continue;
        };
        match result.name.as_str() {
            "bash" | "kill_shell" => commands += 1,
            "web_fetch" => fetched += 1,
            "read_file" | "write_file" | "edit_file" | "list_dir" | "glob" | "grep"
            | "bash_output" | "todo_write" | "skill" | "task" | "read_image" => {}
            name => *other.entry(name.to_string()).or_default() += 1,
        }
    }
    let mut notes = Vec::new();
    if commands > 0 {
        notes.push(format!(
            "{} ran: what commands do outside the workspace (installed packages, other directories, processes, the network) and to ignored files is not taken back",
            crate::text::count(commands, "command")
        ));
    }
    if fetched > 0 {
        notes.push(format!(
            "{} fetched: requests already made cannot be taken back",
            crate::text::count(fetched, "web page")
        ));
    }
    if !other.is_empty() {
        let names: Vec<String> = other.keys().cloned().collect();
        notes.push(format!(
            "calls to {} ({}): what they did outside the workspace's files is not taken back",
            crate::text::count(other.values().sum::<u64>(), "other tool"),
            names.join(", ")
        ));
    }
    notes
}

/// Preview (`apply` false) or do a rewind of the files of session
/// `session` to before turn `seq`. Conflicts are overwritten only when
/// `overwrite`. Done (no conflict left alone): the checkpoints rewound are
/// marked undone.
pub async fn files(
    store: &dyn SessionStore,
    session: &SessionId,
    workspace: &Path,
    seq: u64,
    events: &[EventEnvelope],
    apply: bool,
    overwrite: bool,
) -> Result<RewindReport, RewindError> {
    let (mut report, planned, ids) = plan(store, session, workspace, seq, events).await?;
    report.mode = RewindMode::Code;
    if !apply {
        return Ok(report);
    }
    report.preview = false;
    report.overwrote = overwrite && report.conflicts().next().is_some();
    for item in planned {
        let act = match item.action {
            FileAction::Unchanged => false,
            FileAction::Conflict => overwrite,
            _ => true,
        };
        if !act {
            continue;
        }
        let root = workspace.to_path_buf();
        let path = item.path.clone();
        tokio::task::spawn_blocking(move || {
            write_back(&root, &path, item.target.as_ref(), item.target_bytes)
        })
        .await?
        .map_err(|detail| RewindError::Write {
            path: item.path.clone(),
            detail,
        })?;
    }
    // Taken back only when every file was: a conflict left alone keeps the
    // turn to rewind (or undo) again, with `--force`.
    let left_alone = report.conflicts().next().is_some() && !overwrite;
    if !ids.is_empty() && !left_alone {
        store.mark_undone(session, ids).await?;
    }
    Ok(report)
}

/// Put `root/rel` back to `target` (`None`: remove it), never through a
/// symlink leading out of `root`.
fn write_back(
    root: &Path,
    rel: &str,
    target: Option<&FileVersion>,
    bytes: Option<Vec<u8>>,
) -> Result<(), String> {
    if !scan::parent_inside(root, rel) {
        return Err("a directory above it leads out of the workspace".into());
    }
    let path = root.join(rel);
    let existing = std::fs::symlink_metadata(&path).ok();
    if existing.as_ref().is_some_and(|m| m.is_dir()) {
        return Err("a directory is there now".into());
    }
    let (Some(target), Some(bytes)) = (target, bytes) else {
        return match existing {
            Some(_) => std::fs::remove_file(&path).map_err(|e| e.to_string()),
            None => Ok(()),
        };
    };
    let parent = path.parent().ok_or("no parent directory")?;
    std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    if !scan::parent_inside(root, rel) {
        return Err("a directory above it leads out of the workspace".into());
    }
    match target.kind {
        FileKind::Symlink => {
            use std::os::unix::ffi::OsStrExt;
            if existing.is_some() {
                std::fs::remove_file(&path).map_err(|e| e.to_string())?;
            }
            std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&bytes), &path)
                .map_err(|e| e.to_string())
        }
        FileKind::File | FileKind::Executable => {
            use std::io::Write;
            use std::os::unix::fs::PermissionsExt;
            let mode = existing
                .as_ref()
                .filter(|m| m.is_file())
                .map(|m| m.permissions().mode() & 0o7777)
                .unwrap_or(0o644);
            let mode = match target.kind {
                FileKind::Executable => mode | 0o111,
                _ => mode & !0o111,
            };
            let mut file = tempfile::NamedTempFile::new_in(parent).map_err(|e| e.to_string())?;
            file.write_all(&bytes).map_err(|e| e.to_string())?;
            file.as_file()
                .set_permissions(std::fs::Permissions::from_mode(mode))
                .map_err(|e| e.to_string())?;
            // A rename replaces a symlink there rather than following it.
            file.persist(&path).map_err(|e| e.error.to_string())?;
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_back_never_follows_a_link_out() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        let version = FileVersion {
            hash: scan::hash(b"x"),
            kind: FileKind::File,
            size: 1,
        };
        let err = write_back(dir.path(), "out/f", Some(&version), Some(b"x".to_vec()));
        assert!(err.is_err());
        assert!(!outside.path().join("f").exists());
        // A link at the path itself is replaced, not written through.
        let target = outside.path().join("victim");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("link")).unwrap();
        write_back(dir.path(), "link", Some(&version), Some(b"x".to_vec())).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(std::fs::read(dir.path().join("link")).unwrap(), b"x");
        assert!(!dir.path().join("link").is_symlink());
    }
}
