//! The `todo_write` tool as the core answers it (`plan.rs`): offered, kept,
//! emitted as a `plan` event only when it changed, refused with a reason
//! when its arguments are wrong, folded on load, dropped by `/clear`.

use super::tests::{Harness, fresh_like, messages, model_calls, persisted, tool_batches};
use super::*;
use crate::protocol::plan::TODO_WRITE;
use crate::protocol::{
    AgentDefinition, AgentMessage, ControlCommand, Plan, PlanItem, PlanStatus, SystemSubtype,
    UserInput,
};

const THREE_STEPS: &str = r#"{"todos":[
    {"content":"Read the code","status":"completed","activeForm":"Reading the code"},
    {"content":"Fix the bug","status":"in_progress","activeForm":"Fixing the bug"},
    {"content":"Run the tests","status":"pending"}]}"#;

/// A session offered the plan tool.
fn session() -> Harness {
    let mut h = Harness::new();
    h.state.config.plan_tool = true;
    h
}

/// The `plan` events emitted so far, as their payloads.
fn plans(h: &Harness) -> Vec<Plan> {
    h.events()
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::System(s) if s.subtype == SystemSubtype::Plan => s.payload::<Plan>(),
            _ => None,
        })
        .collect()
}

/// The tool results emitted so far: (name, output, is_error).
fn results(h: &Harness) -> Vec<(String, String, bool)> {
    h.events()
        .into_iter()
        .filter_map(|m| match m {
            AgentMessage::ToolResult(t) => Some((t.name, t.output, t.is_error)),
            _ => None,
        })
        .collect()
}

/// One turn whose model calls `todo_write` with `args`, then ends.
fn write_plan(h: &mut Harness, args: &str) {
    h.query("work on it");
    let request = model_calls(&h.effects).last().expect("a model call").0;
    h.answer(request, "", &[("call_plan", TODO_WRITE, args)]);
    let next = model_calls(&h.effects).last().expect("the call after").0;
    h.answer(next, "Done.", &[]);
}

#[test]
fn the_plan_tool_is_offered_unless_the_session_or_the_agents_tool_list_leaves_it_out() {
    let mut h = session();
    let names = |h: &Harness| -> Vec<String> {
        h.state()
            .offered_tools()
            .iter()
            .map(|t| t.name.clone())
            .collect()
    };
    assert_eq!(names(&h), ["bash", TODO_WRITE]);
    h.state.config.plan_tool = false;
    assert_eq!(names(&h), ["bash"], "`disallowed_tools` names it");
    h.state.config.plan_tool = true;
    h.state.config.agents.insert(AgentDefinition {
        name: "build".into(),
        tools: Some(vec!["bash".into()]),
        ..AgentDefinition::default()
    });
    assert_eq!(names(&h), ["bash"]);
}

