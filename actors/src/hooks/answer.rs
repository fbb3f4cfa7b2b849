//! What one hook answered, read from its exit code and output as Claude
//! Code reads them.
//!
//! Exit 0: stdout may be JSON carrying a decision (`hookSpecificOutput`
//! with `permissionDecision`, `decision: "block"`, `additionalContext`,
//! `updatedInput`, `continue: false`); plain text on stdout is context for
//! `UserPromptSubmit` and `SessionStart` and ignored elsewhere. Exit 2:
//! blocks, stderr is the reason. Any other exit: a non-blocking error. An
//! HTTP hook's 2xx body is read as a command's stdout; any other status is
//! a non-blocking error. Pure: never runs anything.

use crate::protocol::hook::{HookAnswer, HookDecision, HookEvent, HookOutcome};
use serde_json::Value;

/// How a hook ended, before it is read.
#[derive(Clone, Debug, PartialEq)]
pub enum Ended {
    /// A command exited with `code` (`None`: killed by a signal).
    Exited {
        code: Option<i32>,
        stdout: String,
        stderr: String,
    },
    /// An HTTP hook answered `status` with `body`.
    Answered { status: u16, body: String },
    /// It could not run, or ran past its timeout.
    Failed(String),
}

/// Read what a hook of `event` answered.
pub fn read(event: HookEvent, ended: Ended) -> (HookAnswer, HookOutcome) {
    match ended {
        Ended::Exited {
            code: Some(0),
            stdout,
            ..
        } => from_output(event, &stdout),
        Ended::Exited {
            code: Some(2),
            stderr,
            ..
        } => {
            let reason = Some(stderr.trim().to_string()).filter(|r| !r.is_empty());
            let reason = reason.unwrap_or_else(|| "a hook blocked it (exit 2)".to_string());
            blocking(event, reason)
        }
        Ended::Exited { code, stderr, .. } => {
            let how = match code {
                Some(code) => format!("exit {code}"),
                None => "killed by a signal".to_string(),
            };
            let error = match stderr.trim() {
                "" => how,
                said => format!("{how}: {}", crate::text::ellipsize(said, 400)),
            };
            (HookAnswer::default(), HookOutcome::Failed { error })
        }
        Ended::Answered { status, body } if (200..300).contains(&status) => {
            if body.trim().is_empty() {
                return (HookAnswer::default(), HookOutcome::Ok);
            }
            match serde_json::from_str::<Value>(&body) {
                Ok(Value::Object(_)) => from_output(event, &body),
                _ => (
                    HookAnswer::default(),
                    HookOutcome::Failed {
                        error: format!(
                            "HTTP {status}: the body is not a JSON object: {}",
                            crate::text::ellipsize(body.trim(), 200)
                        ),
                    },
                ),
            }
        }
        Ended::Answered { status, body } => (
            HookAnswer::default(),
            HookOutcome::Failed {
                error: format!(
                    "HTTP {status}: {}",
                    crate::text::ellipsize(body.trim(), 200)
                ),
            },
        ),
        Ended::Failed(error) => (HookAnswer::default(), HookOutcome::Failed { error }),
    }
}

/// What exit 2 (or a JSON `block`/`deny`) means for `event`.
fn blocking(event: HookEvent, reason: String) -> (HookAnswer, HookOutcome) {
    let decision = match event {
        HookEvent::PreToolUse | HookEvent::PermissionRequest => HookDecision::Deny,
        _ => HookDecision::Block,
    };
    let answer = HookAnswer {
        decision: Some(decision),
        reason: Some(reason.clone()),
        ..HookAnswer::default()
    };
    let outcome = HookOutcome::Decided {
        decision,
        reason: Some(reason),
    };
    (answer, outcome)
}

