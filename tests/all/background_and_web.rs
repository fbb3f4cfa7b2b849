//! `web_fetch` and background commands end to end, through the built
//! binary and the scripted model: a page fetched from a server of the test
//! (asked for per domain, allowed by `--allow web_fetch(domain:…)`,
//! refused with `[sandbox] network = false`); a server started with
//! `bash` in the background, read with `bash_output`, fetched, stopped
//! with `kill_shell`; a command left running ended with the session, and
//! the session saying so.

use crate::support::*;
use agentbus_testkit::Script;
use serde_json::Value;
use std::net::SocketAddr;

/// A server on 127.0.0.1 serving one HTML page at `/guide`.
async fn page_server() -> SocketAddr {
    use axum::http::header;
    let app = axum::Router::new().route(
        "/guide",
        axum::routing::get(|| async {
            (
                [(header::CONTENT_TYPE, "text/html")],
                "<html><body><h1>Guide</h1><p>Use <b>serde</b>.</p></body></html>",
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

fn script(toml: &str) -> Script {
    Script::from_toml_str(toml).unwrap_or_else(|e| panic!("{e:#}\n{toml}"))
}

fn outputs(events: &[Value]) -> Vec<String> {
    of_type(events, "tool_result")
        .iter()
        .map(|r| r["output"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test]
async fn web_fetch_asks_per_domain_runs_when_allowed_and_is_refused_without_network() {
    let addr = page_server().await;
    let url = format!("http://{addr}/guide");
    let turn = format!(
        r#"
[[response]]
tool_calls = [ {{ id = "f1", name = "web_fetch", arguments = {{ url = "{url}" }} }} ]

[[response]]
text = "Read: {{last_tool_result}}"
"#
    );
    let f = Fixture::with_script(script(&turn.repeat(3))).await;
    f.set_permission_mode("default");

    // Nobody can approve in `run`: the call is rejected, naming the rule.
    let asked = f.run(&["run", "--json", "read the guide"]).await;
    let events = asked.events();
    let request = of_type(&events, "approval_request")[0].clone();
    assert_eq!(request["suggested_rule"], "web_fetch(domain:127.0.0.1)");
    let rejected = &outputs(&events)[0];
    assert!(
        rejected.contains("--allow 'web_fetch(domain:127.0.0.1)'"),
        "{rejected}"
    );

    // With the rule, the page comes back as Markdown.
    let allowed = f
        .run(&[
            "run",
            "--json",
            "--allow",
            "web_fetch(domain:127.0.0.1)",
            "read the guide",
        ])
        .await;
    let events = allowed.events();
    assert!(of_type(&events, "approval_request").is_empty());
    let page = &outputs(&events)[0];
    assert_eq!(of_type(&events, "tool_result")[0]["is_error"], false);
    assert!(page.contains("# Guide"), "{page}");
    assert!(page.contains("Use **serde**."), "{page}");

    // No network: refused, saying why, even with the rule.
    f.add_config("[sandbox]\nnetwork = false\n");
    let offline = f
        .run(&[
            "run",
            "--json",
            "--allow",
            "web_fetch(domain:127.0.0.1)",
            "read the guide",
        ])
        .await;
    let events = offline.events();
    assert_eq!(of_type(&events, "tool_result")[0]["is_error"], true);
    let refused = &outputs(&events)[0];
    assert!(refused.contains("[sandbox] network = false"), "{refused}");
    f.assert_requests_valid();
}

#[tokio::test]
async fn a_background_server_is_started_read_fetched_and_stopped() {
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let toml = format!(
        r#"
[[response]]
tool_calls = [ {{ id = "s1", name = "bash", arguments = {{ command = "python3 -u -m http.server {port} --bind 127.0.0.1", run_in_background = true }} }} ]

[[response]]
tool_calls = [ {{ id = "s2", name = "bash_output", arguments = {{ id = "bash_1", wait_secs = 60 }} }} ]

[[response]]
tool_calls = [ {{ id = "s3", name = "web_fetch", arguments = {{ url = "http://127.0.0.1:{port}/" }} }} ]

[[response]]
tool_calls = [ {{ id = "s4", name = "bash_output", arguments = {{ id = "bash_1", wait_secs = 60 }} }} ]

[[response]]
tool_calls = [ {{ id = "s5", name = "kill_shell", arguments = {{ id = "bash_1" }} }} ]

[[response]]
text = "Stopped: {{last_tool_result}}"
"#
    );
    let f = Fixture::with_script(script(&toml)).await;
    std::fs::write(f.workspace().join("hello.txt"), "hi").unwrap();
    let out = f.run(&["run", "--json", "serve the workspace"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let results = outputs(&events);
    assert_eq!(results.len(), 5, "{results:#?}");
    assert!(results[0].contains("`bash_1`"), "{}", results[0]);
    assert!(results[1].contains("is still running"), "{}", results[1]);
    assert!(
        results[1].contains(&format!("Serving HTTP on 127.0.0.1 port {port}")),
        "{}",
        results[1]
    );
    assert!(results[2].contains("hello.txt"), "{}", results[2]);
    assert!(
        results[3].contains("\"GET / HTTP/1.1\" 200"),
        "{}",
        results[3]
    );
    assert!(
        !results[3].contains("Serving HTTP"),
        "output is read once: {}",
        results[3]
    );
    assert!(results[4].starts_with("Stopped `bash_1`"), "{}", results[4]);
    assert!(results[4].contains("has ended"), "{}", results[4]);
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the server still listens after kill_shell"
    );
    f.assert_requests_valid();
}

#[tokio::test]
async fn a_command_left_running_is_ended_with_the_session_which_says_so() {
    let toml = r#"
[[response]]
tool_calls = [ { id = "b1", name = "bash", arguments = { command = "echo $$ > server.pid; echo ready; exec sleep 600", run_in_background = true } } ]

[[response]]
tool_calls = [ { id = "b2", name = "bash_output", arguments = { id = "bash_1", wait_secs = 60 } } ]

[[response]]
text = "Left it running."
"#;
    let f = Fixture::with_script(script(toml)).await;
    let out = f.run(&["run", "--json", "start it"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    assert!(
        outputs(&events)[1].contains("ready"),
        "{:?}",
        outputs(&events)
    );
    let pid = read_pid(&f.workspace().join("server.pid"));
    assert!(
        !process_exists(pid),
        "the background command {pid} outlived its session"
    );
    assert!(
        out.stderr
            .contains("its background command was ended: bash_1"),
        "the log says it: {}",
        out.stderr
    );
    let id = session_id(&events);
    let shown = f.run(&["sessions", "show", &id, "--json"]).await;
    assert!(shown.status.success(), "{}", shown.stderr);
    let notices: Vec<String> = of_type(&shown.events(), "system")
        .iter()
        .filter(|e| e["subtype"] == "notice")
        .filter_map(|e| e["message"].as_str().or(e["data"]["message"].as_str()))
        .map(String::from)
        .collect();
    assert!(
        notices.iter().any(|n| n.contains(
            "The session stopped, so its background command was ended: bash_1 (`echo $$ > server.pid; echo ready; exec sleep 600`)."
        )),
        "{notices:?}"
    );
}
