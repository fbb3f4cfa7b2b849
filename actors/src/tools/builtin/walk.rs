//! The directory walk shared by `glob` and `grep`: which files count as "in
//! the workspace" for searching.
//!
//! - `.gitignore`, `.git/info/exclude`, the global git excludes file and
//!   `.ignore` files are respected, whether or not the tree is inside a git
//!   repository (`require_git(false)`): a workspace that is a plain copy of a
//!   repository, or not yet `git init`ed, is searched the same way.
//! - Hidden files and directories are included (`.github/`, `.env.example`
//!   are often what the model is looking for), but `.git` itself is skipped.
//! - Symbolic links are not followed; entries come sorted by file name.

use super::ToolError;
use ignore::{DirEntry, Walk, WalkBuilder};
use std::path::Path;
use tokio_util::sync::CancellationToken;

/// A walk over everything under `root` that the searching tools consider.
pub(crate) fn walk(root: &Path) -> Walk {
    WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(|entry| entry.file_name() != ".git")
        .build()
}

/// Calls `visit(path, path relative to root)` for every file of the walk
/// under `root`, stopping when `cancel` fires. Returns how many entries
/// could not be read.
pub(crate) fn files(
    root: &Path,
    cancel: &CancellationToken,
    mut visit: impl FnMut(&Path, &Path),
) -> Result<usize, ToolError> {
    let mut unreadable = 0;
    for entry in walk(root) {
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let Ok(entry) = entry else {
            unreadable += 1;
            continue;
        };
        if entry.depth() == 0 || !is_file(&entry) {
            continue;
        }
        let rel = entry.path().strip_prefix(root).unwrap_or(entry.path());
        visit(entry.path(), rel);
    }
    Ok(unreadable)
}

/// Whether a walked entry is a file (or a symbolic link to one).
pub(crate) fn is_file(entry: &DirEntry) -> bool {
    match entry.file_type() {
        Some(t) if t.is_file() => true,
        Some(t) if t.is_symlink() => entry.path().is_file(),
        _ => false,
    }
}

/// `path` relative to `root`, with `/` separators, for display.
pub(crate) fn relative(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}
