//! `agentbus serve` as several nodes of a cluster on one Postgres database
//! (docs/cluster.md: ownership with fencing, failover by adoption; the
//! live plane over NATS in `follow.rs` and `lifecycle.rs`): one owner per session
//! whatever nodes ask at once; a node killed, paused past its lease or cut
//! off from Postgres has its busy sessions adopted by another node, which
//! closes the interrupted turn, says `owner_changed` and answers the next
//! query, while nothing stored is lost or duplicated; a paused node that
//! wakes up is refused and stops; a node asked to stop hands its sessions
//! back.
//!
//! A test binary of its own (not a module of `tests/all`): its nodes run
//! with a 3-second lease, and run after the other tests, one test at a
//! time. Failover times are measured and printed (run with
//! `--nocapture`); no test passes or fails on a time. Needs PostgreSQL's
//! server binaries, like `tests/all/postgres_store.rs`.

#[allow(dead_code, unused_imports)]
#[path = "../all/support/mod.rs"]
mod support;

mod follow;
mod harness;
mod lifecycle;
mod probes;

use harness::*;
use serde_json::Value;
use std::time::Instant;
use support::server::error_of;

/// `POST .../open` giving the session an MCP server of its own: only the
/// node that drives it (or claims it) can.
fn open_with_a_server(
    server: &crate::support::server::Server,
    id: &str,
) -> reqwest::RequestBuilder {
    server
        .post(&format!("/v1/sessions/{id}/open"))
        .json(&serde_json::json!({"mcp_servers": {"echo": {"command": "true"}}}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_opens_from_every_node_leave_exactly_one_owner_per_session() {
    let _one = serial().await;
    const SESSIONS: usize = 6;
    let script = format!(
        "{}{}",
        answers("quick", "A quick answer.", SESSIONS),
        answers("next", "The next answer.", SESSIONS)
    );
    let Some((fx, database, _nats)) = cluster(&script).await else {
        return;
    };
    let url = database.url();
    // Sessions made on a node that then leaves: nobody owns them.
    let first = start_node(&fx, "node-a", &url).await;
    let mut ids = Vec::new();
    for _ in 0..SESSIONS {
        let id = first.server.create_session().await;
        let mut events = first.server.sse(&id, None).await;
        let input = first.server.input(&id, "quick").await;
        assert_eq!(events.result_of(input).await["text"], "A quick answer.");
        ids.push(id);
    }
    first.server.terminate();
    let (status, _) = first.server.wait().await;
    assert!(status.success(), "{status}");
    for id in &ids {
        assert_eq!(owner_of(&database, id).await, None, "released by the drain");
    }

    let nodes = [
        start_node(&fx, "node-b", &url).await,
        start_node(&fx, "node-c", &url).await,
        start_node(&fx, "node-d", &url).await,
    ];
    for id in &ids {
        let opens = futures::future::join_all(
            nodes
                .iter()
                .map(|node| node.server.post(&format!("/v1/sessions/{id}/open")).send()),
        )
        .await;
        // Every node answers (the others follow it through the live
        // plane); exactly one has loaded it.
        let mut loaded = Vec::new();
        for open in opens {
            let open = open.expect("an answer");
            assert_eq!(open.status(), 200);
            let session: Value = open.json().await.expect("a session");
            loaded.push(session["loaded"] == true);
        }
        assert_eq!(
            loaded.iter().filter(|l| **l).count(),
            1,
            "exactly one claim wins: {loaded:?}"
        );
        let winner = &nodes[loaded.iter().position(|l| *l).expect("a winner")];
        assert_eq!(
            owner_of(&database, id).await.as_deref(),
            Some(winner.id.as_str())
        );
        // Loading it elsewhere (with servers of its own) is refused, naming
        // the node that drives it.
        let loser = nodes.iter().find(|n| n.id != winner.id).expect("a loser");
        let refusal = error_of(open_with_a_server(&loser.server, id), 409).await;
        assert!(
            refusal.contains(&winner.name) && refusal.contains(&winner.id),
            "the refusal names the node that drives it: {refusal}"
        );
        let mut events = winner.server.sse(id, None).await;
        let input = winner.server.input(id, "next").await;
        assert_eq!(events.result_of(input).await["text"], "The next answer.");
    }
    for id in &ids {
        let log = stored_log(&database, id).await;
        assert_log_consistent(&log);
        let changed: Vec<&Stored> = log.iter().filter(|s| s.is_owner_changed()).collect();
        assert_eq!(changed.len(), 1, "one new owner: {log:#?}");
        assert_eq!(changed[0].epoch, 2);
        assert_eq!(changed[0].body["data"]["epoch"], 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_mid_turn_has_its_session_adopted_with_nothing_stored_lost() {
    let _one = serial().await;
    let script = format!(
        "{SLOW}{}{}",
        answers("second", "The second answer.", 1),
        answers("next", "The next answer.", 1)
    );
    let Some((_fx, database, _nats, [a, b, c])) =
        cluster_of(&script, ["node-a", "node-b", "node-c"]).await
    else {
        return;
    };
    let id = a.server.create_session().await;
    let mut client = a.server.sse(&id, None).await;
    assert_eq!(a.server.input(&id, "slow").await, 1);
    let last_seen = until_streaming(&mut client).await;
    // Accepted while turn 1 runs: it waits, stored, for whoever drives the
    // session next.
    assert_eq!(a.server.input(&id, "second").await, 2);

    let killed = Instant::now();
    a.server.kill9();
    let changed = eventually("another node adopts the session", || async {
        let log = stored_log(&database, &id).await;
        log.into_iter().find(Stored::is_owner_changed)
    })
    .await;
    let failover = killed.elapsed();
    println!(
        "FAILOVER kill -9: owner_changed stored {} after the kill (TTL {TTL_SECS} s)",
        ms(failover)
    );

    let owner = owner_of(&database, &id).await.expect("an owner");
    let adopter = [&b, &c]
        .into_iter()
        .find(|n| n.id == owner)
        .unwrap_or_else(|| panic!("{owner} is a surviving node"));
    assert_eq!(changed.body["data"]["node"], owner);
    assert_eq!(changed.epoch, 2);
    assert!(
        changed.seq > last_seen,
        "the new owner goes on above every seq the client saw ({last_seen}): {}",
        changed.seq
    );
    let log = stored_log(&database, &id).await;
    assert_log_consistent(&log);
    assert_stored(&client.events, &log);
    let closed = eventually("the interrupted turn is closed", || async {
        let log = stored_log(&database, &id).await;
        log.into_iter()
            .find(|s| s.kind == "result" && s.body["turn_id"] == 1)
    })
    .await;
    assert_eq!(closed.body["stop_reason"], "error", "{:?}", closed.body);
    assert!(closed.seq > changed.seq && closed.epoch == 2);

    // The client reconnects to the new owner with its Last-Event-ID: the
    // closing events, then the next turn, all above what it saw.
    let mut resumed = adopter.server.sse(&id, Some(last_seen)).await;
    resumed.until(|e| e["subtype"] == "owner_changed").await;
    let result = resumed.result_of(1).await;
    assert_eq!(result["stop_reason"], "error");
    assert_eq!(
        resumed.result_of(2).await["text"],
        "The second answer.",
        "the input that waited runs on the new owner"
    );
    let input = adopter.server.input(&id, "next").await;
    assert_eq!(resumed.result_of(input).await["text"], "The next answer.");
    assert!(
        resumed.seqs().iter().all(|&s| s > last_seen),
        "{:?}",
        resumed.seqs()
    );
    let log = stored_log(&database, &id).await;
    assert_log_consistent(&log);
    assert_stored(&resumed.events, &log);
    assert_stored(&client.events, &log);

    // The operators' view: the dead node is listed as gone, the adopter
    // drives the session.
    let health = adopter.server.get_json("/v1/health").await;
    let nodes = health["cluster"]["nodes"].as_array().expect("nodes");
    let dead = nodes
        .iter()
        .find(|n| n["node_id"] == a.id.as_str())
        .expect("node-a is still listed");
    assert_eq!(
        (dead["name"].as_str(), dead["alive"].as_bool()),
        (Some("node-a"), Some(false))
    );
    let alive = nodes
        .iter()
        .find(|n| n["node_id"] == adopter.id.as_str())
        .expect("the adopter");
    assert_eq!(alive["alive"], true);
    assert_eq!(alive["sessions"], 1, "{health}");
    let document = adopter.server.get_json("/v1/openapi.json").await;
    for schema in ["Health", "ClusterHealth", "ClusterNode"] {
        assert!(
            document["components"]["schemas"][schema].is_object(),
            "the OpenAPI document describes {schema}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_node_is_fenced_when_it_wakes_and_rejoins_as_a_new_node() {
    let _one = serial().await;
    let script = format!("{SLOW}{}", answers("next", "The next answer.", 1));
    let Some((_fx, database, _nats, [a, b])) = cluster_of(&script, ["node-a", "node-b"]).await
    else {
        return;
    };
    let id = a.server.create_session().await;
    let mut client = a.server.sse(&id, None).await;
    a.server.input(&id, "slow").await;
    let last_seen = until_streaming(&mut client).await;

    let paused = Instant::now();
    a.pause();
    let changed = eventually("node-b adopts the paused node's session", || async {
        let owner = owner_of(&database, &id).await;
        let log = stored_log(&database, &id).await;
        let changed = log.into_iter().find(Stored::is_owner_changed)?;
        (owner.as_deref() == Some(b.id.as_str())).then_some(changed)
    })
    .await;
    println!(
        "FAILOVER SIGSTOP: adopted {} after the pause",
        ms(paused.elapsed())
    );
    a.resume();
    let resumed = Instant::now();

    // The old owner learns it lost the session: its watchers get an error
    // (nothing of it stored), its stream ends, and it joins again as a new
    // node.
    let said = client.until(|e| e["type"] == "error").await;
    let message = said["message"].as_str().unwrap_or_default();
    assert!(message.contains("stopped driving the session"), "{said}");
    assert!(client.next().await.is_none(), "the stream ends");
    let rejoined = eventually("node-a rejoins with a new node id", || async {
        let live = live_nodes_named(&database, "node-a").await;
        live.into_iter().find(|node| *node != a.id)
    })
    .await;
    println!(
        "SIGCONT: node-a rejoined as {rejoined} {} after waking",
        ms(resumed.elapsed())
    );
    // Its row is written before it answers with the new id.
    eventually("node-a's health names its new id", || async {
        (a.current_id().await == rejoined).then_some(())
    })
    .await;
    let log_a = a.server.stderr();
    assert!(
        log_a.contains("stopping the session on this node") && log_a.contains(&id),
        "node-a says it stopped the session:\n{log_a}"
    );
    // Nothing of the old epoch was stored after the takeover.
    let log = stored_log(&database, &id).await;
    assert_log_consistent(&log);
    assert_stored(&client.events, &log);
    assert!(
        log.iter()
            .filter(|s| s.epoch == 1)
            .all(|s| s.seq < changed.seq),
        "{log:#?}"
    );
    // node-a refuses the session now, naming its owner; node-b goes on.
    let refusal = error_of(open_with_a_server(&a.server, &id), 409).await;
    assert!(refusal.contains("node-b"), "{refusal}");
    let mut events = b.server.sse(&id, Some(last_seen)).await;
    let input = b.server.input(&id, "next").await;
    assert_eq!(events.result_of(input).await["text"], "The next answer.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_postgres_fences_itself_and_its_session_is_adopted() {
    let _one = serial().await;
    let script = format!("{SLOW}{}", answers("next", "The next answer.", 1));
    let Some((fx, database, _nats)) = cluster(&script).await else {
        return;
    };
    let address = database.address().parse().expect("an address");
    let proxy = agentbus_testkit::tcp_proxy::TcpProxy::start(address)
        .await
        .expect("a proxy");
    let behind_proxy = format!(
        "postgres://{}@{}/{}",
        agentbus_testkit::postgres::SUPERUSER,
        proxy.address(),
        database.name
    );
    let a = start_node(&fx, "node-a", &behind_proxy).await;
    let b = start_node(&fx, "node-b", &database.url()).await;
    let id = a.server.create_session().await;
    let mut client = a.server.sse(&id, None).await;
    a.server.input(&id, "slow").await;
    let last_seen = until_streaming(&mut client).await;

    let cut = Instant::now();
    proxy.cut();
    let said = client.until(|e| e["type"] == "error").await;
    let fenced = cut.elapsed();
    assert!(
        said["message"]
            .as_str()
            .is_some_and(|m| m.contains("fenced itself")),
        "{said}"
    );
    assert!(
        a.server.stderr().contains("fencing this node"),
        "{}",
        a.server.stderr()
    );
    let changed = eventually("node-b adopts the session", || async {
        let log = stored_log(&database, &id).await;
        let changed = log.into_iter().find(Stored::is_owner_changed)?;
        (owner_of(&database, &id).await.as_deref() == Some(b.id.as_str())).then_some(changed)
    })
    .await;
    println!(
        "FAILOVER cut from Postgres: node-a fenced itself {} after the cut, node-b adopted {} after it (TTL {TTL_SECS} s)",
        ms(fenced),
        ms(cut.elapsed())
    );
    let log = stored_log(&database, &id).await;
    assert_log_consistent(&log);
    assert_stored(&client.events, &log);
    assert!(
        log.iter()
            .filter(|s| s.epoch == 1)
            .all(|s| s.seq < changed.seq)
    );
    let closed = log
        .iter()
        .find(|s| s.kind == "result" && s.body["turn_id"] == 1)
        .expect("the interrupted turn is closed");
    assert_eq!(closed.body["stop_reason"], "error");

    // Postgres comes back: node-a joins again as a new node.
    proxy.restore();
    eventually("node-a rejoins once Postgres answers", || async {
        let live = live_nodes_named(&database, "node-a").await;
        live.into_iter().find(|node| *node != a.id)
    })
    .await;
    let mut events = b.server.sse(&id, Some(last_seen)).await;
    let input = b.server.input(&id, "next").await;
    assert_eq!(events.result_of(input).await["text"], "The next answer.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_asked_to_stop_hands_its_sessions_back_without_errors() {
    let _one = serial().await;
    let script = format!(
        "{SLOW}{}{}",
        answers("quick", "A quick answer.", 1),
        answers("next", "The next answer.", 2)
    );
    let Some((_fx, database, _nats, [a, b])) = cluster_of(&script, ["node-a", "node-b"]).await
    else {
        return;
    };
    let idle = a.server.create_session().await;
    let mut events = a.server.sse(&idle, None).await;
    let input = a.server.input(&idle, "quick").await;
    events.result_of(input).await;
    let busy = a.server.create_session().await;
    let mut client = a.server.sse(&busy, None).await;
    a.server.input(&busy, "slow").await;
    until_streaming(&mut client).await;

    let asked = Instant::now();
    a.server.terminate();
    let a_id = a.id.clone();
    let (status, log_a) = a.server.wait().await;
    assert!(status.success(), "{status}\n{log_a}");
    println!(
        "DRAIN: node-a stopped {} after SIGTERM",
        ms(asked.elapsed())
    );
    let left = database
        .client()
        .await
        .query("SELECT 1 FROM nodes WHERE node_id::text = $1", &[&a_id])
        .await
        .expect("nodes");
    assert!(left.is_empty(), "its lease row is gone");
    for id in [&idle, &busy] {
        assert_eq!(owner_of(&database, id).await, None, "released");
        let log = stored_log(&database, id).await;
        assert_log_consistent(&log);
        assert!(
            log.iter().all(|s| s.kind != "error"),
            "a drain is no error: {log:#?}"
        );
    }
    let log = stored_log(&database, &busy).await;
    let closed = log.last().expect("events");
    assert_eq!(
        (closed.kind.as_str(), &closed.body["stop_reason"]),
        ("result", &Value::from("cancelled")),
        "the running turn was interrupted as a shutdown does"
    );
    // Another node takes both at once, at the next access.
    for id in [&idle, &busy] {
        let mut events = b.server.sse(id, None).await;
        let input = b.server.input(id, "next").await;
        assert_eq!(events.result_of(input).await["text"], "The next answer.");
        let log = stored_log(&database, id).await;
        assert_log_consistent(&log);
        assert_eq!(
            owner_of(&database, id).await.as_deref(),
            Some(b.id.as_str())
        );
    }
}
