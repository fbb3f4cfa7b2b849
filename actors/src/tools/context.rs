//! What a tool call may know about its surroundings: the workspace it works
//! in, a cancellation token, output limits, the environment policy of
//! the commands it starts, and its session's per-session handles (file
//! access, background commands).

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
    /// Where `read_file`, `write_file` and `edit_file` read and write text:
    /// the disk, or a front end that holds the files (see `files.rs`).
    pub files: super::files::Files,
    /// The session's background commands (`bash` with
    /// `run_in_background`, `bash_output`, `kill_shell`).
    pub background: super::background::BackgroundCommands,
    /// How many background commands may run at once in the session.
    pub max_background_commands: usize,
    /// The call's span and session: a tool that calls elsewhere (an MCP
    /// server) traces that beneath it.
    pub trace: crate::spans::CallTrace,
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
            files: Default::default(),
            background: Default::default(),
            max_background_commands: crate::settings::DEFAULT_MAX_BACKGROUND_COMMANDS,
            trace: Default::default(),
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

    /// The directories file tools may work in and commands may write to
    /// ([`SandboxSettings::roots`](crate::settings::SandboxSettings::roots)
    /// with `$HOME`). Lexical: symlinks are resolved by whoever opens a
    /// file (`tools/confine.rs`).
    pub fn roots(&self) -> Vec<PathBuf> {
        let home = crate::settings::home_dir();
        self.sandbox.roots(&self.workspace, home.as_deref())
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
    fn roots_are_the_workspace_then_the_write_roots() {
        let mut ctx = ToolContext::new("/work/ws");
        ctx.sandbox.write_roots = vec!["../shared".into(), "/opt/out".into()];
        assert_eq!(
            ctx.roots(),
            [
                PathBuf::from("/work/ws"),
                PathBuf::from("/work/shared"),
                PathBuf::from("/opt/out")
            ]
        );
    }
}
