//! `agentbus acp` driven by `acpx`, the npm ACP client, as a user runs it:
//! `acpx --agent 'agentbus acp' --format json exec "..."` prints every
//! JSON-RPC message, one a line.

use super::Traffic;
use crate::support::{Fixture, GUARD, installed, processes_with_env};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

/// acpx's command: `$AGENTBUS_ACPX`, else what `scripts/acpx.sh` installs
/// into the cache (once per test binary). The README's test command sets
/// the variable; without npm the tests fail saying how to get acpx.
fn acpx_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    installed(
        &BIN,
        "AGENTBUS_ACPX",
        "acpx.sh",
        "the ACP tests need acpx 0.19.1 (npm)",
    )
}

/// `acpx --agent 'agentbus ... acp AGENT_ARGS' --cwd WORKSPACE --format
/// json ARGS`, with the fixture's config, data dir and home.
fn acpx(fixture: &Fixture, agent_args: &[&str], args: &[&str]) -> Command {
    let agent = format!(
        "{} --config {} --workspace {} --data-dir {} acp {}",
        env!("CARGO_BIN_EXE_agentbus"),
        fixture.config.display(),
        fixture.workspace().display(),
        fixture.home.path().join("data").display(),
        agent_args.join(" ")
    );
    let mut cmd = Command::new(acpx_bin());
    cmd.arg("--agent")
        .arg(agent)
        .arg("--cwd")
        .arg(fixture.workspace())
        .args(["--format", "json"])
        .args(args)
        .current_dir(fixture.workspace())
        .env("HOME", fixture.home.path())
        .env("XDG_CONFIG_HOME", fixture.home.path().join(".config"))
        .env_remove("AGENTBUS_CONFIG")
        .env_remove("AGENTBUS_DATA_DIR")
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// A finished acpx run.
struct Run {
    status: ExitStatus,
    traffic: Traffic,
    stderr: String,
}

async fn run(mut cmd: Command) -> Run {
    let out = tokio::time::timeout(GUARD, cmd.output())
        .await
        .expect("acpx did not finish")
        .expect("run acpx");
    let stdout = String::from_utf8_lossy(&out.stdout);
    Run {
        status: out.status,
        traffic: Traffic::parse(&stdout),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

impl Run {
    fn succeeded(&self) -> &Traffic {
        assert!(
            self.status.success(),
            "acpx failed ({}); stderr:\n{}\ntraffic:\n{}",
            self.status,
            self.stderr,
            self.traffic
        );
        &self.traffic
    }
}

#[tokio::test]
async fn exec_streams_the_answer_with_the_tool_call_shown() {
    let fx = Fixture::new("acp_read_notes").await;
    std::fs::write(fx.workspace().join("notes.txt"), "Buy milk. Call Bob.\n").unwrap();
    let done = run(acpx(&fx, &[], &["exec", "read notes.txt and summarise"])).await;
    let traffic = done.succeeded();

    let calls = traffic.updates("tool_call");
    assert_eq!(calls.len(), 1, "{traffic}");
    assert_eq!(calls[0]["toolCallId"], "call_read");
    assert_eq!(calls[0]["kind"], "read");
    let updates = traffic.updates("tool_call_update");
    let described = updates
        .iter()
        .find(|u| u["title"] == "Read notes.txt")
        .unwrap_or_else(|| panic!("no update with the call's title:\n{traffic}"));
    let notes = fx.workspace().join("notes.txt");
    assert_eq!(described["locations"][0]["path"], json!(notes));
    let completed = updates
        .iter()
        .find(|u| u["status"] == "completed")
        .unwrap_or_else(|| panic!("the call did not complete:\n{traffic}"));
    assert!(
        completed["content"][0]["content"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Buy milk. Call Bob.")),
        "{completed}"
    );
    // acpx offers fs/*: the file was read through it.
    let reads = traffic.calls("fs/read_text_file");
    assert_eq!(reads.len(), 1, "{traffic}");
    assert_eq!(reads[0]["params"]["path"], json!(notes));
    assert!(
        traffic
            .agent_text()
            .contains("Summary:      1\tBuy milk. Call Bob."),
        "{}",
        traffic.agent_text()
    );
    assert_eq!(traffic.stop_reason(), "end_turn");
    // The prompt's answer comes after every update of its turn.
    let last_update = traffic
        .0
        .iter()
        .rposition(|m| {
            m["method"] == "session/update"
                && m["params"]["update"]["sessionUpdate"] != "usage_update"
        })
        .unwrap();
    let answer = traffic
        .0
        .iter()
        .position(|m| m["result"]["stopReason"].is_string())
        .unwrap();
    assert!(last_update < answer, "{traffic}");
}

#[tokio::test]
async fn the_capabilities_offer_loading_listing_embedded_context_and_http_mcp() {
    let fx = Fixture::new("acp_read_notes").await;
    std::fs::write(fx.workspace().join("notes.txt"), "n\n").unwrap();
    let done = run(acpx(&fx, &[], &["exec", "read notes.txt"])).await;
    let answer = done.succeeded().answer_to("initialize");
    let caps = &answer["result"]["agentCapabilities"];
    assert_eq!(caps["loadSession"], true, "{answer}");
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    assert_eq!(caps["mcpCapabilities"]["http"], true);
    assert!(caps["sessionCapabilities"]["list"].is_object(), "{answer}");
    let new = done.traffic.answer_to("session/new");
    assert_eq!(new["result"]["modes"]["currentModeId"], "bypass", "{new}");
    let commands = done.traffic.updates("available_commands_update");
    let names: Vec<&str> = commands[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(
        names.contains(&"compact") && !names.contains(&"resume"),
        "{names:?}"
    );
}

#[tokio::test]
async fn max_steps_answers_max_turn_requests() {
    let fx = Fixture::new("acp_read_notes").await;
    std::fs::write(fx.workspace().join("notes.txt"), "n\n").unwrap();
    let done = run(acpx(
        &fx,
        &["--max-steps", "1"],
        &["exec", "read notes.txt"],
    ))
    .await;
    assert_eq!(
        done.traffic.stop_reason(),
        "max_turn_requests",
        "{}",
        done.traffic
    );
}

#[tokio::test]
async fn a_cancel_during_a_slow_reply_answers_cancelled() {
    let fx = Fixture::new("acp_slow_reply").await;
    let mut child = acpx(&fx, &[], &["exec", "tell me a long story"])
        .spawn()
        .expect("spawn acpx");
    let mut stderr = child.stderr.take().expect("stderr");
    let stderr = tokio::spawn(async move {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text).await;
        text
    });
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut seen = Vec::new();
    // The reply has begun streaming ...
    loop {
        let line = tokio::time::timeout(GUARD, lines.next_line())
            .await
            .expect("acpx printed nothing")
            .expect("read acpx")
            .unwrap_or_else(|| {
                panic!("acpx ended before the reply streamed:\n{}", seen.join("\n"))
            });
        let streaming = line.contains("agent_message_chunk");
        seen.push(line);
        if streaming {
            break;
        }
    }
    // ... when the user presses Ctrl-C: acpx sends session/cancel.
    let pid = nix::unistd::Pid::from_raw(child.id().expect("acpx runs") as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT acpx");
    while let Some(line) = tokio::time::timeout(GUARD, lines.next_line())
        .await
        .expect("acpx did not finish after the cancel")
        .expect("read acpx")
    {
        seen.push(line);
    }
    let _ = tokio::time::timeout(GUARD, child.wait()).await;
    let traffic = Traffic::parse(&seen.join("\n"));
    assert_eq!(traffic.calls("session/cancel").len(), 1, "{traffic}");
    assert_eq!(
        traffic.stop_reason(),
        "cancelled",
        "{traffic}\nstderr:\n{}",
        stderr.await.unwrap_or_default()
    );
    // The reply was cut short: a part of it streamed, not all.
    let text = traffic.agent_text();
    let whole = "This answer streams slowly";
    assert!(
        !text.is_empty() && (whole.starts_with(&text) || text.starts_with(whole)),
        "{text}"
    );
    assert!(
        !text.ends_with("and more."),
        "the whole reply streamed: {text}"
    );
}

/// A prompt whose command asks first, answered by acpx's `flag`.
async fn command_answered_by(flag: &str) -> (Fixture, Run) {
    let fx = Fixture::new("acp_approvals").await;
    fx.set_permission_mode("default");
    let done = run(acpx(&fx, &[], &[flag, "exec", "run the command"])).await;
    (fx, done)
}

/// The option acpx chose for the one permission request.
fn chosen_option(traffic: &Traffic) -> String {
    let asked = traffic.calls("session/request_permission");
    assert_eq!(asked.len(), 1, "{traffic}");
    let options: Vec<&str> = asked[0]["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["optionId"].as_str())
        .collect();
    assert_eq!(
        options,
        ["allow_once", "allow_always", "reject"],
        "{traffic}"
    );
    assert_eq!(asked[0]["params"]["toolCall"]["kind"], "execute");
    let answer = traffic.answer_to("session/request_permission");
    answer["result"]["outcome"]["optionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_string()
}

#[tokio::test]
async fn approve_all_runs_the_call_that_asks() {
    let (fx, done) = command_answered_by("--approve-all").await;
    let traffic = done.succeeded();
    assert_eq!(chosen_option(traffic), "allow_once");
    assert!(fx.workspace().join("ran.txt").exists(), "the command ran");
    let statuses: Vec<&Value> = traffic
        .updates("tool_call_update")
        .iter()
        .map(|u| &u["status"])
        .collect();
    assert!(statuses.contains(&&json!("completed")), "{statuses:?}");
    assert!(traffic.agent_text().contains("Result: the command ran"));
    assert_eq!(traffic.stop_reason(), "end_turn");
}

#[tokio::test]
async fn deny_all_rejects_the_call_that_asks() {
    let (fx, done) = command_answered_by("--deny-all").await;
    let traffic = &done.traffic;
    assert_eq!(chosen_option(traffic), "reject");
    assert!(
        !fx.workspace().join("ran.txt").exists(),
        "the command did not run"
    );
    let failed = traffic
        .updates("tool_call_update")
        .into_iter()
        .find(|u| u["status"] == "failed")
        .unwrap_or_else(|| panic!("the call did not fail:\n{traffic}"));
    assert_eq!(failed["toolCallId"], "run1");
    // The model reads why.
    let requests = fx.request_messages();
    let last = requests.last().unwrap();
    assert!(
        last.iter().any(|m| m["role"] == "tool"
            && m["content"]
                .as_str()
                .is_some_and(|c| c.contains("rejected"))),
        "{last:?}"
    );
    assert_eq!(traffic.stop_reason(), "end_turn");
}

#[tokio::test]
async fn a_stored_session_is_loaded_and_continues_where_it_was() {
    let fx = Fixture::new("acp_remember").await;
    let first = run(acpx(&fx, &[], &["exec", "remember the word kiwi"])).await;
    let session = first.succeeded().answer_to("session/new")["result"]["sessionId"]
        .as_str()
        .expect("a session id")
        .to_string();
    // acpx keeps a record of the stored session, loading it (session/load) ...
    let ensured = run(acpx(
        &fx,
        &[],
        &["sessions", "new", "--resume-session", &session],
    ))
    .await;
    ensured.succeeded();
    // ... and its next prompt loads it again in a fresh agent, then asks.
    let next = run(acpx(
        &fx,
        &[],
        &["--ttl", "1", "prompt", "what was the word?"],
    ))
    .await;
    let traffic = next.succeeded();
    let loads = traffic.calls("session/load");
    assert_eq!(loads.len(), 1, "{traffic}");
    assert_eq!(loads[0]["params"]["sessionId"], session.as_str());
    assert!(
        traffic.answer_to("session/load")["result"].is_object(),
        "{traffic}"
    );
    assert!(traffic.agent_text().contains("The word was kiwi."));
    assert_eq!(traffic.stop_reason(), "end_turn");
    // The model saw the first turn: the loaded session is the stored one.
    let requests = fx.request_messages();
    let texts: Vec<String> = requests
        .last()
        .unwrap()
        .iter()
        .map(|m| m["content"].to_string())
        .collect();
    assert!(
        texts.iter().any(|t| t.contains("remember the word kiwi"))
            && texts.iter().any(|t| t.contains("I will remember kiwi.")),
        "{texts:?}"
    );
    stop_queue_owner(&fx);
}

/// acpx's `prompt` leaves its queue owner (and its agent) running for
/// `--ttl` seconds after the prompt: stop them now (they are this test's:
/// they run with its home).
fn stop_queue_owner(fx: &Fixture) {
    let marker = format!("HOME={}", fx.home.path().display());
    for pid in processes_with_env(&marker) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
}

#[tokio::test]
async fn the_editors_mcp_servers_join_the_session() {
    let fx = Fixture::new("acp_mcp_echo").await;
    let config = fx.home.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": [{
            "name": "editor",
            "command": crate::support::test_mcp_server(),
            "args": [],
            "env": [],
        }]})
        .to_string(),
    )
    .unwrap();
    let done = run(acpx(
        &fx,
        &[],
        &[
            "--mcp-config",
            config.to_str().unwrap(),
            "exec",
            "echo something",
        ],
    ))
    .await;
    let traffic = done.succeeded();
    let new = &traffic.calls("session/new")[0]["params"];
    assert_eq!(new["mcpServers"][0]["name"], "editor", "{new}");
    let call = &traffic.updates("tool_call")[0];
    assert_eq!(call["title"], "echo (editor)", "{call}");
    assert!(
        traffic
            .agent_text()
            .contains("echoed: from the editor's server"),
        "{traffic}"
    );
    // The model was offered the server's tool (the scripted model checks
    // every call was offered when the fixture drops).
}
