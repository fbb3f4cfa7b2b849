//! What a new user meets first: bare `agentbus` is the chat; the model
//! profile is checked as agentbus starts (a key not set, a local server not
//! running) and the problem said before the first message, with the three
//! ways out; shell completions; logs in a file, as text or JSON lines,
//! never on stdout and never with a secret.

use crate::support::*;
use serde_json::Value;

/// A profile on the scripted server that needs a key nobody set.
fn add_keyed_profile(fx: &Fixture) {
    fx.add_config(&format!(
        "[models.cloud]\nprovider = \"openai\"\nmodel = \"scripted-main\"\nbase_url = \"{}\"\napi_key_env = \"AGENTBUS_TEST_CLOUD_KEY\"\n",
        fx.server.openai_base_url()
    ));
}

/// The three ways out, as the start check words them for an installed
/// binary.
fn assert_three_ways_out(said: &str, fx: &Fixture) {
    for needle in [
        "Fix it one of three ways",
        "llama-server -hf ggml-org/gemma-3-1b-it-GGUF --port",
        "--model NAME",
        "[models.NAME] in",
    ] {
        assert!(said.contains(needle), "{needle:?} in:\n{said}");
    }
    let config = fx.user_config_file();
    assert!(
        said.contains(&config.display().to_string()),
        "names the config file {}:\n{said}",
        config.display()
    );
    assert!(
        !said.contains("scripts/"),
        "nothing inside the source tree:\n{said}"
    );
}

#[tokio::test]
async fn a_key_that_is_not_set_is_said_at_once_with_three_ways_out_and_nothing_is_sent() {
    let fx = Fixture::new("plain_reply").await;
    add_keyed_profile(&fx);
    let started = std::time::Instant::now();
    let out = fx
        .run_with_env(&["run", "--model", "cloud", "hello"], &[])
        .await;
    assert_eq!(out.code(), Some(4), "{}", out.stderr);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "said at once, not after retries"
    );
    let said = &out.stderr;
    assert!(
        said.contains("model profile `cloud` needs an API key")
            && said.contains("AGENTBUS_TEST_CLOUD_KEY")
            && said.contains("export AGENTBUS_TEST_CLOUD_KEY="),
        "{said}"
    );
    assert_three_ways_out(said, &fx);
    assert!(out.stdout.is_empty(), "{:?}", out.stdout);
    assert!(
        fx.server.requests().is_empty(),
        "the scripted model saw no request"
    );
    let list = fx.run(&["sessions", "list", "--all", "--json"]).await;
    assert_eq!(list.stdout_text().trim(), "[]", "no session left behind");
}

#[tokio::test]
async fn a_dead_local_server_is_said_at_start() {
    let fx = Fixture::new("plain_reply").await;
    // A port nothing listens on (taken, then let go).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    fx.add_config(&format!(
        "[models.dead]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n"
    ));
    let out = fx.run(&["run", "--json", "--model", "dead", "hello"]).await;
    assert_eq!(out.code(), Some(4), "{}", out.stderr);
    let said = &out.stderr;
    assert!(
        said.contains(&format!("http://127.0.0.1:{port}/v1"))
            && said.contains("nothing answers there")
            && said.contains(&format!("--port {port}")),
        "{said}"
    );
    assert_three_ways_out(said, &fx);
    assert!(out.stdout.is_empty(), "no event: {:?}", out.stdout);
}

/// The chat opens all the same (the user may switch to a profile that
/// works); `/model` refuses the keyless profile, naming the variable.
#[tokio::test]
async fn the_chat_says_it_before_the_first_message_and_opens_anyway() {
    let fx = Fixture::new("plain_reply").await;
    add_keyed_profile(&fx);
    let mut chat = fx.spawn_with_stdin(&["chat", "--json", "--model", "cloud"]);
    chat.send("/model scripted\n/model cloud\nhello\n").await;
    let out = chat.finish().await;
    assert_eq!(
        out.code(),
        Some(1),
        "the refused /model counts as a failure: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains("AGENTBUS_TEST_CLOUD_KEY") && out.stderr.contains("three ways"),
        "{}",
        out.stderr
    );
    let events = out.events();
    let switched = events
        .iter()
        .find(|e| e["subtype"] == "model_switched")
        .expect("switched to scripted");
    assert_eq!(switched["data"]["model"], "scripted");
    let refused = events
        .iter()
        .find(|e| e["subtype"] == "notice")
        .expect("a notice for /model cloud");
    let message = refused["message"].as_str().unwrap();
    assert!(
        message.contains("AGENTBUS_TEST_CLOUD_KEY") && message.contains("the model stays scripted"),
        "{message}"
    );
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].body["model"], "scripted-main");
}

