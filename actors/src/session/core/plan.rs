//! The `todo_write` tool: the model's checklist for the task at hand
//! (Claude Code's TodoWrite, Codex's `update_plan`), answered by the core
//! itself.
//!
//! Exists so that a model working through several steps can write them
//! down and tick them off, and so that every front end can show where it
//! stands: each call sends the whole list; the session keeps it
//! (`SessionState::plan`) and, when it changed, emits a `system` `plan`
//! event carrying it (persisted, folded on load by `restore.rs`; `/clear`
//! drops it with the history, and its `cleared` event tells front ends).
//! Bad arguments are an error result naming the item and field and what
//! is expected; more than one item in progress is said, not refused.
//!
//! Never does I/O and never asks for approval: the call changes nothing
//! outside the session. Offered to every session (`SessionConfig::plan_tool`:
//! unless `disallowed_tools` names it; not to embedded agents) whose
//! agent's tool list allows it; a call from an agent that is not given it
//! falls through to the ordinary check (which refuses it).

use super::effect::Effect;
use crate::model::{ToolCall, ToolList, ToolOrigin, ToolOutcome, ToolSpec};
use crate::protocol::plan::TODO_WRITE;
use crate::protocol::{AgentMessage, InputId, Plan, PlanItem, PlanStatus, SystemEvent};
use serde_json::Value;

/// The tool as the model sees it.
pub fn spec() -> ToolSpec {
    ToolSpec {
        name: TODO_WRITE.into(),
        description: "Keep a checklist for the current task, which the user sees as it changes. Use it for work of three or more steps: write the steps down as `pending`, mark the one you start `in_progress` (one at a time) and each one `completed` as soon as it is done, adding steps as you discover them. Send the whole list every time; it replaces the previous one (an empty list removes it). Skip it for a single simple step.".into(),
        input_schema: std::sync::Arc::new(serde_json::json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The whole checklist, in order",
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1, "description": "The step, in the imperative: \"Run the tests\""},
                            "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                            "activeForm": {"type": "string", "description": "The step while it is being done: \"Running the tests\""}
                        },
                        "required": ["content", "status"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        })),
        origin: ToolOrigin::Builtin,
    }
}

/// `tools` with the plan tool after them, when the session gives it
/// (`given`: `SessionState::plan_tool_given`).
pub fn offer(given: bool, tools: ToolList) -> ToolList {
    if !given {
        return tools;
    }
    let mut with_plan = tools.to_vec();
    with_plan.push(spec());
    std::sync::Arc::new(with_plan)
}

/// Answer `call` if it is a `todo_write` call and the session gives the
/// tool (`given`): keep the list in `plan` and emit its `plan` event when it
/// changed. `None`: not such a call (the ordinary checks decide).
pub fn answer(
    plan: &mut Vec<PlanItem>,
    given: bool,
    turn_id: InputId,
    call: &ToolCall,
    fx: &mut Vec<Effect>,
) -> Option<ToolOutcome> {
    if call.name != TODO_WRITE || !given {
        return None;
    }
    let todos = match parse(&call.input) {
        Ok(todos) => todos,
        Err(why) => {
            return Some(ToolOutcome::error(format!(
                "The plan was not saved: {why}. Call {TODO_WRITE} again with the whole list."
            )));
        }
    };
    let new = Plan { todos };
    let changed = *plan != new.todos;
    if changed {
        plan.clone_from(&new.todos);
        fx.push(Effect::Emit {
            turn_id: Some(turn_id),
            message: AgentMessage::System(SystemEvent::new(describe(&new), &new)),
        });
    }
    let mut output = if new.todos.is_empty() {
        "Plan cleared.".to_string()
    } else if changed {
        format!("Plan saved: {}.", tally(&new))
    } else {
        format!("Plan unchanged: {}.", tally(&new))
    };
    let in_progress = new.count(PlanStatus::InProgress);
    if in_progress > 1 {
        output.push_str(&format!(
            " Note: {in_progress} items are in_progress; keep one in progress at a time and mark each completed as soon as it is done."
        ));
    }
    Some(ToolOutcome {
        output,
        is_error: false,
        duration_ms: 0,
    })
}

