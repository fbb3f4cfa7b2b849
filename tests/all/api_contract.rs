//! The HTTP API does what its OpenAPI document says: each test here is a
//! defect `scripts/api-fuzz.sh` (schemathesis against the real daemon)
//! found, kept as a plain end-to-end test so `cargo test` guards it too.

use crate::support::Fixture;
use crate::support::server::error_of;
use agentbus_testkit::Script;
use serde_json::{Value, json};

const SCRIPT: &str = r#"
[[response]]
text = "One answer."
[[response]]
text = "Another answer."
"#;

async fn fixture() -> Fixture {
    Fixture::with_script(Script::from_toml_str(SCRIPT).expect("script")).await
}

#[tokio::test]
async fn bodies_are_json_objects_and_whole_floats_count_as_integers() {
    let f = fixture().await;
    let server = f.serve().await;
    // serde reads a struct from an array: `[null, null]` made a session.
    let error = error_of(server.post("/v1/sessions").json(&json!([null, null])), 400).await;
    assert!(
        error.contains("it is an array; expected a JSON object"),
        "{error}"
    );
    let error = error_of(
        server
            .post("/v1/sessions")
            .json(&json!({"context": [null, null]})),
        400,
    )
    .await;
    assert!(error.contains("`context` must be an object"), "{error}");
    // JSON `null` where the body is optional is no body.
    let id = server.create_session_with(Value::Null).await;
    // 1.0 is the integer 1 to JSON Schema and to JavaScript. (A new
    // session's first event may not be stored yet: until it is, seq 1 is
    // out of range, a 409; the fork is asked again until it is there.)
    let deadline = std::time::Instant::now() + crate::support::GUARD;
    let forked = loop {
        let forked = server
            .post(&format!("/v1/sessions/{id}/fork"))
            .json(&json!({"at_seq": 1.0}))
            .send()
            .await
            .expect("the server answers");
        if forked.status() != 409 || std::time::Instant::now() > deadline {
            break forked;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    let status = forked.status();
    assert_eq!(status, 201, "{}", forked.text().await.unwrap_or_default());
    // 2^64 (read as a float) is not u64::MAX.
    let error = error_of(
        server
            .post(&format!("/v1/sessions/{id}/fork"))
            .header("content-type", "application/json")
            .body(r#"{"at_seq": 18446744073709551616}"#),
        400,
    )
    .await;
    assert!(error.contains("at_seq"), "{error}");
}

#[tokio::test]
async fn a_fork_past_the_log_and_an_ambiguous_prefix_are_conflicts_not_bad_requests() {
    let f = fixture().await;
    let server = f.serve().await;
    let id = server.create_session().await;
    let error = error_of(
        server
            .post(&format!("/v1/sessions/{id}/fork"))
            .json(&json!({"at_seq": 99})),
        409,
    )
    .await;
    assert!(error.contains("its log ends at seq"), "{error}");
    server.create_session().await;
    // Session ids are UUIDv7s of the same moment: both start with "0".
    for request in [
        server.get("/v1/sessions/0"),
        server.post("/v1/sessions/0/interrupt"),
        server
            .http
            .delete(format!("{}/v1/sessions/0", server.url))
            .bearer_auth(&server.token),
    ] {
        let error = error_of(request, 409).await;
        assert!(error.contains("matches more than one session"), "{error}");
    }
}

#[tokio::test]
async fn misspelt_fields_and_unknown_profiles_are_refused_naming_them() {
    let f = fixture().await;
    let server = f.serve().await;
    let id = server.create_session().await;
    let input = format!("/v1/sessions/{id}/input");
    // `at` was ignored, and the whole session forked.
    let error = error_of(
        server
            .post(&input)
            .json(&json!({"command": "fork", "at": 3})),
        400,
    )
    .await;
    assert!(
        error.contains("the `fork` command has no field `at`; it takes `at_seq`"),
        "{error}"
    );
    let error = error_of(
        server
            .post(&input)
            .json(&json!({"command": "clear", "now": true})),
        400,
    )
    .await;
    assert!(error.contains("it takes no fields"), "{error}");
    // Accepted, and found wrong only when the session compacted.
    let error = error_of(
        server
            .post("/v1/sessions")
            .json(&json!({"context": {"compact_model": "no-such-profile"}})),
        400,
    )
    .await;
    assert!(
        error.contains("no-such-profile")
            && error.contains("configured profiles: ")
            && error.contains("scripted"),
        "{error}"
    );
}

#[tokio::test]
async fn the_document_says_where_parameters_go_and_which_values_are_accepted() {
    let f = fixture().await;
    let server = f.serve().await;
    let document: Value = server.get_json("/v1/openapi.json").await;
    // `limit` and `after` were documented as required path parameters.
    let parameters = document["paths"]["/v1/sessions"]["get"]["parameters"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(parameters.len(), 2, "{parameters:?}");
    for parameter in &parameters {
        assert_eq!(parameter["in"], "query", "{parameter}");
        assert_eq!(parameter["required"], false, "{parameter}");
    }
    // What the document bounds, the server refuses past the bound.
    error_of(server.get("/v1/sessions?limit=4294967296"), 400).await;
    let error = error_of(server.get("/v1/sessions?after=1.a%20b"), 400).await;
    assert!(error.contains("is not a list cursor"), "{error}");
    // The profiles a session may name are this server's.
    let schemas = &document["components"]["schemas"];
    let profiles = schemas["CreateSession"]["properties"]["model"]["enum"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(profiles.contains(&json!("scripted")), "{profiles:?}");
    // A fork's parent is `[id, seq]`, not a list of objects.
    let parent = &schemas["SessionParent"];
    assert_eq!(parent["prefixItems"][0]["type"], "string", "{parent}");
    assert_eq!(parent["prefixItems"][1]["type"], "integer", "{parent}");
    // A session's own MCP servers: the settings of a configured server,
    // exactly one of `command` and `url`, and no field beside them.
    for body in ["CreateSession", "OpenSession"] {
        let field = schemas[body]["properties"]["mcp_servers"].to_string();
        assert!(
            field.contains("#/components/schemas/McpServerMap"),
            "{body}: {field}"
        );
    }
    let servers = &schemas["McpServerMap"];
    let settings = &servers["additionalProperties"];
    assert_eq!(
        settings["allOf"][0]["additionalProperties"], false,
        "{servers}"
    );
    assert_eq!(
        settings["allOf"][1]["oneOf"][0]["required"],
        json!(["command"])
    );
    assert_eq!(settings["allOf"][1]["oneOf"][1]["required"], json!(["url"]));
    assert_eq!(servers["maxProperties"], 64, "{servers}");
    // Every control command is one of the input's shapes.
    let shapes = schemas["Input"]["oneOf"].as_array().map_or(0, Vec::len);
    assert_eq!(shapes, 26, "a query and 25 control commands");
    // Every operation on a session documents the 409 of an ambiguous prefix.
    for (path, item) in document["paths"].as_object().into_iter().flatten() {
        if !path.contains("{id}") {
            continue;
        }
        for (method, operation) in item.as_object().into_iter().flatten() {
            assert!(
                operation["responses"].get("409").is_some(),
                "{method} {path} lists no 409"
            );
        }
    }
}

#[tokio::test]
async fn streams_refuse_a_seq_past_int64_and_a_plain_get_of_the_websocket_in_json() {
    let f = fixture().await;
    let server = f.serve().await;
    let id = server.create_session().await;
    // Seqs are SQLite integers; the document says int64.
    for path in [
        "/v1/events?after=9223372036854775808".to_string(),
        format!("/v1/sessions/{id}/events?after=9223372036854775808"),
        format!("/v1/sessions/{id}/ws?after=9223372036854775808"),
    ] {
        let error = error_of(server.get(&path), 400).await;
        assert!(
            error.contains("a seq is at most 9223372036854775807"),
            "{path}: {error}"
        );
    }
    let error = error_of(
        server
            .get("/v1/events")
            .header("Last-Event-ID", "9223372036854775808"),
        400,
    )
    .await;
    assert!(
        error.contains("Last-Event-ID is 9223372036854775808"),
        "{error}"
    );
    // axum answered this in plain text.
    let error = error_of(server.get(&format!("/v1/sessions/{id}/ws")), 400).await;
    assert!(error.starts_with("not a WebSocket upgrade: "), "{error}");
}

/// Turns that edit `notes.txt` ("alpha\nbeta\n" before them), one that
/// only talks, and one that stalls until it is interrupted.
const REWIND_SCRIPT: &str = r#"
[[response]]
match = "edit the notes"
tool_calls = [ { id = "e1", name = "edit_file", arguments = { path = "notes.txt", old_string = "alpha", new_string = "ALPHA" } } ]
[[response]]
match = "edit the notes"
text = "Edited."
[[response]]
match = "edit again"
tool_calls = [ { id = "e2", name = "edit_file", arguments = { path = "notes.txt", old_string = "alpha", new_string = "ALPHA" } } ]
[[response]]
match = "edit again"
text = "Edited again."
[[response]]
match = "just talk"
text = "Talked."
[[response]]
match = "stall"
text = "This reply starts, then stalls until it is interrupted."
chunk_size = 2
stall_after_chunks = 4
"#;

const NOTES: &str = "alpha\nbeta\n";

/// What in `body` does not fit the document's schema `name`.
fn violations(document: &Value, name: &str, body: &Value) -> Vec<String> {
    let schema = json!({
        "$ref": format!("#/components/schemas/{name}"),
        "components": document["components"],
    });
    let validator = jsonschema::validator_for(&schema).expect("the document's schemas compile");
    validator
        .iter_errors(body)
        .map(|e| format!("{e} at {}", e.instance_path))
        .collect()
}

/// Check `body` against the document's schema `name`.
fn conforms(document: &Value, name: &str, body: &Value) {
    let errors = violations(document, name, body);
    assert!(errors.is_empty(), "{name}: {errors:#?}\n{body:#}");
}

/// Wait until the session says it is idle (its `result` may reach a
/// client just before the session is done with the turn).
async fn idle(server: &crate::support::server::Server, id: &str) {
    let deadline = std::time::Instant::now() + crate::support::GUARD;
    loop {
        let session = server.get_json(&format!("/v1/sessions/{id}")).await;
        if session["busy"] == false {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{session}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// POST `body` to `path`; the status and the JSON answer.
async fn post_json(
    server: &crate::support::server::Server,
    path: &str,
    body: Value,
) -> (u16, Value) {
    let response = server.post(path).json(&body).send().await.expect("answers");
    let status = response.status().as_u16();
    (status, response.json().await.expect("a JSON answer"))
}

/// A session whose first turn edited notes.txt and whose second only
/// talked: the server, the session, and the seqs of the two `user` events.
async fn edited_session(f: &Fixture) -> (crate::support::server::Server, String, u64, u64) {
    std::fs::write(f.workspace().join("notes.txt"), NOTES).unwrap();
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let edit = server.input(&id, "edit the notes").await;
    sse.result_of(edit).await;
    let talk = server.input(&id, "just talk").await;
    sse.result_of(talk).await;
    let user_seq = |turn: u64| {
        sse.events
            .iter()
            .find(|e| e["type"] == "user" && e["turn_id"] == turn)
            .and_then(|e| e["seq"].as_u64())
            .expect("the turn's user event")
    };
    let (first, second) = (user_seq(edit), user_seq(talk));
    idle(&server, &id).await;
    (server, id, first, second)
}

#[tokio::test]
async fn rewind_lists_turns_previews_and_takes_back_files_and_conversation() {
    let f = Fixture::with_script(Script::from_toml_str(REWIND_SCRIPT).expect("script")).await;
    let (server, id, first, second) = edited_session(&f).await;
    let document: Value = server.get_json("/v1/openapi.json").await;
    let notes = f.workspace().join("notes.txt");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "ALPHA\nbeta\n");

    // The turns, each with what it changed.
    let listed = server.get_json(&format!("/v1/sessions/{id}/rewind")).await;
    conforms(&document, "Rewinds", &listed);
    let turns = listed["turns"].as_array().cloned().unwrap_or_default();
    assert_eq!(turns.len(), 2, "{listed}");
    assert_eq!(turns[0]["seq"], first);
    assert_eq!(turns[0]["prompt"], "edit the notes");
    assert_eq!(
        turns[0]["files"],
        json!([{"path": "notes.txt", "change": "modified", "added": 1, "removed": 1}])
    );
    assert_eq!(turns[1]["seq"], second);
    assert_eq!(turns[1]["files"], json!([]));

    // A preview says what would happen, and changes nothing.
    let path = format!("/v1/sessions/{id}/rewind");
    let (status, preview) = post_json(&server, &path, json!({"seq": first, "preview": true})).await;
    assert_eq!(status, 200, "{preview}");
    conforms(&document, "RewindReport", &preview);
    // (The schemas are closed: a field they do not name is a violation.)
    let mut extra = preview.clone();
    extra["files"][0]["mystery"] = json!(1);
    assert!(!violations(&document, "RewindReport", &extra).is_empty());
    assert_eq!(preview["preview"], true);
    assert_eq!(preview["mode"], "both");
    assert_eq!(preview["prompt"], "edit the notes");
    assert!(preview.get("forked").is_none(), "{preview}");
    assert_eq!(preview["files"][0]["path"], "notes.txt");
    assert_eq!(preview["files"][0]["action"], "restore");
    let diff = preview["files"][0]["diff"].as_str().unwrap_or_default();
    assert!(diff.contains("-ALPHA\n+alpha\n"), "{diff}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "ALPHA\nbeta\n");
    let sessions = server.get_json("/v1/sessions").await;
    assert_eq!(sessions["sessions"].as_array().map(Vec::len), Some(1));

    // A turn that changed nothing: nothing to restore, and the fork is
    // made before it.
    let (status, talked) = post_json(
        &server,
        &path,
        json!({"seq": second, "mode": "conversation"}),
    )
    .await;
    assert_eq!(status, 200, "{talked}");
    conforms(&document, "RewindReport", &talked);
    let fork = talked["forked"].as_str().expect("a fork").to_string();
    let forked = server.get_json(&format!("/v1/sessions/{fork}")).await;
    assert_eq!(forked["parent"], json!([id, second - 1]));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "ALPHA\nbeta\n");

    // Both: the file as it was, byte for byte, and the conversation in a
    // fork before the turn.
    let (status, done) = post_json(&server, &path, json!({"seq": first})).await;
    assert_eq!(status, 200, "{done}");
    conforms(&document, "RewindReport", &done);
    assert!(done.get("preview").is_none(), "{done}");
    assert_eq!(done["files"][0]["action"], "restore");
    assert_eq!(std::fs::read(&notes).unwrap(), NOTES.as_bytes());
    let fork = done["forked"].as_str().expect("a fork").to_string();
    let forked = server.get_json(&format!("/v1/sessions/{fork}")).await;
    assert_eq!(forked["parent"], json!([id, first - 1]));
    assert_eq!(forked["turns"], 0, "{forked}");
    // The turn is taken back: the list says so, and there is nothing
    // left to undo.
    let listed = server.get_json(&format!("/v1/sessions/{id}/rewind")).await;
    assert_eq!(listed["turns"][0]["undone"], true, "{listed}");
    let error = error_of(server.post(&format!("/v1/sessions/{id}/undo")), 409).await;
    assert!(error.contains("nothing to undo"), "{error}");
}

#[tokio::test]
async fn undo_takes_back_the_last_turn_and_a_conflict_is_left_unless_overwritten() {
    let f = Fixture::with_script(Script::from_toml_str(REWIND_SCRIPT).expect("script")).await;
    let (server, id, first, _) = edited_session(&f).await;
    let document: Value = server.get_json("/v1/openapi.json").await;
    let notes = f.workspace().join("notes.txt");
    let undo = format!("/v1/sessions/{id}/undo");

    // Someone else changes the file after the session did.
    std::fs::write(&notes, "ALPHA\nbeta\nmine\n").unwrap();
    let (status, preview) = post_json(&server, &undo, json!({"preview": true})).await;
    assert_eq!(status, 200, "{preview}");
    conforms(&document, "RewindReport", &preview);
    assert_eq!(preview["seq"], first);
    assert_eq!(preview["mode"], "code");
    assert_eq!(preview["files"][0]["action"], "conflict");
    // The conflict's diff: what someone else changed.
    let diff = preview["files"][0]["diff"].as_str().unwrap_or_default();
    assert!(diff.contains("+mine"), "{diff}");
    // Without overwrite the file stays as they left it; the code-only
    // rewind makes no fork.
    let (status, kept) = post_json(
        &server,
        &format!("/v1/sessions/{id}/rewind"),
        json!({"seq": first, "mode": "code"}),
    )
    .await;
    assert_eq!(status, 200, "{kept}");
    assert_eq!(kept["files"][0]["action"], "conflict");
    assert!(
        kept.get("forked").is_none() && kept.get("overwrote").is_none(),
        "{kept}"
    );
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "ALPHA\nbeta\nmine\n"
    );
    let sessions = server.get_json("/v1/sessions").await;
    assert_eq!(sessions["sessions"].as_array().map(Vec::len), Some(1));

    // With overwrite it is written back all the same.
    let (status, overwritten) = post_json(
        &server,
        &format!("/v1/sessions/{id}/rewind"),
        json!({"seq": first, "mode": "code", "overwrite": true}),
    )
    .await;
    assert_eq!(status, 200, "{overwritten}");
    conforms(&document, "RewindReport", &overwritten);
    assert_eq!(overwritten["overwrote"], true, "{overwritten}");
    assert_eq!(std::fs::read(&notes).unwrap(), NOTES.as_bytes());

    // Another edit, then an undo without a body takes it back.
    let mut sse = server.sse(&id, None).await;
    let again = server.input(&id, "edit again").await;
    sse.result_of(again).await;
    idle(&server, &id).await;
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "ALPHA\nbeta\n");
    let response = server.post(&undo).send().await.unwrap();
    assert_eq!(response.status(), 200);
    let undone: Value = response.json().await.unwrap();
    conforms(&document, "RewindReport", &undone);
    assert_eq!(undone["files"][0]["action"], "restore", "{undone}");
    assert_eq!(std::fs::read(&notes).unwrap(), NOTES.as_bytes());
    let error = error_of(server.post(&undo), 409).await;
    assert!(error.contains("nothing to undo"), "{error}");
}

#[tokio::test]
async fn rewind_refuses_bad_bodies_unknown_sessions_other_seqs_and_a_running_turn() {
    let f = Fixture::with_script(Script::from_toml_str(REWIND_SCRIPT).expect("script")).await;
    let (server, id, first, _) = edited_session(&f).await;
    let path = format!("/v1/sessions/{id}/rewind");
    for (body, names) in [
        (json!({}), "seq"),
        (json!({"seq": "3"}), "seq"),
        (json!({"seq": first, "mode": "everything"}), "mode"),
        (json!({"seq": first, "force": true}), "force"),
        (json!({"seq": first, "preview": "yes"}), "preview"),
    ] {
        let error = error_of(server.post(&path).json(&body), 400).await;
        assert!(error.contains(names), "{body}: {error}");
    }
    let error = error_of(
        server
            .post(&format!("/v1/sessions/{id}/undo"))
            .json(&json!({"force": true})),
        400,
    )
    .await;
    assert!(error.contains("force"), "{error}");
    // A seq that is not a user turn's: the log stands in the way (as a
    // fork point past its end), not the request's form.
    let error = error_of(server.post(&path).json(&json!({"seq": first + 1})), 409).await;
    assert!(error.contains("not the start of a user turn"), "{error}");
    // No such session.
    let missing = "ffffffff-ffff-7fff-bfff-ffffffffffff";
    error_of(server.get(&format!("/v1/sessions/{missing}/rewind")), 404).await;
    error_of(
        server
            .post(&format!("/v1/sessions/{missing}/rewind"))
            .json(&json!({"seq": 1})),
        404,
    )
    .await;
    error_of(server.post(&format!("/v1/sessions/{missing}/undo")), 404).await;

    // While a turn runs: a preview is answered, a rewind or undo refused.
    let mut sse = server.sse(&id, None).await;
    let stalled = server.input(&id, "stall").await;
    sse.until(|e| e["type"] == "stream_event").await;
    let (status, preview) = post_json(&server, &path, json!({"seq": first, "preview": true})).await;
    assert_eq!(status, 200, "{preview}");
    for request in [
        server
            .post(&path)
            .json(&json!({"seq": first, "mode": "code"})),
        server.post(&format!("/v1/sessions/{id}/undo")),
    ] {
        let error = error_of(request, 409).await;
        assert!(
            error.contains("running a turn") && error.contains("interrupt"),
            "{error}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(f.workspace().join("notes.txt")).unwrap(),
        "ALPHA\nbeta\n"
    );
    server
        .post(&format!("/v1/sessions/{id}/interrupt"))
        .send()
        .await
        .unwrap();
    sse.result_of(stalled).await;
}

/// `GET .../history`: a whole number of turns, newest first, with where to
/// ask for the ones before and what the earlier events said; its
/// parameters checked. `PATCH /v1/sessions/{id}`: a title, announced on
/// the lifecycle stream, and refused when blank or unknown fields come.
#[tokio::test]
async fn history_pages_whole_turns_and_patch_renames_a_session() {
    let script = r#"
[[response]]
text = "First."
usage = { input_tokens = 10, output_tokens = 1 }
[[response]]
text = "Second."
usage = { input_tokens = 20, output_tokens = 2 }
[[response]]
text = "Third."
usage = { input_tokens = 30, output_tokens = 3 }
"#;
    let f = Fixture::with_script(Script::from_toml_str(script).expect("script")).await;
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let mut last = 0;
    for text in ["one", "two", "three"] {
        let input = server.input(&id, text).await;
        last = sse.result_of(input).await["seq"].as_u64().unwrap();
    }
    // The history reads the store: asked again until the last result is in.
    let deadline = std::time::Instant::now() + crate::support::GUARD;
    let record = loop {
        let record: Value = server.get_json(&format!("/v1/sessions/{id}")).await;
        if record["last_seq"].as_u64().unwrap() >= last || std::time::Instant::now() > deadline {
            break record;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };

    let newest: Value = server
        .get_json(&format!("/v1/sessions/{id}/history?turns=2"))
        .await;
    let events = newest["events"].as_array().unwrap();
    assert_eq!(events[0]["type"], "user", "{newest}");
    assert_eq!(events[0]["text"], "two", "{newest}");
    assert_eq!(events.last().unwrap()["type"], "result", "{newest}");
    assert_eq!(newest["next_before"], events[0]["seq"], "{newest}");
    assert_eq!(newest["last_seq"], record["last_seq"], "{newest}");
    let earlier = &newest["earlier"];
    assert_eq!(
        earlier["events"][0]["subtype"], "session_started",
        "{newest}"
    );
    assert_eq!(earlier["results"].as_array().unwrap().len(), 1, "{newest}");
    assert_eq!(earlier["results"][0]["turns"], 1, "{newest}");
    assert_eq!(
        earlier["results"][0]["usage"]["input_tokens"], 10,
        "{newest}"
    );

    let older: Value = server
        .get_json(&format!(
            "/v1/sessions/{id}/history?turns=2&before={}",
            newest["next_before"]
        ))
        .await;
    let events = older["events"].as_array().unwrap();
    assert_eq!(events[0]["subtype"], "session_started", "{older}");
    assert!(events.iter().any(|e| e["text"] == "one"), "{older}");
    assert!(
        events
            .iter()
            .all(|e| e["seq"].as_u64() < newest["next_before"].as_u64())
    );
    assert!(older["next_before"].is_null(), "{older}");
    assert!(older.get("earlier").is_none(), "{older}");

    for query in ["turns=0", "turns=1001", "before=0", "before=x", "turns=-1"] {
        error_of(
            server.get(&format!("/v1/sessions/{id}/history?{query}")),
            400,
        )
        .await;
    }
    error_of(server.get("/v1/sessions/nosuchsession/history"), 404).await;

    let mut lifecycle = crate::support::server::EventStream::open(server.get("/v1/events")).await;
    let patch = |body: Value| {
        server
            .http
            .patch(format!("{}/v1/sessions/{id}", server.url))
            .bearer_auth(&server.token)
            .json(&body)
    };
    let renamed: Value = patch(json!({"title": "  A better title "}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(renamed["title"], "A better title", "{renamed}");
    let event = lifecycle.until(|e| e["kind"] == "renamed").await;
    assert_eq!(event["session_id"], json!(id), "{event}");
    let listed: Value = server.get_json("/v1/sessions").await;
    assert_eq!(listed["sessions"][0]["title"], "A better title", "{listed}");
    let error = error_of(patch(json!({"title": "  "})), 400).await;
    assert!(error.contains("blank"), "{error}");
    let error = error_of(patch(json!({"titel": "x"})), 400).await;
    assert!(error.contains("titel"), "{error}");
    error_of(patch(json!({"title": "x".repeat(201)})), 400).await;
    error_of(
        server
            .http
            .patch(format!("{}/v1/sessions/nosuchsession", server.url))
            .bearer_auth(&server.token)
            .json(&json!({"title": "x"})),
        404,
    )
    .await;
}
