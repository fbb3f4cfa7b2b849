//! The model's plan (`todo_write`) end to end, against
//! `tests/fixtures/scripts/plan.toml` (a plan written, updated, sent again
//! unchanged): the piped chat's checklist, `run --json`'s `plan` events and
//! `run`'s answer without them, the plan folded when the session is
//! loaded again (`/debug`), and `disallowed_tools` leaving the tool out.
//! The ACP `plan` update is in `acp/protocol.rs`, the web page's panel in
//! the browser test.

use crate::support::*;
use agentbus_testkit::offered_tools;
use serde_json::{Value, json};

/// The `plan` events among `events`.
fn plans(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "system" && e["subtype"] == "plan")
        .collect()
}

#[tokio::test]
async fn a_piped_chat_shows_the_plan_as_a_checklist_each_time_it_changes() {
    let fx = Fixture::new("plan").await;
    let mut chat = fx.spawn_with_stdin(&["chat"]);
    chat.send("count the lines of the notes\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let lines = &out.stdout;
    let first = lines
        .iter()
        .position(|l| l == "⏺ todo_write(3 items)")
        .unwrap_or_else(|| panic!("no plan call: {lines:#?}"));
    assert_eq!(
        lines[first..first + 8],
        [
            "⏺ todo_write(3 items)",
            "  ⎿ ◐ Reading the notes",
            "    ☐ Count the lines",
            "    ☐ Report back",
            "⏺ todo_write(3 items)",
            "  ⎿ ☑ Read the notes",
            "    ◐ Counting the lines",
            "    ☐ Report back",
        ],
        "{lines:#?}"
    );
    // The third call sent the same list: its line, and no checklist again.
    assert_eq!(lines[first + 8], "⏺ todo_write(3 items)", "{lines:#?}");
    assert_eq!(
        lines.iter().filter(|l| l.contains('◐')).count(),
        2,
        "{lines:#?}"
    );
    let text = out.stdout_text();
    assert!(!text.contains("Plan saved"), "{text}");
    assert!(text.contains("All done: two lines."), "{text}");
}

#[tokio::test]
async fn run_json_carries_each_plan_and_plain_run_prints_only_the_answer() {
    let fx = Fixture::new("plan").await;
    let out = fx.run(&["run", "--json", "count the lines"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    assert_gap_free(&events);
    let shown = plans(&events);
    assert_eq!(
        shown.len(),
        2,
        "the unchanged list is no event: {events:#?}"
    );
    assert_eq!(
        shown[1]["data"],
        json!({"todos": [
            {"content": "Read the notes", "status": "completed"},
            {"content": "Count the lines", "status": "in_progress", "active_form": "Counting the lines"},
            {"content": "Report back", "status": "pending"}
        ]})
    );
    assert_eq!(
        shown[1]["message"],
        "Plan: 1 of 3 done; now: Counting the lines."
    );
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 3);
    assert!(
        results.iter().all(|r| r["is_error"] == false),
        "{results:#?}"
    );
    assert!(
        results[2]["output"]
            .as_str()
            .is_some_and(|o| o.starts_with("Plan unchanged")),
        "{results:#?}"
    );
    // Each plan event comes after the message that called for it and
    // before that call's result.
    let seq = |pred: &dyn Fn(&Value) -> bool| -> u64 {
        events
            .iter()
            .find(|e| pred(e))
            .and_then(|e| e["seq"].as_u64())
            .expect("event")
    };
    let first_plan = seq(&|e| e["subtype"] == "plan");
    let first_result = seq(&|e| e["type"] == "tool_result");
    let first_message = seq(&|e| e["type"] == "assistant");
    assert!(first_message < first_plan && first_plan < first_result);
    assert!(offered_tools(&fx.server.model_calls()[0].body).contains(&"todo_write".to_string()));
    fx.assert_requests_valid();

    // What the session knows is folded from its log: loaded again, its
    // state (`/debug`, `/debug full`) has the plan.
    let id = session_id(&events);
    let debug = async |command: &str| -> Value {
        let again = fx.run(&["run", "--json", "--session", &id, command]).await;
        assert_eq!(again.code(), Some(0), "stderr: {}", again.stderr);
        again
            .events()
            .into_iter()
            .find(|e| e["subtype"] == "debug")
            .expect("the /debug reply")
    };
    let summary = debug("/debug").await;
    assert_eq!(
        summary["data"]["plan"],
        "1 of 3 done; now: Counting the lines"
    );
    assert!(
        summary["message"]
            .as_str()
            .is_some_and(|m| m.contains("  plan          1 of 3 done; now: Counting the lines")),
        "{summary}"
    );
    let full = debug("/debug full").await;
    assert_eq!(full["data"]["plan"], shown[1]["data"]["todos"]);

    // Without --json, as `claude -p`: the answer alone.
    let fx = Fixture::new("plan").await;
    let plain = fx.run(&["run", "count the lines"]).await;
    assert_eq!(plain.code(), Some(0), "stderr: {}", plain.stderr);
    assert_eq!(plain.stdout, ["All done: two lines."]);
    assert!(!plain.stderr.contains("Plan"), "{}", plain.stderr);
}

#[tokio::test]
async fn disallowed_tools_leaves_the_plan_tool_out() {
    let fx = Fixture::new("plain_reply").await;
    std::fs::write(
        fx.workspace().join(".agentbus.toml"),
        "disallowed_tools = [\"todo_write\"]\n",
    )
    .unwrap();
    let out = fx.run(&["run", "--json", "Say hello"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let offered = offered_tools(&fx.server.model_calls()[0].body);
    assert!(!offered.contains(&"todo_write".to_string()), "{offered:?}");
    assert!(offered.contains(&"read_file".to_string()), "{offered:?}");
}
