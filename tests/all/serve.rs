//! `agentbus serve` end to end: the real binary on a free port, the
//! scripted model behind it, and real HTTP, SSE and WebSocket clients —
//! plus the terminal front ends attached over the API.

use crate::support::server::{EventStream, error_of};
use crate::support::{Fixture, GUARD, assert_gap_free, processes_with_env, test_mcp_server};
use agentbus_testkit::Script;
use serde_json::{Value, json};

const SCRIPT: &str = r#"
[[response]]
match = "stall"
text = "This reply starts, then stalls until it is interrupted."
chunk_size = 2
stall_after_chunks = 10

[[response]]
match = "stall"
text = "This reply starts, then stalls until it is interrupted."
chunk_size = 2
stall_after_chunks = 10

[[response]]
match = "alpha"
tool_calls = [ { id = "a1", name = "bash", arguments = { command = "echo tool-ran" } } ]

[[response]]
match = "alpha"
text = "Answer to alpha."

[[response]]
match = "beta"
text = "Answer to beta, after {last_tool_result}"

[[response]]
thinking = "A greeting: greet back."
text = "Hello from the scripted model."
chunk_size = 4

[[response]]
text = "Hello again."
chunk_size = 4
"#;

async fn fixture() -> Fixture {
    Fixture::with_script(Script::from_toml_str(SCRIPT).expect("script")).await
}

fn persisted(events: &[Value]) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["type"] != "stream_event")
        .cloned()
        .collect()
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// The roles of a `GET .../messages` answer's history, in order.
fn roles(messages: &Value) -> Vec<String> {
    let history = messages["history"].as_array().cloned().unwrap_or_default();
    history
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?").to_string())
        .collect()
}

#[tokio::test]
async fn a_query_streams_over_sse_to_its_result_and_the_conversation_reads_back() {
    let f = fixture().await;
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let input = server.input(&id, "hello").await;
    let result = sse.result_of(input).await;

    assert_eq!(result["stop_reason"], "end_turn");
    assert_eq!(result["text"], "Hello from the scripted model.");
    assert_gap_free(&sse.events);
    assert!(sse.events.iter().all(|e| e["session_id"] == id.as_str()));
    assert_eq!(sse.events[0]["subtype"], "session_started");
    let kinds = types(&sse.events);
    assert_eq!(kinds[1], "user");
    assert_eq!(kinds[kinds.len() - 2..], ["assistant", "result"]);
    let deltas: String = sse
        .events
        .iter()
        .filter(|e| e["event"]["type"] == "text_delta")
        .map(|e| e["event"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        deltas, "Hello from the scripted model.",
        "the reply streamed"
    );
    let thought: String = sse
        .events
        .iter()
        .filter(|e| e["event"]["type"] == "thinking_delta")
        .map(|e| e["event"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(thought, "A greeting: greet back.", "the thinking streamed");

    let messages: Value = server
        .get_json(&format!("/v1/sessions/{id}/messages"))
        .await;
    assert_eq!(roles(&messages), ["user", "assistant"], "{messages}");
    assert_eq!(
        messages["events"].as_array().unwrap(),
        &persisted(&sse.events),
        "the stored events are what the stream showed, without the deltas"
    );

    let session: Value = server
        .get_json(&format!("/v1/sessions/{}", &id[..13]))
        .await;
    assert_eq!(
        session["id"],
        id.as_str(),
        "a unique prefix finds the session"
    );
    assert_eq!(session["title"], "hello");
    assert_eq!(session["last_seq"], result["seq"]);
    assert_eq!(session["busy"], false);
}

#[tokio::test]
async fn reconnecting_with_last_event_id_mid_reply_misses_nothing_and_repeats_nothing() {
    let f = fixture().await;
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut reference = server.sse(&id, None).await;
    let mut first = server.sse(&id, None).await;
    let input = server.input(&id, "stall here").await;

    // The first client reads part of the reply, then goes away.
    let mut deltas = 0;
    first
        .until(|e| {
            deltas += (e["event"]["type"] == "text_delta") as usize;
            deltas == 2
        })
        .await;
    let last_seen = *first.seqs().last().unwrap();
    first.disconnect();
    // The reply is still streaming (it stalls until interrupted).
    let mut second = server.sse(&id, Some(last_seen)).await;
    let resumed = second.next().await.unwrap();
    assert_eq!(
        resumed["seq"],
        last_seen + 1,
        "resumes right after the last seen event"
    );
    let interrupt = server
        .post(&format!("/v1/sessions/{id}/interrupt"))
        .send()
        .await
        .unwrap();
    assert_eq!(interrupt.status(), 202);
    let result = second.result_of(input).await;
    assert_eq!(result["stop_reason"], "cancelled");

    reference.result_of(input).await;
    let mut stitched = first.events.clone();
    stitched.extend(second.events.clone());
    assert_eq!(stitched, reference.events, "no gap, no duplicate");
    assert_gap_free(&stitched);
}

#[tokio::test]
async fn after_a_restart_a_client_resumes_from_the_store() {
    let f = fixture().await;
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let input = server.input(&id, "hello").await;
    sse.result_of(input).await;
    server.terminate();
    let (status, stderr) = server.wait().await;
    assert!(status.success(), "{stderr}");

    let server = f.serve().await;
    // Reading the conversation does not load the session.
    let messages: Value = server
        .get_json(&format!("/v1/sessions/{id}/messages"))
        .await;
    assert_eq!(roles(&messages), ["user", "assistant"], "{messages}");
    assert_eq!(
        messages["events"].as_array().unwrap().len(),
        persisted(&sse.events).len()
    );
    let record: Value = server.get_json(&format!("/v1/sessions/{id}")).await;
    assert_eq!(record["loaded"], false, "{record}");

    let mut resumed = server.sse(&id, None).await;
    let stored = persisted(&sse.events);
    let last = stored.last().unwrap()["seq"].as_u64();
    resumed.until(|e| e["seq"].as_u64() == last).await;
    assert_eq!(resumed.events, stored, "the stored events (no deltas)");
    // The load announces itself with the session's next input.
    let second = server.input(&id, "hello").await;
    let started = resumed
        .until(|e| e["subtype"] == "session_started" && e["data"]["resumed"] == true)
        .await;
    assert!(started["seq"].as_u64() > last);
    resumed.result_of(second).await;

    // `?after=` works like Last-Event-ID.
    let after = sse.events[1]["seq"].as_u64().unwrap();
    let mut partial =
        EventStream::open(server.get(&format!("/v1/sessions/{id}/events?after={after}"))).await;
    let first = partial.next().await.unwrap();
    assert!(first["seq"].as_u64().unwrap() > after);
    assert_eq!(first, persisted(&sse.events)[2]);
}

/// Following a stored session's events after a restart (what the web page
/// does when a session is selected) changes nothing: no event is added to
/// its log, its `updated_at` and its place in the list stay; its first
/// input then announces the load (`session_started`, resumed) before the
/// turn.
#[tokio::test]
async fn following_a_stored_session_after_a_restart_does_not_change_it() {
    let f = fixture().await;
    let server = f.serve().await;
    let older = server.create_session().await;
    let mut sse = server.sse(&older, None).await;
    let input = server.input(&older, "hello").await;
    sse.result_of(input).await;
    let newer = server.create_session().await;
    let mut other = server.sse(&newer, None).await;
    let input = server.input(&newer, "hello").await;
    other.result_of(input).await;
    server.terminate();
    let (status, stderr) = server.wait().await;
    assert!(status.success(), "{stderr}");

    let list = |sessions: &Value| -> Vec<(String, String)> {
        sessions["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["id"].as_str().unwrap().to_string(),
                    s["updated_at"].to_string(),
                )
            })
            .collect()
    };
    let server = f.serve().await;
    let before = list(&server.get_json("/v1/sessions").await);
    assert_eq!(before[0].0, newer, "{before:?}");
    let stored = persisted(&sse.events);
    let last = stored.last().unwrap()["seq"].as_u64();
    let mut viewed = server.sse(&older, None).await;
    viewed.until(|e| e["seq"].as_u64() == last).await;
    assert_eq!(viewed.events, stored, "the stored events, nothing more");
    let record: Value = server.get_json(&format!("/v1/sessions/{older}")).await;
    assert_eq!(record["loaded"], true, "{record}");
    // Whatever the load did is stored by the time the server has stopped.
    drop(viewed);
    server.terminate();
    let (status, stderr) = server.wait().await;
    assert!(status.success(), "{stderr}");

    let server = f.serve().await;
    let messages: Value = server
        .get_json(&format!("/v1/sessions/{older}/messages"))
        .await;
    assert_eq!(
        messages["events"].as_array().unwrap().len(),
        stored.len(),
        "no event added: {messages}"
    );
    assert_eq!(list(&server.get_json("/v1/sessions").await), before);

    // Used, it says it was loaded again, then runs the turn.
    let mut used = server.sse(&older, Some(last.unwrap())).await;
    let input = server.input(&older, "hello").await;
    used.result_of(input).await;
    let kinds: Vec<String> = persisted(&used.events)
        .iter()
        .map(|e| {
            e["subtype"]
                .as_str()
                .unwrap_or(e["type"].as_str().unwrap())
                .to_string()
        })
        .collect();
    assert_eq!(
        kinds.first().map(String::as_str),
        Some("session_started"),
        "{kinds:?}"
    );
    assert_eq!(used.events[0]["data"]["resumed"], true);
    assert_eq!(list(&server.get_json("/v1/sessions").await)[0].0, older);
}

#[tokio::test]
async fn two_sse_clients_and_a_websocket_see_the_same_events_in_the_same_order() {
    let f = fixture().await;
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut a = server.sse(&id, None).await;
    let mut b = server.sse(&id, None).await;
    let mut ws = server.ws(&id).await;
    ws.send(json!({"type": "query", "text": "hello"})).await;
    let mut ws_events = Vec::new();
    let mut input = None;
    loop {
        let frame = ws.next().await.expect("socket open");
        if let Some(accepted) = frame.get("accepted") {
            input = accepted["input_id"].as_u64();
            continue;
        }
        ws_events.push(frame.clone());
        if frame["type"] == "result" {
            break;
        }
    }
    let input = input.expect("the WebSocket input was accepted");
    a.result_of(input).await;
    b.result_of(input).await;
    assert_eq!(a.events, b.events);
    assert_eq!(a.events, ws_events);
    assert_gap_free(&ws_events);

    // A frame that is not an input is answered with an error; the socket
    // stays usable.
    ws.send_raw("{not json").await;
    let error = ws.next().await.unwrap();
    assert!(
        error["error"].as_str().unwrap().contains("not an input"),
        "{error}"
    );
    ws.send(json!({"type": "control", "command": "usage"}))
        .await;
    let accepted = ws.next().await.unwrap();
    let usage_id = accepted["accepted"]["input_id"].as_u64().unwrap();
    let reply = ws.next().await.unwrap();
    assert_eq!(reply["turn_id"], usage_id);
    assert_eq!(reply["subtype"], "usage");
    // The body of `POST .../input` is an input here too, slash commands
    // included.
    for frame in [json!({"command": "usage"}), json!({"text": "/usage"})] {
        ws.send(frame.clone()).await;
        let accepted = ws.next().await.unwrap();
        let id = accepted["accepted"]["input_id"].as_u64();
        assert!(id.is_some(), "{frame} -> {accepted}");
        let reply = ws.next().await.unwrap();
        assert_eq!(reply["turn_id"].as_u64(), id);
        assert_eq!(reply["subtype"], "usage");
    }
    ws.send(json!({"text": 42})).await;
    let error = ws.next().await.unwrap();
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("`text` must be a string"),
        "{error}"
    );
}

