//! What a session's permission checks start from, worked out where I/O is
//! allowed: `$HOME` (what `~` means), the roots, and whether Landlock
//! works here. The daemon's sessions and the library's agents both start
//! from this, so both mean the same by a mode, a rule and a root.

use crate::permissions::Rules;
use crate::protocol::PermissionMode;
use crate::session::core::permission::PermissionConfig;
use crate::settings::{SandboxSettings, home_dir};
use std::path::{Path, PathBuf};

/// The permission settings of a session working in `workspace`.
pub fn permission_config(
    mode: PermissionMode,
    rules: Rules,
    approval_timeout_secs: Option<u64>,
    workspace: &Path,
    sandbox: &SandboxSettings,
) -> PermissionConfig {
    let home = home_dir();
    PermissionConfig {
        mode,
        rules,
        roots: sandbox.roots(workspace, home.as_deref()),
        // The session's skills' folders, once they are read.
        read_roots: Vec::new(),
        // Without a home, `~` in a rule matches nothing real.
        home: home.unwrap_or_else(|| PathBuf::from("/nonexistent-home")),
        sandboxed: sandbox.enabled && crate::tools::sandbox::probe().is_available(),
        approval_timeout_ms: approval_timeout_secs.map(|s| s.saturating_mul(1000)),
    }
}
