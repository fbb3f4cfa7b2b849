//! MCP servers end to end: the built binary with real MCP servers — the npm
//! reference server `server-everything` over stdio and streamable HTTP, and
//! the test kit's own server that can crash, hang, fail to start and grow
//! its tool list — driven by the scripted model.

use crate::support::*;
use agentbus_testkit::offered_tools;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader};

fn statuses<'a>(events: &'a [Value], server: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["subtype"] == "mcp_server_status" && e["data"]["server"] == server)
        .collect()
}

fn tool_results(events: &[Value]) -> Vec<&Value> {
    of_type(events, "tool_result")
}

/// The index of the first event that satisfies `pred` (fails without one).
fn at(events: &[Value], pred: impl Fn(&Value) -> bool) -> usize {
    events
        .iter()
        .position(pred)
        .unwrap_or_else(|| panic!("no such event in {events:#?}"))
}

/// A FIFO the kit's test server waits at before it starts
/// (`TEST_MCP_START_GATE`): the server is "still starting" until the test
/// opens the gate, and waits at it again at each restart.
struct StartGate(PathBuf);

/// The test server with `extra` settings, and a first turn that would
/// wait ten minutes for it: what the turn does is up to the server.
fn waited_for_test_server(extra: &str) -> String {
    format!(
        "[mcp]\nfirst_turn_wait_secs = 600\n{}",
        test_server_config(extra)
    )
}

impl StartGate {
    fn new(fx: &Fixture) -> StartGate {
        let path = fx.home.path().join("start-gate");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
        StartGate(path)
    }

    /// The `env` entry that makes the test server wait at this gate.
    fn env(&self) -> String {
        format!("TEST_MCP_START_GATE = \"{}\"", self.0.display())
    }

    /// Let the server waiting at the gate start (waits until one is there).
    async fn open(&self) {
        let path = self.0.clone();
        let (opened_tx, opened) = tokio::sync::oneshot::channel();
        // A thread of its own, not the runtime's blocking pool: if no server
        // ever comes, the test fails at GUARD instead of hanging at exit.
        std::thread::spawn(move || {
            // Opening a FIFO for writing waits for its reader; closing it
            // ends the reader's read.
            let opened = std::fs::OpenOptions::new().write(true).open(&path);
            let _ = opened_tx.send(opened.map(drop));
        });
        tokio::time::timeout(GUARD, opened)
            .await
            .expect("no server came to the start gate")
            .expect("the gate's thread")
            .expect("open the start gate");
    }
}

/// `[mcp_servers.test]` running the kit's test server with `extra` lines.
fn test_server_config(extra: &str) -> String {
    format!(
        "[mcp_servers.test]\ncommand = \"{}\"\n{extra}\n",
        test_mcp_server().display()
    )
}

#[tokio::test]
async fn everything_over_stdio_answers_echo_and_get_sum() {
    let fx = Fixture::new("mcp_everything").await;
    fx.add_config(&format!(
        "[mcp_servers.everything]\ncommand = \"{}\"\nargs = [\"stdio\"]\n",
        npm_mcp_bin().join("mcp-server-everything").display()
    ));
    let out = fx
        .run(&["run", "--json", "Use the everything server"])
        .await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    assert_gap_free(&events);
    let results = tool_results(&events);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["output"], "Echo: hello from the model");
    assert_eq!(results[0]["is_error"], false);
    assert!(
        results[1]["output"].as_str().unwrap().contains('5'),
        "{}",
        results[1]
    );
    let ready = statuses(&events, "everything");
    assert!(
        ready.iter().any(|s| s["data"]["state"] == "ready"),
        "{ready:#?}"
    );

    // The model received the results.
    let last = fx.request_messages().pop().unwrap();
    let tool_messages: Vec<&Value> = last.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_messages[0]["content"], "Echo: hello from the model");
    assert!(the_result(&events)["text"].as_str().unwrap().contains('5'));
    fx.assert_requests_valid();
}

