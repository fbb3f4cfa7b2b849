//! Permission modes and approvals, as front ends see them.
//!
//! A tool call the model makes either runs, is denied, or asks the user
//! first. What decides is the session's [`PermissionMode`] and the
//! configured rules (see `permissions`); a call that asks publishes an
//! `approval_request` event ([`super::ApprovalRequestEvent`]) and waits for
//! an [`ApprovalDecision`], which any attached front end may send (the
//! first one wins). How it was settled is announced to everyone as a
//! `system` event of subtype `approval_resolved` ([`ApprovalResolved`]).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How much runs without asking. The names are Claude Code's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PermissionMode {
    /// Reads inside the workspace and the write roots run; edits, writes,
    /// commands and MCP tools ask.
    #[default]
    #[serde(alias = "ask")]
    Default,
    /// File edits inside the workspace and the write roots run too;
    /// commands and MCP tools ask.
    #[serde(alias = "acceptEdits", alias = "accept_edits")]
    AcceptEdits,
    /// Read-only: anything that writes is denied, commands run in a
    /// read-only sandbox, and the model is told it is planning.
    Plan,
    /// Nothing asks (but deny rules and the sandbox still hold).
    #[serde(alias = "bypassPermissions", alias = "bypass_permissions")]
    Bypass,
}

impl PermissionMode {
    /// Every mode, in order of how much runs without asking.
    pub const ALL: [PermissionMode; 4] = [
        PermissionMode::Plan,
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Bypass,
    ];

    /// The name as users type it (`accept-edits`).
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Plan => "plan",
            PermissionMode::Bypass => "bypass",
        }
    }

    /// One line saying what the mode lets run.
    pub fn describe(self) -> &'static str {
        match self {
            PermissionMode::Default => {
                "reads inside the workspace run; edits, writes, commands and MCP tools ask"
            }
            PermissionMode::AcceptEdits => {
                "reads and edits inside the workspace run; commands and MCP tools ask"
            }
            PermissionMode::Plan => {
                "read-only: nothing that writes runs; commands ask and run in a read-only sandbox"
            }
            PermissionMode::Bypass => "nothing asks; deny rules and the sandbox still hold",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown permission mode `{0}`; expected one of default, accept-edits, plan, bypass")]
pub struct UnknownMode(pub String);

impl FromStr for PermissionMode {
    type Err = UnknownMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(serde_json::Value::String(s.trim().to_string()))
            .map_err(|_| UnknownMode(s.to_string()))
    }
}

/// The user's answer to an `approval_request`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalChoice {
    /// Run this call.
    AllowOnce,
    /// Run this call, and add the request's `suggested_rule` to the
    /// session's allow rules (with `save`: to the workspace's
    /// `.agentbus.toml` too).
    AllowAlways,
    /// Do not run it; the model reads the `message`, if any.
    Reject,
}

impl ApprovalChoice {
    /// The name on the wire (`allow_once`).
    pub fn as_str(self) -> &'static str {
        match self {
            ApprovalChoice::AllowOnce => "allow_once",
            ApprovalChoice::AllowAlways => "allow_always",
            ApprovalChoice::Reject => "reject",
        }
    }
}

/// A decision on one `approval_request`. Sent as
/// `{"type": "approval", "request_id", "decision", "message"?, "save"?}`
/// ([`super::SessionInput::Approval`]) or to
/// `POST /v1/sessions/{id}/approvals/{request_id}`; it bypasses the queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalDecision {
    pub decision: ApprovalChoice,
    /// For `reject`: what the model should read (why not, what instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For `allow_always`: also save the rule to the workspace's
    /// `.agentbus.toml`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub save: bool,
    /// The name of the API token that answered (`agentbus serve` sets it,
    /// over whatever a client sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

impl ApprovalDecision {
    /// A decision with no message and no save.
    pub fn new(decision: ApprovalChoice) -> Self {
        ApprovalDecision {
            decision,
            message: None,
            save: false,
            by: None,
        }
    }

    /// A rejection the model reads `message` of.
    pub fn reject(message: impl Into<String>) -> Self {
        ApprovalDecision {
            decision: ApprovalChoice::Reject,
            message: Some(message.into()),
            save: false,
            by: None,
        }
    }
}

/// How an approval request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalOutcome {
    /// Allowed this once.
    AllowedOnce,
    /// Allowed, and a rule added so the same call does not ask again.
    AllowedAlways,
    /// Rejected by the user.
    Rejected,
    /// Nobody answered within `approval_timeout_secs`: rejected.
    TimedOut,
    /// The turn was interrupted (or the process stopped) first.
    Cancelled,
}

impl ApprovalOutcome {
    /// Whether the call runs.
    pub fn allowed(self) -> bool {
        matches!(
            self,
            ApprovalOutcome::AllowedOnce | ApprovalOutcome::AllowedAlways
        )
    }
}

/// The `data` of an `approval_resolved` system event: the request is
/// settled, and every front end showing it should close it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalResolved {
    pub request_id: String,
    pub call_id: String,
    pub outcome: ApprovalOutcome,
    /// The user's message to the model, for a rejection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For `allowed_always`: the rule added to the session's allow rules
    /// (loading the session adds it again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// The rule is also being saved to the workspace's `.agentbus.toml`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub save: bool,
    /// The name of the API token that answered, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
    /// On a parent's stream: the sub-agent's session whose request this
    /// settles (`request_id` is then `CHILD/REQUEST`, as its request was
    /// told there). Its `rule` is the child's, not the parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub child_session: Option<super::SessionId>,
}

/// The `data` of a `mode` system event: the permission mode now in force
/// (`/mode`; loading the session reads it back).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModeChanged {
    pub mode: PermissionMode,
    /// The mode before, when it changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<PermissionMode>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_by_their_names_and_claude_codes() {
        for mode in PermissionMode::ALL {
            assert_eq!(mode.as_str().parse::<PermissionMode>(), Ok(mode));
        }
        assert_eq!("acceptEdits".parse(), Ok(PermissionMode::AcceptEdits));
        assert_eq!("bypassPermissions".parse(), Ok(PermissionMode::Bypass));
        let err = "yolo".parse::<PermissionMode>().unwrap_err();
        assert!(err.to_string().contains("accept-edits"), "{err}");
    }

    #[test]
    fn a_decision_reads_from_its_wire_form() {
        let decision: ApprovalDecision =
            serde_json::from_str(r#"{"decision":"reject","message":"use trash"}"#).unwrap();
        assert_eq!(decision, ApprovalDecision::reject("use trash"));
        let always: ApprovalDecision =
            serde_json::from_str(r#"{"decision":"allow_always","save":true}"#).unwrap();
        assert!(always.save);
    }
}
