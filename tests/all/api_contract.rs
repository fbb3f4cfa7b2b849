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
    assert_eq!(shapes, 24, "a query and 23 control commands");
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