/// `3 items: 1 completed, 1 in progress, 1 pending`.
fn tally(plan: &Plan) -> String {
    let parts: Vec<String> = [
        (PlanStatus::Completed, "completed"),
        (PlanStatus::InProgress, "in progress"),
        (PlanStatus::Pending, "pending"),
    ]
    .into_iter()
    .filter_map(|(status, word)| {
        let n = plan.count(status);
        (n > 0).then(|| format!("{n} {word}"))
    })
    .collect();
    format!(
        "{}: {}",
        crate::text::count(plan.todos.len() as u64, "item"),
        parts.join(", ")
    )
}

/// The event's message: `Plan: 1 of 3 done; now: Running the tests.`
fn describe(plan: &Plan) -> String {
    match progress(&plan.todos) {
        Some(progress) => format!("Plan: {progress}."),
        None => "The plan was removed.".into(),
    }
}

/// How far `todos` is: `1 of 3 done; now: Running the tests` (`None`: no
/// plan). `/debug` shows it too.
pub fn progress(todos: &[PlanItem]) -> Option<String> {
    if todos.is_empty() {
        return None;
    }
    let done = todos
        .iter()
        .filter(|t| t.status == PlanStatus::Completed)
        .count();
    let now = todos
        .iter()
        .find(|t| t.status == PlanStatus::InProgress)
        .map(|t| t.active_form.as_deref().unwrap_or(&t.content));
    Some(match now {
        Some(now) => format!("{done} of {} done; now: {now}", todos.len()),
        None => format!("{done} of {} done", todos.len()),
    })
}

/// The checklist in `input` (`{"todos": [{content, status, activeForm?}]}`),
/// or what is wrong with it, naming the item and the field.
pub fn parse(input: &Value) -> Result<Vec<PlanItem>, String> {
    let Some(todos) = input.get("todos") else {
        return Err(
            "`todos` is missing; expected an array of {content, status, activeForm?}".into(),
        );
    };
    let Some(todos) = todos.as_array() else {
        return Err(format!(
            "`todos` is {}; expected an array of {{content, status, activeForm?}}",
            kind(todos)
        ));
    };
    todos
        .iter()
        .enumerate()
        .map(|(i, todo)| item(i, todo))
        .collect()
}

fn item(i: usize, todo: &Value) -> Result<PlanItem, String> {
    let at = format!("todos[{i}]");
    let Some(fields) = todo.as_object() else {
        return Err(format!(
            "`{at}` is {}; expected an object {{content, status, activeForm?}}",
            kind(todo)
        ));
    };
    if let Some(unknown) = fields
        .keys()
        .find(|k| !["content", "status", "activeForm", "active_form"].contains(&k.as_str()))
    {
        return Err(format!(
            "`{at}` has an unknown field `{unknown}`; expected content, status and activeForm"
        ));
    }
    let content = match fields.get("content") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Value::String(_)) => {
            return Err(format!(
                "`{at}.content` is empty; expected the step in a few words"
            ));
        }
        Some(other) => {
            return Err(format!(
                "`{at}.content` is {}; expected a string",
                kind(other)
            ));
        }
        None => return Err(format!("`{at}.content` is missing; expected a string")),
    };
    let status = match fields.get("status") {
        Some(Value::String(s)) => match s.as_str() {
            "pending" => PlanStatus::Pending,
            "in_progress" => PlanStatus::InProgress,
            "completed" => PlanStatus::Completed,
            other => {
                return Err(format!(
                    "`{at}.status` is {other:?}; expected \"pending\", \"in_progress\" or \"completed\""
                ));
            }
        },
        Some(other) => {
            return Err(format!(
                "`{at}.status` is {}; expected \"pending\", \"in_progress\" or \"completed\"",
                kind(other)
            ));
        }
        None => {
            return Err(format!(
                "`{at}.status` is missing; expected \"pending\", \"in_progress\" or \"completed\""
            ));
        }
    };
    let active_form = match fields
        .get("activeForm")
        .or_else(|| fields.get("active_form"))
    {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Some(other) => {
            return Err(format!(
                "`{at}.activeForm` is {}; expected a string",
                kind(other)
            ));
        }
    };
    Ok(PlanItem {
        content,
        status,
        active_form,
    })
}

/// What kind of JSON value `v` is, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
