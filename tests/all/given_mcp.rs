//! MCP servers given with a session over the HTTP API (`mcp_servers` of
//! `POST /v1/sessions` and `POST /v1/sessions/{id}/open`): offered to that
//! session alone, checked like the configuration's `[mcp_servers.NAME]`
//! tables, and never stored, shown or logged with their secrets. (The ACP
//! front end's use of them, in process and attached, is in `acp::`.)

use crate::support::server::{Server, error_of};
use crate::support::{Fixture, processes_with_env, test_mcp_server};
use agentbus_testkit::{last_user_text, offered_tools};
use serde_json::{Value, json};
use std::path::Path;

/// The value of an environment variable given to a server: a secret that
/// must appear nowhere but in the server's process.
const GIVEN_SECRET: &str = "given-env-secret-never-stored-8152";

/// The kit's test server, named `given`, with `env`.
fn given_server(env: Value) -> Value {
    json!({"given": {"command": test_mcp_server(), "env": env}})
}

/// The tools offered by each model request whose last user text holds
/// `text`.
fn offered_for(fx: &Fixture, text: &str) -> Vec<Vec<String>> {
    let offered: Vec<Vec<String>> = fx
        .server
        .model_calls()
        .iter()
        .filter(|c| last_user_text(&c.body).is_some_and(|t| t.contains(text)))
        .map(|c| offered_tools(&c.body))
        .collect();
    assert!(!offered.is_empty(), "no request for {text:?}");
    offered
}

/// Run `text` in session `id` to its result.
async fn turn(server: &Server, id: &str, text: &str) -> Value {
    let mut events = server.sse(id, None).await;
    let input = server.input(id, text).await;
    events.result_of(input).await
}

/// Every file under `dir`, read whole.
fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read the data dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else if let Ok(bytes) = std::fs::read(&path) {
            found.push((path.display().to_string(), bytes));
        }
    }
    found
}

fn holds(bytes: &[u8], text: &str) -> bool {
    bytes.windows(text.len()).any(|w| w == text.as_bytes())
}

#[tokio::test]
async fn a_session_created_with_a_server_calls_it_and_no_other_session_sees_it() {
    let fx = Fixture::new("mcp_given").await;
    let server = fx.serve().await;
    let id = server
        .create_session_with(json!({"mcp_servers": given_server(json!({}))}))
        .await;
    let other = server.create_session().await;
    let result = turn(&server, &id, "echo please").await;
    assert_eq!(result["text"], "echoed: from the given server", "{result}");
    let plain = turn(&server, &other, "plain, please").await;
    assert_eq!(plain["text"], "no tools needed", "{plain}");
    for tools in offered_for(&fx, "echo") {
        assert!(tools.contains(&"mcp__given__echo".to_string()), "{tools:?}");
    }
    for tools in offered_for(&fx, "plain") {
        assert!(
            tools.iter().all(|t| !t.starts_with("mcp__given__")),
            "{tools:?}"
        );
    }
    let shared = server.get_json("/v1/tools").await.to_string();
    assert!(!shared.contains("mcp__given__"), "{shared}");
}

