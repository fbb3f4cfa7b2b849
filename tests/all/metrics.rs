//! `GET /metrics` end to end: a scripted turn with a tool call through
//! `agentbus serve`, then the figures it moved — read as text, checked by
//! `promtool check metrics`, and scraped by a real Prometheus that then
//! answers a query for the tool call.
//!
//! promtool and prometheus come from Debian's `prometheus` package
//! (`scripts/prometheus.sh` installs it when missing, or set
//! AGENTBUS_PROMETHEUS_BIN to the folder holding both).

use crate::support::server::{EventStream, Server};
use crate::support::{Fixture, GUARD};
use agentbus_testkit::Script;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::OnceLock;
use tokio::io::AsyncWriteExt as _;

const SCRIPT: &str = r#"
[[response]]
match = "alpha"
tool_calls = [ { id = "a1", name = "bash", arguments = { command = "echo tool-ran" } } ]

[[response]]
match = "alpha"
text = "Answer to alpha."
"#;

/// The folder holding `promtool` and `prometheus`.
fn prometheus_bin() -> PathBuf {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = BIN.get_or_init(|| match std::env::var_os("AGENTBUS_PROMETHEUS_BIN") {
        Some(path) => Ok(PathBuf::from(path)),
        None => agentbus_testkit::prerequisite::run_install_script(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scripts")
                .join("prometheus.sh"),
            "root and apt-get reaching Debian's packages (the `prometheus` package)",
            "set AGENTBUS_PROMETHEUS_BIN to a folder with promtool and prometheus",
        ),
    });
    match found {
        Ok(path) => path.clone(),
        Err(why) => agentbus_testkit::prerequisite::missing(&format!(
            "the metrics tests need promtool and prometheus: {why}"
        )),
    }
}

/// A server that has run one turn with one `bash` call ("alpha"), and
/// the SSE client that followed it (still connected).
async fn after_a_turn_with_a_tool_call(f: &Fixture) -> (Server, EventStream) {
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let input = server.input(&id, "alpha").await;
    let result = sse.result_of(input).await;
    assert_eq!(result["stop_reason"], "end_turn", "{result}");
    assert_eq!(result["text"], "Answer to alpha.", "{result}");
    (server, sse)
}

/// The figures as Prometheus asks for them (OpenMetrics).
async fn metrics_text(server: &Server) -> String {
    let request = server.get("/metrics").header(
        "accept",
        "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
    );
    let response = request.send().await.expect("GET /metrics");
    assert_eq!(response.status(), 200);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    response.text().await.expect("the figures")
}

/// The figures as a client that asks for no format gets them (the
/// classic text format 0.0.4).
async fn classic_text(server: &Server) -> String {
    let response = server.get("/metrics").send().await.expect("GET /metrics");
    assert_eq!(response.status(), 200);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(kind.starts_with("text/plain; version=0.0.4"), "{kind}");
    response.text().await.expect("the figures")
}

