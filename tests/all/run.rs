//! `agentbus run` end to end: the built binary against the scripted model
//! server over real HTTP, with real tools in a temporary workspace.

use crate::support::*;
use serde_json::Value;

#[tokio::test]
async fn run_json_prints_every_event_in_order_with_gap_free_seq() {
    let fx = Fixture::new("plain_reply").await;
    let out = fx.run(&["run", "--json", "Say hello"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events(); // every stdout line is JSON: logs went to stderr
    assert!(
        out.stderr.contains("DEBUG"),
        "RUST_LOG=debug logs belong on stderr"
    );
    assert_gap_free(&events);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"system"));
    assert_eq!(types[1], "user");
    assert!(
        types[2..types.len() - 2]
            .iter()
            .all(|t| *t == "stream_event")
    );
    assert!(types.len() > 4, "text was streamed: {types:?}");
    assert_eq!(&types[types.len() - 2..], ["assistant", "result"]);
    let session = &events[0]["session_id"];
    assert!(events.iter().all(|e| &e["session_id"] == session));

    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "end_turn");
    assert_eq!(result["text"], "Hello from the scripted model.");
    assert_eq!(result["usage"]["input_tokens"], 12);
    assert_eq!(result["usage"]["output_tokens"], 7);
    assert_eq!(result["steps"], 1);

    let requests = fx.server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].headers["authorization"],
        format!("Bearer {SECRET}")
    );
    assert_eq!(requests[0].body["model"], "scripted-main");
    assert_eq!(requests[0].body["stream_options"]["include_usage"], true);
    fx.assert_requests_valid();
}