#[tokio::test]
async fn a_given_servers_env_is_never_stored_shown_exported_or_logged() {
    let fx = Fixture::new("mcp_given").await;
    let server = fx.serve().await;
    let env = json!({"GIVEN_SECRET": GIVEN_SECRET});
    let id = server
        .create_session_with(json!({"mcp_servers": given_server(env)}))
        .await;
    let result = turn(&server, &id, "echo please").await;
    assert_eq!(result["text"], "echoed: from the given server", "{result}");
    // The server process did get it.
    assert_eq!(
        processes_with_env(&format!("GIVEN_SECRET={GIVEN_SECRET}")).len(),
        1,
        "the server runs with its env"
    );
    let debug = turn_reply(&server, &id, "/debug full").await;
    assert!(debug.contains("mcp__given__echo"), "{debug}");
    assert!(!debug.contains(GIVEN_SECRET), "{debug}");
    let export = server
        .get(&format!("/v1/sessions/{id}/export"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(export.contains("mcp__given__echo") && !export.contains(GIVEN_SECRET));
    let messages = server
        .get_json(&format!("/v1/sessions/{id}/messages"))
        .await
        .to_string();
    assert!(!messages.contains(GIVEN_SECRET));
    // The store (the database and its journal, whatever is on disk).
    let stored = files_under(&fx.home.path().join("data"));
    assert!(
        stored
            .iter()
            .any(|(_, bytes)| holds(bytes, "from the given server")),
        "the conversation is stored: {:?}",
        stored.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for (path, bytes) in &stored {
        assert!(!holds(bytes, GIVEN_SECRET), "{path} holds the secret");
    }
    // The daemon logs at debug level in the tests.
    assert!(
        !server.stderr().contains(GIVEN_SECRET),
        "{}",
        server.stderr()
    );
}

/// The reply (a `system` event's text and data) to the slash command
/// `text` in session `id`.
async fn turn_reply(server: &Server, id: &str, text: &str) -> String {
    let mut events = server.sse(id, None).await;
    let input = server.input(id, text).await;
    events
        .until(|e| e["type"] == "system" && e["turn_id"] == input)
        .await
        .to_string()
}

#[tokio::test]
async fn mcp_servers_are_checked_like_the_configurations_naming_server_and_field() {
    let fx = Fixture::new("mcp_given").await;
    let server = fx.serve().await;
    let create = |body: Value| server.post("/v1/sessions").json(&body);
    for (servers, says) in [
        (
            json!({"fs": {"command": 3}}),
            ["mcp_servers.fs.command", "expected a string"],
        ),
        (
            json!({"fs": {"command": "x", "colour": "red"}}),
            ["mcp_servers.fs.colour", "unknown field"],
        ),
        (
            json!({"fs": {"command": "x", "url": "http://127.0.0.1:9/mcp"}}),
            ["mcp_servers.fs", "exactly one of `command`"],
        ),
        (
            json!({"fs": {"command": "x", "env": {"A": 1}}}),
            ["mcp_servers.fs.env.A", "expected a string"],
        ),
        (json!(["fs"]), ["mcp_servers", "expected a map"]),
    ] {
        let error = error_of(create(json!({"mcp_servers": servers})), 400).await;
        assert!(says.iter().all(|s| error.contains(s)), "{servers}: {error}");
    }
    let many: serde_json::Map<String, Value> = (0..65)
        .map(|n| (format!("s{n}"), json!({"command": "x"})))
        .collect();
    let error = error_of(create(json!({"mcp_servers": many})), 400).await;
    assert!(error.contains("at most 64"), "{error}");
    let id = server.create_session().await;
    let open = |body: Value| server.post(&format!("/v1/sessions/{id}/open")).json(&body);
    let error = error_of(open(json!({"mcp_servers": {"fs": {"command": 3}}})), 400).await;
    assert!(error.contains("mcp_servers.fs.command"), "{error}");
    let error = error_of(open(json!({"servers": {}})), 400).await;
    assert!(error.contains("unknown field `servers`"), "{error}");
    error_of(
        server
            .post("/v1/sessions/no-such-session/open")
            .json(&json!({})),
        404,
    )
    .await;
    // Nothing was given by the refused requests.
    assert!(fx.server.model_calls().is_empty());
}

#[tokio::test]
async fn a_server_that_cannot_start_or_has_a_configured_name_is_said_in_the_session() {
    let fx = Fixture::new("mcp_given").await;
    fx.add_config(&format!(
        "[mcp_servers.configured]\ncommand = \"{}\"\n",
        test_mcp_server().display()
    ));
    let server = fx.serve().await;
    // A value of its own: the other tests' servers run meanwhile.
    let marker = "GIVEN_MARKER=configured-name-never-started";
    let servers = json!({
        "ghost": {"command": "/no/such/mcp-server"},
        "configured": {"command": test_mcp_server(), "env": {"GIVEN_MARKER": "configured-name-never-started"}},
    });
    let id = server
        .create_session_with(json!({"mcp_servers": servers}))
        .await;
    let mut events = server.sse(&id, None).await;
    let failed = events
        .until(|e| e["subtype"] == "mcp_server_status" && e["data"]["server"] == "ghost")
        .await;
    assert_eq!(failed["data"]["state"], "failed", "{failed}");
    let notice = events
        .until(|e| e["subtype"] == "notice" && e["message"].to_string().contains("`configured`"))
        .await;
    assert!(
        notice["message"]
            .as_str()
            .unwrap()
            .contains("a configured server has this name"),
        "{notice}"
    );
    assert!(
        processes_with_env(marker).is_empty(),
        "the given `configured` was not started"
    );
    // The session works on; the daemon too.
    let reopened = server
        .post(&format!("/v1/sessions/{id}/open"))
        .json(&json!({"mcp_servers": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(reopened.status(), 200);
    let session: Value = reopened.json().await.unwrap();
    assert_eq!(session["loaded"], true, "{session}");
    server.get_json("/v1/health").await;
}
