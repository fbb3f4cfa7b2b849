//! The fault matrix (`docs/faults.md`), the rows no other module shows:
//! the real binary against a store another process keeps locked, against
//! store files that are not a usable store, with two clients sending inputs
//! to one session at once, behind a provider whose connections are reset,
//! with a tool past its timeout and (through the library face, which runs
//! tools the same way) a tool that panics.

use crate::support::server::error_of;
use crate::support::store_lock::StoreLock;
use crate::support::*;
use agentbus_testkit::Script;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// A script answering every query with "Answer to QUERY.", `n` times.
fn answers(n: usize) -> Script {
    Script::from_toml_str(&"[[response]]\ntext = \"Answer to {last_user}.\"\n".repeat(n))
        .expect("script")
}

// ------------------------------------------------------- the locked store

#[tokio::test]
async fn a_store_locked_past_the_busy_timeout_fails_clearly_and_works_once_released() {
    let fx = Fixture::with_script(answers(3)).await;
    fx.add_config("[sessions]\nbusy_timeout_ms = 200\n");
    let server = fx.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let path = fx.database().display().to_string();

    let lock = StoreLock::take(&fx);
    // A new session needs a write: refused, saying why, after the timeout.
    let refused = error_of(server.post("/v1/sessions").json(&json!({})), 503).await;
    assert!(refused.contains(&path), "{refused}");
    assert!(refused.contains("locked by another process"), "{refused}");
    assert!(refused.contains("200 ms"), "{refused}");
    // Reading is not blocked.
    let listed = server.get_json("/v1/sessions").await;
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(1));
    // An input cannot be stored, so it is not accepted: refused the same
    // way, and nothing is queued. (A turn already running when the store
    // fails goes on: `durability::a_full_disk_is_a_store_error_...`.)
    let refused = error_of(
        server
            .post(&format!("/v1/sessions/{id}/input"))
            .json(&json!({ "text": "refused" })),
        503,
    )
    .await;
    assert!(refused.contains("not accepted"), "{refused}");
    assert!(refused.contains(&path), "{refused}");
    assert!(refused.contains("locked by another process"), "{refused}");

    lock.release();
    let first = server.input(&id, "one").await;
    assert_eq!(first, 1, "the refused input took no id");
    let result = sse.result_of(first).await;
    assert_eq!(result["text"], "Answer to one.");
    let turn: Vec<Value> = sse
        .events
        .iter()
        .filter(|e| e["turn_id"] == first && e["type"] != "stream_event")
        .cloned()
        .collect();
    assert!(turn.iter().all(|e| e["type"] != "error"), "{turn:#?}");
    let stored = server
        .get_json(&format!("/v1/sessions/{id}/messages"))
        .await;
    let stored: Vec<Value> = stored["events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["turn_id"] == first)
        .collect();
    assert_eq!(stored, turn, "the turn after the lock is stored whole");
    assert!(
        !sse.events.iter().any(|e| e.to_string().contains("refused")),
        "the refused input is nowhere"
    );
    server.create_session().await;

    server.terminate();
    let (status, stderr) = server.wait().await;
    assert_eq!(status.code(), Some(0), "{stderr}");
}