#[tokio::test]
async fn everything_over_streamable_http_answers_echo() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut server = tokio::process::Command::new(npm_mcp_bin().join("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start mcp-server-everything streamableHttp");
    // It says when it listens (on stdout or stderr, depending on version).
    let mut stdout = BufReader::new(server.stdout.take().unwrap()).lines();
    let mut stderr = BufReader::new(server.stderr.take().unwrap()).lines();
    tokio::time::timeout(GUARD, async {
        loop {
            let line = tokio::select! {
                l = stdout.next_line() => l,
                l = stderr.next_line() => l,
            };
            match line {
                Ok(Some(l)) if l.contains(&port.to_string()) => return,
                Ok(Some(_)) => continue,
                _ => panic!("the HTTP server ended before listening"),
            }
        }
    })
    .await
    .expect("the HTTP server listens");

    let fx = Fixture::new("mcp_everything").await;
    fx.add_config(&format!(
        "[mcp_servers.everything]\nurl = \"http://127.0.0.1:{port}/mcp\"\nheaders = {{ Authorization = \"Bearer test-token\" }}\n"
    ));
    let out = fx
        .run(&["run", "--json", "Use the everything server"])
        .await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let results = tool_results(&events);
    assert_eq!(results[0]["output"], "Echo: hello from the model");
    assert!(results[1]["output"].as_str().unwrap().contains('5'));
    let _ = server.kill().await;
}