/// Exit 0's stdout (or a 2xx body).
fn from_output(event: HookEvent, stdout: &str) -> (HookAnswer, HookOutcome) {
    let trimmed = stdout.trim();
    let json = match serde_json::from_str::<Value>(trimmed) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => {
            // Plain text: context where the event takes it.
            let mut answer = HookAnswer::default();
            if !trimmed.is_empty()
                && matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
            {
                answer.context.push(trimmed.to_string());
            }
            return (answer, HookOutcome::Ok);
        }
    };
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let specific = json
        .get("hookSpecificOutput")
        .cloned()
        .unwrap_or(Value::Null);
    let mut answer = HookAnswer::default();
    let mut reason = text(&specific, "permissionDecisionReason").or_else(|| text(&json, "reason"));
    // The decision: the event's own field first, then the older top level.
    let decision = match event {
        HookEvent::PreToolUse => match text(&specific, "permissionDecision").as_deref() {
            Some("allow") => Some(HookDecision::Allow),
            Some("deny") => Some(HookDecision::Deny),
            Some("ask") => Some(HookDecision::Ask),
            _ => match text(&json, "decision").as_deref() {
                Some("approve") => Some(HookDecision::Allow),
                Some("block") => Some(HookDecision::Deny),
                _ => None,
            },
        },
        HookEvent::PermissionRequest => {
            let decision = specific.get("decision").cloned().unwrap_or(Value::Null);
            if let Some(message) = text(&decision, "message") {
                reason = Some(message);
            }
            if let Some(input) = decision.get("updatedInput").filter(|v| v.is_object()) {
                answer.updated_input = Some(input.clone());
            }
            match text(&decision, "behavior").as_deref() {
                Some("allow") => Some(HookDecision::Allow),
                Some("deny") => Some(HookDecision::Deny),
                _ => None,
            }
        }
        _ => (text(&json, "decision").as_deref() == Some("block")).then_some(HookDecision::Block),
    };
    if event == HookEvent::PreToolUse
        && let Some(input) = specific.get("updatedInput").filter(|v| v.is_object())
    {
        answer.updated_input = Some(input.clone());
    }
    if let Some(context) = text(&specific, "additionalContext").filter(|c| !c.trim().is_empty()) {
        answer.context.push(context);
    }
    if json.get("continue").and_then(Value::as_bool) == Some(false) {
        let why =
            text(&json, "stopReason").unwrap_or_else(|| format!("a {event} hook stopped the turn"));
        answer.stop = Some(why);
    }
    if let Some(decision) = decision {
        if decision == HookDecision::Block && reason.is_none() {
            reason = Some(format!("a {event} hook blocked it"));
        }
        answer.decision = Some(decision);
        answer.reason = reason.clone();
    }
    let outcome = match answer.decision {
        Some(decision) => HookOutcome::Decided { decision, reason },
        None => HookOutcome::Ok,
    };
    (answer, outcome)
}