#[tokio::test]
async fn bare_agentbus_with_piped_stdin_is_the_chat() {
    let fx = Fixture::new("plain_reply").await;
    let mut chat = fx.spawn_with_stdin(&["--json"]);
    chat.send("hello\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    assert_eq!(events[0]["subtype"], "session_started");
    assert_eq!(
        the_result(&events)["text"],
        "Hello from the scripted model."
    );

    let fx = Fixture::new("plain_reply").await;
    let mut chat = fx.spawn_with_stdin(&[]);
    chat.send("hello\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let text = out.stdout_text();
    assert!(
        text.contains("> hello") && text.contains("Hello from the scripted model."),
        "the piped chat's transcript: {text}"
    );
}

#[tokio::test]
async fn a_chat_flag_before_a_subcommand_is_refused_not_dropped() {
    let fx = Fixture::new("plain_reply").await;
    let out = fx.run(&["--model", "other", "run", "hello"]).await;
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(
        out.stderr.contains("after the subcommand"),
        "{}",
        out.stderr
    );
    assert!(fx.server.requests().is_empty());
}

#[tokio::test]
async fn completions_are_printed_for_each_shell() {
    let fx = Fixture::new("plain_reply").await;
    for shell in ["bash", "zsh", "fish"] {
        let out = fx.run(&["completions", shell]).await;
        assert_eq!(out.code(), Some(0), "{shell}: {}", out.stderr);
        let script = out.stdout_text();
        for subcommand in ["chat", "run", "sessions", "serve", "acp", "completions"] {
            assert!(script.contains(subcommand), "{shell}: {subcommand} missing");
        }
        assert!(script.contains("continue"), "{shell}: flags too");
    }
    let out = fx.run(&["completions", "tcsh"]).await;
    assert_eq!(out.code(), Some(2), "an unknown shell is a usage error");
}

/// Every line of `text` as JSON.
fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

#[tokio::test]
async fn logs_go_to_the_file_as_json_lines_never_to_stdout_and_hold_no_secret() {
    let fx = Fixture::new("plain_reply").await;
    let log = fx.home.path().join("logs/deep/agentbus.log");
    let out = fx
        .run(&[
            "--log-file",
            log.to_str().unwrap(),
            "--log-format",
            "json",
            "run",
            "--json",
            "hello",
        ])
        .await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    // stdout holds the events and nothing else.
    for event in out.events() {
        assert!(event["session_id"].is_string(), "not an event: {event}");
    }
    let text = std::fs::read_to_string(&log).expect("the log file, made with its folders");
    let lines = json_lines(&text);
    assert!(!lines.is_empty(), "RUST_LOG=debug logs something");
    for line in &lines {
        assert!(
            line["level"].is_string() && line["timestamp"].is_string(),
            "{line}"
        );
    }
    assert!(!text.contains(SECRET), "the API key is in the log");
    assert!(
        !out.stderr.contains("DEBUG"),
        "with a log file, stderr has no logs: {}",
        out.stderr
    );
}

#[tokio::test]
async fn the_config_file_names_the_log_file_relative_to_itself_and_runs_append() {
    let fx = Fixture::new("many_answers").await;
    fx.add_config("[log]\nfile = \"logs/agentbus.log\"\nformat = \"text\"\n");
    let log = fx.config.parent().unwrap().join("logs/agentbus.log");
    let first = fx.run(&["run", "hello"]).await;
    assert_eq!(first.code(), Some(0), "{}", first.stderr);
    assert_eq!(first.stdout, ["answer one"], "stdout is the answer alone");
    let after_one = std::fs::read_to_string(&log)
        .expect("the log file")
        .lines()
        .count();
    assert!(after_one > 0);
    let second = fx.run(&["run", "again"]).await;
    assert_eq!(second.code(), Some(0), "{}", second.stderr);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.lines().count() > after_one, "appended, not replaced");
    assert!(
        text.lines()
            .all(|l| serde_json::from_str::<Value>(l).is_err()),
        "text lines"
    );
    assert!(!text.contains(SECRET));

    // `--log-format json` wins over the file's `format`.
    let third = fx.run(&["--log-format", "json", "run", "third"]).await;
    assert_eq!(third.code(), Some(0), "{}", third.stderr);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.lines()
            .skip_while(|l| serde_json::from_str::<Value>(l).is_err())
            .count()
            > 0,
        "json lines appended"
    );
}
