//! The binary with its sessions in Postgres (`--store postgres://...`):
//! `serve` killed mid-turn and restarted on the same database loses
//! nothing and goes on above every seq a client saw; an outage of Postgres
//! mid-turn is a store error the session reports and survives; the
//! `sessions` commands list, export and import there, and move sessions
//! between Postgres and the SQLite default. The URL's password never shows.
//!
//! Each test gets a fresh database on the test binary's throwaway server
//! (`agentbus_testkit::postgres`): without one it fails, or is skipped
//! with the reason when `AGENTBUS_SKIP_POSTGRES=1`.

use crate::support::server::{EventStream, error_of};
use crate::support::*;
use agentbus_testkit::postgres::{TestDatabase, fresh_database};
use agentbus_testkit::tcp_proxy::TcpProxy;
use serde_json::Value;

/// The password every URL carries (the test server trusts any): it must
/// never show in output, logs or errors.
const PASSWORD: &str = "pg-secret-must-never-appear-0815";

fn persisted(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] != "stream_event")
        .cloned()
        .collect()
}

/// The stored log of session `id`, straight from the database: `(seq,
/// type)` in seq order.
async fn stored_log(database: &TestDatabase, id: &str) -> Vec<(i64, String)> {
    database
        .client()
        .await
        .query(
            "SELECT seq, type FROM events WHERE session_id = $1 ORDER BY seq",
            &[&id],
        )
        .await
        .expect("read the log")
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// `sessions show --json ID` in `store` (default: the SQLite one): each
/// event's seq, type and text.
async fn shown(fx: &Fixture, store: Option<&str>, id: &str) -> Vec<(Value, Value, Value)> {
    let mut args = vec!["sessions", "show", id, "--json"];
    if let Some(store) = store {
        args.extend(["--store", store]);
    }
    let out = fx.run(&args).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    out.events()
        .iter()
        .map(|e| (e["seq"].clone(), e["type"].clone(), e["text"].clone()))
        .collect()
}

fn assert_no_password(what: &str, text: &str) {
    assert!(
        !text.contains(PASSWORD),
        "{what} shows the password:\n{text}"
    );
}

#[tokio::test]
async fn serve_killed_mid_turn_on_postgres_keeps_everything_and_goes_on_above_the_reservation() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let url = database.url_with_password(PASSWORD);
    let fx = Fixture::new("killed_with_queued_input").await;
    let server = fx.serve_with(&["--store", &url]).await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    assert_eq!(server.input(&id, "first").await, 1);
    let mut seen = 0;
    for _ in 0..2 {
        let delta = sse
            .until(|e| e["type"] == "stream_event" && e["event"]["type"] == "text_delta")
            .await;
        seen = delta["seq"].as_u64().expect("a seq");
    }
    // Accepted (202) while turn 1 streams: stored as waiting.
    assert_eq!(server.input(&id, "second").await, 2);
    server.kill9();
    let (status, stderr) = server.wait().await;
    assert_eq!(status.code(), None, "killed by a signal");
    assert_no_password("serve's log", &stderr);

    // What the dead process left is in Postgres, and nothing in SQLite.
    assert!(
        !fx.home.path().join("data").join("agentbus.db").exists(),
        "no SQLite store was made"
    );
    let client = database.client().await;
    let row = client
        .query_one(
            "SELECT seq_reserved, last_seq, title FROM sessions WHERE id = $1",
            &[&id],
        )
        .await
        .expect("the session is stored");
    let (reserved, last): (i64, i64) = (row.get(0), row.get(1));
    assert!(
        reserved as u64 >= seen && (last as u64) < seen,
        "the deltas the client saw ({seen}) are reserved ({reserved}), not stored (last {last})"
    );
    assert_eq!(row.get::<_, Option<String>>(2).as_deref(), Some("first"));
    let waiting = client
        .query("SELECT input_id FROM inputs WHERE session_id = $1", &[&id])
        .await
        .expect("inputs");
    assert_eq!(waiting.len(), 1, "input 2 waits");
    let before = stored_log(&database, &id).await;
    assert!(before.iter().any(|(_, kind)| kind == "user"), "{before:?}");

    // Restarted on the same database (its URL spelled without the
    // password this time): the session is loaded, turn 1 closed, input 2
    // run, every new seq above what the client saw.
    let server = fx.serve_with(&["--store", &database.url()]).await;
    let mut resumed = server.sse(&id, Some(seen)).await;
    let from = resumed.events.len();
    let answer = resumed.result_of(2).await;
    assert_eq!(answer["text"], "The second answer.");
    let after: Vec<Value> = resumed.events[from..].to_vec();
    let seqs: Vec<u64> = after.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.iter().all(|&s| s > reserved as u64),
        "every event after the restart is above the reservation ({reserved}): {seqs:?}"
    );
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in order: {seqs:?}");
    let closing = after
        .iter()
        .find(|e| e["type"] == "result" && e["turn_id"] == 1)
        .expect("turn 1 closed after the restart");
    assert_eq!(closing["stop_reason"], "error");

    // The whole history is there: replayed from the start, it is the log
    // Postgres holds, the events from before the crash first.
    let mut replay = server.sse(&id, None).await;
    replay.result_of(2).await;
    let replayed: Vec<(i64, String)> = persisted(&replay.events)
        .iter()
        .map(|e| {
            (
                e["seq"].as_i64().unwrap(),
                e["type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(replayed, stored_log(&database, &id).await);
    assert_eq!(replayed[..before.len()], before[..]);
    let users: Vec<&str> = replay
        .events
        .iter()
        .filter(|e| e["type"] == "user")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["first", "second"], "each input ran once");
    server.terminate();
    let (_, stderr) = server.wait().await;
    assert_no_password("serve's log", &stderr);
    fx.assert_requests_valid();
}

#[tokio::test]
async fn a_postgres_outage_mid_turn_is_a_store_error_and_nothing_shown_is_lost() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let proxy = TcpProxy::start(database.address().parse().expect("an address"))
        .await
        .expect("a proxy");
    let through_proxy = format!(
        "postgres://postgres:{PASSWORD}@{}/{}",
        proxy.address(),
        database.name
    );
    let fx = Fixture::new("disk_full").await;
    let server = fx.serve_with(&["--store", &through_proxy]).await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let first = server.input(&id, "wait for go").await;
    sse.until(|e| e["type"] == "assistant").await; // the tool waits for `go`

    proxy.cut();
    // An input the store cannot keep is refused (503: try again later),
    // and nothing is queued.
    let refused = error_of(
        server
            .post(&format!("/v1/sessions/{id}/input"))
            .json(&serde_json::json!({ "text": "refused while down" })),
        503,
    )
    .await;
    assert!(refused.contains("Postgres"), "{refused}");
    assert!(
        refused.contains(&format!("postgres://postgres:***@{}", proxy.address())),
        "names the store: {refused}"
    );
    assert_no_password("the refusal", &refused);

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
    assert_no_password("the error event", &errors[0].to_string());

    // Postgres answers again: the next input is accepted, everything saved.
    proxy.restore();
    let second = server.input(&id, "after").await;
    assert_eq!(second, first + 1, "the refused input took no id");
    sse.result_of(second).await;
    assert!(
        sse.events.iter().any(|e| e["type"] == "system"
            && e["message"].as_str().unwrap_or("").contains("works again")),
        "a notice that the store works again"
    );
    let live = persisted(&sse.events);

    // After a crash, Postgres holds everything that was shown.
    server.kill9();
    let (_, stderr) = server.wait().await;
    assert_no_password("serve's log", &stderr);
    let server = fx.serve_with(&["--store", &database.url()]).await;
    let mut replay: EventStream = server.sse(&id, None).await;
    replay.result_of(second).await;
    assert_eq!(persisted(&replay.events), live);
    server.terminate();
    server.wait().await;
}

#[tokio::test]
async fn sessions_list_export_and_import_work_on_postgres_and_move_sessions_to_sqlite() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let url = database.url_with_password(PASSWORD);
    let fx = Fixture::new("many_answers").await;
    let run = fx
        .run(&["--store", &url, "run", "--json", "remember Postgres"])
        .await;
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    assert_no_password("run's log", &run.stderr);
    let id = session_id(&run.events());
    // `--store` after the subcommand works too.
    let again = fx
        .run(&["run", "--store", &url, "--session", &id, "and more"])
        .await;
    assert_eq!(again.code(), Some(0), "{}", again.stderr);

    let list = fx
        .run(&["sessions", "list", "--json", "--store", &url])
        .await;
    assert_eq!(list.code(), Some(0), "{}", list.stderr);
    let records: Value = serde_json::from_str(&list.stdout_text()).expect("JSON");
    let listed: Vec<(&str, &str)> = records
        .as_array()
        .expect("a list")
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["title"].as_str().unwrap()))
        .collect();
    assert_eq!(listed, [(id.as_str(), "remember Postgres")]);
    // The SQLite default of the data dir knows nothing of it.
    let default = fx.run(&["sessions", "list", "--json"]).await;
    assert_eq!(default.stdout_text().trim(), "[]");

    let file = fx.home.path().join("from-postgres.json");
    let export = fx
        .run(&[
            "--store",
            &url,
            "sessions",
            "export",
            &id,
            "--out",
            file.to_str().unwrap(),
        ])
        .await;
    assert_eq!(export.code(), Some(0), "{}", export.stderr);
    let document = std::fs::read_to_string(&file).expect("the export");
    assert_no_password("the export", &document);

    // Imported into Postgres (a second session) and into SQLite.
    let import = fx
        .run(&[
            "--store",
            &url,
            "sessions",
            "import",
            file.to_str().unwrap(),
        ])
        .await;
    assert_eq!(import.code(), Some(0), "{}", import.stderr);
    let copy = import.stdout[0].trim().to_string();
    let into_sqlite = fx
        .run(&["sessions", "import", file.to_str().unwrap()])
        .await;
    assert_eq!(into_sqlite.code(), Some(0), "{}", into_sqlite.stderr);
    let moved = into_sqlite.stdout[0].trim().to_string();

    let original = shown(&fx, Some(&url), &id).await;
    assert!(original.len() >= 6, "two turns: {original:?}");
    assert_eq!(shown(&fx, Some(&url), &copy).await, original);
    assert_eq!(shown(&fx, None, &moved).await, original);
    let count = database
        .client()
        .await
        .query_one("SELECT count(*) FROM sessions", &[])
        .await
        .expect("count")
        .get::<_, i64>(0);
    assert_eq!(count, 2, "the original and its copy");
}
