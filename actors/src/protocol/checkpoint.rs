//! Checkpoints and rewind as front ends see them: what a tool call changed
//! in the workspace (carried by its `tool_result` event), what each user
//! turn changed (the `/rewind` list), what a rewind would do (its preview,
//! with diffs) and what it did. Plain data.

use super::SessionId;
use serde::{Deserialize, Serialize};

/// How a path changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    Created,
    Modified,
    Deleted,
}

/// One path a tool call (or a turn) changed, with its line counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedFile {
    /// Relative to the workspace, `/` separated.
    pub path: String,
    pub change: Change,
    /// Lines added and removed (0 for a binary file).
    pub added: u64,
    pub removed: u64,
    /// Not text: no line counts, no diff.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
}

/// The checkpoint a tool call's changes were recorded in: a field of its
/// `tool_result` event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointRef {
    pub id: String,
    /// What the call changed (empty: nothing).
    pub files: Vec<ChangedFile>,
    /// A limit was hit while looking (files or bytes): what was not
    /// recorded, said plainly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limited: Option<String>,
    /// The bytes of blobs the session's checkpoints keep now, this one's
    /// included (0: not known).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub session_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One user turn of a session and what it changed in the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnChanges {
    /// The seq of the turn's `user` event: what a rewind names.
    pub seq: u64,
    /// The query, shortened.
    pub prompt: String,
    /// Every path the turn changed (first version before it, last after).
    pub files: Vec<ChangedFile>,
    /// Its changes were taken back already.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undone: bool,
}

/// What a rewind takes back.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewindMode {
    /// The files return to their state before the turn, and the
    /// conversation forks before it.
    #[default]
    Both,
    /// A fork before the turn (as `/fork`); the files stay.
    Conversation,
    /// The files alone; the conversation stays.
    Code,
}

impl RewindMode {
    /// The word front ends and the command line use.
    pub fn as_str(self) -> &'static str {
        match self {
            RewindMode::Both => "both",
            RewindMode::Conversation => "conversation",
            RewindMode::Code => "code",
        }
    }

    /// The mode `word` names (`both`, `conversation`, `code`).
    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "both" | "all" => Some(RewindMode::Both),
            "conversation" | "chat" => Some(RewindMode::Conversation),
            "code" | "files" => Some(RewindMode::Code),
            _ => None,
        }
    }
}

/// What a rewind does with one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAction {
    /// Written back as it was.
    Restore,
    /// Created since: removed.
    Remove,
    /// Deleted since: written back.
    Recreate,
    /// Already as it was: nothing to do.
    Unchanged,
    /// Changed since by someone else: left alone unless overwriting.
    Conflict,
}

/// One path of a rewind, with the diff from what is on disk to what it
/// becomes (for a conflict: from what this session left to what is there).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindFile {
    pub path: String,
    pub action: FileAction,
    /// A unified diff, shortened when long; empty for a binary file.
    pub diff: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
}

/// What a rewind to `seq` would do (a preview) or did (its report).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindReport {
    /// The turn rewound to: the seq of its `user` event.
    pub seq: u64,
    pub mode: RewindMode,
    /// Only a preview: nothing was changed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preview: bool,
    /// The files, in path order.
    pub files: Vec<RewindFile>,
    /// Conflicts were overwritten (the user said so).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overwrote: bool,
    /// The session the conversation continues in (modes `both` and
    /// `conversation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked: Option<SessionId>,
    /// What a rewind cannot take back, said plainly (commands' effects
    /// outside the workspace, pages fetched, MCP tools' effects).
    pub cannot_restore: Vec<String>,
    /// The query of the turn rewound to (a front end may offer it again).
    pub prompt: String,
}

impl RewindReport {
    /// The paths left alone as conflicts.
    pub fn conflicts(&self) -> impl Iterator<Item = &RewindFile> {
        self.files
            .iter()
            .filter(|f| f.action == FileAction::Conflict)
    }
}

/// `/rewind` without a turn: `data` of a `rewinds` event.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewindList {
    /// Oldest first.
    pub turns: Vec<TurnChanges>,
}

/// `/rewind SEQ` or `/undo` done: `data` of a `rewound` event.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewound {
    #[serde(flatten)]
    pub report: RewindReport,
    /// The fork the conversation continues in: front ends switch to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switch_to: Option<SessionId>,
}