#[tokio::test]
async fn run_plain_prints_only_the_final_text() {
    let fx = Fixture::new("plain_reply").await;
    let out = fx.run(&["run", "Say", "hello"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout, ["Hello from the scripted model."]);
    let messages = &fx.request_messages()[0];
    assert_eq!(messages.last().unwrap()["content"], "Say hello");
}

#[tokio::test]
async fn run_plain_prints_the_answer_and_not_the_thinking() {
    let fx = Fixture::new("thinking").await;
    fx.add_thinking_profile();
    for profile in ["scripted", "scripted-thinking"] {
        let out = fx.run(&["run", "--model", profile, "what is 2 + 2?"]).await;
        assert_eq!(out.code(), Some(0), "{profile}: {}", out.stderr);
        assert_eq!(out.stdout, ["4"], "{profile}: thinking is not the answer");
    }
    // The model did think, both times: the stored conversations hold it
    // (and `sessions show` gives it a line of its own).
    let listed = fx.run(&["sessions", "list", "--json"]).await;
    let sessions: Vec<Value> = serde_json::from_str(&listed.stdout_text()).unwrap();
    assert_eq!(sessions.len(), 2);
    for session in &sessions {
        let id = session["id"].as_str().unwrap();
        let shown = fx.run(&["sessions", "show", id]).await.stdout_text();
        assert!(
            shown.contains("] thinking: Two and two make four.\n")
                && shown.contains("] assistant: 4"),
            "{shown}"
        );
    }
}

#[tokio::test]
async fn file_tools_change_real_files_and_the_answer_uses_them() {
    let fx = Fixture::new("file_tools").await;
    let out = fx.run(&["run", "--json", "Make a todo file"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    assert_gap_free(&events);

    let written = std::fs::read_to_string(fx.workspace().join("notes/todo.txt")).unwrap();
    assert_eq!(
        written, "alpha\ngamma\n",
        "write_file then edit_file changed the real file"
    );

    let results = of_type(&events, "tool_result");
    let names: Vec<&str> = results
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["write_file", "edit_file", "read_file", "bash"]);
    assert!(
        results.iter().all(|r| r["is_error"] == false),
        "{results:#?}"
    );
    assert!(results[2]["output"].as_str().unwrap().contains("gamma"));
    let bash = results[3]["output"].as_str().unwrap();
    let ws_name = fx.workspace().file_name().unwrap().to_str().unwrap();
    assert!(
        bash.contains('2') && bash.contains(&format!("ran-in-{ws_name}")),
        "{bash}"
    );

    // The parallel calls came in one assistant message; results in call order.
    let assistants = of_type(&events, "assistant");
    assert_eq!(assistants.len(), 4);
    let ids: Vec<&str> = assistants[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r1", "b1"]);
    let result_ids: Vec<&str> = results[2..]
        .iter()
        .map(|r| r["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(result_ids, ["r1", "b1"]);

    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "end_turn");
    assert_eq!(result["steps"], 4);
    assert!(
        result["text"].as_str().unwrap().contains("ran-in-"),
        "the answer used the tool output"
    );

    // The model saw every result: the last request carries both tool messages.
    let requests = fx.request_messages();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        roles(&requests[3]),
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "assistant",
            "tool",
            "tool"
        ]
    );
    fx.assert_requests_valid();
}

#[tokio::test]
async fn broken_tool_calls_become_error_results_and_the_turn_goes_on() {
    let fx = Fixture::new("tool_errors").await;
    std::fs::write(fx.workspace().join("a.txt"), "x").unwrap();
    let out = fx.run(&["run", "--json", "Try things"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let results = of_type(&events, "tool_result");
    assert_eq!(results.len(), 4);
    assert!(
        results.iter().all(|r| r["is_error"] == true),
        "{results:#?}"
    );
    let output = |i: usize| results[i]["output"].as_str().unwrap().to_string();
    assert!(
        output(0).contains("unknown tool `no_such_tool`"),
        "{}",
        output(0)
    );
    assert!(output(1).contains("not valid JSON"), "{}", output(1));
    assert!(output(2).contains("unknown field `file`"), "{}", output(2));
    assert!(
        output(3).contains("failing") && output(3).contains("Exit code: 3"),
        "{}",
        output(3)
    );
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");

    // The model read all four errors.
    let second = &fx.request_messages()[1];
    let tool_messages: Vec<&Value> = second.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_messages.len(), 4);
    assert!(
        tool_messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("unknown tool")
    );
    fx.assert_requests_valid();
}

#[tokio::test]
async fn max_steps_ends_the_turn_with_max_steps() {
    let fx = Fixture::new("endless_tools").await;
    let out = fx.run(&["run", "--json", "--max-steps", "2", "Loop"]).await;
    assert_eq!(out.code(), Some(3), "stderr: {}", out.stderr);
    assert!(out.stderr.contains("max_steps"), "{}", out.stderr);
    let events = out.events();
    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "max_steps");
    assert_eq!(result["steps"], 2);
    assert_eq!(
        of_type(&events, "tool_result").len(),
        2,
        "the last step's tools still ran"
    );
    assert_eq!(fx.server.requests().len(), 2, "no third model call");
    fx.assert_requests_valid();
}

#[tokio::test]
async fn sigint_mid_stream_cancels_the_turn_and_closes_the_stream() {
    let fx = Fixture::new("stall_mid_tool_call").await;
    let mut agent = fx.spawn(&["run", "--json", "Start"]);
    agent
        .wait_for_event(|e| {
            e["type"] == "stream_event" && e["event"]["block"]["type"] == "tool_use"
        })
        .await;
    agent.interrupt();
    let out = agent.finish().await;
    assert_eq!(out.code(), Some(130), "stderr: {}", out.stderr);
    let events = out.events();
    assert_gap_free(&events);
    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "cancelled");
    assert_eq!(result["text"], "Working on it");
    let assistant = of_type(&events, "assistant")[0];
    assert_eq!(assistant["interrupted"], true);
    let cancelled = of_type(&events, "tool_result");
    assert_eq!(cancelled.len(), 1, "the half-streamed call got a result");
    assert_eq!(cancelled[0]["cancelled"], true);
    tokio::time::timeout(GUARD, fx.server.wait_for_disconnects(1))
        .await
        .expect("the model stream was closed");
}

#[tokio::test]
async fn sigint_mid_tool_cancels_the_tool() {
    let fx = Fixture::new("slow_tool").await;
    let mut agent = fx.spawn(&["run", "--json", "Sleep"]);
    agent.wait_for_event(|e| e["type"] == "assistant").await;
    agent.interrupt();
    let out = agent.finish().await;
    assert_eq!(out.code(), Some(130), "stderr: {}", out.stderr);
    let events = out.events();
    let tool = of_type(&events, "tool_result");
    assert_eq!(tool.len(), 1);
    assert_eq!(tool[0]["call_id"], "slow");
    assert_eq!(tool[0]["is_error"], true);
    assert_eq!(the_result(&events)["stop_reason"], "cancelled");
    assert_eq!(fx.server.requests().len(), 1);
}

#[tokio::test]
async fn unknown_slash_command_never_reaches_the_model() {
    let fx = Fixture::new("plain_reply").await;
    let out = fx.run(&["run", "/foo", "bar"]).await;
    assert_eq!(out.code(), Some(2));
    assert!(
        out.stderr.contains("Unknown command /foo"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
    assert!(fx.server.requests().is_empty());
}

#[tokio::test]
async fn slash_commands_answer_in_run() {
    let fx = Fixture::new("plain_reply").await;
    let tools = fx.run(&["run", "/tools"]).await;
    assert_eq!(tools.code(), Some(0));
    for name in [
        "read_file",
        "write_file",
        "edit_file",
        "bash",
        "list_dir",
        "glob",
        "grep",
    ] {
        assert!(
            tools.stdout_text().contains(name),
            "{name} missing: {}",
            tools.stdout_text()
        );
    }

    let usage = fx.run(&["run", "--json", "/usage"]).await;
    let reply = of_type(&usage.events(), "system")
        .into_iter()
        .find(|e| e["subtype"] == "usage")
        .cloned()
        .expect("usage reply");
    assert_eq!(reply["data"]["session"]["input_tokens"], 0);

    let debug = fx.run(&["run", "/debug"]).await;
    assert_eq!(debug.code(), Some(0));
    let text = debug.stdout_text();
    assert!(text.contains("\"system_prompt\""), "{text}");
    assert!(!text.contains(SECRET), "the API key leaked into /debug");

    let model = fx.run(&["run", "/model", "other"]).await;
    assert!(
        model
            .stdout_text()
            .contains("Model switched from scripted to other"),
        "{}",
        model.stdout_text()
    );
    let models = fx.run(&["run", "/models"]).await;
    assert!(models.stdout_text().contains("* scripted") && models.stdout_text().contains("other"));

    let clear = fx.run(&["run", "/clear"]).await;
    assert!(clear.stdout_text().contains("Conversation cleared"));
    assert!(
        fx.server.requests().is_empty(),
        "no command reached the model"
    );
}

/// Commands never see agentbus's secrets: the variables holding provider
/// keys (by the profiles' own names, whatever they are) and anything named
/// like a key, secret or token; the rest of the environment is there.
#[tokio::test]
async fn bash_gets_an_environment_without_keys_or_tokens() {
    let script = agentbus_testkit::Script::from_toml_str(
        r#"
[[response]]
tool_calls = [{ name = "bash", arguments = { command = "echo \"openai=[$OPENAI_API_KEY] cred=[$MY_PROVIDER_CRED] gh=[$GITHUB_TOKEN] editor=[$EDITOR]\"" } }]
[[response]]
text = "{last_tool_result}"
"#,
    )
    .expect("script");
    let fx = Fixture::with_script(script).await;
    fx.add_config(
        "[models.extra]\nprovider = \"openai\"\nmodel = \"x\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"MY_PROVIDER_CRED\"\n",
    );
    let out = fx
        .run_with_env(
            &["run", "show me"],
            &[
                ("OPENAI_API_KEY", "sk-must-not-leak"),
                ("MY_PROVIDER_CRED", "cred-must-not-leak"),
                ("GITHUB_TOKEN", "ghp-must-not-leak"),
                ("EDITOR", "vi"),
            ],
        )
        .await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let answer = out.stdout_text();
    assert!(
        answer.contains("openai=[] cred=[] gh=[] editor=[vi]"),
        "{answer}"
    );
}
