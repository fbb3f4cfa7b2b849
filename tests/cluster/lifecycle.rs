//! Lifecycle events across the cluster (docs/cluster.md, "Lifecycle events across nodes"): a client
//! of any node's `GET /v1/events` sees the sessions of every node — each
//! event once, naming the node that drives the session — and, when a node
//! is killed, the survivor that adopts its busy session says so.

use crate::harness::*;
use crate::support::server::EventStream;
use serde_json::Value;

/// `session`'s events on a lifecycle stream so far: (kind, node).
fn of_session(stream: &EventStream, session: &str) -> Vec<(String, String)> {
    stream
        .events
        .iter()
        .filter(|e| e["session_id"] == session)
        .map(|e| (text(&e["kind"]), text(&e["node"])))
        .collect()
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or("(none)").to_string()
}

fn pairs(node: &str, kinds: &[&str]) -> Vec<(String, String)> {
    kinds
        .iter()
        .map(|kind| (kind.to_string(), node.to_string()))
        .collect()
}

/// Reads `stream` until it has `kind` for `session`.
async fn until_kind(stream: &mut EventStream, session: &str, kind: &str) -> Value {
    stream
        .until(|e| e["session_id"] == session && e["kind"] == kind)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_nodes_events_show_the_whole_cluster_once_each_naming_the_node() {
    let _one = serial().await;
    let script = format!(
        "{}{SLOW}{}",
        answers("quick", "A quick answer.", 1),
        answers("next", "The next answer.", 1)
    );
    let Some((_fx, database, _nats, [a, b])) = cluster_of(&script, ["node-a", "node-b"]).await
    else {
        return;
    };
    let mut on_a = EventStream::open(a.server.get("/v1/events")).await;
    let mut on_b = EventStream::open(b.server.get("/v1/events")).await;

    // A session created and driven on A.
    let id = a.server.create_session().await;
    let mut events = a.server.sse(&id, None).await;
    let input = a.server.input(&id, "quick").await;
    assert_eq!(events.result_of(input).await["text"], "A quick answer.");
    until_kind(&mut on_b, &id, "idle").await;
    let shown = b.server.get_json(&format!("/v1/sessions/{id}")).await;
    assert_eq!(shown["busy"], false, "A said idle: {shown}");

    // Each node then says one thing more. A node's events reach another in
    // the order it published them, so once both streams have both, each
    // has everything either node said about the session before.
    let from_a = a.server.create_session().await;
    let from_b = b.server.create_session().await;
    for stream in [&mut on_a, &mut on_b] {
        let said_by_a = until_kind(stream, &from_a, "created").await;
        assert_eq!(said_by_a["node"], "node-a", "{said_by_a}");
        let said_by_b = until_kind(stream, &from_b, "created").await;
        assert_eq!(said_by_b["node"], "node-b", "{said_by_b}");
    }
    let driven_on_a = pairs("node-a", &["created", "busy", "idle"]);
    assert_eq!(
        of_session(&on_b, &id),
        driven_on_a,
        "B's client sees A's session once each: {:#?}",
        on_b.events
    );
    assert_eq!(
        of_session(&on_a, &id),
        driven_on_a,
        "A's client sees its own once, not again from B: {:#?}",
        on_a.events
    );
    for stream in [&on_a, &on_b] {
        let seqs = stream.seqs();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    }

    // A killed mid-turn: B adopts the session, and its client is told.
    let mut followed = b.server.sse(&id, None).await;
    let input = a.server.input(&id, "slow").await;
    until_streaming(&mut followed).await;
    until_kind(&mut on_b, &id, "busy").await;
    // B, which does not drive it, shows it busy as A said.
    let shown = b.server.get_json(&format!("/v1/sessions/{id}")).await;
    assert_eq!(shown["loaded"], false, "{shown}");
    assert_eq!(
        shown["busy"], true,
        "B shows A's running session busy: {shown}"
    );
    let listed = b.server.get_json("/v1/sessions").await;
    let listed: Vec<&Value> = listed["sessions"]
        .as_array()
        .expect("a list")
        .iter()
        .filter(|s| s["id"] == id.as_str())
        .collect();
    assert_eq!(listed[0]["busy"], true, "{listed:?}");
    a.server.kill9();
    let adopted = until_kind(&mut on_b, &id, "owner_changed").await;
    assert_eq!(adopted["node"], "node-b", "{adopted}");
    assert_eq!(followed.result_of(input).await["stop_reason"], "error");
    assert_eq!(
        owner_of(&database, &id).await.as_deref(),
        Some(b.id.as_str())
    );

    // Driven on B from now on.
    let input = b.server.input(&id, "next").await;
    assert_eq!(followed.result_of(input).await["text"], "The next answer.");
    until_kind(&mut on_b, &id, "idle").await;
    let mut expected = driven_on_a;
    expected.extend(pairs("node-a", &["busy"]));
    expected.extend(pairs("node-b", &["owner_changed", "busy", "idle"]));
    assert_eq!(of_session(&on_b, &id), expected, "{:#?}", on_b.events);
}