#[tokio::test]
async fn inputs_from_two_clients_are_answered_in_queue_order() {
    let f = fixture().await;
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let mut ws = server.ws(&id).await;
    // Alpha runs a tool; beta, sent by another client meanwhile, waits.
    let alpha = server.input(&id, "alpha").await;
    ws.send(json!({"type": "query", "text": "beta"})).await;
    let beta = loop {
        let frame = ws.next().await.unwrap();
        if let Some(id) = frame["accepted"]["input_id"].as_u64() {
            break id;
        }
    };
    assert!(beta > alpha);
    let first = sse.until(|e| e["type"] == "result").await;
    let second = sse.until(|e| e["type"] == "result").await;
    assert_eq!(first["turn_id"], alpha);
    assert_eq!(first["text"], "Answer to alpha.");
    assert_eq!(second["turn_id"], beta);
    // Beta's turn started after alpha's ended: its user event comes after
    // alpha's result, and the model saw alpha's whole exchange.
    let user_beta = sse
        .events
        .iter()
        .position(|e| e["type"] == "user" && e["turn_id"] == beta)
        .unwrap();
    let result_alpha = sse
        .events
        .iter()
        .position(|e| e["type"] == "result" && e["turn_id"] == alpha)
        .unwrap();
    assert!(user_beta > result_alpha);
    let requests = f.request_messages();
    let beta_request = requests.last().unwrap();
    let texts: Vec<String> = beta_request.iter().map(|m| m.to_string()).collect();
    assert!(
        texts.iter().any(|t| t.contains("Answer to alpha.")),
        "{texts:#?}"
    );
    assert!(
        second["text"]
            .as_str()
            .unwrap()
            .starts_with("Answer to beta")
    );
}

/// An image near the 5 MB cap is far over the 1 MiB other bodies may
/// have: an input takes it (what the web page sends for a screenshot),
/// and the model receives it.
#[tokio::test]
async fn an_input_carries_an_image_larger_than_other_bodies_may_be() {
    let script = "[[response]]\nmatch = \"[image: image/png]\"\ntext = \"I see a PNG.\"\n";
    let f = Fixture::with_script(Script::from_toml_str(script).expect("script")).await;
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0".to_vec();
    png.resize(4 * 1024 * 1024, 0);
    let image = agentbus_engine::images::from_bytes("big.png", &png).expect("a PNG");
    let response = server
        .post(&format!("/v1/sessions/{id}/input"))
        .json(&json!({"text": "what is this?", "images": [{"media_type": "image/png", "data": image.data}]}))
        .send()
        .await
        .expect("POST input");
    assert_eq!(response.status(), 202);
    let accepted: Value = response.json().await.expect("JSON");
    let result = sse
        .result_of(accepted["input_id"].as_u64().expect("an input id"))
        .await;
    assert_eq!(result["text"], "I see a PNG.");
    f.assert_requests_valid();
}

#[tokio::test]
async fn bad_requests_get_clear_errors_and_the_server_lives_on() {
    let f = fixture().await;
    let server = f.serve().await;
    let url = &server.url;
    let http = &server.http;
    let id = server.create_session().await;

    let missing = error_of(http.get(format!("{url}/v1/sessions")), 401).await;
    assert!(missing.contains("Authorization: Bearer"), "{missing}");
    let wrong = http
        .get(format!("{url}/v1/sessions"))
        .bearer_auth("not-the-token");
    error_of(wrong, 401).await;
    let in_query = error_of(
        http.get(format!("{url}/v1/sessions?token={}", server.token)),
        401,
    )
    .await;
    assert!(
        in_query.contains("Authorization: Bearer") && !in_query.contains(&server.token),
        "?token= is refused, saying how to send it: {in_query}"
    );

    let input_path = format!("/v1/sessions/{id}/input");
    let bad_json = server
        .post(&input_path)
        .header("content-type", "application/json")
        .body("{\"text\": ");
    let error = error_of(bad_json, 400).await;
    assert!(error.contains("JSON"), "{error}");
    let bad_shape = server.post(&input_path).json(&json!({"txt": "hello"}));
    let error = error_of(bad_shape, 400).await;
    assert!(error.contains("{\"text\": \"...\"}"), "{error}");
    let bad_command = server.post(&input_path).json(&json!({"command": "reboot"}));
    let error = error_of(bad_command, 400).await;
    assert!(error.contains("switch_model"), "{error}");
    // A client of its own: the server answers before reading the whole
    // body and closes that connection, which a shared pool could reuse.
    // Bodies are at most 1 MiB, an input's 32 MiB (its images are base64).
    let too_big = |path: &str, body: Value| {
        reqwest::Client::new()
            .post(format!("{url}{path}"))
            .bearer_auth(&server.token)
            .json(&body)
            .send()
    };
    let big_title = json!({"title": "x".repeat(2 * 1024 * 1024)});
    assert_eq!(
        too_big("/v1/sessions", big_title).await.unwrap().status(),
        413
    );
    let big_input = json!({"text": "x".repeat(33 * 1024 * 1024)});
    assert_eq!(too_big(&input_path, big_input).await.unwrap().status(), 413);
    let bad_model = server
        .post("/v1/sessions")
        .json(&json!({"model": "no-such-profile"}));
    let error = error_of(bad_model, 400).await;
    assert!(error.contains("no-such-profile"), "{error}");
    let bad_resume = server
        .get(&format!("/v1/sessions/{id}/events"))
        .header("Last-Event-ID", "yesterday");
    let error = error_of(bad_resume, 400).await;
    assert!(error.contains("Last-Event-ID"), "{error}");
    for path in [
        format!("/v1/sessions/{id}/events?after=yesterday"),
        format!("/v1/sessions/{id}/ws?after=-1"),
        "/v1/sessions?limit=many".to_string(),
    ] {
        let error = error_of(server.get(&path), 400).await;
        assert!(error.contains("invalid query string"), "{path}: {error}");
    }

    let unknown = "0000dead-beef";
    for request in [
        server.get(&format!("/v1/sessions/{unknown}")),
        server.get(&format!("/v1/sessions/{unknown}/events")),
        server.get(&format!("/v1/sessions/{unknown}/messages")),
        server
            .post(&format!("/v1/sessions/{unknown}/input"))
            .json(&json!({"text": "hi"})),
        server.post(&format!("/v1/sessions/{unknown}/interrupt")),
        server.get("/v1/no-such-route"),
    ] {
        error_of(request, 404).await;
    }
    // Outside /v1 an unknown path is a 404 with or without the token;
    // under /v1 it needs the token first.
    let outside = server.http.get(format!("{}/no-such-page", server.url));
    error_of(outside, 404).await;
    let inside = server.http.get(format!("{}/v1/no-such-route", server.url));
    error_of(inside, 401).await;

    // Still serving.
    let health: Value = server.get_json("/v1/health").await;
    assert_eq!(health["status"], "ok");
}

#[tokio::test]
async fn sigterm_ends_every_running_turn_with_a_stored_result_and_stops_mcp_servers() {
    let f = fixture().await;
    let pid_file = f.home.path().join("mcp.pid");
    f.add_config(&format!(
        "[mcp_servers.test]\ncommand = \"{}\"\nenv = {{ TEST_MCP_PID_FILE = \"{}\" }}\n",
        test_mcp_server().display(),
        pid_file.display()
    ));
    let server = f.serve().await;
    let one = server.create_session().await;
    let two = server.create_session().await;
    let mut sse_one = server.sse(&one, None).await;
    let mut sse_two = server.sse(&two, None).await;
    let running_one = server.input(&one, "stall one").await;
    let queued_one = server.input(&one, "hello").await;
    let running_two = server.input(&two, "stall two").await;
    sse_one.until(|e| e["event"]["type"] == "text_delta").await;
    sse_two.until(|e| e["event"]["type"] == "text_delta").await;
    let mut lifecycle = EventStream::open(server.get("/v1/events")).await;

    server.terminate();
    // Attached clients see each turn end before their stream closes.
    let ended_one = sse_one.result_of(running_one).await;
    let ended_queued = sse_one.result_of(queued_one).await;
    let ended_two = sse_two.result_of(running_two).await;
    assert_eq!(ended_one["stop_reason"], "cancelled");
    assert_eq!(ended_queued["stop_reason"], "cancelled");
    assert_eq!(ended_two["stop_reason"], "cancelled");
    assert!(sse_one.next().await.is_none(), "the stream ends");
    // The lifecycle stream tells of both sessions closing before it ends.
    while lifecycle.next().await.is_some() {}
    for id in [&one, &two] {
        assert!(
            lifecycle
                .events
                .iter()
                .any(|e| e["session_id"] == id.as_str() && e["kind"] == "closed"),
            "no `closed` for {id}: {:#?}",
            lifecycle.events
        );
    }
    let (status, stderr) = server.wait().await;
    assert_eq!(status.code(), Some(0), "{stderr}");
    let marker = format!("TEST_MCP_PID_FILE={}", pid_file.display());
    assert_eq!(
        processes_with_env(&marker),
        Vec::<u32>::new(),
        "MCP server reaped"
    );

    // The store has a result for every input.
    for (id, inputs) in [
        (&one, vec![running_one, queued_one]),
        (&two, vec![running_two]),
    ] {
        let shown = f.run(&["sessions", "show", id, "--json"]).await;
        assert_eq!(shown.code(), Some(0), "{}", shown.stderr);
        let events = shown.events();
        for input in inputs {
            let result = events
                .iter()
                .find(|e| e["type"] == "result" && e["turn_id"] == input)
                .unwrap_or_else(|| panic!("no stored result for input {input}: {events:#?}"));
            assert_eq!(result["stop_reason"], "cancelled");
        }
    }
}

