//! The fault-matrix row "1,000 sessions streaming at once": a real
//! `agentbus serve`, 1,000 sessions each followed by its own SSE client, and
//! every session's reply streaming at the same time. The scripted model
//! holds every reply's first chunk until all 1,000 model calls have arrived
//! (`after_requests`), so the streams overlap by construction, not by luck.
//!
//! What it shows: each client receives every event of its own session in
//! seq order — 1, 2, 3, ... up to its turn's `result` with no gap and
//! nothing twice — the streamed deltas add up to the reply the model sent
//! that session (not another's), the store holds what the clients were
//! shown, and the daemon is alive and well afterwards (health, then a clean
//! exit on SIGTERM).

use crate::support::server::{EventStream, Server};
use crate::support::*;
use agentbus_testkit::Script;
use futures::StreamExt;
use serde_json::Value;
use std::sync::Arc;

/// Sessions streaming at once.
const SESSIONS: usize = 1000;
/// Requests made at once while setting the sessions up.
const SETUP_CONCURRENCY: usize = 32;

/// The reply the model streams to the query `query`, in pieces of four
/// characters (`{last_user}` is the query).
const REPLY: &str = "{last_user} is answered here, piece by piece, while 999 others stream.";

fn reply_to(query: &str) -> String {
    REPLY.replace("{last_user}", query)
}

fn query_of(session: usize) -> String {
    format!("session {session}")
}

/// Each of the test process and the daemon (which inherits the limit)
/// holds two sockets per session (SSE and model call): raise the soft
/// limit on open files to what that needs, within the hard limit.
fn raise_open_files_limit(needed: u64) {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("read the open files limit");
    if soft >= needed {
        return;
    }
    assert!(
        hard >= needed,
        "this test needs {needed} open files, the hard limit is {hard} (raise it with ulimit -Hn)"
    );
    setrlimit(Resource::RLIMIT_NOFILE, needed, hard).expect("raise the open files limit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_sessions_streaming_at_once_each_client_gets_every_event_in_order() {
    raise_open_files_limit(4 * SESSIONS as u64 + 256);
    let script =
        format!("[[response]]\ntext = \"{REPLY}\"\nchunk_size = 4\nafter_requests = {SESSIONS}\n")
            .repeat(SESSIONS);
    let fx = Fixture::with_script(Script::from_toml_str(&script).expect("script")).await;
    let server = Arc::new(fx.serve_with_env(&[], &[("RUST_LOG", "warn")]).await);

    // Every session, each with a client attached (the stream answers 200
    // once its feed is attached, so nothing published later is missed).
    let followed: Vec<(String, EventStream)> = futures::stream::iter(0..SESSIONS)
        .map(|_| {
            let server = server.clone();
            async move {
                let id = server.create_session().await;
                let stream = server.sse(&id, None).await;
                (id, stream)
            }
        })
        .buffered(SETUP_CONCURRENCY)
        .collect()
        .await;

    // Every client reads on its own task until its turn's result.
    let (ids, streams): (Vec<String>, Vec<EventStream>) = followed.into_iter().unzip();
    let readers: Vec<_> = streams
        .into_iter()
        .map(|mut stream| {
            tokio::spawn(async move {
                stream.until(|event| event["type"] == "result").await;
                stream.events
            })
        })
        .collect();

    // All the queries at once; the model answers none of them before it
    // has all of them.
    let inputs: Vec<u64> = futures::future::join_all(ids.iter().enumerate().map(|(n, id)| {
        let server = server.clone();
        let query = query_of(n);
        async move { server.input(id, &query).await }
    }))
    .await;

    for (n, ((id, reader), input)) in ids.iter().zip(readers).zip(&inputs).enumerate() {
        let events = reader.await.expect("the client's reader");
        check_session(n, id, *input, &events);
    }

    // The store holds what the clients were shown (every event but the
    // streamed deltas), for every session.
    let stored: Vec<(usize, Value)> = futures::stream::iter(ids.iter().enumerate())
        .map(|(n, id)| {
            let server = server.clone();
            async move {
                let export = server.get_json(&format!("/v1/sessions/{id}/export")).await;
                (n, export)
            }
        })
        .buffered(SETUP_CONCURRENCY)
        .collect()
        .await;
    for (n, export) in stored {
        let stored_types: Vec<&str> = export["events"]
            .as_array()
            .expect("the exported events")
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default())
            .collect();
        assert_eq!(
            stored_types.iter().filter(|t| **t == "result").count(),
            1,
            "session {n}: one stored result: {stored_types:?}"
        );
        assert!(
            stored_types.ends_with(&["user", "assistant", "result"]),
            "session {n}: the turn is stored whole: {stored_types:?}"
        );
    }

    // The daemon is alive and holds every session.
    let health = server.get_json("/v1/health").await;
    assert_eq!(health["sessions_loaded"], SESSIONS, "{health}");
    assert_eq!(fx.server.model_calls().len(), SESSIONS);
    assert!(
        fx.server.violations().is_empty(),
        "{:#?}",
        fx.server.violations()
    );
    server.terminate();
    let server: Server = Arc::into_inner(server).expect("no client holds the server");
    let (status, log) = server.wait().await;
    assert!(
        status.success(),
        "agentbus serve exited with {status}:\n{log}"
    );
    assert!(!log.contains("ERROR"), "the daemon logged errors:\n{log}");
}

/// One client's events: its session's, from seq 1 to its turn's `result`
/// with no gap and no duplicate, the turn's deltas adding up to the reply
/// the model sent this session.
fn check_session(n: usize, id: &str, input: u64, events: &[Value]) {
    let seqs: Vec<u64> = events
        .iter()
        .map(|e| e["seq"].as_u64().unwrap_or(0))
        .collect();
    let expected: Vec<u64> = (1..=seqs.len() as u64).collect();
    assert_eq!(seqs, expected, "session {n}: every event once, in order");
    assert!(
        events.iter().all(|e| e["session_id"] == id),
        "session {n}: only its own events"
    );
    let turn: Vec<&Value> = events.iter().filter(|e| e["turn_id"] == input).collect();
    let types: Vec<&str> = turn
        .iter()
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(types.first(), Some(&"user"), "session {n}: {types:?}");
    assert_eq!(types.last(), Some(&"result"), "session {n}: {types:?}");
    assert_eq!(
        turn.last().map(|e| &e["stop_reason"]),
        Some(&Value::from("end_turn")),
        "session {n}: {:?}",
        turn.last()
    );
    let streamed: String = turn
        .iter()
        .filter(|e| e["type"] == "stream_event" && e["event"]["type"] == "text_delta")
        .map(|e| e["event"]["text"].as_str().unwrap_or_default())
        .collect();
    let reply = reply_to(&query_of(n));
    assert_eq!(streamed, reply, "session {n}: the deltas make its reply");
    let deltas = types.iter().filter(|t| **t == "stream_event").count();
    assert!(
        deltas >= reply.len() / 4,
        "session {n}: the reply came in pieces: {types:?}"
    );
    let assistant = turn
        .iter()
        .find(|e| e["type"] == "assistant")
        .unwrap_or_else(|| panic!("session {n}: an assistant event: {types:?}"));
    assert_eq!(
        assistant["content"][0]["text"], reply,
        "session {n}: {assistant}"
    );
}
