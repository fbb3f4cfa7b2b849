//! Nothing accepted is lost, and no seq is handed out twice, when the
//! daemon is killed (SIGKILL) mid-reply: the crash probes of issue 13, run
//! against the built binary and a real HTTP client.

use crate::support::server::{EventStream, Server};
use crate::support::*;
use serde_json::Value;

fn sigkill(server: &Server) {
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.pid() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("send SIGKILL");
}

/// Start turn 1 ("first") and read its stream until two text deltas have
/// arrived (the script then stalls); returns the SSE client and the seq of
/// the last delta it saw.
async fn a_reply_streaming(server: &Server, id: &str) -> (EventStream, u64) {
    let mut sse = server.sse(id, None).await;
    assert_eq!(server.input(id, "first").await, 1);
    let mut deltas = 0;
    let mut last = 0;
    while deltas < 2 {
        let event = sse
            .until(|e| e["type"] == "stream_event" && e["event"]["type"] == "text_delta")
            .await;
        deltas += 1;
        last = event["seq"].as_u64().expect("a seq");
    }
    (sse, last)
}

/// Read `sse` until the `result` of turn `input_id`; every event read on
/// the way, in order.
async fn until_result(sse: &mut EventStream, input_id: u64) -> Vec<Value> {
    let from = sse.events.len();
    sse.result_of(input_id).await;
    sse.events[from..].to_vec()
}

fn persisted(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] != "stream_event")
        .collect()
}

#[tokio::test]
async fn an_input_queued_when_the_daemon_is_killed_runs_once_after_the_restart() {
    let fx = Fixture::new("killed_with_queued_input").await;
    let server = fx.serve().await;
    let id = server.create_session().await;
    let (_sse, seen) = a_reply_streaming(&server, &id).await;
    // Accepted (202) while turn 1 runs: queued behind it.
    assert_eq!(server.input(&id, "second").await, 2);
    sigkill(&server);
    let (status, _) = server.wait().await;
    assert_eq!(status.code(), None, "killed by a signal");

    // The restarted daemon loads the session by itself and runs input 2.
    let server = fx.serve().await;
    let mut sse = server.sse(&id, Some(seen)).await;
    let events = until_result(&mut sse, 2).await;
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.iter().all(|&s| s > seen),
        "every event after the restart is above the seq the client saw ({seen}): {seqs:?}"
    );
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");
    let closing = events
        .iter()
        .find(|e| e["type"] == "result" && e["turn_id"] == 1)
        .expect("turn 1 closed after the restart");
    assert_eq!(closing["stop_reason"], "error");
    let user: Vec<&Value> = events.iter().filter(|e| e["type"] == "user").collect();
    assert_eq!(user.len(), 1, "{events:#?}");
    assert_eq!(user[0]["text"], "second");
    assert_eq!(user[0]["turn_id"], 2);
    let result = events.last().expect("the result");
    assert_eq!(result["stop_reason"], "end_turn");
    assert_eq!(result["text"], "The second answer.");

    // Input 2 never runs again: not on a later restart either.
    server.terminate();
    server.wait().await;
    let server = fx.serve().await;
    let third = server.input(&id, "third").await;
    assert_eq!(third, 3, "input ids go on after the waiting input");
    let mut sse = server.sse(&id, None).await;
    let all = until_result(&mut sse, third).await;
    let users: Vec<&str> = all
        .iter()
        .filter(|e| e["type"] == "user")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["first", "second", "third"], "each input ran once");
    let asked: Vec<String> = fx
        .request_messages()
        .iter()
        .map(|m| m.last().unwrap()["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(asked, ["first", "second", "third"]);
    fx.assert_requests_valid();
    server.terminate();
    server.wait().await;
}

#[tokio::test]
async fn a_client_resuming_from_a_delta_after_sigkill_gets_every_later_event() {
    let fx = Fixture::new("killed_with_queued_input").await;
    let server = fx.serve().await;
    let id = server.create_session().await;
    let (_sse, seen) = a_reply_streaming(&server, &id).await;
    sigkill(&server);
    server.wait().await;

    // The client reconnects with the id of a delta that was never stored.
    let server = fx.serve().await;
    let mut resumed = server.sse(&id, Some(seen)).await;
    let third = server.input(&id, "third").await;
    let events = until_result(&mut resumed, third).await;
    let kinds: Vec<String> = persisted(&events)
        .iter()
        .map(|e| match e["type"].as_str().unwrap() {
            "system" => format!("system/{}", e["subtype"].as_str().unwrap_or("?")),
            other => other.to_string(),
        })
        .collect();
    // The closing of the cut turn, the restart, then the whole next turn.
    let closing = kinds.iter().position(|k| k == "result").expect("closing");
    let restart = kinds
        .iter()
        .position(|k| k == "system/session_started")
        .expect("restart notice");
    let user = kinds.iter().position(|k| k == "user").expect("next turn");
    assert!(closing < restart && restart < user, "{kinds:?}");
    assert_eq!(persisted(&events)[closing]["turn_id"], 1);
    assert_eq!(events.last().unwrap()["text"], "The third answer.");
    assert!(
        events.iter().all(|e| e["seq"].as_u64().unwrap() > seen),
        "nothing at or below the seq the client saw ({seen})"
    );

    // What the client got is exactly what is stored after that seq (plus
    // the new turn's deltas): no stored event was skipped.
    let mut replay = server.sse(&id, Some(seen)).await;
    let stored = persisted(&until_result(&mut replay, third).await)
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    let live = persisted(&events).into_iter().cloned().collect::<Vec<_>>();
    assert_eq!(stored, live);
    server.terminate();
    server.wait().await;
}
