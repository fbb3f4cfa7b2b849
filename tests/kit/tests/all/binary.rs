//! The `scripted-model` binary: announces its address on one stdout line and
//! serves the script like the in-process server.

use std::net::SocketAddr;

use crate::support::{post, within};
use agentbus_testkit::{count_text, fixtures_dir};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

#[tokio::test]
async fn binary_prints_listening_line_and_serves() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scripted-model"))
        .arg("--script")
        .arg(fixtures_dir().join("scripts/plain_reply.toml"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn scripted-model");
    let addr = listening_addr(child.stdout.take().expect("stdout")).await;

    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    let reply = post(addr, "/v1/chat/completions", &body).await;
    assert_eq!(reply.status, 200);
    assert!(reply.text().contains("Hello"), "{}", reply.text());

    child.kill().await.expect("kill our child");
}

/// The binary serving `script`: the child, where it listens, and its log
/// (stderr) line by line.
async fn start_with_log(
    script: &std::path::Path,
) -> (
    tokio::process::Child,
    SocketAddr,
    tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scripted-model"))
        .arg("--script")
        .arg(script)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn scripted-model");
    let addr = listening_addr(child.stdout.take().expect("stdout")).await;
    let log = BufReader::new(child.stderr.take().expect("stderr")).lines();
    (child, addr, log)
}

/// Reads the `listening on` line from the child's stdout.
async fn listening_addr(stdout: tokio::process::ChildStdout) -> SocketAddr {
    let mut line = String::new();
    within(
        "the listening line",
        BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("read stdout");
    line.trim_end()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .parse()
        .expect("127.0.0.1:PORT")
}

#[tokio::test]
async fn binary_counts_and_refuses_with_a_context_window() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("window.toml");
    std::fs::write(
        &path,
        "context_window = 20\n\n[[response]]\ntext = 'small enough'\n",
    )
    .expect("write script");
    let (mut child, addr, mut log) = start_with_log(&path).await;

    let request = |text: &str| {
        json!({"model": "claude-test", "max_tokens": 5, "stream": true,
               "messages": [{"role": "user", "content": text}]})
    };
    let long = "far too many words for twenty tokens ".repeat(3);
    let reply = post(addr, "/v1/messages", &request(&long)).await;
    assert_eq!(reply.status, 400);
    assert_eq!(reply.json()["error"]["type"], "invalid_request_error");
    let reply = post(addr, "/v1/messages", &request("hi")).await;
    assert_eq!(reply.status, 200);

    let mut lines = Vec::new();
    while lines.len() < 2 {
        let line = within("a log line", log.next_line())
            .await
            .expect("read stderr")
            .expect("a log line before exit");
        if line.starts_with("request ") {
            lines.push(line);
        }
    }
    let counted = |text: &str| 3 + 4 + count_text("claude-test", text);
    assert_eq!(
        lines,
        [
            format!(
                "request 0: POST /v1/messages -> refused for length ({} input tokens)",
                counted(&long)
            ),
            // A window turns prompt caching on: a request without marks
            // reads and writes nothing.
            format!(
                "request 1: POST /v1/messages -> response[0] ({} input tokens: 0 read from the cache, 0 written)",
                counted("hi")
            ),
        ]
    );

    child.kill().await.expect("kill our child");
}

/// Violations and problems are labelled in the log, so that a script
/// (`scripts/run-examples.sh`) can fail on violations.
#[tokio::test]
async fn binary_labels_violations_and_problems_in_its_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("calls.toml");
    std::fs::write(
        &path,
        "[[response]]\ntool_calls = [{ name = \"read_file\", arguments = {} }]\n",
    )
    .expect("write script");
    let (mut child, addr, mut log) = start_with_log(&path).await;
    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    // No tools offered: the scripted call is a violation. Then the script
    // is exhausted: a problem.
    assert_eq!(post(addr, "/v1/chat/completions", &body).await.status, 200);
    assert_eq!(post(addr, "/v1/chat/completions", &body).await.status, 500);
    let mut lines = Vec::new();
    while lines.len() < 4 {
        let line = within("a log line", log.next_line())
            .await
            .expect("read stderr")
            .expect("a log line before exit");
        lines.push(line);
    }
    assert_eq!(
        lines[0],
        "request 0: POST /v1/chat/completions -> response[0]"
    );
    assert!(
        lines[1].starts_with("  violation: tools: response 0 calls the tool `read_file`"),
        "{lines:#?}"
    );
    assert_eq!(
        lines[2],
        "request 1: POST /v1/chat/completions -> no response"
    );
    assert!(
        lines[3].starts_with("  problem: scripted model: script exhausted"),
        "{lines:#?}"
    );
    child.kill().await.expect("kill our child");
}

#[tokio::test]
async fn binary_fails_on_a_bad_script() {
    let output = Command::new(env!("CARGO_BIN_EXE_scripted-model"))
        .arg("--script")
        .arg(fixtures_dir().join("scripts/no_such_script.toml"))
        .output();
    let output = within("the binary to exit", output).await.expect("run");
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("no_such_script.toml"));
}
