//! Hooks as the core and the wire see them: the events a hook runs for,
//! what the hooks of one event answered, and the report of one hook run
//! (the `hook` system event).
//!
//! The names and the answer's meaning are Claude Code's (its
//! `.claude/settings.json` `hooks` block is read as it is), so that a hook
//! written for it works here. Plain data: reading hook files and running
//! hooks is `crate::hooks`; what a session does with an answer is the
//! session core's.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::fmt;

/// When a hook runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum HookEvent {
    /// A session started or was loaded again; its answer's context joins
    /// the system prompt.
    SessionStart,
    /// A query is about to start a turn: a hook may refuse it (the model
    /// never sees it) or add context to it.
    UserPromptSubmit,
    /// A tool call is about to be checked and run: a hook may allow, deny
    /// or ask, or change its arguments. Matched on the tool's name.
    PreToolUse,
    /// A tool call asks for approval: a hook may answer for the user.
    PermissionRequest,
    /// A tool call succeeded: a hook may tell the model something about it.
    PostToolUse,
    /// A tool call failed.
    PostToolUseFailure,
    /// The model ended its turn: a hook may send it back to work, saying
    /// why.
    Stop,
    /// A sub-agent's session ended its turn (its `Stop`).
    SubagentStop,
    /// A summary is about to replace the older part of the conversation.
    PreCompact,
    /// A summary replaced it.
    PostCompact,
    /// The session needs the user (an approval waits).
    Notification,
    /// The session is unloaded or the process stops.
    SessionEnd,
}

impl HookEvent {
    /// Every event, in the order above.
    pub const ALL: [HookEvent; 12] = [
        HookEvent::SessionStart,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PermissionRequest,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::Stop,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::PostCompact,
        HookEvent::Notification,
        HookEvent::SessionEnd,
    ];

    /// The name in hook files and in the JSON a hook reads.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PermissionRequest => "PermissionRequest",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::PostCompact => "PostCompact",
            HookEvent::Notification => "Notification",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    /// The event named `name` (as in hook files).
    pub fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Its hooks are matched on a tool's name (the others' matchers, when
    /// given, are matched on what the event is about: a session start's
    /// source, a compaction's trigger, a notification's type).
    pub fn is_about_a_tool(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PermissionRequest
                | HookEvent::PostToolUse
                | HookEvent::PostToolUseFailure
        )
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The hooks a session runs, as read from its hook files and the
/// configuration (the project's only once trusted), and what could not
/// be used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HookSet {
    /// In the order they were read: the configuration's `[hooks]`, the
    /// user's `~/.claude/settings.json`, then the project's files.
    pub groups: Vec<HookGroup>,
    /// What the session says at start about hooks it will not run (a
    /// malformed entry, project hooks not trusted yet), naming the file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

impl HookSet {
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

/// One entry of an event's list: a matcher and the hooks it runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookGroup {
    pub event: HookEvent,
    /// What it matches (for tool events, the tool's name: `Bash`,
    /// `edit_file|write_file`, `mcp__github__.*`); `None`, empty or `*`:
    /// everything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    pub handlers: Vec<HookHandler>,
    /// The file it was read from, or `config`.
    pub source: String,
}

impl HookGroup {
    /// One line per hook, as `agentbus hooks` and the chat's question show
    /// them: `PreToolUse [Bash]: command: ./guard.sh (.claude/settings.json)`.
    pub fn lines(&self) -> impl Iterator<Item = String> + '_ {
        let matcher = self
            .matcher
            .as_deref()
            .map(|m| format!(" [{m}]"))
            .unwrap_or_default();
        self.handlers.iter().map(move |handler| {
            format!(
                "{}{matcher}: {} ({})",
                self.event,
                handler.label(),
                self.source
            )
        })
    }
}

/// What runs when a hook fires.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HookHandler {
    /// `bash -c COMMAND` in the workspace, the event as JSON on stdin.
    Command {
        command: String,
        /// Seconds before it is stopped (default 60).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<u64>,
    },
    /// The event as JSON POSTed to `url`; the body answers as a command's
    /// stdout would.
    Http {
        url: String,
        /// Header values; `$VAR` and `${VAR}` are filled in from the
        /// environment for the variables in `allowed_env_vars` only.
        #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
        headers: std::collections::BTreeMap<String, String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        allowed_env_vars: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        timeout: Option<u64>,
    },
}

