//! Nothing accepted is lost, and no seq is handed out twice, when the
//! daemon is killed (SIGKILL) mid-reply: the SIGKILL rows of docs/faults.md, run
//! against the built binary and a real HTTP client.

use crate::support::server::{EventStream, Server, error_of};
use crate::support::*;
use serde_json::Value;

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
    server.kill9();
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
    server.kill9();
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

/// A small tmpfs mounted over a folder for the test's life: a disk that
/// fills up. Needs root (CAP_SYS_ADMIN), as CI has.
struct SmallDisk(std::path::PathBuf);

impl SmallDisk {
    fn mount(at: &std::path::Path, size: &str) -> SmallDisk {
        std::fs::create_dir_all(at).expect("mount point");
        let status = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .expect("run mount");
        assert!(
            status.success(),
            "this test mounts a {size} tmpfs to fill a disk, which needs root (CAP_SYS_ADMIN)"
        );
        SmallDisk(at.to_path_buf())
    }

    /// Write a file until the disk is full.
    fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let path = self.0.join("filler");
        let mut file = std::fs::File::create(&path).expect("filler");
        let chunk = vec![0u8; 16 * 1024];
        loop {
            match file.write(&chunk) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(nix::libc::ENOSPC) => break,
                Err(e) => panic!("filling the disk: {e}"),
            }
        }
        path
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

#[tokio::test]
async fn a_full_disk_is_a_store_error_the_session_lives_on_and_nothing_acknowledged_is_lost() {
    let fx = Fixture::new("disk_full").await;
    let disk = SmallDisk::mount(&fx.home.path().join("data"), "4m");
    let server = fx.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let first = server.input(&id, "wait for go").await;
    sse.until(|e| e["type"] == "assistant").await; // the tool waits for `go`

    let filler = disk.fill();
    // An input the store cannot keep is refused, and nothing is queued.
    let refused = error_of(
        server
            .post(&format!("/v1/sessions/{id}/input"))
            .json(&serde_json::json!({ "text": "refused while full" })),
        503,
    )
    .await;
    assert!(refused.contains("not accepted"), "{refused}");
    assert!(refused.contains("full"), "names the cause: {refused}");

    // The running turn goes on; its events are shown though not stored.
    std::fs::write(fx.workspace().join("go"), "").unwrap();
    let result = sse.result_of(first).await;
    assert_eq!(result["text"], "done: went\n");
    let errors: Vec<Value> = sse
        .events
        .iter()
        .filter(|e| e["type"] == "error")
        .cloned()
        .collect();
    assert_eq!(errors.len(), 1, "one store error per outage: {errors:#?}");
    assert_eq!(errors[0]["kind"], "store");

    // Space again: the next input is accepted and everything is saved.
    std::fs::remove_file(filler).unwrap();
    let second = server.input(&id, "after").await;
    assert_eq!(second, first + 1, "the refused input took no id");
    sse.result_of(second).await;
    let notice = sse
        .events
        .iter()
        .find(|e| {
            e["type"] == "system" && e["message"].as_str().unwrap_or("").contains("works again")
        })
        .expect("a notice that the store works again");
    assert!(notice["seq"].as_u64() > errors[0]["seq"].as_u64());
    let live: Vec<Value> = persisted(&sse.events).into_iter().cloned().collect();

    // After a crash, the store holds everything that was shown.
    server.kill9();
    server.wait().await;
    let server = fx.serve().await;
    let mut replay = server.sse(&id, None).await;
    let stored = until_result(&mut replay, second).await;
    assert_eq!(
        persisted(&stored).into_iter().cloned().collect::<Vec<_>>(),
        live
    );
    assert!(
        !stored
            .iter()
            .any(|e| e.to_string().contains("refused while full")),
        "the refused input is nowhere"
    );
    server.terminate();
    server.wait().await;
}