#[tokio::test]
async fn a_missing_command_is_reported_and_the_turn_runs_anyway() {
    let fx = Fixture::new("plain_reply").await;
    fx.add_config("[mcp_servers.ghost]\ncommand = \"/nonexistent/mcp-server\"\n");
    let out = fx.run(&["run", "--json", "hi"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");
    let failed = statuses(&events, "ghost");
    let failure = failed
        .iter()
        .find(|s| s["data"]["state"] == "failed")
        .expect("a failed status");
    let message = failure["message"].as_str().unwrap();
    assert!(
        message.contains("/nonexistent/mcp-server") && message.contains("No such file"),
        "{message}"
    );
    // Known to have failed before the session started: nothing waits.
    assert!(
        !events.iter().any(|e| e["subtype"] == "mcp_waiting"),
        "{events:#?}"
    );
}

/// MCP never starts (bounded by `first_turn_wait_secs`): a server that
/// hangs at start holds the first turn up for `[mcp] first_turn_wait_secs`
/// (here 1 s; its own `startup_timeout_secs` is 600), said before and
/// after; the turn goes on without it, and exiting reaps it.
#[tokio::test]
async fn a_server_that_never_starts_holds_the_first_turn_only_for_first_turn_wait_secs() {
    let fx = Fixture::new("plain_reply").await;
    let pid_file = fx.home.path().join("slow.pid");
    fx.add_config(&format!(
        "[mcp]\nfirst_turn_wait_secs = 1\n[mcp_servers.slow]\ncommand = \"{}\"\nargs = [\"--hang-start\"]\nstartup_timeout_secs = 600\nenv = {{ TEST_MCP_PID_FILE = \"{}\" }}\n",
        test_mcp_server().display(),
        pid_file.display()
    ));
    let out = fx.run(&["run", "--json", "hi"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");
    let waiting = at(&events, |e| e["subtype"] == "mcp_waiting");
    assert_eq!(events[waiting]["data"]["servers"], json!(["slow"]));
    assert_eq!(events[waiting]["data"]["max_wait_ms"], 1000);
    let gave_up = at(&events, |e| {
        e["subtype"] == "notice"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("`slow`") && m.contains("still starting after 1 s"))
    });
    let answered = at(&events, |e| e["type"] == "assistant");
    assert!(waiting < gave_up && gave_up < answered, "{events:#?}");
    assert!(
        !offered_tools(&fx.server.model_calls()[0].body)
            .iter()
            .any(|t| t.starts_with("mcp__slow__"))
    );
    let slow = statuses(&events, "slow");
    assert!(!slow.is_empty());
    assert!(
        slow.iter().all(|s| s["data"]["state"] == "starting"),
        "the turn ended while the server was still starting: {slow:#?}"
    );
    // Exiting stopped the hanging server and reaped it (found by the unique
    // path in its environment, whether or not it got to write the file).
    let marker = format!("TEST_MCP_PID_FILE={}", pid_file.display());
    assert_eq!(
        processes_with_env(&marker),
        Vec::<u32>::new(),
        "server processes outlived agentbus"
    );
}

#[tokio::test]
async fn a_killed_server_fails_its_call_restarts_and_works_again() {
    let fx = Fixture::new("mcp_lifecycle").await;
    let pid_file = fx.home.path().join("test.pid");
    fx.add_config(&test_server_config(&format!(
        "env = {{ TEST_MCP_PID_FILE = \"{}\" }}",
        pid_file.display()
    )));
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("first\n").await;
    let first = chat.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(first["text"], "first done: one");
    let first_pid = read_pid(&pid_file);

    // The second query's call is in flight when the server is killed.
    chat.send("second\n").await;
    chat.wait_for_event(|e| e["type"] == "assistant").await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first_pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the MCP server");
    let failed_call = chat.wait_for_event(|e| e["type"] == "tool_result").await;
    assert_eq!(failed_call["is_error"], true, "{failed_call}");
    chat.wait_for_event(|e| e["type"] == "result").await;

    // It comes back (its restart may be reported before or after the turn's
    // result); then the third query's call works.
    let restarting = chat
        .seen_or_wait_for(|e| {
            e["subtype"] == "mcp_server_status" && e["data"]["state"] == "restarting"
        })
        .await;
    assert_eq!(restarting["data"]["attempt"], 1);
    let restart_seq = restarting["seq"].as_u64().unwrap();
    chat.seen_or_wait_for(|e| {
        e["subtype"] == "mcp_server_status"
            && e["data"]["state"] == "ready"
            && e["seq"].as_u64() > Some(restart_seq)
    })
    .await;
    chat.send("third\n").await;
    let third = chat.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(third["text"], "third done: three");
    let second_pid = read_pid(&pid_file);
    assert_ne!(first_pid, second_pid, "a new server process");
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        !process_exists(second_pid),
        "the restarted server was stopped and reaped"
    );
    fx.assert_requests_valid();
}

#[tokio::test]
async fn a_crash_mid_call_returns_an_error_result() {
    let fx = Fixture::new("mcp_single_call").await;
    fx.add_config(&test_server_config(""));
    let out = fx.run(&["run", "--json", "call crash"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let result = tool_results(&events)[0];
    assert_eq!(result["is_error"], true);
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("MCP server `test`"),
        "{result}"
    );
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");
}

#[tokio::test]
async fn a_server_tool_timeout_replaces_the_tools_timeout() {
    // `[tools] timeout_secs` is shorter than the server's `tool_timeout_secs`:
    // the server's own limit is the one that stops the call.
    let fx = Fixture::new("mcp_single_call").await;
    fx.add_config(&format!(
        "[tools]\ntimeout_secs = 1\n\n{}",
        test_server_config("tool_timeout_secs = 2")
    ));
    let out = fx.run(&["run", "--json", "call hang"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let output = tool_results(&events)[0]["output"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(output.contains("timed out after 2 s"), "{output}");
}

#[tokio::test]
async fn a_tool_timeout_cancels_the_call_on_the_server() {
    let fx = Fixture::new("mcp_single_call").await;
    let cancel_file = fx.home.path().join("cancelled");
    fx.add_config(&test_server_config(&format!(
        "tool_timeout_secs = 1\nenv = {{ TEST_MCP_CANCEL_FILE = \"{}\" }}",
        cancel_file.display()
    )));
    let out = fx.run(&["run", "--json", "call hang"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let result = tool_results(&events)[0];
    assert_eq!(result["is_error"], true);
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("timed out after 1 s"),
        "{result}"
    );
    // The server saw `notifications/cancelled`; it records that on a task of
    // its own, so look for the file a while before failing.
    let mut written = String::new();
    for _ in 0..600 {
        written = std::fs::read_to_string(&cancel_file).unwrap_or_default();
        if !written.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        written.trim(),
        "cancelled",
        "the server never saw notifications/cancelled"
    );
}

#[tokio::test]
async fn images_and_errors_from_mcp_tools_reach_the_model_as_text() {
    let fx = Fixture::new("mcp_single_call").await;
    fx.add_config(&test_server_config(""));
    let out = fx.run(&["run", "--json", "call image"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let results = tool_results(&events);
    let image = results[0]["output"].as_str().unwrap();
    assert!(
        image.contains("here is an image") && image.contains("[image: image/png"),
        "{image}"
    );
    assert_eq!(results[1]["is_error"], true);
    assert_eq!(results[1]["output"], "it failed as asked");
}

#[tokio::test]
async fn a_changed_tool_list_reaches_the_next_request() {
    let fx = Fixture::new("mcp_list_changed").await;
    fx.add_config(&test_server_config(""));
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    let ready = chat
        .wait_for_event(|e| e["subtype"] == "mcp_server_status" && e["data"]["state"] == "ready")
        .await;
    let before = ready["data"]["tools"].as_u64().unwrap();
    chat.send("grow\n").await;
    chat.wait_for_event(|e| e["type"] == "result").await;
    chat.seen_or_wait_for(|e| {
        e["subtype"] == "mcp_server_status" && e["data"]["tools"].as_u64() == Some(before + 1)
    })
    .await;
    chat.send("use\n").await;
    let used = chat.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(used["text"], "used: dynamic tool fresh");
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let last = fx.server.requests().last().unwrap().body.clone();
    let names: Vec<&str> = last["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mcp__test__fresh"), "{names:?}");
}

#[tokio::test]
async fn a_disabled_server_is_not_started_and_server_prompts_reach_the_model() {
    let fx = Fixture::new("plain_reply").await;
    let pid_file = fx.home.path().join("disabled.pid");
    fx.add_config(&format!(
        "[mcp_servers.helper]\ncommand = \"{server}\"\nprompt = \"Use the helper server's echo tool to repeat things.\"\n\
         [mcp_servers.off]\nenabled = false\ncommand = \"{server}\"\nprompt = \"This prompt must not appear.\"\nenv = {{ TEST_MCP_PID_FILE = \"{pid}\" }}\n",
        server = test_mcp_server().display(),
        pid = pid_file.display()
    ));
    let out = fx.run(&["run", "--json", "hi"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let system = fx.request_messages()[0][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("Use the helper server's echo tool to repeat things."),
        "{system}"
    );
    assert!(!system.contains("must not appear"), "{system}");
    assert!(!pid_file.exists(), "the disabled server was never started");
    assert!(statuses(&out.events(), "off").is_empty());
}

#[tokio::test]
async fn mcp_list_shows_each_server_with_its_status_and_tools() {
    let fx = Fixture::new("plain_reply").await;
    fx.add_config(&format!(
        "{}[mcp_servers.ghost]\ncommand = \"/nonexistent/mcp-server\"\n[mcp_servers.off]\nenabled = false\ncommand = \"x\"\n",
        test_server_config("")
    ));
    let out = fx.run(&["mcp", "list", "--json"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let doc: Value = serde_json::from_str(&out.stdout_text()).unwrap();
    let servers = doc["servers"].as_array().unwrap();
    let by_name = |n: &str| servers.iter().find(|s| s["name"] == n).unwrap();
    assert_eq!(by_name("test")["status"]["state"], "ready");
    let tools: Vec<&str> = by_name("test")["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"mcp__test__echo") && tools.contains(&"mcp__test__hang"),
        "{tools:?}"
    );
    assert_eq!(by_name("ghost")["status"]["state"], "failed");
    assert_eq!(by_name("off")["status"]["state"], "disabled");

    let text = fx.run(&["mcp", "list"]).await;
    assert!(
        text.stdout_text().contains("test (stdio): ready with"),
        "{}",
        text.stdout_text()
    );
}

#[tokio::test]
async fn a_claude_style_mcp_json_in_the_workspace_is_read() {
    let fx = Fixture::new("mcp_filesystem").await;
    std::fs::write(fx.workspace().join("notes.txt"), "file content here\n").unwrap();
    std::fs::write(
        fx.workspace().join(".mcp.json"),
        format!(
            r#"{{"mcpServers": {{"files": {{"command": "{}", "args": ["${{NOTES_DIR}}"]}}}}}}"#,
            npm_mcp_bin().join("mcp-server-filesystem").display()
        ),
    )
    .unwrap();
    let workspace = fx.workspace().display().to_string();
    let out = fx
        .run_with_env(
            &["run", "--json", "Read my notes"],
            &[("NOTES_DIR", &workspace)],
        )
        .await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let result = tool_results(&events)[0];
    assert_eq!(result["name"], "mcp__files__read_text_file");
    assert_eq!(result["is_error"], false, "{result}");
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("file content here"),
        "{result}"
    );
    assert!(
        the_result(&events)["text"]
            .as_str()
            .unwrap()
            .contains("file content here")
    );
}

#[tokio::test]
async fn slash_tools_lists_mcp_tools_with_their_origin() {
    let fx = Fixture::new("plain_reply").await;
    fx.add_config(&test_server_config(""));
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.wait_for_event(|e| e["subtype"] == "mcp_server_status" && e["data"]["state"] == "ready")
        .await;
    chat.send("/tools\n").await;
    let tools = chat.wait_for_event(|e| e["subtype"] == "tools").await;
    let message = tools["message"].as_str().unwrap();
    assert!(message.contains("mcp__test__echo [mcp:test]"), "{message}");
    assert!(message.contains("read_file [built-in]"), "{message}");
    chat.finish().await;
}

/// `[mcp_servers.everything]`: the npm reference server over stdio.
fn everything_config() -> String {
    format!(
        "[mcp_servers.everything]\ncommand = \"{}\"\nargs = [\"stdio\"]\n",
        npm_mcp_bin().join("mcp-server-everything").display()
    )
}

/// What a new user sees: `agentbus run` with the `everything` server, which
/// is up ~0.6 s after it starts. The first model request offers its tools,
/// so the model can call `echo` at once.
#[tokio::test]
async fn run_offers_an_mcp_servers_tools_on_its_first_request() {
    let fx = Fixture::new("mcp_echo").await;
    fx.add_config(&everything_config());
    let out = fx.run(&["run", "--json", "use the echo tool"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let first = &fx.server.model_calls()[0];
    let tools = offered_tools(&first.body);
    assert!(
        tools.iter().any(|t| t == "mcp__everything__echo"),
        "the first request offered {tools:?}"
    );
    let events = out.events();
    assert_eq!(
        tool_results(&events)[0]["output"],
        "Echo: hello from the first turn"
    );
    assert_eq!(
        the_result(&events)["text"],
        "echoed: Echo: hello from the first turn"
    );
    // The server came up after the query was taken, so the turn said it
    // waited for it (had it been up first, nothing would have been said).
    let query = at(&events, |e| e["type"] == "user");
    let ready = at(&events, |e| {
        e["subtype"] == "mcp_server_status" && e["data"]["state"] == "ready"
    });
    let waiting = events.iter().position(|e| e["subtype"] == "mcp_waiting");
    if ready > query {
        let waiting = waiting.expect("a turn that waited says so");
        assert!(query < waiting && waiting < ready, "{events:#?}");
        assert_eq!(events[waiting]["data"]["servers"], json!(["everything"]));
    } else {
        assert_eq!(waiting, None, "{events:#?}");
    }
}

/// The wait, made certain: the test server waits at a gate the test opens
/// only once the turn said it waits. No request goes out before; the first
/// one offers the server's tools.
#[tokio::test]
async fn the_first_turn_waits_for_a_server_on_its_first_start_and_says_so() {
    let fx = Fixture::new("mcp_echo").await;
    let gate = StartGate::new(&fx);
    fx.add_config(&waited_for_test_server(&format!(
        "env = {{ {} }}",
        gate.env()
    )));
    let mut run = fx.spawn(&["run", "--json", "use the test echo tool"]);
    let waiting = run.wait_for_event(|e| e["subtype"] == "mcp_waiting").await;
    assert_eq!(waiting["data"]["servers"], json!(["test"]));
    assert_eq!(waiting["data"]["max_wait_ms"], 600_000);
    let message = waiting["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("`test`") && message.contains("up to 600 s"),
        "{message}"
    );
    assert!(
        fx.server.model_calls().is_empty(),
        "a request went out while the server was starting"
    );
    gate.open().await;
    let out = run.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    assert_eq!(the_result(&events)["text"], "echoed: first turn");
    assert!(
        offered_tools(&fx.server.model_calls()[0].body).contains(&"mcp__test__echo".to_string())
    );
    let waited = at(&events, |e| e["subtype"] == "mcp_waiting");
    let ready = at(&events, |e| {
        e["subtype"] == "mcp_server_status" && e["data"]["state"] == "ready"
    });
    let answered = at(&events, |e| e["type"] == "assistant");
    assert!(waited < ready && ready < answered, "{events:#?}");
}

/// MCP never starts (bounded by its `startup_timeout_secs`): a server that
/// hangs at start is given up at its own startup timeout (1 s), long
/// before `first_turn_wait_secs` (600 s): its `restarting` status ends the
/// wait and the turn goes on without it. (Waiting 600 s would fail the test
/// at its hang guard.)
#[tokio::test]
async fn a_server_that_never_starts_holds_the_first_turn_only_until_its_startup_timeout() {
    let fx = Fixture::new("plain_reply").await;
    fx.add_config(&waited_for_test_server(
        "args = [\"--hang-start\"]\nstartup_timeout_secs = 1",
    ));
    let out = fx.run(&["run", "--json", "hi"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");
    let waiting = at(&events, |e| e["subtype"] == "mcp_waiting");
    let gave_up = at(&events, |e| {
        e["subtype"] == "mcp_server_status" && e["data"]["state"] == "restarting"
    });
    let reason = events[gave_up]["data"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("did not start within 1 s"), "{reason}");
    let answered = at(&events, |e| e["type"] == "assistant");
    assert!(waiting < gave_up && gave_up < answered, "{events:#?}");
    assert!(
        !events.iter().any(|e| e["subtype"] == "notice"),
        "the status said why; no timeout notice: {events:#?}"
    );
}

/// A server that fails at start (exit 3 before speaking MCP) while the
/// first turn waits for it: the failure is reported with its stderr and the
/// turn goes on at once.
#[tokio::test]
async fn a_server_that_fails_at_start_is_reported_and_the_turn_goes_on() {
    let fx = Fixture::new("plain_reply").await;
    let gate = StartGate::new(&fx);
    fx.add_config(&waited_for_test_server(&format!(
        "args = [\"--fail-start\"]\nenv = {{ {} }}",
        gate.env()
    )));
    let mut run = fx.spawn(&["run", "--json", "hi"]);
    run.wait_for_event(|e| e["subtype"] == "mcp_waiting").await;
    assert!(fx.server.model_calls().is_empty());
    gate.open().await;
    let out = run.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    assert_eq!(
        the_result(&events)["text"],
        "Hello from the scripted model."
    );
    let waiting = at(&events, |e| e["subtype"] == "mcp_waiting");
    let failed = at(&events, |e| {
        e["subtype"] == "mcp_server_status" && e["data"]["state"] == "restarting"
    });
    let stderr = events[failed]["data"]["stderr"].to_string();
    assert!(stderr.contains("failing at start as asked"), "{stderr}");
    let answered = at(&events, |e| e["type"] == "assistant");
    assert!(waiting < failed && failed < answered, "{events:#?}");
}

/// Only a session's first turn waits: when its wait ran out with the server
/// still starting, the second turn goes at once, without a word.
#[tokio::test]
async fn the_second_turn_does_not_wait() {
    let fx = Fixture::new("mcp_echo").await;
    let gate = StartGate::new(&fx);
    fx.add_config(&format!(
        "[mcp]\nfirst_turn_wait_secs = 1\n{}",
        test_server_config(&format!("env = {{ {} }}", gate.env()))
    ));
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("one\n").await;
    let first = chat.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(first["text"], "plain answer one");
    let seen = chat.lines.len();
    chat.send("two\n").await;
    let second = chat.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(second["text"], "plain answer two");
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let (first_turn, second_turn) = events.split_at(seen);
    assert!(first_turn.iter().any(|e| e["subtype"] == "mcp_waiting"));
    assert!(
        !second_turn
            .iter()
            .any(|e| e["subtype"] == "mcp_waiting" || e["subtype"] == "notice"),
        "{second_turn:#?}"
    );
    assert!(
        statuses(&events, "test")
            .iter()
            .all(|s| s["data"]["state"] == "starting"),
        "the server was still on its first start"
    );
}

/// A server that was ready once never holds a turn up again: after it
/// crashed, while it starts again (held at the gate), a new session's first
/// turn goes at once.
#[tokio::test]
async fn a_restarting_server_does_not_hold_up_a_new_sessions_first_turn() {
    let fx = Fixture::new("mcp_echo").await;
    let gate = StartGate::new(&fx);
    let pid_file = fx.home.path().join("test.pid");
    fx.add_config(&waited_for_test_server(&format!(
        "env = {{ {}, TEST_MCP_PID_FILE = \"{}\" }}",
        gate.env(),
        pid_file.display()
    )));
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("use the test echo tool\n").await;
    chat.wait_for_event(|e| e["subtype"] == "mcp_waiting").await;
    gate.open().await;
    let first = chat.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(first["text"], "echoed: first turn");

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(read_pid(&pid_file) as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the MCP server");
    let restarting = chat
        .wait_for_event(|e| {
            e["subtype"] == "mcp_server_status" && e["data"]["state"] == "restarting"
        })
        .await;
    let after = restarting["seq"].as_u64();
    chat.wait_for_event(|e| {
        e["subtype"] == "mcp_server_status"
            && e["data"]["state"] == "starting"
            && e["seq"].as_u64() > after
    })
    .await;
    // The new process now waits at the gate, which stays shut.
    let seen = chat.lines.len();
    chat.send("/new\nhi\n").await;
    let answer = chat.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(answer["text"], "plain answer one");
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let later = &events[seen..];
    assert!(
        !later.iter().any(|e| e["subtype"] == "mcp_waiting"),
        "{later:#?}"
    );
    assert_ne!(
        answer["session_id"], first["session_id"],
        "`/new` switched sessions"
    );
}

/// An interrupt while the first turn waits for a server ends the turn at
/// once: `cancelled`, exit 130, and no request to the model.
#[tokio::test]
async fn an_interrupt_during_the_wait_cancels_the_turn_at_once() {
    let fx = Fixture::new("mcp_echo").await;
    let gate = StartGate::new(&fx);
    fx.add_config(&waited_for_test_server(&format!(
        "env = {{ {} }}",
        gate.env()
    )));
    let mut run = fx.spawn(&["run", "--json", "use the test echo tool"]);
    run.wait_for_event(|e| e["subtype"] == "mcp_waiting").await;
    run.interrupt();
    let out = run.finish().await;
    assert_eq!(out.code(), Some(130), "{}", out.stderr);
    let events = out.events();
    assert_eq!(the_result(&events)["stop_reason"], "cancelled");
    assert!(fx.server.model_calls().is_empty());
}