/// How long a hook runs when its entry says nothing.
pub const DEFAULT_HOOK_TIMEOUT_SECS: u64 = 60;

impl HookHandler {
    /// How it is shown: `command: …` or `http: URL`.
    pub fn label(&self) -> String {
        match self {
            HookHandler::Command { command, .. } => format!("command: {command}"),
            HookHandler::Http { url, .. } => format!("http: {url}"),
        }
    }

    /// Seconds it may run.
    pub fn timeout_secs(&self) -> u64 {
        match self {
            HookHandler::Command { timeout, .. } | HookHandler::Http { timeout, .. } => {
                timeout.unwrap_or(DEFAULT_HOOK_TIMEOUT_SECS).max(1)
            }
        }
    }
}

/// What a hook decided about the thing its event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// Run the tool call without asking (deny rules still hold).
    Allow,
    /// Ask the user first, whatever the mode and rules say.
    Ask,
    /// Do not run the tool call; the model reads the reason.
    Deny,
    /// Refuse the query, keep the turn going (a stop), or tell the model
    /// (after a tool call): the reason says why.
    Block,
}

/// What the hooks of one event answered, folded: the strongest decision
/// wins (block and deny over ask over allow), reasons and contexts are
/// joined in the order the hooks are listed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HookAnswer {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<HookDecision>,
    /// Why: what the model reads of a denial or a block, what the user
    /// reads of a refused query, what an approval shows for `ask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The tool call's arguments to run with instead (`PreToolUse`,
    /// `PermissionRequest`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_input: Option<Value>,
    /// Text the model reads with the query (`UserPromptSubmit`), in the
    /// system prompt (`SessionStart`), or after a tool's result
    /// (`PostToolUse`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context: Vec<String>,
    /// A hook said `"continue": false`: the turn stops here, and the user
    /// reads this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,
}

impl HookAnswer {
    /// The hooks said nothing that changes anything.
    pub fn is_empty(&self) -> bool {
        self.decision.is_none()
            && self.updated_input.is_none()
            && self.context.is_empty()
            && self.stop.is_none()
    }
}

/// How one hook run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum HookOutcome {
    /// It ran and said nothing that blocks.
    Ok,
    /// It decided (allow, deny, ask or block).
    Decided {
        decision: HookDecision,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// It failed without blocking (another exit code than 0 and 2, an
    /// HTTP error, output that is not the JSON expected, a timeout): what
    /// it was about goes on.
    Failed { error: String },
}

/// One hook run, as a `hook` system event's `data`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookRan {
    pub event: HookEvent,
    /// What ran: `command: …` or `http: URL`.
    pub handler: String,
    /// The file (or `config`) the hook was read from.
    pub source: String,
    /// The tool call it ran for, by tool name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub duration_ms: u64,
    #[serde(flatten)]
    pub outcome: HookOutcome,
}

/// A hook kept the turn going (a `Stop` hook blocked the end of the turn):
/// the model reads `reason` as a new message and goes on. Persisted, and
/// folded into the history on load. `hook_continued`'s `data`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookContinued {
    pub event: HookEvent,
    pub reason: String,
}

/// What the model reads of a hook's feedback, as a message of its own.
pub fn feedback_text(event: HookEvent, reason: &str) -> String {
    format!("{event} hook feedback:\n{reason}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_named_as_in_claude_code_files() {
        for event in HookEvent::ALL {
            assert_eq!(HookEvent::from_name(event.name()), Some(event));
            assert_eq!(serde_json::to_value(event).unwrap(), json!(event.name()));
        }
        assert_eq!(HookEvent::from_name("PreToolUSE"), None);
    }

    #[test]
    fn a_hook_run_is_flat_json() {
        let ran = HookRan {
            event: HookEvent::PreToolUse,
            handler: "command: ./guard.sh".into(),
            source: ".claude/settings.json".into(),
            tool: Some("bash".into()),
            duration_ms: 12,
            outcome: HookOutcome::Decided {
                decision: HookDecision::Deny,
                reason: Some("no rm -rf".into()),
            },
        };
        let value = serde_json::to_value(&ran).unwrap();
        assert_eq!(value["outcome"], "decided");
        assert_eq!(value["decision"], "deny");
        assert_eq!(value["event"], "PreToolUse");
        assert_eq!(serde_json::from_value::<HookRan>(value).unwrap(), ran);
    }
}