#[tokio::test]
async fn the_openapi_document_is_valid_openapi_3_1_and_lists_every_route() {
    let f = fixture().await;
    let server = f.serve().await;
    let document: Value = server.get_json("/v1/openapi.json").await;
    assert_eq!(document["openapi"], "3.1.0");

    let schema_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/openapi/oas-3.1-schema.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(schema_path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the OpenAPI 3.1 schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(&document)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(errors.is_empty(), "invalid OpenAPI: {errors:#?}");

    let mut routes: Vec<String> = Vec::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            routes.push(format!("{} {path}", method.to_uppercase()));
        }
    }
    routes.sort();
    let mut expected = vec![
        "GET /v1/sessions",
        "POST /v1/sessions",
        "GET /v1/sessions/{id}",
        "DELETE /v1/sessions/{id}",
        "PATCH /v1/sessions/{id}",
        "POST /v1/sessions/{id}/open",
        "POST /v1/sessions/{id}/fork",
        "GET /v1/sessions/{id}/rewind",
        "POST /v1/sessions/{id}/rewind",
        "POST /v1/sessions/{id}/undo",
        "GET /v1/sessions/{id}/export",
        "POST /v1/sessions/{id}/input",
        "POST /v1/sessions/{id}/interrupt",
        "POST /v1/sessions/{id}/approvals/{request_id}",
        "GET /v1/sessions/{id}/messages",
        "GET /v1/sessions/{id}/history",
        "GET /v1/sessions/{id}/events",
        "GET /v1/sessions/{id}/ws",
        "GET /v1/events",
        "GET /v1/health",
        "GET /v1/models",
        "GET /v1/agents",
        "GET /v1/tools",
        "GET /v1/openapi.json",
    ];
    expected.sort();
    assert_eq!(routes, expected);

    // Every route listed answers (not 404/405) — the document and the
    // router agree.
    let id = server.create_session().await;
    for route in &routes {
        let (method, path) = route.split_once(' ').unwrap();
        if path.ends_with("/ws") || path.ends_with("events") || method == "DELETE" {
            continue; // streams and deletion are exercised elsewhere
        }
        // (No approval request waits: that route answers 400 to this body.)
        let path = path.replace("{id}", &id).replace("{request_id}", "r");
        let request = server
            .http
            .request(method.parse().unwrap(), format!("{}{path}", server.url))
            .bearer_auth(&server.token);
        let request = if method == "POST" {
            request.json(&json!({"text": "hello"}))
        } else {
            request
        };
        let response = request.send().await.unwrap();
        assert!(
            response.status() != 404 && response.status() != 405,
            "{route}: {}",
            response.status()
        );
    }

    // Every route documents the 401 it answers without the token.
    for route in &routes {
        let (method, path) = route.split_once(' ').unwrap();
        let documented = &document["paths"][path][method.to_lowercase()]["responses"];
        assert!(documented.get("401").is_some(), "{route} lists no 401");
        let path = path.replace("{id}", &id);
        let request = server
            .http
            .request(method.parse().unwrap(), format!("{}{path}", server.url));
        error_of(request, 401).await;
    }

    // Every $ref points at a schema the document defines.
    let text = document.to_string();
    for reference in text.split("\"$ref\":\"").skip(1) {
        let target = reference.split('"').next().unwrap();
        let name = target.trim_start_matches("#/components/schemas/");
        assert!(
            document["components"]["schemas"].get(name).is_some(),
            "dangling $ref {target}"
        );
    }
}