#[test]
fn a_call_saves_the_plan_emits_it_and_runs_nothing() {
    let mut h = session();
    write_plan(&mut h, THREE_STEPS);
    assert!(
        tool_batches(&h.effects).is_empty(),
        "answered by the core, not run by the driver"
    );
    let expected = vec![
        PlanItem {
            content: "Read the code".into(),
            status: PlanStatus::Completed,
            active_form: Some("Reading the code".into()),
        },
        PlanItem {
            content: "Fix the bug".into(),
            status: PlanStatus::InProgress,
            active_form: Some("Fixing the bug".into()),
        },
        PlanItem {
            content: "Run the tests".into(),
            status: PlanStatus::Pending,
            active_form: None,
        },
    ];
    assert_eq!(h.state().plan, expected);
    assert_eq!(
        plans(&h),
        [Plan {
            todos: expected.clone()
        }]
    );
    let event = h
        .events()
        .into_iter()
        .find_map(|m| match m {
            AgentMessage::System(s) if s.subtype == SystemSubtype::Plan => Some(s),
            _ => None,
        })
        .expect("the plan event");
    assert_eq!(event.message, "Plan: 1 of 3 done; now: Fixing the bug.");
    assert_eq!(
        results(&h),
        [(
            TODO_WRITE.to_string(),
            "Plan saved: 3 items: 1 completed, 1 in progress, 1 pending.".to_string(),
            false
        )]
    );
    // The plan event comes before the call's result, after its message.
    let kinds: Vec<&str> = h
        .events()
        .iter()
        .filter(|m| !matches!(m, AgentMessage::StreamEvent(_)))
        .map(|m| match m {
            AgentMessage::System(s) if s.subtype == SystemSubtype::Plan => "plan",
            other => other.type_name(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "user",
            "assistant",
            "plan",
            "tool_result",
            "assistant",
            "result"
        ]
    );
    // The model reads the result in its next request.
    let last = model_calls(&h.effects).last().expect("a call").1.clone();
    assert!(
        last.messages.iter().any(|m| matches!(m,
            crate::protocol::Message::ToolResult { output, .. } if output.starts_with("Plan saved"))),
        "{:?}",
        last.messages
    );
}

#[test]
fn the_same_list_again_is_no_new_event() {
    let mut h = session();
    write_plan(&mut h, THREE_STEPS);
    write_plan(&mut h, THREE_STEPS);
    assert_eq!(plans(&h).len(), 1);
    let outputs: Vec<String> = results(&h).into_iter().map(|r| r.1).collect();
    assert!(outputs[1].starts_with("Plan unchanged"), "{outputs:?}");
    write_plan(&mut h, r#"{"todos":[]}"#);
    assert_eq!(plans(&h).len(), 2);
    assert_eq!(plans(&h)[1], Plan::default());
    assert!(h.state().plan.is_empty());
}

#[test]
fn bad_arguments_are_an_error_result_naming_the_item_and_field() {
    let cases = [
        (r#"{}"#, "`todos` is missing"),
        (
            r#"{"todos":"do it"}"#,
            "`todos` is a string; expected an array",
        ),
        (
            r#"{"todos":[{"content":"a","status":"pending"},{"content":"b","status":"done"}]}"#,
            r#"`todos[1].status` is "done"; expected "pending", "in_progress" or "completed""#,
        ),
        (
            r#"{"todos":[{"content":"  ","status":"pending"}]}"#,
            "`todos[0].content` is empty",
        ),
        (
            r#"{"todos":[{"status":"pending"}]}"#,
            "`todos[0].content` is missing",
        ),
        (
            r#"{"todos":[{"content":"a","status":"pending","priority":"high"}]}"#,
            "`todos[0]` has an unknown field `priority`",
        ),
    ];
    for (args, expected) in cases {
        let mut h = session();
        write_plan(&mut h, THREE_STEPS);
        write_plan(&mut h, args);
        let (_, output, is_error) = results(&h).pop().expect("a result");
        assert!(is_error, "{args}: {output}");
        assert!(output.contains(expected), "{args}: {output}");
        assert!(output.contains("was not saved"), "{output}");
        assert_eq!(plans(&h).len(), 1, "{args}: no new plan event");
        assert_eq!(h.state().plan.len(), 3, "{args}: the old plan is kept");
    }
}

#[test]
fn more_than_one_item_in_progress_is_said_not_refused() {
    let mut h = session();
    write_plan(
        &mut h,
        r#"{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}"#,
    );
    let (_, output, is_error) = results(&h).pop().expect("a result");
    assert!(!is_error, "{output}");
    assert!(
        output.contains("2 items are in_progress; keep one in progress at a time"),
        "{output}"
    );
    assert_eq!(h.state().plan.len(), 2);
}

#[test]
fn an_agent_not_given_the_tool_cannot_call_it() {
    let mut h = session();
    h.state.config.agents.insert(AgentDefinition {
        name: "build".into(),
        disallowed_tools: vec![TODO_WRITE.into()],
        ..AgentDefinition::default()
    });
    write_plan(&mut h, THREE_STEPS);
    let (_, output, is_error) = results(&h).pop().expect("a result");
    assert!(
        is_error && output.contains("is not given the tool todo_write"),
        "{output}"
    );
    assert!(h.state().plan.is_empty());
    assert!(plans(&h).is_empty());
}

#[test]
fn the_plan_is_folded_on_load_and_dropped_by_clear() {
    let mut h = session();
    write_plan(&mut h, THREE_STEPS);
    write_plan(
        &mut h,
        r#"{"todos":[{"content":"Read the code","status":"completed"},{"content":"Fix the bug","status":"completed"}]}"#,
    );
    let mut restored = fresh_like(h.state());
    assert!(restore(&mut restored, &persisted(&h)).is_empty());
    assert_eq!(restored.plan, h.state().plan);
    assert_eq!(restored.plan.len(), 2);
    // `/debug` shows it: it is part of the state.
    let debug = serde_json::to_value(&restored).expect("state as JSON");
    assert_eq!(debug["plan"][1]["content"], "Fix the bug");
    assert_eq!(debug["plan"][1]["status"], "completed");

    let id = h.state().next_input_id();
    h.feed(Input::Submit {
        input_id: id,
        input: UserInput::Control {
            command: ControlCommand::Clear,
            by: None,
        },
    });
    assert!(h.state().plan.is_empty());
    let mut restored = fresh_like(h.state());
    restore(&mut restored, &persisted(&h));
    assert!(restored.plan.is_empty(), "{:?}", restored.plan);
    // `/clear` is answered by its one `cleared` event, nothing more.
    let last: Vec<AgentMessage> = messages(&h.effects)
        .into_iter()
        .rev()
        .take_while(|m| !matches!(m, AgentMessage::Result(_)))
        .collect();
    assert_eq!(last.len(), 1, "{last:?}");
}
