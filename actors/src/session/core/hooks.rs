//! What the session core knows of hooks: which hooks an event matches
//! (so that it waits only when one does), the JSON fields a hook reads
//! about a tool call, and how a hook run is told on the stream.
//!
//! Matchers follow Claude Code: empty or `*` matches everything, a plain
//! name (or names joined by `|`) matches exactly, anything else is a
//! regular expression that must match the whole name. A tool matches by
//! its own name or by the name Claude Code gives the same tool (`Bash`
//! for `bash`, `Edit` for `edit_file`, ...), so hook files written for
//! Claude Code work unchanged; for the same reason a file tool's `path`
//! is also given to hooks as `file_path`. Pure: the hooks run in the
//! AgentLoop's tasks (`crate::hooks`).
//!
//! Where a turn waits (`step/hook_waits.rs`): `SessionStart` before the
//! first query; a query's `UserPromptSubmit` before it enters the
//! history; a call's `PreToolUse` before its permission check; a turn's
//! `Stop` before its `result` (a hook that says to go on is a
//! `hook_continued` event, which the fold keeps).

use crate::protocol::hook::{HookEvent, HookGroup, HookOutcome, HookRan, HookSet};
use crate::protocol::{AgentMessage, InputId, SystemEvent};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

use super::claude_tools::claude_name;

/// Whether `matcher` matches `subject` (a tool's name, or what a
/// non-tool event is about).
pub fn matches(matcher: Option<&str>, subject: &str) -> bool {
    let Some(matcher) = matcher
        .map(str::trim)
        .filter(|m| !m.is_empty() && *m != "*")
    else {
        return true;
    };
    let names = [Some(subject), claude_name(subject)];
    let names = names.iter().flatten();
    if matcher
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '|' || c == '-')
    {
        let words: Vec<&str> = matcher.split('|').collect();
        return names.into_iter().any(|n| words.contains(n));
    }
    match regex::Regex::new(&format!("^(?:{matcher})$")) {
        Ok(re) => names.into_iter().any(|n| re.is_match(n)),
        // A matcher that is not a valid expression matches its own text.
        Err(_) => names.into_iter().any(|n| *n == matcher),
    }
}

/// The groups of `set` that `event` about `subject` runs (a matcher on an
/// event that is about nothing matches).
pub fn matching<'a>(
    set: &'a HookSet,
    event: HookEvent,
    subject: Option<&'a str>,
) -> impl Iterator<Item = &'a HookGroup> + 'a {
    set.groups.iter().filter(move |g| {
        g.event == event && subject.is_none_or(|s| matches(g.matcher.as_deref(), s))
    })
}

/// Whether any hook runs for `event` about `subject`.
pub fn any(set: &HookSet, event: HookEvent, subject: Option<&str>) -> bool {
    matching(set, event, subject).next().is_some()
}

/// What a hook reads about a call of `tool` with `input` in `workspace`:
/// `tool_name` and `tool_input` (a file tool's `path` also as an absolute
/// `file_path`).
pub fn tool_fields(tool: &str, input: &Value, workspace: &str) -> Map<String, Value> {
    let mut input = input.clone();
    if let Some(args) = input.as_object_mut()
        && let Some(path) = args.get("path").and_then(Value::as_str)
        && claude_name(tool).is_some()
    {
        let absolute = std::path::Path::new(workspace).join(path);
        let absolute = Value::from(absolute.display().to_string());
        args.entry("file_path").or_insert(absolute);
    }
    let mut fields = Map::new();
    fields.insert("tool_name".into(), Value::from(tool));
    fields.insert("tool_input".into(), input);
    fields
}

/// Arguments a hook gave back, as `tool` takes them: a `file_path` that
/// [`tool_fields`] added becomes `path` again.
pub fn tool_input_from_hook(tool: &str, mut input: Value) -> Value {
    if claude_name(tool).is_some()
        && let Some(args) = input.as_object_mut()
        && let Some(path) = args.remove("file_path")
    {
        args.insert("path".into(), path);
    }
    input
}

/// What a session waits for from its hooks.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HookState {
    /// The runs asked for and not answered, by hook id.
    pub waiting: BTreeMap<u64, HookWait>,
    /// What `SessionStart` hooks added to the system prompt.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub session_context: Vec<String>,
    /// The `SessionStart` hooks are running: queries wait.
    pub starting: bool,
}

/// What a hook run was asked for.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "for", rename_all = "snake_case")]
pub enum HookWait {
    /// A call of batch `batch_id` waits before its permission check.
    PreToolUse {
        batch_id: u64,
        call: crate::model::ToolCall,
    },
    /// Turn `turn_id`'s query waits (the turn's phase holds it).
    Prompt {
        turn_id: InputId,
    },
    /// Turn `turn_id` would end.
    Stop {
        turn_id: InputId,
    },
    SessionStart,
}

/// The `hook` event telling one run.
pub fn ran_event(ran: &HookRan) -> AgentMessage {
    let about = ran
        .tool
        .as_deref()
        .map(|t| format!(" for {t}"))
        .unwrap_or_default();
    let what = match &ran.outcome {
        HookOutcome::Ok => format!("ran in {} ms", ran.duration_ms),
        HookOutcome::Decided { decision, reason } => {
            let verb = match decision {
                crate::protocol::hook::HookDecision::Allow => "allowed it",
                crate::protocol::hook::HookDecision::Ask => "asks the user",
                crate::protocol::hook::HookDecision::Deny => "denied it",
                crate::protocol::hook::HookDecision::Block => "blocked",
            };
            match reason {
                Some(reason) => format!("{verb}: {}", crate::text::ellipsize(reason, 300)),
                None => verb.to_string(),
            }
        }
        HookOutcome::Failed { error } => format!("failed ({error}); going on"),
    };
    let message = format!(
        "{} hook{about} `{}` ({}) {what}",
        ran.event,
        crate::text::ellipsize(&ran.handler, 80),
        ran.source
    );
    AgentMessage::System(SystemEvent::new(message, ran))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matchers_work_on_our_names_and_claude_codes() {
        assert!(matches(None, "bash"));
        assert!(matches(Some("*"), "bash"));
        assert!(matches(Some("Bash"), "bash"));
        assert!(matches(Some("bash"), "bash"));
        assert!(matches(Some("Edit|Write"), "write_file"));
        assert!(!matches(Some("Edit|Write"), "bash"));
        assert!(!matches(Some("Bas"), "bash"), "plain names match whole");
        assert!(matches(
            Some("mcp__github__.*"),
            "mcp__github__create_issue"
        ));
        assert!(!matches(Some("mcp__github__.*"), "mcp__gitlab__x"));
        assert!(matches(Some("Notebook.*|Ed.*"), "edit_file"));
    }

    #[test]
    fn file_tools_show_their_path_as_file_path_and_take_it_back() {
        let fields = tool_fields(
            "edit_file",
            &json!({"path": "a.rs", "old_string": "x"}),
            "/ws",
        );
        assert_eq!(fields["tool_input"]["file_path"], "/ws/a.rs");
        assert_eq!(fields["tool_name"], "edit_file");
        let back =
            tool_input_from_hook("edit_file", json!({"file_path": "b.rs", "old_string": "x"}));
        assert_eq!(back, json!({"path": "b.rs", "old_string": "x"}));
        let mcp = tool_fields("mcp__fs__read", &json!({"path": "a"}), "/ws");
        assert!(mcp["tool_input"].get("file_path").is_none());
    }
}