#[tokio::test]
async fn metrics_count_the_turn_its_model_calls_and_its_tool_call() {
    let f = Fixture::with_script(Script::from_toml_str(SCRIPT).expect("script")).await;
    let (server, _sse) = after_a_turn_with_a_tool_call(&f).await;

    let refused = server
        .http
        .get(format!("{}/metrics", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401, "the figures need the token");
    let wrong = server
        .http
        .get(format!("{}/metrics", server.url))
        .bearer_auth("not-the-token")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);

    let text = metrics_text(&server).await;
    for line in [
        r#"agentbus_tool_calls_total{tool="bash",outcome="ok"} 1"#,
        r#"agentbus_tool_call_duration_seconds_count{tool="bash"} 1"#,
        r#"agentbus_turns_total{stop_reason="end_turn"} 1"#,
        r#"agentbus_model_calls_total{profile="scripted",wire="openai",outcome="ok"} 2"#,
        r#"agentbus_model_call_duration_seconds_count{profile="scripted",wire="openai"} 2"#,
        r#"agentbus_model_time_to_first_token_seconds_count{profile="scripted",wire="openai"} 2"#,
        r#"agentbus_stream_clients{transport="sse"} 1"#,
        "agentbus_sessions_loaded 1",
        r#"agentbus_events_published_total{kind="result"} 1"#,
        r#"agentbus_events_published_total{kind="tool_result"} 1"#,
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l
                .starts_with(r#"agentbus_model_tokens_total{profile="scripted",kind="output"} "#)),
        "the output tokens are counted:\n{text}"
    );
    assert!(
        text.lines().any(|l| l
            .starts_with(r#"agentbus_store_commit_duration_seconds_count{outcome="ok"} "#)
            && !l.ends_with(" 0")),
        "the turn's commits are timed:\n{text}"
    );
    assert!(!text.contains(SESSION_ID_SHAPE), "no session id as a label");
    assert!(!server.stderr().contains(&server.token));
}

/// What no label may hold: the figures never name a session.
const SESSION_ID_SHAPE: &str = "session_id";

#[tokio::test]
async fn promtool_checks_the_metrics_and_prometheus_scrapes_them() {
    let bin = prometheus_bin();
    let f = Fixture::with_script(Script::from_toml_str(SCRIPT).expect("script")).await;
    let (server, _sse) = after_a_turn_with_a_tool_call(&f).await;
    let text = classic_text(&server).await;
    assert!(
        text.contains("# TYPE agentbus_tool_calls_total counter\n"),
        "a counter's family is named as its samples:\n{text}"
    );
    assert!(
        !text.contains("# EOF") && !text.contains("# UNIT"),
        "{text}"
    );

    // promtool reads the classic text format: clean, with nothing to say.
    let mut promtool = tokio::process::Command::new(bin.join("promtool"))
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run promtool");
    let mut stdin = promtool.stdin.take().unwrap();
    stdin.write_all(text.as_bytes()).await.unwrap();
    drop(stdin);
    let checked = promtool.wait_with_output().await.unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    assert!(
        checked.status.success() && said.trim().is_empty(),
        "promtool check metrics ({}): {said}",
        checked.status
    );

    // A real Prometheus scrapes the daemon with the token, then answers
    // a query for the tool call.
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let target = server.url.trim_start_matches("http://");
    let config = format!(
        "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: agentbus\n    \
         scrape_interval: 1s\n    authorization:\n      credentials: {token}\n    \
         static_configs:\n      - targets: [\"{target}\"]\n",
        token = server.token
    );
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    let mut prometheus = tokio::process::Command::new(bin.join("prometheus"))
        .arg(format!(
            "--config.file={}",
            dir.path().join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start prometheus");
    let query = format!(
        "http://127.0.0.1:{port}/api/v1/query?query=agentbus_tool_calls_total%7Btool%3D%22bash%22%7D"
    );
    let http = reqwest::Client::new();
    let mut poll = tokio::time::interval(std::time::Duration::from_millis(100));
    let answer = tokio::time::timeout(GUARD, async {
        loop {
            poll.tick().await;
            let Ok(response) = http.get(&query).send().await else {
                continue; // not listening yet
            };
            let Ok(answer) = response.json::<Value>().await else {
                continue;
            };
            if answer["data"]["result"]
                .as_array()
                .is_some_and(|r| !r.is_empty())
            {
                return answer;
            }
        }
    })
    .await
    .expect("Prometheus scraped agentbus_tool_calls_total within the guard");
    let _ = prometheus.kill().await;
    let series = &answer["data"]["result"][0];
    assert_eq!(series["metric"]["outcome"], "ok", "{answer}");
    assert_eq!(series["metric"]["job"], "agentbus", "{answer}");
    assert_eq!(series["value"][1], "1", "{answer}");
}

#[tokio::test]
async fn metrics_count_an_approval_asked_and_how_it_was_answered() {
    // `default` mode: the script's `bash` call asks first.
    let f = Fixture::new("approval-bash").await;
    f.set_permission_mode("default");
    let server = f.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let input = server.input(&id, "please reject this").await;
    let request = sse.until(|e| e["type"] == "approval_request").await;
    let request_id = request["request_id"].as_str().expect("a request id");
    let answer = server
        .post(&format!("/v1/sessions/{id}/approvals/{request_id}"))
        .json(&serde_json::json!({"decision": "reject"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let result = sse.result_of(input).await;
    assert_eq!(result["stop_reason"], "end_turn", "{result}");

    let text = metrics_text(&server).await;
    for line in [
        "agentbus_approvals_asked_total 1",
        r#"agentbus_approvals_answered_total{outcome="rejected"} 1"#,
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    assert!(
        !text.contains(r#"agentbus_tool_calls_total{tool="bash",outcome="ok"}"#),
        "the rejected call did not run:\n{text}"
    );
}

#[tokio::test]
async fn metrics_show_each_configured_mcp_server_in_its_state() {
    let f = Fixture::with_script(Script::from_toml_str(SCRIPT).expect("script")).await;
    f.add_config(&format!(
        "[mcp_servers.test]\ncommand = \"{}\"\n",
        crate::support::test_mcp_server().display()
    ));
    let server = f.serve().await;
    // Polls the API until the server is ready (it starts beside the daemon).
    let mut poll = tokio::time::interval(std::time::Duration::from_millis(50));
    tokio::time::timeout(GUARD, async {
        loop {
            poll.tick().await;
            let tools = server.get_json("/v1/tools").await;
            if tools["mcp_servers"]["test"]["state"] == "ready" {
                return;
            }
        }
    })
    .await
    .expect("the MCP server became ready within the guard");

    let text = metrics_text(&server).await;
    for line in [
        r#"agentbus_mcp_servers{server="test",state="ready"} 1"#,
        r#"agentbus_mcp_servers{server="test",state="starting"} 0"#,
        r#"agentbus_mcp_servers{server="test",state="failed"} 0"#,
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
}

#[tokio::test]
async fn metrics_count_the_cost_of_a_priced_profile() {
    let f = Fixture::with_script(Script::from_toml_str(SCRIPT).expect("script")).await;
    f.add_config(&format!(
        "[models.priced]\nprovider = \"openai\"\nmodel = \"scripted-main\"\nbase_url = \"{}\"\n\
         input_per_mtok = 3.0\noutput_per_mtok = 15.0\n",
        f.server.openai_base_url()
    ));
    let server = f.serve().await;
    let id = server
        .create_session_with(serde_json::json!({"model": "priced"}))
        .await;
    let mut sse = server.sse(&id, None).await;
    let input = server.input(&id, "alpha").await;
    let result = sse.result_of(input).await;
    assert_eq!(result["stop_reason"], "end_turn", "{result}");

    let text = metrics_text(&server).await;
    let cost: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix(r#"agentbus_model_cost_usd_total{profile="priced"} "#))
        .unwrap_or_else(|| panic!("no cost for `priced` in:\n{text}"))
        .parse()
        .expect("a number");
    // The turn's two calls' tokens at 3 and 15 dollars per million.
    let tokens = |kind: &str| -> f64 {
        text.lines()
            .find_map(|l| {
                l.strip_prefix(&format!(
                    r#"agentbus_model_tokens_total{{profile="priced",kind="{kind}"}} "#
                ))
            })
            .map_or(0.0, |n| n.parse().expect("a count"))
    };
    let expected = (tokens("input") * 3.0 + tokens("output") * 15.0) / 1e6;
    assert!(expected > 0.0, "{text}");
    assert!((cost - expected).abs() < 1e-12, "{cost} != {expected}");
    assert!(
        !text.contains(r#"agentbus_model_cost_usd_total{profile="scripted"}"#),
        "a profile without prices has no cost"
    );
}
