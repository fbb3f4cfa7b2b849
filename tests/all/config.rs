//! Configuration as a user meets it: layered files, clear errors.

use crate::support::*;

#[tokio::test]
async fn a_bad_config_file_names_the_file_and_the_key() {
    let fx = Fixture::new("plain_reply").await;
    std::fs::write(
        fx.workspace().join(".agentbus.toml"),
        "max_steps = \"ten\"\n",
    )
    .unwrap();
    let out = fx.run(&["run", "hi"]).await;
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains(".agentbus.toml") && out.stderr.contains("max_steps"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("expected"), "{}", out.stderr);
    assert!(fx.server.requests().is_empty());
}

#[tokio::test]
async fn a_base_url_that_is_not_a_url_is_refused_at_start_before_anything_is_sent() {
    let fx = Fixture::new("plain_reply").await;
    std::fs::write(
        fx.workspace().join(".agentbus.toml"),
        "[models.typo]\nprovider = \"openai\"\nmodel = \"m\"\n\
         base_url = \"http://127.0.0.1:PORT/v1\"\n",
    )
    .unwrap();
    let out = fx.run(&["run", "--model", "typo", "hi"]).await;
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    for says in [
        ".agentbus.toml",
        "key `models.typo.base_url`",
        "`http://127.0.0.1:PORT/v1` is not a valid URL (invalid port number)",
        "expected an http:// or https:// URL",
    ] {
        assert!(out.stderr.contains(says), "{says}: {}", out.stderr);
    }
    assert!(
        !out.stderr.contains("retry") && !out.stderr.contains("start one"),
        "refused, not retried nor blamed on a missing server: {}",
        out.stderr
    );
    assert!(fx.server.requests().is_empty());
}

#[tokio::test]
async fn an_unknown_model_profile_lists_the_configured_ones() {
    let fx = Fixture::new("plain_reply").await;
    let out = fx.run(&["run", "--model", "nope", "hi"]).await;
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("`nope`") && out.stderr.contains("scripted"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn the_project_file_can_turn_off_partial_messages() {
    let fx = Fixture::new("plain_reply").await;
    std::fs::write(
        fx.workspace().join(".agentbus.toml"),
        "include_partial_messages = false\n",
    )
    .unwrap();
    let out = fx.run(&["run", "--json", "hi"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let types: Vec<String> = out
        .events()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(types, ["system", "user", "assistant", "result"]);
}

#[tokio::test]
async fn disallowed_tools_are_hidden_from_the_model() {
    let fx = Fixture::new("plain_reply").await;
    std::fs::write(
        fx.workspace().join(".agentbus.toml"),
        "disallowed_tools = [\"bash\", \"grep\"]\n",
    )
    .unwrap();
    let out = fx.run(&["run", "hi"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let tools: Vec<String> = fx.server.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        tools,
        [
            "read_file",
            "write_file",
            "edit_file",
            "list_dir",
            "glob",
            "bash_output",
            "kill_shell",
            "web_fetch",
            "todo_write",
            "task"
        ]
    );
}

#[tokio::test]
async fn the_system_prompt_reaches_the_model_with_the_workspace_filled_in() {
    let fx = Fixture::new("plain_reply").await;
    let out = fx.run(&["run", "hi"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let system = fx.request_messages()[0][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let workspace = fx.workspace().canonicalize().unwrap();
    assert!(
        system.contains(&format!("workspace: {}", workspace.display())),
        "{system}"
    );
}

/// `run` refuses at start (see `first_run`); the chat opens all the same,
/// and a turn sent there ends with the connection error and the ways out.
#[tokio::test]
async fn an_unreachable_server_ends_the_turn_with_a_clear_error() {
    let fx = Fixture::new("plain_reply").await;
    std::fs::write(
        fx.workspace().join(".agentbus.toml"),
        "[models.dead]\nprovider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:9/v1\"\nmax_retries = 0\n",
    )
    .unwrap();
    let mut chat = fx.spawn_with_stdin(&["chat", "--json", "--model", "dead"]);
    chat.send("hi\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(1));
    assert!(
        out.stderr.contains("nothing answers there"),
        "{}",
        out.stderr
    );
    let events = out.events();
    let error = of_type(&events, "error")[0];
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("could not reach") && message.contains("127.0.0.1:9"),
        "{error}"
    );
    assert!(message.contains("llama-server"), "the ways out: {message}");
    assert_eq!(the_result(&events)["stop_reason"], "error");
}

#[tokio::test]
async fn a_missing_config_file_is_said_once() {
    let fx = Fixture::new("plain_reply").await;
    std::fs::remove_file(&fx.config).unwrap();
    let out = fx.run(&["run", "hi"]).await;
    assert_eq!(out.code(), Some(1));
    let said = out.stderr.trim();
    assert_eq!(said.lines().count(), 1, "{said}");
    assert_eq!(
        said.matches("No such file or directory").count(),
        1,
        "the reason once: {said}"
    );
    assert!(said.contains(&fx.config.display().to_string()), "{said}");
}