/// The answers of one event's hooks as one: the strongest decision (deny
/// and block over ask over allow) with its reasons, the last changed
/// arguments, every context and stop.
pub fn fold(answers: impl IntoIterator<Item = HookAnswer>) -> HookAnswer {
    let mut folded = HookAnswer::default();
    let mut reasons: Vec<String> = Vec::new();
    for answer in answers {
        let strength = |d: Option<HookDecision>| match d {
            None => 0,
            Some(HookDecision::Allow) => 1,
            Some(HookDecision::Ask) => 2,
            Some(HookDecision::Deny) | Some(HookDecision::Block) => 3,
        };
        match strength(answer.decision).cmp(&strength(folded.decision)) {
            std::cmp::Ordering::Greater => {
                folded.decision = answer.decision;
                reasons = answer.reason.into_iter().collect();
            }
            std::cmp::Ordering::Equal => reasons.extend(answer.reason),
            std::cmp::Ordering::Less => {}
        }
        if answer.updated_input.is_some() {
            folded.updated_input = answer.updated_input;
        }
        folded.context.extend(answer.context);
        if folded.stop.is_none() {
            folded.stop = answer.stop;
        }
    }
    folded.reason = (!reasons.is_empty()).then(|| reasons.join("\n"));
    folded
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn exited(code: i32, stdout: &str, stderr: &str) -> Ended {
        Ended::Exited {
            code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn exit_2_blocks_a_tool_call_with_stderr_as_the_reason() {
        let (answer, outcome) = read(
            HookEvent::PreToolUse,
            exit_code_2("rm -rf is not allowed\n"),
        );
        assert_eq!(answer.decision, Some(HookDecision::Deny));
        assert_eq!(answer.reason.as_deref(), Some("rm -rf is not allowed"));
        assert!(matches!(outcome, HookOutcome::Decided { .. }));
        let (answer, _) = read(HookEvent::Stop, exit_code_2("tests fail"));
        assert_eq!(answer.decision, Some(HookDecision::Block));
    }

    fn exit_code_2(stderr: &str) -> Ended {
        exited(2, "ignored", stderr)
    }

    #[test]
    fn another_exit_code_is_an_error_that_blocks_nothing() {
        let (answer, outcome) = read(HookEvent::PreToolUse, exited(1, "", "jq: not found"));
        assert!(answer.is_empty());
        assert_eq!(
            outcome,
            HookOutcome::Failed {
                error: "exit 1: jq: not found".into()
            }
        );
    }

    #[test]
    fn json_on_stdout_carries_the_decision_and_new_arguments() {
        let stdout = json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "not on main",
            "updatedInput": {"command": "ls"}
        }})
        .to_string();
        let (answer, _) = read(HookEvent::PreToolUse, exited(0, &stdout, ""));
        assert_eq!(answer.decision, Some(HookDecision::Deny));
        assert_eq!(answer.reason.as_deref(), Some("not on main"));
        assert_eq!(answer.updated_input, Some(json!({"command": "ls"})));
        let legacy = json!({"decision": "approve"}).to_string();
        let (answer, _) = read(HookEvent::PreToolUse, exited(0, &legacy, ""));
        assert_eq!(answer.decision, Some(HookDecision::Allow));
    }

    #[test]
    fn plain_stdout_is_context_only_for_prompts_and_session_starts() {
        let (answer, _) = read(HookEvent::UserPromptSubmit, exited(0, "branch: main\n", ""));
        assert_eq!(answer.context, ["branch: main"]);
        let (answer, _) = read(HookEvent::PostToolUse, exited(0, "formatted 1 file", ""));
        assert!(answer.is_empty());
    }

    #[test]
    fn a_stop_hook_blocks_with_a_reason_and_continue_false_stops() {
        let stdout = json!({"decision": "block", "reason": "run the tests"}).to_string();
        let (answer, _) = read(HookEvent::Stop, exited(0, &stdout, ""));
        assert_eq!(answer.decision, Some(HookDecision::Block));
        assert_eq!(answer.reason.as_deref(), Some("run the tests"));
        let stdout = json!({"continue": false, "stopReason": "budget"}).to_string();
        let (answer, _) = read(HookEvent::PostToolUse, exited(0, &stdout, ""));
        assert_eq!(answer.stop.as_deref(), Some("budget"));
    }

    #[test]
    fn http_answers_are_read_like_stdout_and_errors_block_nothing() {
        let body = json!({"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "policy"}}).to_string();
        let (answer, _) = read(HookEvent::PreToolUse, Ended::Answered { status: 200, body });
        assert_eq!(answer.decision, Some(HookDecision::Deny));
        let (answer, outcome) = read(
            HookEvent::PreToolUse,
            Ended::Answered {
                status: 500,
                body: "oops".into(),
            },
        );
        assert!(answer.is_empty());
        assert!(matches!(outcome, HookOutcome::Failed { .. }));
        let (_, outcome) = read(
            HookEvent::PreToolUse,
            Ended::Answered {
                status: 200,
                body: "not json".into(),
            },
        );
        assert!(matches!(outcome, HookOutcome::Failed { .. }));
    }

    #[test]
    fn the_strongest_decision_wins_and_contexts_join() {
        let allow = HookAnswer {
            decision: Some(HookDecision::Allow),
            reason: Some("fine".into()),
            context: vec!["a".into()],
            ..Default::default()
        };
        let deny = HookAnswer {
            decision: Some(HookDecision::Deny),
            reason: Some("no".into()),
            context: vec!["b".into()],
            ..Default::default()
        };
        let folded = fold([allow.clone(), deny, allow]);
        assert_eq!(folded.decision, Some(HookDecision::Deny));
        assert_eq!(folded.reason.as_deref(), Some("no"));
        assert_eq!(folded.context, ["a", "b", "a"]);
    }
}