#[tokio::test]
async fn run_against_a_locked_store_exits_1_naming_it_then_runs_once_released() {
    let fx = Fixture::with_script(answers(2)).await;
    fx.add_config("[sessions]\nbusy_timeout_ms = 100\n");
    let out = fx.run(&["sessions", "list"]).await;
    assert_eq!(out.code(), Some(0), "the store exists: {}", out.stderr);

    let lock = StoreLock::take(&fx);
    let out = fx.run(&["run", "--json", "hello"]).await;
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains(&fx.database().display().to_string()),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("locked by another process"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty(), "{:?}", out.stdout);
    assert!(fx.server.model_calls().is_empty(), "no turn started");

    lock.release();
    let out = fx.run(&["run", "--json", "hello"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert_eq!(the_result(&out.events())["text"], "Answer to hello.");
}

// ------------------------------------------- a store file that is not one

/// A store file as a test leaves it: its bytes, and what agentbus must say.
struct BadStore {
    what: &'static str,
    bytes: Vec<u8>,
    says: Vec<String>,
}

/// Phrases as owned strings.
fn phrases(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}

/// The bytes of a real store holding one session, checkpointed (the whole
/// database in the one file).
async fn real_store() -> Vec<u8> {
    let fx = Fixture::with_script(answers(1)).await;
    let out = fx.run(&["run", "--json", "hello"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let conn = rusqlite::Connection::open(fx.database()).expect("open");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    drop(conn);
    std::fs::read(fx.database()).expect("read the store")
}

/// A SQLite database of another program, at schema version `version`.
fn foreign_database(version: i64) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("other.db");
    let conn = rusqlite::Connection::open(&path).expect("create");
    conn.execute_batch(&format!(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
         INSERT INTO users (name) VALUES ('ada'), ('grace');
         PRAGMA user_version = {version};"
    ))
    .expect("fill");
    drop(conn);
    std::fs::read(&path).expect("read")
}

/// `bytes` with the SQLite header's `user_version` set to `version`.
fn with_user_version(mut bytes: Vec<u8>, version: i32) -> Vec<u8> {
    bytes[60..64].copy_from_slice(&version.to_be_bytes());
    bytes
}

#[tokio::test]
async fn a_corrupt_foreign_or_newer_store_file_is_refused_and_left_untouched() {
    let real = real_store().await;
    assert!(
        real.len() >= 4 * 4096,
        "a store of several pages: {}",
        real.len()
    );
    let cases = [
        BadStore {
            what: "garbage",
            bytes: b"this is not a database\n".repeat(300),
            says: phrases(&["not a SQLite database"]),
        },
        BadStore {
            what: "zero-length",
            bytes: Vec::new(),
            says: phrases(&["empty (0 bytes)"]),
        },
        BadStore {
            what: "truncated to half",
            bytes: real[..real.len() / 2].to_vec(),
            says: vec![
                "damaged".into(),
                format!("truncated, its header says {} bytes", real.len()),
            ],
        },
        BadStore {
            what: "truncated inside the header",
            bytes: real[..50].to_vec(),
            says: phrases(&["truncated: 50 bytes"]),
        },
        BadStore {
            what: "another program's database",
            bytes: foreign_database(0),
            says: phrases(&["another program's SQLite database", "users"]),
        },
        BadStore {
            what: "another program's database at version 1",
            bytes: foreign_database(1),
            says: phrases(&["another program's SQLite database", "users"]),
        },
        BadStore {
            what: "a newer agentbus's store",
            bytes: with_user_version(real.clone(), 99),
            says: phrases(&["schema version 99", "upgrade agentbus"]),
        },
    ];

    let fx = Fixture::with_script(answers(1)).await;
    let path = fx.database();
    std::fs::create_dir_all(path.parent().expect("data dir")).expect("data dir");
    for case in cases {
        std::fs::write(&path, &case.bytes).expect("write the store file");
        for command in [
            &["run", "--json", "hello"][..],
            &["sessions", "list"],
            &["serve", "--listen", "127.0.0.1:0"],
        ] {
            let out = fx.run(command).await;
            let what = format!("{} / {}", case.what, command[0]);
            assert_eq!(out.code(), Some(1), "{what}: {}", out.stderr);
            assert!(out.stdout.is_empty(), "{what}: {:?}", out.stdout);
            let said = &out.stderr;
            assert!(said.contains(&path.display().to_string()), "{what}: {said}");
            for words in &case.says {
                assert!(said.contains(words.as_str()), "{what}: {words:?} in {said}");
            }
            assert!(
                std::fs::read(&path).expect("the file is still there") == case.bytes,
                "{what}: the file was changed"
            );
        }
        for leftover in ["agentbus.db-wal", "agentbus.db-shm"] {
            let _ = std::fs::remove_file(path.with_file_name(leftover));
        }
    }
    assert!(fx.server.model_calls().is_empty(), "no turn ever started");
}

// ------------------------------------------------- two clients at once

#[tokio::test]
async fn inputs_from_two_clients_at_once_run_in_input_order_each_answered_once() {
    const PER_CLIENT: usize = 15;
    let fx = Fixture::with_script(answers(2 * PER_CLIENT)).await;
    let server = fx.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;

    // Two clients (two connection pools), every request in flight at once.
    let url = format!("{}/v1/sessions/{id}/input", server.url);
    let mut sends = Vec::new();
    for client in ["a", "b"] {
        let http = reqwest::Client::new();
        for n in 0..PER_CLIENT {
            let (http, url, token) = (http.clone(), url.clone(), server.token.clone());
            let text = format!("{client}{n:02}");
            sends.push(async move {
                let response = http
                    .post(&url)
                    .bearer_auth(token)
                    .json(&json!({ "text": text }))
                    .send()
                    .await
                    .expect("the server answers");
                assert_eq!(response.status(), 202, "{text}");
                let accepted: Value = response.json().await.expect("JSON");
                (accepted["input_id"].as_u64().expect("an input id"), text)
            });
        }
    }
    let accepted: BTreeMap<u64, String> =
        futures::future::join_all(sends).await.into_iter().collect();
    assert_eq!(accepted.len(), 2 * PER_CLIENT, "every input id is its own");

    let last = *accepted.keys().last().expect("inputs");
    sse.result_of(last).await;
    let of = |kind: &str| -> Vec<(u64, Value)> {
        sse.events
            .iter()
            .filter(|e| e["type"] == kind)
            .map(|e| (e["turn_id"].as_u64().expect("a turn id"), e.clone()))
            .collect()
    };
    let in_order: Vec<u64> = accepted.keys().copied().collect();
    let results = of("result");
    assert_eq!(
        results.iter().map(|(turn, _)| *turn).collect::<Vec<_>>(),
        in_order,
        "one result per input, in input order"
    );
    for (turn, result) in &results {
        assert_eq!(result["stop_reason"], "end_turn");
        assert_eq!(result["text"], format!("Answer to {}.", accepted[turn]));
    }
    let users = of("user");
    assert_eq!(
        users.iter().map(|(turn, _)| *turn).collect::<Vec<_>>(),
        in_order
    );
    for (turn, user) in &users {
        assert_eq!(user["text"], accepted[turn].as_str());
    }
    // Turns never overlap: each starts after the one before it ended.
    let position = |kind: &str, turn: u64| {
        sse.events
            .iter()
            .position(|e| e["type"] == kind && e["turn_id"] == turn)
            .expect("the event")
    };
    for pair in in_order.windows(2) {
        assert!(position("result", pair[0]) < position("user", pair[1]));
    }
    // The model was asked in the same order, each query once.
    let asked: Vec<String> = fx
        .request_messages()
        .iter()
        .map(|messages| {
            let user = messages.iter().rev().find(|m| m["role"] == "user");
            user.and_then(|m| m["content"].as_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(asked, accepted.values().cloned().collect::<Vec<_>>());
    // The store holds the same: one result per input.
    let stored = server
        .get_json(&format!("/v1/sessions/{id}/messages"))
        .await;
    let stored_results: Vec<u64> = stored["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["type"] == "result")
        .map(|e| e["turn_id"].as_u64().expect("a turn id"))
        .collect();
    assert_eq!(stored_results, in_order);
    fx.assert_requests_valid();
}

// --------------------------------------------------- connection resets

/// What the proxy does with one connection.
#[derive(Clone, Copy)]
enum Fate {
    /// Relay the request and the answer's first `frames` SSE frames, then
    /// reset the connection (RST, not a clean close).
    ResetAfterFrames(usize),
    /// Reset as soon as the request arrives, before any answer.
    ResetAtRequest,
    /// Relay both ways.
    Relay,
}

/// A TCP proxy in front of `upstream` giving its connections, in the order
/// their requests arrive, the fates listed (then [`Fate::Relay`]); its
/// address. A connection closed before it sent anything (agentbus's start
/// check, which only sees that a server is there) takes no fate.
async fn resetting_proxy(upstream: std::net::SocketAddr, fates: Vec<Fate>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let fates = std::sync::Arc::new(std::sync::Mutex::new(fates.into_iter()));
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let fates = fates.clone();
            tokio::spawn(async move {
                if !matches!(client.peek(&mut [0u8; 1]).await, Ok(n) if n > 0) {
                    return;
                }
                let fate = fates.lock().unwrap().next().unwrap_or(Fate::Relay);
                proxy_one(client, upstream, fate).await;
            });
        }
    });
    format!("http://{addr}")
}

async fn proxy_one(mut client: TcpStream, upstream: std::net::SocketAddr, fate: Fate) {
    client.set_zero_linger().expect("SO_LINGER 0");
    let mut buffer = vec![0u8; 16 * 1024];
    match fate {
        Fate::ResetAtRequest => {
            let _ = client.read(&mut buffer).await;
        }
        Fate::Relay => {
            if let Ok(mut server) = TcpStream::connect(upstream).await {
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            }
        }
        Fate::ResetAfterFrames(frames) => {
            let Ok(mut server) = TcpStream::connect(upstream).await else {
                return;
            };
            let (mut from_client, mut to_client) = client.split();
            let (mut from_server, mut to_server) = server.split();
            let request = tokio::io::copy(&mut from_client, &mut to_server);
            let answer = async {
                // Everything before the start of frame `frames + 1` is
                // relayed, then the connection is reset.
                let mut seen = Vec::new();
                let mut relayed = 0;
                loop {
                    let n = from_server.read(&mut buffer).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buffer[..n]);
                    let cut = seen
                        .windows(5)
                        .enumerate()
                        .filter(|(_, w)| w == b"data:")
                        .nth(frames)
                        .map(|(at, _)| at);
                    let end = cut.unwrap_or(seen.len());
                    if to_client.write_all(&seen[relayed..end]).await.is_err() {
                        return;
                    }
                    relayed = end;
                    if cut.is_some() {
                        return;
                    }
                }
            };
            tokio::select! {
                _ = request => {}
                _ = answer => {}
            }
        }
    }
    // Dropped with SO_LINGER 0: the peer gets a reset.
}

#[tokio::test]
async fn connections_reset_by_the_provider_are_retried_and_nothing_is_said_twice() {
    for (provider, profile) in [("openai", "/v1"), ("anthropic", "")] {
        let script = Script::from_toml_str(
            "[[response]]\ntext = \"Partial words that never end\"\nchunk_size = 5\n\
             [[response]]\ntext = \"The answer, said once.\"\nchunk_size = 6\n",
        )
        .expect("script");
        let fx = Fixture::with_script(script).await;
        let proxy = resetting_proxy(
            fx.server.addr(),
            vec![Fate::ResetAfterFrames(4), Fate::ResetAtRequest],
        )
        .await;
        fx.add_config(&format!(
            "[models.reset]\nprovider = \"{provider}\"\nmodel = \"scripted-main\"\n\
             base_url = \"{proxy}{profile}\"\napi_key = \"k\"\nretry_base_delay_ms = 1\n"
        ));
        let out = fx
            .run(&["run", "--json", "--model", "reset", "question"])
            .await;
        assert_eq!(out.code(), Some(0), "{provider}: {}", out.stderr);
        let events = out.events();
        assert_gap_free(&events);
        let retries: Vec<&Value> = events
            .iter()
            .filter(|e| e["subtype"] == "retrying")
            .collect();
        assert_eq!(retries.len(), 2, "{provider}: {retries:#?}");
        for retry in &retries {
            let reason = retry["data"]["reason"].as_str().unwrap_or_default();
            assert!(reason.contains("reset by peer"), "{provider}: {reason}");
        }
        let result = the_result(&events);
        assert_eq!(result["stop_reason"], "end_turn");
        assert_eq!(result["text"], "The answer, said once.", "{provider}");
        // What streamed before a reset was taken back: the text shown after
        // the last `discard` is the answer, once.
        let last_discard = events
            .iter()
            .rposition(|e| e["event"]["type"] == "discard")
            .map_or(0, |at| at + 1);
        let shown: String = events[last_discard..]
            .iter()
            .filter(|e| e["event"]["type"] == "text_delta")
            .filter_map(|e| e["event"]["text"].as_str())
            .collect();
        assert_eq!(shown, "The answer, said once.", "{provider}");
        assert_eq!(of_type(&events, "assistant").len(), 1, "{provider}");
        assert_eq!(fx.server.model_calls().len(), 2, "{provider}");
    }
}

#[tokio::test]
async fn anthropic_overloaded_529_is_retried_and_the_answer_said_once() {
    let fx = Fixture::with_script(
        Script::from_toml_str(
            "[[response]]\nstatus = 529\n\
             body = '{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}'\n\
             [[response]]\ntext = \"The answer, said once.\"\n",
        )
        .expect("script"),
    )
    .await;
    let out = fx
        .run(&["run", "--json", "--model", "scripted-anthropic", "question"])
        .await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let retries: Vec<&Value> = events
        .iter()
        .filter(|e| e["subtype"] == "retrying")
        .collect();
    assert_eq!(retries.len(), 1, "{retries:#?}");
    let reason = retries[0]["data"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("HTTP 529"), "{reason}");
    assert!(reason.contains("Overloaded"), "{reason}");
    assert_eq!(the_result(&events)["text"], "The answer, said once.");
    assert_eq!(of_type(&events, "assistant").len(), 1);
    assert_eq!(fx.server.model_calls().len(), 2);
}

#[tokio::test]
async fn retries_used_up_end_the_turn_with_an_error_and_the_session_goes_on() {
    let fx = Fixture::flaky_then_back().await;
    let out = fx
        .run(&["run", "--json", "--model", "flaky", "question"])
        .await;
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    let events = out.events();
    let errors = of_type(&events, "error");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["kind"], "provider");
    let message = errors[0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("HTTP 503: still down"), "{message}");
    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "error");
    assert_eq!(fx.server.model_calls().len(), 2, "one try and one retry");

    let id = session_id(&events);
    let again = fx
        .run(&["run", "--json", "--session", &id, "and now?"])
        .await;
    assert_eq!(again.code(), Some(0), "{}", again.stderr);
    assert_eq!(the_result(&again.events())["text"], "Back.");
    let stored = fx.run(&["sessions", "show", "--json", &id]).await;
    let stored = stored.events();
    assert!(
        stored
            .iter()
            .any(|e| e["type"] == "error" && e["kind"] == "provider"),
        "the error is stored"
    );
    fx.assert_requests_valid();
}

// ------------------------------------------------------------ tools

#[tokio::test]
async fn a_tool_past_its_timeout_is_stopped_and_the_turn_goes_on() {
    let fx = Fixture::with_script(
        Script::from_toml_str(
            "[[response]]\ntool_calls = [ { id = \"t1\", name = \"bash\", arguments = { command = \"sleep 600\" } } ]\n\
             [[response]]\ntext = \"Saw: {last_tool_result}\"\n",
        )
        .expect("script"),
    )
    .await;
    fx.add_config("[tools]\ntimeout_secs = 1\n");
    let out = fx.run(&["run", "--json", "wait"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let results = of_type(&events, "tool_result");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["is_error"], true);
    let output = results[0]["output"].as_str().unwrap_or_default();
    assert!(
        output.contains("`bash` timed out after 1 s and was stopped"),
        "{output}"
    );
    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "end_turn");
    assert!(
        result["text"]
            .as_str()
            .unwrap_or_default()
            .contains("timed out after 1 s"),
        "the model read why: {result}"
    );
    fx.assert_requests_valid();
}

mod panicking_tool {
    use agentbus_engine::embedded::{
        Agent, AgentMessage, Provider, Tool, ToolContext, ToolError, ToolOrigin, ToolOutput,
        ToolSpec,
    };
    use agentbus_testkit::{Script, ScriptedModel};
    use futures::future::BoxFuture;
    use serde_json::{Value, json};

    /// A tool with a bug: every call panics.
    struct Explodes;

    impl Tool for Explodes {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "explode".into(),
                description: "Always panics.".into(),
                input_schema: std::sync::Arc::new(json!({"type": "object", "properties": {}})),
                origin: ToolOrigin::Builtin,
            }
        }

        fn call(
            &self,
            _input: Value,
            _ctx: ToolContext,
        ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
            Box::pin(async { panic!("the tool's own bug") })
        }
    }

    #[tokio::test]
    async fn a_panicking_tool_becomes_an_error_result_and_the_turn_goes_on() {
        let model = ScriptedModel::start(
            Script::from_toml_str(
                "[[response]]\ntool_calls = [ { id = \"x1\", name = \"explode\" } ]\n\
                 [[response]]\ntext = \"Saw: {last_tool_result}\"\n",
            )
            .expect("script"),
        )
        .await
        .expect("model server");
        agentbus_engine::runtime::install_crypto_provider();
        let agent = Agent::builder()
            .provider(Provider::openai(model.openai_base_url(), "scripted").expect("provider"))
            .tool(Explodes)
            .build()
            .expect("agent");
        let state = agent.run("go").await.expect("the turn ends");
        let events = state.events();
        let tool_result = events
            .iter()
            .find_map(|e| match &e.message {
                AgentMessage::ToolResult(t) => Some(t.clone()),
                _ => None,
            })
            .expect("a tool result");
        assert!(tool_result.is_error);
        assert!(
            tool_result
                .output
                .contains("crashed (panic: the tool's own bug)"),
            "{}",
            tool_result.output
        );
        let result = events
            .iter()
            .find_map(|e| match &e.message {
                AgentMessage::Result(r) => Some(r.clone()),
                _ => None,
            })
            .expect("a result");
        assert_eq!(
            serde_json::to_value(result.stop_reason).expect("json"),
            "end_turn"
        );
        assert!(result.text.contains("crashed"), "{}", result.text);
        assert!(model.violations().is_empty(), "{:?}", model.violations());
    }
}
