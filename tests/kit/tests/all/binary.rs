//! The `scripted-model` binary: announces its address on one stdout line and
//! serves the script like the in-process server.

use crate::support::{post, within};
use agentbus_testkit::fixtures_dir;
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
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    within(
        "the listening line",
        BufReader::new(stdout).read_line(&mut line),
    )
    .await
    .expect("read stdout");
    let url = line
        .trim_end()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let addr = url.parse().expect("127.0.0.1:PORT");

    let body =
        json!({"model": "m", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    let reply = post(addr, "/v1/chat/completions", &body).await;
    assert_eq!(reply.status, 200);
    assert!(reply.text().contains("Hello"), "{}", reply.text());

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