#[tokio::test]
async fn sessions_are_created_forked_exported_and_deleted_over_the_api() {
    let f = fixture().await;
    let server = f.serve().await;
    let mut lifecycle = EventStream::open(server.get("/v1/events")).await;
    let id = server
        .create_session_with(json!({"title": "my session"}))
        .await;
    let mut sse = server.sse(&id, None).await;
    let input = server.input(&id, "hello").await;
    sse.result_of(input).await;

    let created = lifecycle.until(|e| e["kind"] == "created").await;
    assert_eq!(created["session_id"], id.as_str());
    lifecycle.until(|e| e["kind"] == "busy").await;
    lifecycle.until(|e| e["kind"] == "idle").await;

    let fork = server
        .post(&format!("/v1/sessions/{id}/fork"))
        .json(&json!({"at_seq": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(fork.status(), 201);
    let fork_id = fork.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let forked: Value = server.get_json(&format!("/v1/sessions/{fork_id}")).await;
    assert_eq!(forked["parent"], json!([id, 2]));
    lifecycle
        .until(|e| e["kind"] == "created" && e["session_id"] == fork_id.as_str())
        .await;

    let export: Value = server.get_json(&format!("/v1/sessions/{id}/export")).await;
    let exported_types: Vec<&str> = export["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(exported_types, ["system", "user", "assistant", "result"]);

    let newest: Value = server.get_json("/v1/sessions?limit=1").await;
    assert_eq!(newest["sessions"].as_array().unwrap().len(), 1);
    // Page by page, with the `next` cursor: the same sessions as the whole
    // list, in the same order; the last page has no `next`.
    let list: Value = server.get_json("/v1/sessions").await;
    let mut paged = Vec::new();
    let mut path = "/v1/sessions?limit=1".to_string();
    loop {
        let page: Value = server.get_json(&path).await;
        paged.extend(page["sessions"].as_array().unwrap().iter().cloned());
        let Some(next) = page["next"].as_str() else {
            break;
        };
        path = format!("/v1/sessions?limit=1&after={next}");
    }
    let page_ids: Vec<&Value> = paged.iter().map(|s| &s["id"]).collect();
    let list_ids: Vec<&Value> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["id"])
        .collect();
    assert_eq!(page_ids, list_ids);
    assert!(list["next"].is_null(), "no limit, no next: {list}");
    let error = error_of(server.get("/v1/sessions?after=yesterday"), 400).await;
    assert!(error.contains("invalid `after`"), "{error}");
    let ids: Vec<&str> = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&id.as_str()) && ids.contains(&fork_id.as_str()));
    assert_eq!(
        list["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id.as_str())
            .unwrap()["title"],
        "my session"
    );

    drop(sse);
    // A client watching the session being deleted sees its stream end.
    let mut watcher = server.sse(&fork_id, None).await;
    watcher.until(|e| e["subtype"] == "session_started").await;
    let deleted = server
        .http
        .delete(format!("{}/v1/sessions/{fork_id}", server.url))
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    // (`next` fails the test if the stream stays open with nothing to say.)
    while watcher.next().await.is_some() {}
    error_of(server.get(&format!("/v1/sessions/{fork_id}")), 404).await;
    lifecycle
        .until(|e| e["kind"] == "deleted" && e["session_id"] == fork_id.as_str())
        .await;
}

/// A browser's EventSource resends the last lifecycle id it saw after the
/// daemon restarts; the new run's events must still reach it. Sessions made
/// by slash commands are announced like those made over the API.
#[tokio::test]
async fn lifecycle_ids_go_on_rising_across_restarts_and_slash_commands_announce_sessions() {
    let f = fixture().await;
    let first = f.serve().await;
    let mut lifecycle = EventStream::open(first.get("/v1/events")).await;
    let id = first.create_session().await;
    first.input(&id, "hello").await;
    // created, busy, idle: with ids restarting at 1 the next run's first
    // three events would be skipped.
    let idle = lifecycle.until(|e| e["kind"] == "idle").await;
    let last_id = idle["seq"].as_u64().expect("a seq");
    first.terminate();
    let (status, log) = first.wait().await;
    assert!(status.success(), "{log}");

    let second = f.serve().await;
    let mut resumed = EventStream::open(
        second
            .get("/v1/events")
            .header("Last-Event-ID", last_id.to_string()),
    )
    .await;
    let mut sse = second.sse(&id, None).await;
    let input = second.input(&id, "/new").await;
    let reply = sse
        .until(|e| e["type"] == "system" && e["turn_id"] == input)
        .await;
    assert_eq!(reply["subtype"], "new_conversation", "{reply}");
    let announced = resumed
        .until(|e| e["kind"] == "created" && e["session_id"] != id.as_str())
        .await;
    assert!(announced["seq"].as_u64().expect("a seq") > last_id);
}

/// What a `chat --attach` (piped, `--json`) and a plain SSE client both saw.
#[tokio::test]
async fn chat_attached_and_an_sse_client_see_one_stream_and_an_interrupt_stops_both() {
    let f = fixture().await;
    let server = f.serve().await;
    let mut chat = f.spawn_with_stdin(&["chat", "--attach", &server.url, "--json"]);
    let started = chat
        .wait_for_event(|e| e["subtype"] == "session_started")
        .await;
    let id = started["session_id"].as_str().unwrap().to_string();
    let mut watcher = server.sse(&id, None).await;
    chat.send("stall please\n").await;
    chat.wait_for_event(|e| e["event"]["type"] == "text_delta")
        .await;
    watcher.until(|e| e["event"]["type"] == "text_delta").await;

    chat.interrupt(); // Ctrl-C in the chat interrupts the running turn
    let chat_result = chat.wait_for_event(|e| e["type"] == "result").await;
    let watcher_result = watcher.until(|e| e["type"] == "result").await;
    assert_eq!(chat_result["stop_reason"], "cancelled");
    assert_eq!(watcher_result, chat_result);

    chat.send("hello\n").await;
    let second = chat.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(second["text"], "Hello from the scripted model.");
    watcher
        .until(|e| e["type"] == "result" && e["turn_id"] == second["turn_id"])
        .await;
    let done = chat.finish().await;
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    assert_eq!(
        done.events(),
        watcher.events,
        "the same events in the same order"
    );
}

#[tokio::test]
async fn run_attached_answers_and_continues_a_server_session() {
    let f = fixture().await;
    let server = f.serve().await;
    let first = f.run(&["run", "--attach", &server.url, "hello"]).await;
    assert_eq!(first.code(), Some(0), "{}", first.stderr);
    assert_eq!(first.stdout_text(), "Hello from the scripted model.");

    let again = f
        .run(&[
            "run",
            "--attach",
            &server.url,
            "--continue",
            "--json",
            "once more",
        ])
        .await;
    assert_eq!(again.code(), Some(0), "{}", again.stderr);
    let events = again.events();
    let result = events.iter().find(|e| e["type"] == "result").unwrap();
    assert_eq!(result["text"], "Hello again.");
    assert!(
        events
            .iter()
            .all(|e| e["turn_id"].is_null() || e["turn_id"] == result["turn_id"]),
        "only this run's events: {events:#?}"
    );
    let sessions: Value = server.get_json("/v1/sessions").await;
    assert_eq!(
        sessions["sessions"].as_array().unwrap().len(),
        1,
        "--continue used the same session"
    );

    let refused = f
        .run(&["run", "--attach", &server.url, "--max-steps", "3", "x"])
        .await;
    assert_ne!(refused.code(), Some(0));
    assert!(
        refused
            .stderr
            .contains("--max-steps cannot be used with --attach")
    );
    let wrong_token = f
        .run_with_env(
            &["run", "--attach", &server.url, "x"],
            &[("AGENTBUS_TOKEN", "nope")],
        )
        .await;
    assert_ne!(wrong_token.code(), Some(0));
    assert!(
        wrong_token.stderr.contains("refused the token"),
        "{}",
        wrong_token.stderr
    );
}

/// Listening beyond loopback needs a token set in the configuration; the
/// random one in the data dir is only for loopback.
#[tokio::test]
async fn a_non_loopback_address_needs_a_configured_token() {
    let f = fixture().await;
    let refused = f.run(&["serve", "--listen", "0.0.0.0:0"]).await;
    assert_ne!(refused.code(), Some(0));
    assert!(
        refused.stderr.contains("not loopback") && refused.stderr.contains("[server] token"),
        "{}",
        refused.stderr
    );
    assert!(!f.home.path().join("data").join("token").exists());

    f.add_config("[server]\ntoken = \"${AGENTBUS_TEST_SERVE_TOKEN}\"\n");
    let unset = f.run(&["serve", "--listen", "0.0.0.0:0"]).await;
    assert_ne!(unset.code(), Some(0));
    assert!(
        unset
            .stderr
            .contains("AGENTBUS_TEST_SERVE_TOKEN is not set (needed by `[server] token`)"),
        "{}",
        unset.stderr
    );

    let mut server = f
        .serve_with_env(
            &["--listen", "0.0.0.0:0"],
            &[("AGENTBUS_TEST_SERVE_TOKEN", "configured+secret/4242=")],
        )
        .await;
    let refused = server
        .http
        .get(format!("{}/v1/health", server.url))
        .bearer_auth("anything-else");
    error_of(refused, 401).await;
    server.token = "configured+secret/4242=".into();
    let health: Value = server.get_json("/v1/health").await;
    assert_eq!(health["status"], "ok", "{health}");
    // The printed link, percent-encoded as a browser sends it, sets the
    // page's cookie, which the API takes.
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let link = no_redirects
        .get(format!(
            "{}/?token=configured%2Bsecret%2F4242%3D",
            server.url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(link.status(), 303);
    let cookie = link.headers()["set-cookie"].to_str().unwrap();
    let pair = cookie.split(';').next().unwrap().to_string();
    let by_cookie = no_redirects
        .get(format!("{}/v1/health", server.url))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(by_cookie.status(), 200);
    server.terminate();
    let (status, log) = server.wait().await;
    assert!(status.success(), "{log}");
    assert!(log.contains("API token from [server] token"), "{log}");
    assert!(
        !log.contains("configured+secret/4242="),
        "the token is never logged: {log}"
    );
}

/// A client that stops reading is cut off once it falls further behind than
/// the session's replay ring reaches (1,024 events), instead of holding the
/// session back; it resumes from the last
/// seq it got. The client here never reads, with a small receive buffer, and
/// the reply is made larger than everything that could buffer it on the
/// way (the kernel's largest send buffer, hyper's, the ring's 1,024
/// events), so the cut-off is certain, not a matter of timing.
#[tokio::test]
async fn a_client_that_stops_reading_is_cut_off_and_resumes_from_its_last_seq() {
    let send_buffer_max: usize = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .ok()
        .and_then(|text| text.split_whitespace().last()?.parse().ok())
        .unwrap_or(4 << 20);
    // A one-character delta is at least 150 bytes as an SSE frame.
    let deltas = (send_buffer_max + (2 << 20) + 1024 * 300) / 150;
    let script = format!(
        "[[response]]\ntext = \"{}\"\nchunk_size = 1\n",
        "z".repeat(deltas)
    );
    let f = Fixture::with_script(Script::from_toml_str(&script).expect("script")).await;
    let server = f.serve().await;
    let id = server.create_session().await;

    let address = server.url.trim_start_matches("http://").to_string();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut slow = socket.connect(address.parse().unwrap()).await.unwrap();
    // HTTP/1.0: the body ends when the server closes the connection.
    let request = format!(
        "GET /v1/sessions/{id}/events HTTP/1.0\r\nHost: {address}\r\nAuthorization: Bearer {}\r\n\r\n",
        server.token
    );
    tokio::io::AsyncWriteExt::write_all(&mut slow, request.as_bytes())
        .await
        .unwrap();

    // The watcher reads as fast as it can, but on a busy machine it too may
    // fall 1,024 events behind the flood: it resumes like any client.
    let mut watcher = server.sse(&id, None).await;
    let input = server.input(&id, "flood").await;
    let result = server.result_of_resuming(&mut watcher, &id, input).await;
    let result_seq = result["seq"].as_u64().unwrap();

    // Now read what the slow client was sent: it ends (the server hung up)
    // before the result.
    let mut received = Vec::new();
    let read = tokio::time::timeout(
        GUARD,
        tokio::io::AsyncReadExt::read_to_end(&mut slow, &mut received),
    )
    .await;
    let tail = String::from_utf8_lossy(&received[received.len().saturating_sub(600)..]).to_string();
    read.unwrap_or_else(|_| {
        panic!(
            "the server did not close the slow client's stream in {GUARD:?}: {} bytes read, \
             the result is seq {result_seq}; the last bytes:\n{tail}",
            received.len()
        )
    })
    .unwrap();
    let text = String::from_utf8_lossy(&received);
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    let seqs: Vec<u64> = body
        .split("\n\n")
        .filter_map(|frame| frame.lines().find_map(|l| l.strip_prefix("id: ")))
        .map(|seq| seq.parse().unwrap())
        .collect();
    let last = *seqs.last().expect("some events before the cut-off");
    assert!(
        last < result_seq,
        "cut off before the end: got up to {last}, the result is {result_seq}"
    );
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "gap-free until the cut"
    );

    let mut resumed = server.sse(&id, Some(last)).await;
    server.result_of_resuming(&mut resumed, &id, input).await;
    let rest = resumed.seqs();
    assert!(rest[0] > last, "nothing twice: {} after {last}", rest[0]);
    assert!(rest.windows(2).all(|w| w[1] > w[0]), "in order");
    // Everything the store keeps after the cut arrives (deltas older than
    // the ring are not stored).
    let stored: Vec<u64> = persisted(&watcher.events)
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .filter(|seq| *seq > last)
        .collect();
    assert!(stored.iter().all(|seq| rest.contains(seq)), "{stored:?}");
}

/// Attached, `--model` names one of the server's profiles: this machine's
/// configuration need not know it, and an unknown one is the server's error.
#[tokio::test]
async fn run_attached_takes_the_servers_model_profiles() {
    let f = fixture().await;
    let local_config = std::fs::read_to_string(&f.config).unwrap();
    f.add_config(
        "[models.server-only]\nprovider = \"openai\"\nmodel = \"scripted-server-only\"\n\
         base_url = \"http://127.0.0.1:9/v1\"\n",
    );
    let server = f.serve().await;
    std::fs::write(&f.config, local_config).unwrap();

    let unknown = f
        .run(&["run", "--attach", &server.url, "--model", "nosuch", "x"])
        .await;
    assert_ne!(unknown.code(), Some(0));
    assert!(
        unknown.stderr.contains("nosuch") && unknown.stderr.contains("server-only"),
        "names the profile and the server's profiles: {}",
        unknown.stderr
    );

    let attached = f
        .run(&[
            "run",
            "--attach",
            &server.url,
            "--model",
            "server-only",
            "--json",
            "/model",
        ])
        .await;
    assert_eq!(attached.code(), Some(0), "{}", attached.stderr);
    let reply = attached
        .events()
        .into_iter()
        .find(|e| e["subtype"] == "model")
        .expect("a /model reply");
    assert!(
        reply["message"].as_str().unwrap().contains("server-only"),
        "{reply}"
    );
}

/// The printed link (`/?token=`) is exchanged for an HttpOnly,
/// SameSite=Strict cookie and a redirect to an address without the token;
/// the API takes the header or the cookie (a cookie alone cannot change
/// anything for a cross-site form), refuses `?token=` saying how to send
/// it, and WebSockets and streams open by either. No token, nor the
/// cookie's value, appears in the server's debug log.
#[tokio::test]
async fn the_printed_link_becomes_a_cookie_and_no_url_carries_the_token() {
    let f = fixture().await;
    let server = f.serve().await;
    let url = &server.url;
    let token = server.token.clone();
    let hex: String = token.bytes().map(|b| format!("{b:02x}")).collect();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();

    let link = http
        .get(format!("{url}/?token={token}&theme=dark"))
        .send()
        .await
        .unwrap();
    assert_eq!(link.status(), 303);
    assert_eq!(link.headers()["location"], "/?theme=dark");
    let set = link.headers()["set-cookie"].to_str().unwrap().to_string();
    let parts: Vec<&str> = set.split(';').map(str::trim).collect();
    assert_eq!(parts[0], format!("agentbus_token={hex}"), "{set}");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(parts.contains(&flag), "{flag} missing: {set}");
    }
    assert!(!parts.contains(&"Secure"), "Secure over plain http: {set}");
    let cookie = parts[0].to_string();

    let bare = http
        .get(format!("{url}/?token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.headers()["location"], "/");
    let proxied = http
        .get(format!("{url}/?token={token}"))
        .header("x-forwarded-proto", "https")
        .send()
        .await
        .unwrap();
    let set = proxied.headers()["set-cookie"].to_str().unwrap();
    assert!(set.split(';').any(|p| p.trim() == "Secure"), "{set}");

    let wrong = http
        .get(format!("{url}/?token=not-the-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 303);
    assert_eq!(wrong.headers()["location"], "/?refused=1");
    let cleared = wrong.headers()["set-cookie"].to_str().unwrap();
    assert!(
        cleared.starts_with("agentbus_token=;") && cleared.contains("Max-Age=0"),
        "a wrong token clears the cookie: {cleared}"
    );

    // The API: the cookie, not ?token= (even beside a right header).
    let by_cookie = http
        .get(format!("{url}/v1/sessions"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(by_cookie.status(), 200);
    error_of(
        http.get(format!("{url}/v1/sessions"))
            .header("cookie", "agentbus_token=00"),
        401,
    )
    .await;
    let in_query = error_of(
        http.get(format!("{url}/v1/health?token={token}"))
            .bearer_auth(&token),
        401,
    )
    .await;
    assert!(
        in_query.contains("?token=") && in_query.contains("Authorization: Bearer"),
        "{in_query}"
    );

    // Changing something by the cookie: not from a form.
    let form = error_of(
        http.post(format!("{url}/v1/sessions"))
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("{}"),
        401,
    )
    .await;
    assert!(form.contains("X-Agentbus-Page"), "{form}");
    let as_json = http
        .post(format!("{url}/v1/sessions"))
        .header("cookie", &cookie)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(as_json.status(), 201);
    let id = as_json.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    // Streams and WebSockets by the cookie or the header.
    let events = http
        .get(format!("{url}/v1/sessions/{id}/events"))
        .header("cookie", &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    drop(events);
    let mut by_cookie = server
        .ws_with(&id, "cookie", &cookie)
        .await
        .expect("a WebSocket by the cookie");
    by_cookie
        .send(json!({"type": "control", "command": "usage"}))
        .await;
    assert!(
        by_cookie.next().await.is_some(),
        "the cookie's socket answers"
    );
    let mut by_header = server.ws(&id).await;
    by_header
        .send(json!({"type": "control", "command": "usage"}))
        .await;
    assert!(
        by_header.next().await.is_some(),
        "the header's socket answers"
    );
    assert!(
        server
            .ws_with(&id, "cookie", "agentbus_token=00")
            .await
            .is_err(),
        "a wrong cookie opens no WebSocket"
    );

    server.terminate();
    let (status, log) = server.wait().await;
    assert!(status.success(), "{log}");
    for line in [
        "refused: the token in the address",
        "refused: a wrong token in the cookie",
        "refused: the cookie alone on a form-like request",
        "the page's link: the token is right",
        "the page's link: a wrong token",
    ] {
        assert!(
            log.lines().any(|l| l.contains("DEBUG") && l.contains(line)),
            "the debug log says {line:?}: {log}"
        );
    }
    assert!(!log.contains(&hex), "the cookie's value is logged: {log}");
    assert!(!log.contains(&token), "the token is logged: {log}");
}

/// The page's files need no token; each has its content type, the page a
/// Content-Security-Policy that allows only its own scripts (no inline
/// ones), and the scripts it takes from npm are served with their licences;
/// `/commands.json` lists the built-in slash commands it suggests.
/// `GET /v1/models` gives the prices the page's cost figure uses.
#[tokio::test]
async fn the_web_page_and_its_scripts_are_served_with_their_types_and_a_strict_policy() {
    let f = fixture().await;
    f.add_config(
        "[models.priced]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9\"\n\
         input_per_mtok = 3.0\noutput_per_mtok = 15.0\n",
    );
    let server = f.serve().await;
    let http = reqwest::Client::new();
    let fetch = |path: &str| http.get(format!("{}{path}", server.url)).send();
    let page = fetch("/").await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    for directive in [
        "default-src 'none'",
        "script-src 'self';",
        "img-src 'self' data:",
    ] {
        assert!(csp.contains(directive), "{csp}");
    }
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"),
        "{csp}"
    );
    let page_etag = page.headers()["etag"].to_str().unwrap().to_string();
    let html = page.text().await.unwrap();
    // The files are under /assets/ID/, ID naming this set of files.
    let prefix = html
        .split("href=\"")
        .find_map(|rest| rest.split_once("/style.css"))
        .map(|(prefix, _)| prefix.to_string())
        .unwrap();
    assert!(
        prefix.starts_with("/assets/") && prefix.len() > "/assets/".len(),
        "{html}"
    );
    for (path, content_type, starts) in [
        (
            "/js/main.js",
            "text/javascript; charset=utf-8",
            "// agentbus web page",
        ),
        (
            "/style.css",
            "text/css; charset=utf-8",
            "/* agentbus web page",
        ),
        (
            "/vendor/marked.min.js",
            "text/javascript; charset=utf-8",
            "/**\n * marked v18.2.1",
        ),
        (
            "/vendor/purify.min.js",
            "text/javascript; charset=utf-8",
            "/*! @license DOMPurify 3.4.18",
        ),
        (
            "/vendor/LICENSE-marked",
            "text/plain; charset=utf-8",
            "# License information",
        ),
        (
            "/vendor/LICENSE-dompurify",
            "text/plain; charset=utf-8",
            "\n                                 Apache License",
        ),
        (
            "/vendor/LICENSE-dompurify-MPL",
            "text/plain; charset=utf-8",
            "Mozilla Public License",
        ),
        (
            "/vendor/prism-clike.min.js",
            "text/javascript; charset=utf-8",
            "Prism.languages.clike=",
        ),
        (
            "/vendor/LICENSE-prismjs",
            "text/plain; charset=utf-8",
            "MIT LICENSE",
        ),
    ] {
        let url = format!("{prefix}{path}");
        let answer = fetch(&url).await.unwrap();
        assert_eq!(answer.status(), 200, "{url}");
        assert_eq!(answer.headers()["content-type"], content_type, "{url}");
        assert_eq!(
            answer.headers()["x-content-type-options"],
            "nosniff",
            "{url}"
        );
        // Its URL names its content: kept for a year.
        assert_eq!(
            answer.headers()["cache-control"],
            "public, max-age=31536000, immutable",
            "{url}"
        );
        let etag = answer.headers()["etag"].clone();
        assert!(answer.text().await.unwrap().starts_with(starts), "{url}");
        if path.starts_with("/vendor/") && path.ends_with(".js") {
            assert!(
                html.contains(&format!("<script src=\"{url}\" defer></script>")),
                "{url}"
            );
        }
        // Asked again with its ETag: nothing but a 304.
        let again = http
            .get(format!("{}{url}", server.url))
            .header("if-none-match", etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304, "{url}");
        assert!(again.bytes().await.unwrap().is_empty(), "{url}");
    }
    // The page itself is revalidated, and a 304 when unchanged.
    let again = http
        .get(format!("{}/", server.url))
        .header("if-none-match", &page_etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert_eq!(again.headers()["cache-control"], "no-cache");
    // Compressed for a browser that takes it: brotli, else gzip.
    for (accepts, encoding) in [("gzip, deflate, br", "br"), ("gzip", "gzip")] {
        let url = format!("{}{prefix}/vendor/marked.min.js", server.url);
        let answer = http
            .get(&url)
            .header("accept-encoding", accepts)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.headers()["content-encoding"], encoding, "{accepts}");
        let size = answer.bytes().await.unwrap().len();
        assert!(size < 20_000, "{encoding}: {size} bytes");
    }
    // Files of another set (a page loaded before an upgrade) are today's,
    // revalidated; nothing outside the page's folder is served.
    let old = fetch("/assets/0000000000000000/style.css").await.unwrap();
    assert_eq!(old.status(), 200);
    assert_eq!(old.headers()["cache-control"], "no-cache");
    for path in [
        "/assets/x/../Cargo.toml",
        "/assets/x/%2e%2e/Cargo.toml",
        "/assets/x/vendor/README.md",
        "/assets/x/index.html",
        "/app.js",
    ] {
        assert_eq!(fetch(path).await.unwrap().status(), 404, "{path}");
    }
    // The built-in slash commands the page suggests, in `/help`'s order.
    let answer = fetch("/commands.json").await.unwrap();
    assert_eq!(answer.headers()["content-type"], "application/json");
    assert!(
        answer.text().await.unwrap().starts_with(
            r#"[{"command":"/help","description":"list the commands","name":"help"},"#
        )
    );
    // The page's own script is ES modules: main.js, loaded after the vendor
    // scripts, imports the others; every file of src/web/js is served as it is.
    let entry = format!("<script type=\"module\" src=\"{prefix}/js/main.js\"></script>");
    assert!(
        html.find("/vendor/purify.min.js").unwrap() < html.find(entry.as_str()).expect(&entry),
        "{html}"
    );
    let modules = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/web/js");
    let mut served = 0;
    for file in std::fs::read_dir(&modules).expect("src/web/js") {
        let file = file.unwrap().path();
        let name = file.file_name().unwrap().to_str().unwrap().to_owned();
        let answer = fetch(&format!("{prefix}/js/{name}")).await.unwrap();
        assert_eq!(answer.status(), 200, "{name}");
        assert_eq!(
            answer.headers()["content-type"],
            "text/javascript; charset=utf-8",
            "{name}"
        );
        assert_eq!(answer.headers()["x-content-type-options"], "nosniff");
        let source = std::fs::read_to_string(&file).unwrap();
        assert_eq!(answer.text().await.unwrap(), source, "{name}");
        // Named in the page, so the browser fetches them all at once.
        let preload = format!("<link rel=\"modulepreload\" href=\"{prefix}/js/{name}\">");
        assert!(html.contains(&preload), "{preload}: {html}");
        served += 1;
    }
    assert!(served > 10, "the modules of src/web/js: {served}");
    assert!(!html.contains("<script>"), "an inline script: {html}");
    let models = server.get_json("/v1/models").await;
    let priced = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "priced")
        .unwrap();
    assert_eq!(
        priced["pricing"],
        json!({"input_per_mtok": 3.0, "output_per_mtok": 15.0})
    );
    let unpriced = models["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "scripted");
    assert!(unpriced.unwrap().get("pricing").is_none(), "{models}");
}

/// The web page in Debian's Chromium, driven by playwright-core
/// (`tests/browser/run.sh` installs both when missing), against
/// `tests/fixtures/scripts/web_page.toml`. After the reply and the
/// interrupt: Markdown, raw HTML that must not run, tool arguments in the
/// model's order, diffs of an edit and a new file, the model's plan as a
/// panel (updated in place, replayed after a reload, gone after `/clear`),
/// images pasted, dropped
/// and picked (sent with a query, shown again after a reload), the slash
/// command suggestions and the workspace's `/review` with `/help`, the
/// status line through `/model web` (a profile with a context window and
/// prices, and no images: its notice), `/usage` and `/mode plan`, Esc;
/// then, in `default` mode, two approval requests (a command rejected, an
/// edit allowed once after a reload shows it pending again), and the page
/// at phone width.
#[tokio::test]
async fn the_web_page_creates_a_session_streams_a_reply_and_interrupts_a_slow_one() {
    let f = Fixture::new("web_page").await;
    f.add_config(&format!(
        "[models.web]\nprovider = \"openai\"\nmodel = \"scripted-main\"\nbase_url = \"{}\"\n\
         context_window = 32000\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n",
        f.server.openai_base_url()
    ));
    std::fs::write(f.workspace().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let commands = f.workspace().join(".claude/commands");
    std::fs::create_dir_all(&commands).unwrap();
    std::fs::copy(
        agentbus_testkit::fixtures_dir().join("commands/review.md"),
        commands.join("review.md"),
    )
    .unwrap();
    let server = f.serve().await;
    let screenshot = f.home.path().join("page.png");
    server
        .browser_test(
            &[
                ("FIRST_PROMPT", &"hello"),
                ("EXPECTED_REPLY", &"Hello from the scripted model."),
                ("EXPECTED_THINKING", &"A greeting: greet back."),
                ("SLOW_PROMPT", &"stall please"),
                ("APPROVAL_PROMPT", &"something risky"),
                ("APPROVAL_COMMAND", &"echo page-rejected > rejected.txt"),
                ("EDIT_PROMPT", &"a careful edit"),
                ("EDIT_OLD", &"beta"),
                ("EDIT_NEW", &"gamma"),
                ("SCREENSHOT", &screenshot),
            ],
            41,
        )
        .await;
    // What the model received from the page: the query with both its
    // images, the custom command's body with its argument, and on the
    // profile without images the text alone.
    let asked: Vec<String> = f
        .server
        .model_calls()
        .iter()
        .map(|call| agentbus_testkit::last_user_text(&call.body).unwrap_or_default())
        .collect();
    let pictures = asked
        .iter()
        .find(|text| text.starts_with("describe these pictures"))
        .unwrap_or_else(|| panic!("no request with the pictures: {asked:#?}"));
    assert_eq!(
        pictures.as_str(),
        "describe these pictures\n[image: image/png]\n[image: image/png]"
    );
    assert!(
        asked
            .iter()
            .any(|text| text.starts_with("Review the code in src/main.rs.\n\nLook for:")),
        "{asked:#?}"
    );
    assert!(
        asked
            .iter()
            .any(|text| text == "a picture the profile leaves out"),
        "{asked:#?}"
    );
    f.assert_requests_valid();
    // The page's answers reached the session: the rejected command did not
    // run, the edits (the second allowed once) and the write did.
    assert!(!f.workspace().join("rejected.txt").exists());
    assert_eq!(
        std::fs::read_to_string(f.workspace().join("notes.txt")).unwrap(),
        "ALPHA\nalpha two\ngamma\n"
    );
    assert_eq!(
        std::fs::read_to_string(f.workspace().join("numbers.txt"))
            .unwrap()
            .lines()
            .count(),
        30
    );
    // The page talked to this server: the session it made is stored here.
    let sessions: Value = server.get_json("/v1/sessions").await;
    let titles: Vec<&str> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["title"].as_str())
        .filter(|title| !title.starts_with("bulk "))
        .collect();
    assert_eq!(titles, ["hello"]);
}

/// "Rewind to here" on the web page (`tests/browser/page.test.mjs` with
/// `PAGE_SUITE=rewind`, against `tests/fixtures/scripts/web_rewind.toml`):
/// a turn runs a command and edits notes.txt; after a reload the dialog
/// shows the diff and the command it cannot take back, and "Restore code
/// and conversation" puts the file back byte for byte and moves the page to
/// the fork; there a second edit, then a change by "someone else": the
/// dialog shows the conflict and "Code only" leaves their change.
#[tokio::test]
async fn the_web_page_rewinds_a_turn_and_leaves_a_conflict_alone() {
    let f = Fixture::new("web_rewind").await;
    let notes = f.workspace().join("notes.txt");
    std::fs::write(&notes, "alpha\nbeta\n").unwrap();
    let server = f.serve().await;
    server
        .browser_test(
            &[
                ("PAGE_SUITE", &"rewind"),
                ("REWIND_FILE", &notes),
                ("REWIND_PROMPT", &"edit the notes please"),
                ("CONFLICT_PROMPT", &"change them again"),
                ("SCREENSHOT", &f.home.path().join("rewind.png")),
            ],
            7,
        )
        .await;
    f.assert_requests_valid();
    // What the page left: the fork's edit, and the change after it that
    // "Code only" did not overwrite.
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "ALPHA\nbeta\nchanged by someone else\n"
    );
    let sessions: Value = server.get_json("/v1/sessions").await;
    let forks: Vec<&Value> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["parent"].is_array())
        .collect();
    assert_eq!(forks.len(), 1, "{sessions}");
}

/// A fixture whose sessions start in `default` mode, where every `bash`
/// call the script makes asks first (tests/fixtures/scripts/approval-bash.toml).
async fn asking_fixture() -> Fixture {
    let f = Fixture::new("approval-bash").await;
    f.set_permission_mode("default");
    f
}

/// The events of turn `input` that `stream` received.
fn of_turn(events: &[Value], input: u64) -> Vec<Value> {
    events
        .iter()
        .filter(|e| e["turn_id"] == input)
        .cloned()
        .collect()
}

/// The one event of `kind` in `events` (fails unless there is exactly one).
fn the_one<'a>(events: &'a [Value], pred: impl Fn(&Value) -> bool, what: &str) -> &'a Value {
    let found: Vec<&Value> = events.iter().filter(|e| pred(e)).collect();
    assert_eq!(found.len(), 1, "expected one {what}, got {events:#?}");
    found[0]
}

#[tokio::test]
async fn approvals_over_http_reject_with_a_message_allow_once_and_allow_always() {
    let f = asking_fixture().await;
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let started = sse.until(|e| e["subtype"] == "session_started").await;
    assert_eq!(started["data"]["permission_mode"], "default", "{started}");

    // Rejected, with a message for the model.
    let input = server.input(&id, "please reject this").await;
    let request = sse.until(|e| e["type"] == "approval_request").await;
    assert_eq!(request["turn_id"], input);
    assert_eq!(request["name"], "bash");
    assert_eq!(
        request["input"]["command"],
        "echo should-not-run > rejected.txt"
    );
    let request_id = request["request_id"].as_str().expect("a request id");
    let path = format!("/v1/sessions/{id}/approvals/{request_id}");
    let error = error_of(server.post(&path).json(&json!({"decision": "maybe"})), 400).await;
    assert!(
        error.contains("maybe") && error.contains("\"allow_once\" | \"allow_always\" | \"reject\""),
        "names the value and what is expected: {error}"
    );
    let error = error_of(server.post(&path).json(&json!({"choice": "reject"})), 400).await;
    assert!(error.contains("choice"), "{error}");
    let message = "use trash instead, never rm";
    let answer = server
        .post(&path)
        .json(&json!({"decision": "reject", "message": message}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let answer: Value = answer.json().await.unwrap();
    assert_eq!(answer, json!({"settled": true, "request_id": request_id}));
    let result = sse.result_of(input).await;
    assert_eq!(result["stop_reason"], "end_turn", "{result}");
    let turn = of_turn(&sse.events, input);
    let resolved = the_one(
        &turn,
        |e| e["subtype"] == "approval_resolved",
        "approval_resolved",
    );
    assert_eq!(resolved["data"]["request_id"], request_id);
    assert_eq!(resolved["data"]["call_id"], "r1");
    assert_eq!(resolved["data"]["outcome"], "rejected");
    assert_eq!(resolved["data"]["message"], message);
    let tool_result = the_one(&turn, |e| e["type"] == "tool_result", "tool_result");
    assert_eq!(tool_result["is_error"], true, "{tool_result}");
    assert!(
        tool_result["output"].as_str().unwrap().contains(message),
        "{tool_result}"
    );
    assert!(
        !f.workspace().join("rejected.txt").exists(),
        "the rejected command did not run"
    );
    // The model's next request carries the user's message as the call's result.
    let next_request = f.request_messages().last().cloned().expect("requests");
    assert!(
        next_request
            .iter()
            .any(|m| m["role"] == "tool" && m["content"].to_string().contains(message)),
        "{next_request:#?}"
    );
    assert!(
        result["text"].as_str().unwrap().contains(message),
        "{result}"
    );
    // A second answer to the same request: the first one won.
    let error = error_of(
        server.post(&path).json(&json!({"decision": "allow_once"})),
        409,
    )
    .await;
    assert!(
        error.contains(request_id) && error.contains("already settled"),
        "{error}"
    );

    // Allowed once: the command runs. While it waits, an unknown request id
    // is a 404 naming it and the request that does wait.
    let input = server.input(&id, "run it once").await;
    let request = sse.until(|e| e["type"] == "approval_request").await;
    let once_id = request["request_id"].as_str().unwrap().to_string();
    let error = error_of(
        server
            .post(&format!("/v1/sessions/{id}/approvals/no-such-request"))
            .json(&json!({"decision": "allow_once"})),
        404,
    )
    .await;
    assert!(
        error.contains("no-such-request") && error.contains(&once_id),
        "{error}"
    );
    let unknown_session = server
        .post("/v1/sessions/0000dead-beef/approvals/x")
        .json(&json!({"decision": "allow_once"}));
    error_of(unknown_session, 404).await;
    let answer = server
        .post(&format!("/v1/sessions/{id}/approvals/{once_id}"))
        .json(&json!({"decision": "allow_once"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let result = sse.result_of(input).await;
    assert_eq!(result["stop_reason"], "end_turn", "{result}");
    let turn = of_turn(&sse.events, input);
    let resolved = the_one(
        &turn,
        |e| e["subtype"] == "approval_resolved",
        "approval_resolved",
    );
    assert_eq!(resolved["data"]["outcome"], "allowed_once");
    let tool_result = the_one(&turn, |e| e["type"] == "tool_result", "tool_result");
    assert_eq!(tool_result["is_error"], false, "{tool_result}");
    assert!(
        tool_result["output"]
            .as_str()
            .unwrap()
            .contains("approved-once"),
        "{tool_result}"
    );

    // Allowed always: the same call again in this session does not ask.
    let input = server.input(&id, "run always").await;
    let request = sse.until(|e| e["type"] == "approval_request").await;
    let options: Vec<&str> = request["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o.as_str())
        .collect();
    assert_eq!(options, ["allow_once", "allow_always", "reject"]);
    let rule = request["suggested_rule"]
        .as_str()
        .expect("a suggested rule")
        .to_string();
    let always_id = request["request_id"].as_str().unwrap().to_string();
    let answer = server
        .post(&format!("/v1/sessions/{id}/approvals/{always_id}"))
        .json(&json!({"decision": "allow_always"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    sse.result_of(input).await;
    let turn = of_turn(&sse.events, input);
    let resolved = the_one(
        &turn,
        |e| e["subtype"] == "approval_resolved",
        "approval_resolved",
    );
    assert_eq!(resolved["data"]["outcome"], "allowed_always");
    assert_eq!(resolved["data"]["rule"], rule.as_str());
    let again = server.input(&id, "and again").await;
    let result = sse.result_of(again).await;
    assert_eq!(result["stop_reason"], "end_turn", "{result}");
    let turn = of_turn(&sse.events, again);
    assert!(
        turn.iter().all(|e| e["type"] != "approval_request"),
        "the rule {rule} let the same call run: {turn:#?}"
    );
    let tool_result = the_one(&turn, |e| e["type"] == "tool_result", "tool_result");
    assert_eq!(tool_result["is_error"], false, "{tool_result}");
    assert!(
        tool_result["output"]
            .as_str()
            .unwrap()
            .contains("always-ok"),
        "{tool_result}"
    );

    // The route is in the OpenAPI document.
    let openapi: Value = server.get_json("/v1/openapi.json").await;
    let route = &openapi["paths"]["/v1/sessions/{id}/approvals/{request_id}"]["post"];
    for status in ["200", "400", "404", "409"] {
        assert!(route["responses"][status].is_object(), "{status}: {route}");
    }
    f.assert_requests_valid();
}

/// Read WebSocket frames until one that is an answer to a frame sent (not
/// an event: it has no seq); events read on the way go to `events`.
async fn ws_reply(ws: &mut crate::support::server::Socket, events: &mut Vec<Value>) -> Value {
    loop {
        let frame = ws.next().await.expect("the socket stays open");
        if frame.get("seq").is_none() {
            return frame;
        }
        events.push(frame);
    }
}

#[tokio::test]
async fn an_approval_sent_over_the_websocket_settles_it_for_every_client() {
    let f = asking_fixture().await;
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let mut ws = server.ws(&id).await;
    let mut events = Vec::new();
    ws.send(json!({"type": "query", "text": "run it once"}))
        .await;
    let accepted = ws_reply(&mut ws, &mut events).await;
    let input = accepted["accepted"]["input_id"]
        .as_u64()
        .unwrap_or_else(|| panic!("{accepted}"));
    let request = loop {
        let frame = ws.next().await.expect("the socket stays open");
        if frame["type"] == "approval_request" {
            break frame;
        }
    };
    let request_id = request["request_id"].as_str().unwrap().to_string();

    ws.send(json!({"type": "approval", "request_id": "nope", "decision": "allow_once"}))
        .await;
    let error = ws_reply(&mut ws, &mut events).await;
    let text = error["error"].as_str().unwrap_or_default();
    assert!(
        text.contains("nope") && text.contains(&request_id),
        "{error}"
    );
    ws.send(json!({"type": "approval", "request_id": request_id, "decision": "perhaps"}))
        .await;
    let error = ws_reply(&mut ws, &mut events).await;
    let text = error["error"].as_str().unwrap_or_default();
    assert!(
        text.contains("not an input") && text.contains("\"type\": \"approval\""),
        "the hint lists the approval frame: {error}"
    );

    ws.send(json!({"type": "approval", "request_id": request_id, "decision": "allow_once"}))
        .await;
    let settled = ws_reply(&mut ws, &mut events).await;
    assert_eq!(settled, json!({"settled": {"request_id": request_id}}));
    // The SSE client sees it settled, the command run and the turn end.
    let result = sse.result_of(input).await;
    assert_eq!(result["stop_reason"], "end_turn", "{result}");
    let turn = of_turn(&sse.events, input);
    let resolved = the_one(
        &turn,
        |e| e["subtype"] == "approval_resolved",
        "approval_resolved",
    );
    assert_eq!(resolved["data"]["request_id"], request_id.as_str());
    assert_eq!(resolved["data"]["outcome"], "allowed_once");
    let tool_result = the_one(&turn, |e| e["type"] == "tool_result", "tool_result");
    assert!(
        tool_result["output"]
            .as_str()
            .unwrap()
            .contains("approved-once"),
        "{tool_result}"
    );
    // A second answer is refused; the first one won.
    ws.send(json!({"type": "approval", "request_id": request_id, "decision": "reject"}))
        .await;
    let error = ws_reply(&mut ws, &mut events).await;
    assert!(
        error["error"]
            .as_str()
            .unwrap_or_default()
            .contains("already settled"),
        "{error}"
    );
}

#[tokio::test]
async fn a_session_created_in_plan_mode_denies_a_write_without_asking() {
    // The server's own mode is `bypass`: the session's request wins.
    let f = Fixture::new("approval-bash").await;
    let server = f.serve().await;
    let error = error_of(
        server
            .post("/v1/sessions")
            .json(&json!({"permission_mode": "yolo"})),
        400,
    )
    .await;
    assert!(error.contains("yolo") && error.contains("plan"), "{error}");
    let id = server
        .create_session_with(json!({"permission_mode": "plan"}))
        .await;
    let mut sse = server.sse(&id, None).await;
    let started = sse.until(|e| e["subtype"] == "session_started").await;
    assert_eq!(started["data"]["permission_mode"], "plan", "{started}");
    let input = server.input(&id, "plan it").await;
    let result = sse.result_of(input).await;
    assert_eq!(result["stop_reason"], "end_turn", "{result}");
    let turn = of_turn(&sse.events, input);
    assert!(
        turn.iter().all(|e| e["type"] != "approval_request"),
        "{turn:#?}"
    );
    let tool_result = the_one(&turn, |e| e["type"] == "tool_result", "tool_result");
    assert_eq!(tool_result["is_error"], true, "{tool_result}");
    assert!(
        tool_result["output"]
            .as_str()
            .unwrap()
            .contains("plan mode"),
        "{tool_result}"
    );
    assert!(!f.workspace().join("planned.txt").exists());
}

/// Code you can use and the status line's controls on the web page
/// (`tests/browser/suites/controls.mjs`, `PAGE_SUITE=controls`, against
/// `tests/fixtures/scripts/web_controls.toml`): fenced code highlighted and
/// labelled, an edit's diff with token colours, Copy on code, a message, a
/// command and a diff (read back from the clipboard); the model and mode
/// menus send `/model web` and `/mode plan`; the turn line in words with
/// its cost; thinking open while it streams, then closed with its time and
/// not flattened in a tall conversation; an error once, with Retry; a
/// message whose POST failed marked "Not sent", with Retry.
#[tokio::test]
async fn the_web_page_highlights_and_copies_code_and_switches_model_and_mode_from_menus() {
    let f = Fixture::new("web_controls").await;
    f.add_config(&format!(
        "[models.web]\nprovider = \"openai\"\nmodel = \"scripted-main\"\nbase_url = \"{}\"\n\
         input_per_mtok = 3.0\noutput_per_mtok = 15.0\n",
        f.server.openai_base_url()
    ));
    std::fs::write(
        f.workspace().join("lib.rs"),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
    )
    .unwrap();
    let server = f.serve().await;
    let shots = format!("{}/", f.home.path().display());
    server
        .browser_test(
            &[
                ("PAGE_SUITE", &"controls"),
                ("SCREENSHOT", &f.home.path().join("controls.png")),
                ("SHOTS", &std::env::var("SHOTS").unwrap_or(shots)),
            ],
            17,
        )
        .await;
    // The edit the page showed happened.
    assert_eq!(
        std::fs::read_to_string(f.workspace().join("lib.rs")).unwrap(),
        "pub fn add(a: i32, b: i32) -> i32 {\n    a.wrapping_add(b)\n}\n"
    );
    f.assert_requests_valid();
}

/// The web page's accessibility and phone width (`tests/browser/suites/a11y.mjs`
/// with `PAGE_SUITE=a11y`, against `tests/fixtures/scripts/web_a11y.toml`):
/// axe-core finds no violation (contrast included) on the session list, a
/// conversation with a reply, a tool call and an approval, in dark mode and
/// at 390 px; the landmarks, the skip link, the one small live region, the
/// focus back in the input; on a phone 16 px inputs, 32 px buttons, one
/// Send/Stop button and a one-line status line. Midway the suite asks for
/// the server to be stopped, then started again on the same port and data
/// dir: the "not reachable" banner goes once the page has reconnected, and
/// viewing a stored session afterwards changes nothing in it.
#[tokio::test]
async fn the_web_page_is_accessible_works_on_a_phone_and_survives_a_restart() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let f = Fixture::new("web_a11y").await;
    let mut server = Some(f.serve().await);
    let url = server.as_ref().unwrap().url.clone();
    let token = server.as_ref().unwrap().token.clone();
    let listen = url.trim_start_matches("http://").to_string();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/run.sh");
    let mut child = tokio::process::Command::new(&script)
        .env("PAGE_SUITE", "a11y")
        .env("AGENTBUS_URL", &url)
        .env("AGENTBUS_TOKEN", &token)
        .env("SCREENSHOT", f.home.path().join("a11y.png"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr_task = tokio::spawn(async move {
        let mut text = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr_pipe, &mut text).await;
        text
    });
    let mut stdout = String::new();
    let mut restarts = 0;
    while let Some(line) = lines.next_line().await.unwrap() {
        stdout.push_str(&line);
        stdout.push('\n');
        match line.as_str() {
            "a11y: stop the server" => {
                let stopped = server.take().expect("a server to stop");
                stopped.terminate();
                let (status, stderr) = stopped.wait().await;
                assert!(status.success(), "{stderr}");
                stdin.write_all(b"stopped\n").await.unwrap();
            }
            "a11y: start the server" => {
                assert!(server.is_none(), "asked to start a running server");
                server = Some(f.serve_with(&["--listen", &listen]).await);
                assert_eq!(server.as_ref().unwrap().url, url, "the same address");
                restarts += 1;
                stdin.write_all(b"started\n").await.unwrap();
            }
            _ => {}
        }
    }
    let status = child.wait().await.unwrap();
    let stderr = stderr_task.await.unwrap();
    let server = server.expect("the server running at the end");
    assert!(
        status.success(),
        "browser test failed:\n{stdout}\n{stderr}\nserver log:\n{}",
        server.stderr()
    );
    assert_eq!(restarts, 1, "{stdout}");
    assert!(stdout.contains("16 passed, 0 failed"), "{stdout}");
    assert!(stdout.contains("rules checked"), "{stdout}");
    f.assert_requests_valid();
}

/// Approvals you cannot miss and quiet tool calls on the web page
/// (`tests/browser/suites/approvals.mjs` with `PAGE_SUITE=approvals`,
/// against `tests/fixtures/scripts/web_approvals.toml`, sessions in
/// `acceptEdits` mode): while a command waits, the tab's title says "(1)
/// approval", the favicon and the session in the list are marked, a
/// desktop notification shows while the tab is hidden, and the card has
/// the focus; `y`, `a` and `n` answer it, "Always allow" for `rm -rf`
/// first shows the rule it adds; a step's three calls are one row, with
/// relative paths, the edit's diff once, the command's last lines and its
/// exit code.
#[tokio::test]
async fn the_web_page_shows_a_waiting_approval_everywhere_and_keeps_tool_calls_quiet() {
    // The sessions' own workspace, named in the script (absolute paths).
    let workspace = tempfile::tempdir().expect("workspace");
    let path = agentbus_testkit::fixtures_dir().join("scripts/web_approvals.toml");
    let text = std::fs::read_to_string(&path).expect("read the script");
    let root = workspace.path().to_str().expect("a UTF-8 path");
    let script = Script::from_toml_str(&text.replace("@WORKSPACE@", root)).expect("script");
    let f = Fixture::with_script(script).await;
    f.set_permission_mode("accept-edits");
    std::fs::write(workspace.path().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let server = f.serve().await;
    server
        .browser_test(
            &[
                ("PAGE_SUITE", &"approvals"),
                ("WORKSPACE", &root),
                ("SCREENSHOT", &f.home.path().join("approvals.png")),
            ],
            10,
        )
        .await;
    f.assert_requests_valid();
    // The page's answers reached the session: the edit ran, the command
    // allowed once ran, the rejected one did not.
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("notes.txt")).unwrap(),
        "ALPHA\nbeta\n"
    );
    assert!(!workspace.path().join("hello.txt").exists());
    assert!(!workspace.path().join("elsewhere.txt").exists());
}

/// While a tool call waits for an answer, its session says so: `GET
/// /v1/sessions` and `GET /v1/sessions/{id}` count it in
/// `pending_approvals`, and the lifecycle stream announces each change
/// (`approvals`, with the count) — what the web page marks a session
/// that is not open with.
#[tokio::test]
async fn a_waiting_approval_is_counted_on_the_session_and_announced_on_the_lifecycle_stream() {
    let f = asking_fixture().await;
    let server = f.serve().await;
    let mut lifecycle = EventStream::open(server.get("/v1/events")).await;
    let id = server.create_session().await;
    let before: Value = server.get_json(&format!("/v1/sessions/{id}")).await;
    assert_eq!(before["pending_approvals"], 0, "{before}");
    let mut sse = server.sse(&id, None).await;
    let input = server.input(&id, "please reject this").await;
    let request = sse.until(|e| e["type"] == "approval_request").await;
    let asked = lifecycle
        .until(|e| e["kind"] == "approvals" && e["session_id"] == id.as_str())
        .await;
    assert_eq!(asked["pending_approvals"], 1, "{asked}");
    let one: Value = server.get_json(&format!("/v1/sessions/{id}")).await;
    assert_eq!(one["pending_approvals"], 1, "{one}");
    let list: Value = server.get_json("/v1/sessions").await;
    let listed = list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id.as_str())
        .expect("the session is listed");
    assert_eq!(listed["pending_approvals"], 1, "{listed}");
    assert_eq!(listed["busy"], true, "{listed}");
    // Other kinds carry no count.
    let created = lifecycle
        .events
        .iter()
        .find(|e| e["kind"] == "created")
        .expect("created");
    assert!(created.get("pending_approvals").is_none(), "{created}");

    let request_id = request["request_id"].as_str().expect("a request id");
    let answer = server
        .post(&format!("/v1/sessions/{id}/approvals/{request_id}"))
        .json(&json!({"decision": "reject"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let answered = lifecycle
        .until(|e| e["kind"] == "approvals" && e["session_id"] == id.as_str())
        .await;
    assert_eq!(answered["pending_approvals"], 0, "{answered}");
    sse.result_of(input).await;
    lifecycle.until(|e| e["kind"] == "idle").await;
    let after: Value = server.get_json(&format!("/v1/sessions/{id}")).await;
    assert_eq!(after["pending_approvals"], 0, "{after}");
}

/// The web page's session list and a long session (PAGE_SUITE=sessions,
/// tests/browser/suites/sessions.mjs): search, rename (kept over a
/// restart), groups by date, the running mark and the header's title; a
/// session of 1,000 turns opens on its newest turns, with the status line
/// counting all of them, and loads older turns on scrolling up until the
/// start. The browser test prints how long the long session took to show
/// its newest turn and what a second load of the page transferred.
#[tokio::test]
async fn the_web_page_lists_searches_renames_and_opens_a_long_session_at_its_newest_turns() {
    let f = Fixture::new("web_sessions").await;
    f.add_config(&format!(
        "[models.web]\nprovider = \"openai\"\nmodel = \"scripted-main\"\nbase_url = \"{}\"\n\
         context_window = 32000\ninput_per_mtok = 3.0\noutput_per_mtok = 15.0\n",
        f.server.openai_base_url()
    ));
    std::fs::write(f.workspace().join("notes.txt"), "alpha\nbeta\n").unwrap();

    // One real turn of the scripted model, copied into a long session and
    // into sessions last updated yesterday, last week and long ago (the
    // store's own import, then their update times set in the database).
    let first = f
        .run(&["run", "--json", "--model", "web", "a question"])
        .await;
    assert!(first.status.success(), "{}", first.stderr);
    let template_id = first.events()[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let file = f.home.path().join("template.json");
    let export = f
        .run(&[
            "sessions",
            "export",
            &template_id,
            "--out",
            file.to_str().unwrap(),
        ])
        .await;
    assert!(export.status.success(), "{}", export.stderr);
    let template: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let events = template["events"].as_array().unwrap();
    let prelude: Vec<Value> = events
        .iter()
        .filter(|e| e["turn_id"].is_null())
        .cloned()
        .collect();
    let turn: Vec<Value> = events
        .iter()
        .filter(|e| !e["turn_id"].is_null())
        .cloned()
        .collect();
    assert_eq!(turn.first().unwrap()["type"], "user", "{template}");
    assert_eq!(turn.last().unwrap()["type"], "result", "{template}");
    let import = |title: &str, turns: u64| {
        let mut document = template.clone();
        document["session"]["title"] = json!(title);
        let mut log = prelude.clone();
        let mut seq = log.last().map_or(0, |e| e["seq"].as_u64().unwrap());
        for n in 1..=turns {
            for event in &turn {
                let mut event = event.clone();
                seq += 1;
                event["seq"] = json!(seq);
                event["turn_id"] = json!(n);
                let user = event["type"] == "user";
                if user {
                    event["text"] = json!(format!("question {n}"));
                }
                log.push(event);
                // The first turn makes a plan and switches the mode: the
                // page must know both with only the newest turns loaded.
                if user && n == 1 && turns > 1 {
                    let template = log[log.len() - 1].clone();
                    for (subtype, data) in [
                        (
                            "plan",
                            json!({"todos": [
                                {"content": "Read the notes", "status": "completed"},
                                {"content": "Answer a thousand questions", "status": "in_progress", "active_form": "Answering the questions"},
                            ]}),
                        ),
                        ("mode", json!({"mode": "accept-edits"})),
                    ] {
                        seq += 1;
                        let system = json!({
                            "session_id": template["session_id"], "seq": seq, "turn_id": n,
                            "at": template["at"], "type": "system", "subtype": subtype,
                            "message": subtype, "data": data,
                        });
                        log.push(system);
                    }
                }
            }
        }
        document["events"] = json!(log);
        let path = f
            .home
            .path()
            .join(format!("{}.json", title.replace(' ', "-")));
        std::fs::write(&path, document.to_string()).unwrap();
        path
    };
    let mut ids = Vec::new();
    for (title, turns) in [
        ("Long session", 1000),
        ("Notes from yesterday", 1),
        ("Plan from last week", 1),
        ("An old experiment", 1),
    ] {
        let path = import(title, turns);
        let imported = f.run(&["sessions", "import", path.to_str().unwrap()]).await;
        assert!(imported.status.success(), "{}", imported.stderr);
        ids.push(imported.stdout[0].trim().to_string());
    }
    let now = chrono::Utc::now();
    let db = rusqlite::Connection::open(f.home.path().join("data/agentbus.db")).unwrap();
    for (id, days) in [(&ids[1], 1), (&ids[2], 4), (&ids[3], 40)] {
        let at = (now - chrono::Duration::days(days))
            .format("%Y-%m-%dT%H:%M:%S%.6fZ")
            .to_string();
        let changed = db
            .execute(
                "UPDATE sessions SET updated_at = ?1 WHERE id = ?2",
                rusqlite::params![at, id],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }
    drop(db);

    let server = f.serve().await;
    let stdout = server
        .browser_test(
            &[
                ("PAGE_SUITE", &"sessions"),
                ("LONG_SESSION", &ids[0]),
                ("SLOW_PROMPT", &"stall please"),
                ("SCREENSHOT", &f.home.path().join("sessions.png")),
            ],
            9,
        )
        .await;
    // The figures it measured.
    println!("{stdout}");
    f.assert_requests_valid();

    // The title the page gave is stored: a restarted server still has it.
    let renamed: Value = server.get_json(&format!("/v1/sessions/{}", ids[1])).await;
    assert_eq!(renamed["title"], "Renamed in the page", "{renamed}");
    server.terminate();
    let (status, _) = server.wait().await;
    assert!(status.success());
    let again = f.serve().await;
    let renamed: Value = again.get_json(&format!("/v1/sessions/{}", ids[1])).await;
    assert_eq!(renamed["title"], "Renamed in the page", "{renamed}");
}

/// Clients of either HTTP: 1.0 and 1.1, and HTTP/2 with prior knowledge
/// (h2c, as a proxy in front may speak it), on the same port. The daemon
/// tells them apart by peeking at the connection's first bytes
/// (`src/serve/connections.rs`).
#[tokio::test]
async fn http1_and_http2_with_prior_knowledge_are_both_served() {
    let f = fixture().await;
    let server = f.serve().await;
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let h1 = reqwest::Client::builder().http1_only().build().unwrap();
    for (client, version) in [
        (h2, reqwest::Version::HTTP_2),
        (h1, reqwest::Version::HTTP_11),
    ] {
        let answer = client
            .get(format!("{}/v1/sessions", server.url))
            .bearer_auth(&server.token)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.version(), version);
        assert_eq!(answer.status(), 200, "{version:?}");
        let body: serde_json::Value = answer.json().await.unwrap();
        assert!(body.is_object() || body.is_array(), "{version:?}: {body}");
    }
}

/// A connection that never says anything (a client's pool connecting
/// ahead, a port check) does not hold the daemon's stop: it is closed at
/// the shutdown, as an idle keep-alive connection is.
#[tokio::test]
async fn a_connection_that_never_speaks_does_not_hold_the_stop() {
    let f = fixture().await;
    let server = f.serve().await;
    let address = server.url.trim_start_matches("http://").to_string();
    let mut silent = tokio::net::TcpStream::connect(&address).await.unwrap();
    // Served at all: a request on another connection is answered.
    let answer = reqwest::get(format!("{}/livez", server.url)).await.unwrap();
    assert_eq!(answer.status(), 200);
    server.terminate();
    let (status, stderr) = server.wait().await;
    assert!(status.success(), "{status:?}\n{stderr}");
    // The daemon closed the silent connection: it reads the end.
    let mut rest = Vec::new();
    let read = tokio::time::timeout(
        GUARD,
        tokio::io::AsyncReadExt::read_to_end(&mut silent, &mut rest),
    )
    .await;
    assert!(matches!(read, Ok(Ok(0))), "{read:?} {rest:?}");
}

/// The health probes need no token and say nothing but whether: `/livez`
/// while the process answers, `/readyz` while its store answers (here,
/// SQLite). `/v1/health`, with the details, still needs the token.
#[tokio::test]
async fn the_health_probes_answer_without_the_token_and_say_nothing_more() {
    let f = fixture().await;
    let server = f.serve().await;
    let http = reqwest::Client::new();
    for (path, body) in [("/livez", "ok\n"), ("/readyz", "ready\n")] {
        let answer = http
            .get(format!("{}{path}", server.url))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        assert_eq!(answer.headers()["cache-control"], "no-store", "{path}");
        assert_eq!(
            answer.headers()["content-type"],
            "text/plain; charset=utf-8",
            "{path}"
        );
        assert_eq!(answer.text().await.unwrap(), body, "{path}");
    }
    let health = http
        .get(format!("{}/v1/health", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 401);
    // With the token, the details.
    let health = server.get_json("/v1/health").await;
    assert_eq!(health["status"], "ok", "{health}");
}
