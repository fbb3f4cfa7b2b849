//! What a tool call may know about its surroundings: the workspace it works
//! in, a cancellation token, output limits, and the environment policy of
//! the commands it starts.

use super::error::ToolError;
use crate::permissions::normalize;
use std::path::{Path, PathBuf};
use tokio_util::sync::CancellationToken;

/// Per-call context handed to a tool.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// Absolute path of the workspace; relative paths resolve against it.
    pub workspace: PathBuf,
    /// Cancelled when the user interrupts the turn or the call times out.
    pub cancel: CancellationToken,
    /// Outputs longer than this many bytes are truncated with a marker.
    pub max_output_bytes: usize,
    /// What environment commands the tool starts get.
    pub environment: crate::settings::EnvironmentPolicy,
    /// `[sandbox]`: where commands and file tools may write.
    pub sandbox: crate::settings::SandboxSettings,
    /// What this call may do beyond the usual limits.
    pub grant: crate::model::Grant,
}

impl ToolContext {
    /// A context for `workspace` with the default output limit and a
    /// cancellation token of its own (to call a tool directly, e.g. in a
    /// test).
    pub fn new(workspace: impl Into<PathBuf>) -> Self {
        ToolContext {
            workspace: workspace.into(),
            cancel: CancellationToken::new(),
            max_output_bytes: crate::settings::DEFAULT_MAX_OUTPUT_BYTES,
            environment: Default::default(),
            sandbox: Default::default(),
            grant: Default::default(),
        }
    }

    /// `path` made absolute against the workspace and lexically normalised
    /// (`.` and `..` removed). Does not touch the file system.
    pub fn resolve(&self, path: &str) -> PathBuf {
        let p = Path::new(path);
        let joined = if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.workspace.join(p)
        };
        normalize(&joined)
    }

    /// Like [`resolve`](Self::resolve), but refuses paths outside the
    /// workspace (after following symlinks of the part that exists).
    pub fn resolve_for_write(&self, path: &str) -> Result<PathBuf, ToolError> {
        let resolved = self.resolve(path);
        let workspace = canonical_prefix(&self.workspace);
        let target = canonical_prefix(&resolved);
        if target.starts_with(&workspace) {
            Ok(resolved)
        } else {
            Err(ToolError::failed(format!(
                "refusing to write {}: it is outside the workspace {}; use a path inside the workspace",
                resolved.display(),
                self.workspace.display()
            )))
        }
    }
}

/// The canonical form of the longest existing ancestor of `path`, with the
/// non-existing rest appended.
fn canonical_prefix(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = existing.canonicalize() {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_resolve_against_the_workspace() {
        let ctx = ToolContext::new("/work/ws");
        assert_eq!(ctx.resolve("src/../a.txt"), PathBuf::from("/work/ws/a.txt"));
        assert_eq!(ctx.resolve("/etc/hosts"), PathBuf::from("/etc/hosts"));
    }

    #[test]
    fn writes_outside_the_workspace_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path());
        assert!(ctx.resolve_for_write("new/file.txt").is_ok());
        let err = ctx.resolve_for_write("../outside.txt").unwrap_err();
        assert!(err.to_string().contains("outside the workspace"), "{err}");
    }
}
