//! The live plane (docs/cluster.md, "Following from another node"): a client of any node
//! follows a session another node drives — the same events, deltas
//! included, as a client of the owner — and its inputs run on the owner;
//! when the owner is killed mid-turn, the client stays on its node and sees
//! the adopter close the turn and answer the next query.

use crate::harness::*;
use serde_json::Value;

/// The events up to and including the `result` of turn `input_id`.
fn through_result(events: &[Value], input_id: u64) -> Vec<Value> {
    let end = events
        .iter()
        .position(|e| e["type"] == "result" && e["turn_id"] == input_id)
        .expect("the result is there");
    events[..=end].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_another_node_follows_the_session_and_its_input_runs_on_the_owner() {
    let _one = serial().await;
    let script = "[[response]]\nmatch = \"first\"\ntext = \"A first answer, streamed in small pieces.\"\n\
                  chunk_size = 4\n";
    let Some((_fx, database, _nats, [a, b])) = cluster_of(script, ["node-a", "node-b"]).await
    else {
        return;
    };
    let id = a.server.create_session().await;
    let mut on_a = a.server.sse(&id, None).await;
    let mut on_b = b.server.sse(&id, None).await;

    // Sent through B, run by A.
    let input = b.server.input(&id, "first").await;
    assert_eq!(input, 1);
    let result_a = on_a.result_of(input).await;
    let result_b = on_b.result_of(input).await;
    assert_eq!(
        result_b["text"],
        "A first answer, streamed in small pieces."
    );
    assert_eq!(result_a, result_b);
    assert_eq!(
        owner_of(&database, &id).await.as_deref(),
        Some(a.id.as_str())
    );

    let seen_on_a = through_result(&on_a.events, input);
    let seen_on_b = through_result(&on_b.events, input);
    assert!(
        seen_on_b.iter().any(|e| e["type"] == "stream_event"),
        "the deltas reach the other node: {seen_on_b:#?}"
    );
    assert_eq!(
        seen_on_b, seen_on_a,
        "B's client sees what A's does, in order"
    );
    let log = stored_log(&database, &id).await;
    assert_stored(&on_b.events, &log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_a_surviving_node_sees_the_owner_killed_mid_turn_replaced() {
    let _one = serial().await;
    let script = format!("{SLOW}{}", answers("next", "The next answer.", 1));
    let Some((_fx, database, _nats, [a, b])) = cluster_of(&script, ["node-a", "node-b"]).await
    else {
        return;
    };
    let id = a.server.create_session().await;
    let mut client = b.server.sse(&id, None).await;
    assert_eq!(b.server.input(&id, "slow").await, 1);
    let last_seen = until_streaming(&mut client).await;
    assert_eq!(
        owner_of(&database, &id).await.as_deref(),
        Some(a.id.as_str())
    );

    a.server.kill9();
    // The same connection to B, never reconnected.
    let changed = client.until(|e| e["subtype"] == "owner_changed").await;
    assert_eq!(changed["data"]["node"], b.id.as_str(), "{changed}");
    let said = changed["message"].as_str().unwrap_or_default();
    assert!(
        said.starts_with(&format!("Node node-b ({}) now drives this session", b.id)),
        "the adopter is named as operators know it: {said}"
    );
    assert!(changed["seq"].as_u64().expect("a seq") > last_seen);
    let closed = client.result_of(1).await;
    assert_eq!(closed["stop_reason"], "error", "{closed}");

    let input = b.server.input(&id, "next").await;
    assert_eq!(client.result_of(input).await["text"], "The next answer.");
    let seqs = client.seqs();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    let log = stored_log(&database, &id).await;
    assert_log_consistent(&log);
    assert_stored(&client.events, &log);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_cut_off_from_nats_releases_its_sessions_and_another_node_adopts_them() {
    let _one = serial().await;
    let script = format!("{SLOW}{}", answers("next", "The next answer.", 1));
    let Some((fx, database, nats)) = cluster(&script).await else {
        return;
    };
    let (proxy, behind_proxy) = nats_proxy(&nats).await;
    let url = database.url();
    let a = start_node_on(&fx, "node-a", &url, &behind_proxy).await;
    let b = start_node(&fx, "node-b", &url).await;
    let id = a.server.create_session().await;
    let mut client = b.server.sse(&id, None).await;
    assert_eq!(b.server.input(&id, "slow").await, 1);
    let last_seen = until_streaming(&mut client).await;

    proxy.cut();
    // A stops driving it once cut off for TTL/2; B adopts it once A's
    // lease has expired, and its client (on B all along) sees that.
    let changed = client.until(|e| e["subtype"] == "owner_changed").await;
    assert_eq!(changed["data"]["node"], b.id.as_str(), "{changed}");
    assert!(changed["seq"].as_u64().expect("a seq") > last_seen);
    assert_eq!(client.result_of(1).await["stop_reason"], "error");
    assert!(
        a.server
            .stderr()
            .contains("connection to NATS has been lost"),
        "{}",
        a.server.stderr()
    );
    let input = b.server.input(&id, "next").await;
    assert_eq!(client.result_of(input).await["text"], "The next answer.");
    // The operators' figures say what happened: A fenced itself, B adopted.
    let figures = |server: &crate::support::server::Server| {
        let request = server.get("/metrics");
        async move {
            request
                .send()
                .await
                .expect("metrics")
                .text()
                .await
                .expect("text")
        }
    };
    let on_b = figures(&b.server).await;
    for line in [
        "agentbus_cluster_adoptions_total 1",
        "agentbus_cluster_lease_held 1",
    ] {
        assert!(
            on_b.lines().any(|l| l == line),
            "no `{line}` on node B:\n{on_b}"
        );
    }
    assert!(
        on_b.contains(r#"agentbus_cluster_lease_renewals_total{outcome="renewed"}"#),
        "{on_b}"
    );
    let on_a = figures(&a.server).await;
    assert!(
        on_a.lines().any(|l| l == "agentbus_cluster_fences_total 1"),
        "no fence counted on node A:\n{on_a}"
    );
    let log = stored_log(&database, &id).await;
    assert_log_consistent(&log);
    assert_stored(&client.events, &log);

    // Connected again, A rejoins as a new node.
    proxy.restore();
    eventually("node-a rejoins under a new id", || async {
        let ids = live_nodes_named(&database, "node-a").await;
        ids.iter().any(|n| *n != a.id).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_nats_server_does_not_answer_says_so_without_its_credentials() {
    let _one = serial().await;
    let Some((fx, database, _nats)) = cluster("").await else {
        return;
    };
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let output = fx
        .command(&["serve", "--listen", "127.0.0.1:0"])
        .env("AB_NODE_NAME", "node-a")
        .env("AB_PG_URL", database.url())
        .env(
            "AB_NATS_URL",
            format!("nats://agent:s3cret@127.0.0.1:{closed}"),
        )
        .output()
        .await
        .expect("agentbus runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "cannot connect to NATS at nats://***@127.0.0.1:{closed}"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
}

/// The frames of `socket` up to the first that `pred` accepts (a reply or
/// an event).
async fn ws_until(
    socket: &mut crate::support::server::Socket,
    mut pred: impl FnMut(&Value) -> bool,
) -> Value {
    loop {
        let frame = socket.next().await.expect("the socket stays open");
        if pred(&frame) {
            return frame;
        }
    }
}

/// This node's count of sessions it follows for its clients.
async fn followed_on(node: &Node) -> u64 {
    let health = node.server.get_json("/v1/health").await;
    health["cluster"]["live"]["followed"]
        .as_u64()
        .unwrap_or_else(|| panic!("a node with a live plane says what it follows: {health}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_of_one_node_share_one_follower_and_a_websocket_outlives_the_owner() {
    let _one = serial().await;
    let script = format!(
        "{}{}",
        answers("first", "The first answer.", 1),
        answers("second", "The second answer.", 1)
    );
    let Some((_fx, database, _nats, [a, b])) = cluster_of(&script, ["node-a", "node-b"]).await
    else {
        return;
    };
    let id = a.server.create_session().await;
    // Opened through B, as `acp --attach` loads a session: answered as it
    // is, since B follows it; servers of its own can only start on A.
    let open = format!("/v1/sessions/{id}/open");
    for body in [
        serde_json::json!({}),
        serde_json::json!({"mcp_servers": {}}),
    ] {
        let opened = b
            .server
            .post(&open)
            .json(&body)
            .send()
            .await
            .expect("B answers");
        assert_eq!(opened.status(), 200, "{body}");
        let opened: Value = opened.json().await.expect("a session");
        assert_eq!(opened["id"], id.as_str());
        assert_eq!(opened["loaded"], false, "B loads nothing: {opened}");
    }
    let with_servers = serde_json::json!({"mcp_servers": {"echo": {"command": "true"}}});
    let refused =
        crate::support::server::error_of(b.server.post(&open).json(&with_servers), 409).await;
    assert!(
        refused.contains("node-a") && refused.contains("mcp_servers"),
        "{refused}"
    );
    let mut sse_1 = b.server.sse(&id, None).await;
    let mut sse_2 = b.server.sse(&id, None).await;
    let mut socket = b.server.ws(&id).await;
    assert_eq!(
        followed_on(&b).await,
        1,
        "three clients on B, one follower of the session"
    );
    assert_eq!(followed_on(&a).await, 0, "A drives it, follows nothing");

    socket.send(serde_json::json!({"text": "first"})).await;
    let accepted = ws_until(&mut socket, |f| {
        f.get("accepted").is_some() || f.get("error").is_some()
    })
    .await;
    let first = accepted["accepted"]["input_id"]
        .as_u64()
        .unwrap_or_else(|| panic!("accepted: {accepted}"));
    let result = ws_until(&mut socket, |f| {
        f["type"] == "result" && f["turn_id"] == first
    })
    .await;
    assert_eq!(result["text"], "The first answer.");
    assert_eq!(sse_1.result_of(first).await, result);
    assert_eq!(sse_2.result_of(first).await, result);
    // What the live planes say they did: A published the turn's events,
    // B's one follower handed them on, and B heard A's lifecycle.
    let (on_a, on_b) = (
        a.server.get_json("/v1/health").await,
        b.server.get_json("/v1/health").await,
    );
    let (live_a, live_b) = (&on_a["cluster"]["live"], &on_b["cluster"]["live"]);
    let turn_events = sse_1
        .events
        .iter()
        .filter(|e| e["turn_id"] == first)
        .count() as u64;
    assert!(
        live_a["relays"]["published"].as_u64() >= Some(turn_events),
        "A published at least the {turn_events} events of the turn: {live_a}"
    );
    assert_eq!(live_a["relays"]["dropped"], 0, "{live_a}");
    assert!(
        live_b["followers"]["delivered"].as_u64() >= Some(turn_events),
        "B's follower handed on the turn: {live_b}"
    );
    // A's `idle` may still be on its way when the result is.
    eventually("B merges A's created, busy and idle", || async {
        let health = b.server.get_json("/v1/health").await;
        (health["cluster"]["live"]["lifecycle"]["merged"].as_u64() >= Some(3)).then_some(())
    })
    .await;

    // The owner dies with the session idle: once its lease has expired the
    // session is released, and the same socket's next input is taken by B
    // (no node answers for it any more).
    a.server.kill9();
    eventually("the idle session of the dead node is released", || async {
        owner_of(&database, &id).await.is_none().then_some(())
    })
    .await;
    socket.send(serde_json::json!({"text": "second"})).await;
    let accepted = ws_until(&mut socket, |f| {
        f.get("accepted").is_some() || f.get("error").is_some()
    })
    .await;
    let second = accepted["accepted"]["input_id"]
        .as_u64()
        .unwrap_or_else(|| panic!("the input is taken on B: {accepted}"));
    let result = ws_until(&mut socket, |f| {
        f["type"] == "result" && f["turn_id"] == second
    })
    .await;
    assert_eq!(result["text"], "The second answer.");
    assert_eq!(
        owner_of(&database, &id).await.as_deref(),
        Some(b.id.as_str())
    );
    assert_eq!(sse_1.result_of(second).await, result);
    let log = stored_log(&database, &id).await;
    assert_log_consistent(&log);
    assert_stored(&sse_1.events, &log);

    // The last client gone, nothing is followed.
    drop((sse_1, sse_2, socket));
    eventually("the follower stops with its last client", || async {
        (followed_on(&b).await == 0).then_some(())
    })
    .await;
}

/// One JSON-RPC exchange of an editor with `agentbus acp`: the answer to
/// request `id`, and the agent's text chunks before it.
async fn acp_call(
    stdin: &mut tokio::process::ChildStdin,
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    id: u64,
    method: &str,
    params: Value,
) -> (Value, String) {
    use tokio::io::AsyncWriteExt;
    let request =
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    stdin
        .write_all(format!("{request}\n").as_bytes())
        .await
        .expect("the agent reads");
    let mut said = String::new();
    loop {
        let line = tokio::time::timeout(crate::support::GUARD, lines.next_line())
            .await
            .unwrap_or_else(|_| panic!("no answer to {method} in time"))
            .expect("the agent's stdout")
            .unwrap_or_else(|| panic!("the agent ended before answering {method}"));
        let message: Value = serde_json::from_str(&line).expect("JSON-RPC on stdout");
        let update = &message["params"]["update"];
        if update["sessionUpdate"] == "agent_message_chunk" {
            said.push_str(update["content"]["text"].as_str().unwrap_or_default());
        }
        if message["id"] == id && message.get("method").is_none() {
            return (message, said);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_editor_attached_to_another_node_loads_the_session_and_its_prompt_runs_on_the_owner() {
    use tokio::io::AsyncBufReadExt;
    let _one = serial().await;
    let script = format!(
        "{}{}",
        answers("first", "The first answer.", 1),
        answers("editor", "Answered for the editor.", 1)
    );
    let Some((fx, database, nats, [a, b])) = cluster_of(&script, ["node-a", "node-b"]).await else {
        return;
    };
    let url = database.url();
    let id = a.server.create_session().await;
    let mut on_a = a.server.sse(&id, None).await;
    let first = a.server.input(&id, "first").await;
    on_a.result_of(first).await;

    // `agentbus acp --attach` to B, as an editor configured with node B
    // (the fixture's configuration names its cluster through variables).
    let mut agent = fx
        .command(&["acp", "--attach", &b.server.url])
        .env("AB_PG_URL", &url)
        .env("AB_NODE_NAME", "editor")
        .env("AB_NATS_URL", nats.url())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("agentbus acp starts");
    let mut stdin = agent.stdin.take().expect("stdin");
    let mut lines = tokio::io::BufReader::new(agent.stdout.take().expect("stdout")).lines();
    let (init, _) = acp_call(
        &mut stdin,
        &mut lines,
        1,
        "initialize",
        serde_json::json!({"protocolVersion": 1, "clientCapabilities": {}}),
    )
    .await;
    assert!(init.get("result").is_some(), "{init}");
    let cwd = fx.workspace().display().to_string();
    let (loaded, replayed) = acp_call(
        &mut stdin,
        &mut lines,
        2,
        "session/load",
        serde_json::json!({"sessionId": id, "cwd": cwd, "mcpServers": []}),
    )
    .await;
    assert!(loaded.get("result").is_some(), "{loaded}");
    assert!(
        replayed.contains("The first answer."),
        "the load replays: {replayed:?}"
    );
    let (answered, said) = acp_call(
        &mut stdin,
        &mut lines,
        3,
        "session/prompt",
        serde_json::json!({"sessionId": id, "prompt": [{"type": "text", "text": "editor please"}]}),
    )
    .await;
    assert_eq!(answered["result"]["stopReason"], "end_turn", "{answered}");
    assert_eq!(said, "Answered for the editor.");
    // Run by A, which still drives it; A's client saw the editor's turn.
    assert_eq!(
        owner_of(&database, &id).await.as_deref(),
        Some(a.id.as_str())
    );
    let turn = on_a
        .until(|e| e["type"] == "result" && e["text"] == "Answered for the editor.")
        .await;
    assert_eq!(turn["stop_reason"], "end_turn");
    drop(stdin);
    let _ = agent.wait().await;
}
