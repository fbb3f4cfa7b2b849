//! Sub-agents end to end: a `task` call runs a named agent in a child
//! session, stored with its parent and call, whose final text is the
//! call's result; two calls of one batch run at once (the scripted model
//! holds each child's reply until both children's requests arrived); the
//! parent's interrupt cancels its children; a child's approval request
//! reaches the parent's client and the answer reaches the child; the
//! children's usage counts in the parent's turn.

use crate::support::*;
use serde_json::Value;

fn subtype<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["subtype"] == name).collect()
}

#[tokio::test]
async fn a_task_batch_runs_two_children_at_once_and_counts_their_usage() {
    let fx = Fixture::new("subagents").await;
    let out = fx.run(&["run", "--json", "delegate the checks"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let parent = session_id(&events);

    let started = subtype(&events, "subagent_started");
    let finished = subtype(&events, "subagent_finished");
    assert_eq!(started.len(), 2, "{events:#?}");
    assert_eq!(finished.len(), 2, "{events:#?}");
    let children: Vec<&str> = started
        .iter()
        .filter_map(|e| e["data"]["child"].as_str())
        .collect();
    assert_ne!(children[0], children[1]);
    let agents: Vec<&str> = started
        .iter()
        .filter_map(|e| e["data"]["agent"].as_str())
        .collect();
    assert!(
        agents.contains(&"build") && agents.contains(&"plan"),
        "{agents:?}"
    );

    let results = of_type(&events, "tool_result");
    let outputs: Vec<&str> = results
        .iter()
        .filter_map(|r| r["output"].as_str())
        .collect();
    assert_eq!(outputs, ["A is fine.", "B is fine."]);
    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "end_turn");
    assert_eq!(
        (
            result["usage"]["input_tokens"].as_u64(),
            result["usage"]["output_tokens"].as_u64()
        ),
        (Some(220), Some(110)),
        "the parent's two calls and both children's: {result}"
    );

    // The children offered no `task` tool; the parent did.
    let calls = fx.server.model_calls();
    for call in &calls {
        let tools: Vec<&str> = call.body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str())
            .collect();
        let last_user = call.body["messages"]
            .as_array()
            .and_then(|m| m.iter().rev().find(|m| m["role"] == "user"))
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string();
        assert_eq!(
            tools.contains(&"task"),
            last_user.contains("delegate"),
            "{last_user}: {tools:?}"
        );
    }

    // Stored with their parent: `sessions list` says so.
    let list = fx.run(&["sessions", "list"]).await;
    let text = list.stdout_text();
    let parent_short = &parent[..18];
    let child_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(&format!("{parent_short} (task)")))
        .collect();
    assert_eq!(child_lines.len(), 2, "{text}");
    let json = fx.run(&["sessions", "list", "--json"]).await;
    let records: Value = serde_json::from_str(&json.stdout_text()).expect("json");
    let calls: Vec<&str> = records
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["parent"][0] == parent.as_str())
        .filter_map(|r| r["parent_call"].as_str())
        .collect();
    assert_eq!(calls.len(), 2, "{records:#}");
    assert!(calls.contains(&"task_a") && calls.contains(&"task_b"));
}

#[tokio::test]
async fn interrupting_the_parent_cancels_its_child() {
    let fx = Fixture::new("subagents").await;
    let mut run = fx.spawn(&["run", "--json", "stall please"]);
    let child = started_child(&mut run).await;
    // The child's model call is streaming (its first frame was sent).
    fx.server.wait_for_requests(2).await;
    run.interrupt();
    let result = run.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(result["stop_reason"], "cancelled");
    let out = run.finish().await;
    assert_eq!(out.code(), Some(130), "stderr: {}", out.stderr);
    fx.server.wait_for_disconnects(1).await;

    let shown = fx.run(&["sessions", "show", &child, "--json"]).await;
    let child_events = shown.events();
    let child_result = the_result(&child_events);
    assert_eq!(
        child_result["stop_reason"], "cancelled",
        "{child_events:#?}"
    );
}

#[tokio::test]
async fn a_childs_approval_request_reaches_the_parents_client() {
    let fx = Fixture::new("subagents").await;
    fx.set_permission_mode("default");
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("ask the child\n").await;
    let started = chat
        .wait_for_event(|e| e["subtype"] == "subagent_started")
        .await;
    let child = child_of(&started);
    let request = chat
        .wait_for_event(|e| e["type"] == "approval_request")
        .await;
    assert_eq!(
        request["child_session"],
        child.as_str(),
        "tagged with the child"
    );
    assert_eq!(
        request["session_id"], started["session_id"],
        "on the parent's stream"
    );
    assert!(
        request["request_id"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!("{child}/")),
        "{request}"
    );
    chat.send("y\n").await;
    // Settled on the child, and re-told on the parent's stream, so every
    // front end of the parent closes the request.
    let resolved = chat
        .wait_for_event(|e| e["subtype"] == "approval_resolved")
        .await;
    assert_eq!(resolved["session_id"], started["session_id"], "{resolved}");
    assert_eq!(resolved["data"]["request_id"], request["request_id"]);
    assert_eq!(resolved["data"]["child_session"], child.as_str());
    assert_eq!(resolved["data"]["outcome"], "allowed_once", "{resolved}");
    let result = chat.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(result["stop_reason"], "end_turn");
    assert!(
        result["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Child said: Cleaned:"),
        "{result}"
    );
    chat.close_stdin();
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
}

/// Waits for the parent's `subagent_started`; the child's session id.
async fn started_child(parent: &mut Agent) -> String {
    let started = parent
        .wait_for_event(|e| e["subtype"] == "subagent_started")
        .await;
    child_of(&started)
}

/// The child session a `subagent_started` event announces.
fn child_of(started: &serde_json::Value) -> String {
    started["data"]["child"]
        .as_str()
        .expect("child")
        .to_string()
}
