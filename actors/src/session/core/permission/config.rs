//! What a session's permission checks start from, and what they keep.

use crate::permissions::{Rule, Rules};
use crate::protocol::PermissionMode;
use serde::Serialize;
use std::path::PathBuf;

/// Fixed when the session is made (from `permission_mode`,
/// `[permissions]` and `[sandbox]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PermissionConfig {
    /// The mode the session starts in.
    pub mode: PermissionMode,
    /// The configured rules (every file's, `--allow` first).
    pub rules: Rules,
    /// Where file tools work without asking and commands may write: the
    /// workspace first, then the write roots. Absolute and normalised.
    pub roots: Vec<PathBuf>,
    /// Where the file tools may also read without asking (never write):
    /// the folders of the session's skills. Absolute and normalised.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub read_roots: Vec<PathBuf>,
    /// What `~` means in rules.
    pub home: PathBuf,
    /// Commands run in the sandbox (Landlock is here and `[sandbox]` is
    /// on). Without it, plan mode cannot let a command run.
    pub sandboxed: bool,
    /// Reject a request nobody answered after this long.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_timeout_ms: Option<u64>,
}

/// What the session keeps: its mode now and the rules "allow always"
/// added.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PermissionState {
    pub mode: PermissionMode,
    /// Allow rules added by `allow_always` answers (in this session; they
    /// come back when it is loaded).
    pub added: Vec<Rule>,
    /// Allow rules of the running turn alone: the `allowed-tools` of the
    /// custom command it runs (cleared when the turn ends).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub for_turn: Vec<Rule>,
}

impl PermissionState {
    /// The state a new session starts in.
    pub fn new(config: &PermissionConfig) -> Self {
        PermissionState {
            mode: config.mode,
            added: Vec::new(),
            for_turn: Vec::new(),
        }
    }

    /// The rules in force: the configured ones, with the session's added
    /// allow rules, then the running turn's, after the configured allow
    /// rules.
    pub fn rules(&self, config: &PermissionConfig) -> Rules {
        let mut rules = config.rules.clone();
        rules.allow.extend(self.added.iter().cloned());
        rules.allow.extend(self.for_turn.iter().cloned());
        rules
    }

    /// Add an allow rule (once).
    pub fn add(&mut self, rule: Rule) {
        if !self.added.contains(&rule) {
            self.added.push(rule);
        }
    }
}
