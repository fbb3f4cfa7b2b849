//! Permissions end to end with the built binary: `run` rejecting with the
//! flag that would allow a call, a piped chat answering y/a/n, a chat and
//! an HTTP client on one request (the HTTP answer resolves the chat's
//! prompt), plan mode, and rules that do not parse.

use crate::support::server::error_of;
use crate::support::{Fixture, of_type, the_result};
use serde_json::{Value, json};

async fn fixture() -> Fixture {
    let f = Fixture::new("permissions").await;
    f.set_permission_mode("default");
    f
}

/// The text of every message of the model's last request, joined.
fn last_request_text(f: &Fixture) -> String {
    f.request_messages()
        .last()
        .map(|messages| serde_json::to_string(messages).unwrap())
        .unwrap_or_default()
}

#[tokio::test]
async fn run_rejects_a_call_that_would_ask_and_names_what_would_allow_it() {
    let f = fixture().await;
    let out = f.run(&["run", "--json", "clean up"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let request = of_type(&events, "approval_request")[0].clone();
    assert_eq!(request["name"], "bash");
    assert_eq!(request["input"]["command"], "rm -rf build");
    assert_eq!(request["suggested_rule"], "bash(rm -rf:*)");
    let resolved: Vec<&Value> = of_type(&events, "system")
        .into_iter()
        .filter(|e| e["subtype"] == "approval_resolved")
        .collect();
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["data"]["outcome"], "rejected");
    assert_eq!(resolved[0]["data"]["request_id"], request["request_id"]);
    let result = of_type(&events, "tool_result")[0];
    assert_eq!(result["is_error"], true);
    let output = result["output"].as_str().unwrap();
    assert!(
        output.contains("--allow 'bash(rm -rf:*)'") && output.contains("--permission-mode bypass"),
        "{output}"
    );
    // The model read it, and the turn ended normally.
    assert!(last_request_text(&f).contains("--allow 'bash(rm -rf:*)'"));
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");

    // Plain output says it on stderr; with the rule, the call just runs.
    let plain = f.run(&["run", "clean up"]).await;
    assert!(
        plain.stderr.contains("--allow 'bash(rm -rf:*)'"),
        "{}",
        plain.stderr
    );
    let allowed = f
        .run(&["run", "--json", "--allow", "bash(rm -rf:*)", "clean up"])
        .await;
    let events = allowed.events();
    assert!(of_type(&events, "approval_request").is_empty());
    assert_eq!(of_type(&events, "tool_result")[0]["is_error"], false);
    f.assert_requests_valid();
}

#[tokio::test]
async fn a_piped_chat_answers_no_with_a_message_then_always() {
    let f = fixture().await;
    let mut chat = f.spawn_with_stdin(&["chat"]);
    chat.send("clean up\n").await;
    chat.wait_for_text("Allow? y once · a always `bash(rm -rf:*)`")
        .await;
    chat.send("n: use trash-cli instead\n").await;
    let said = chat.wait_for_text("Tool said:").await;
    assert!(said.contains("use trash-cli instead"), "{said}");
    assert!(last_request_text(&f).contains("use trash-cli instead"));

    chat.send("test it\n").await;
    chat.wait_for_text("a always `bash(cargo test:*)`").await;
    chat.send("a\n").await;
    chat.wait_for_text("Tests:").await;
    // The same command again: no question this time.
    chat.send("verify\n").await;
    chat.wait_for_text("Verified:").await;
    chat.close_stdin();
    let done = chat.finish().await;
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
    let text = done.stdout_text();
    assert_eq!(text.matches("Allow?").count(), 2, "{text}");
    assert!(text.contains("now runs without asking"), "{text}");
    assert!(!f.workspace().join("build").exists() || f.workspace().join("build").is_dir());
}

#[tokio::test]
async fn an_answer_over_http_resolves_the_prompt_of_an_attached_chat() {
    let f = fixture().await;
    let server = f.serve().await;
    let mut chat = f.spawn_with_stdin(&["chat", "--attach", &server.url, "--json"]);
    let started = chat
        .wait_for_event(|e| e["subtype"] == "session_started")
        .await;
    assert_eq!(started["data"]["permission_mode"], "default");
    let id = started["session_id"].as_str().unwrap().to_string();
    chat.send("clean up\n").await;
    let request = chat
        .wait_for_event(|e| e["type"] == "approval_request")
        .await;
    let request_id = request["request_id"].as_str().unwrap();

    let answer = server
        .post(&format!("/v1/sessions/{id}/approvals/{request_id}"))
        .json(&json!({"decision": "allow_once"}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let resolved = chat
        .wait_for_event(|e| e["subtype"] == "approval_resolved")
        .await;
    assert_eq!(resolved["data"]["outcome"], "allowed_once");
    let result = chat.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(result["stop_reason"], "end_turn");
    // The first answer won: the chat's own, later, is refused.
    let late = server
        .post(&format!("/v1/sessions/{id}/approvals/{request_id}"))
        .json(&json!({"decision": "reject"}));
    let error = error_of(late, 409).await;
    assert!(error.contains("already settled"), "{error}");
    chat.close_stdin();
    let done = chat.finish().await;
    assert_eq!(done.code(), Some(0), "{}", done.stderr);
}

#[tokio::test]
async fn plan_mode_denies_a_write_without_asking_and_tells_the_model_it_plans() {
    let f = fixture().await;
    let out = f
        .run(&[
            "run",
            "--json",
            "--permission-mode",
            "plan",
            "write the plan",
        ])
        .await;
    let events = out.events();
    assert!(of_type(&events, "approval_request").is_empty());
    let result = of_type(&events, "tool_result")[0];
    assert_eq!(result["is_error"], true);
    assert!(result["output"].as_str().unwrap().contains("plan mode"));
    assert!(!f.workspace().join("plan.txt").exists());
    let system = &f.request_messages()[0][0];
    assert!(
        system["content"]
            .as_str()
            .unwrap_or_default()
            .contains("PLAN MODE"),
        "{system}"
    );
    let started = &of_type(&events, "system")[0];
    assert_eq!(started["data"]["permission_mode"], "plan");
}

#[tokio::test]
async fn a_rule_that_does_not_parse_names_the_file_and_what_was_expected() {
    let f = fixture().await;
    let flag = f.run(&["run", "--allow", "edit_file(", "hello"]).await;
    assert_ne!(flag.code(), Some(0));
    assert!(
        flag.stderr.contains("--allow") && flag.stderr.contains("`edit_file(`"),
        "{}",
        flag.stderr
    );
    f.add_config("[permissions]\nallow = [\"bash(git status\"]\n");
    let out = f.run(&["run", "hello"]).await;
    assert_ne!(out.code(), Some(0));
    assert!(out.stderr.contains("test-config.toml"), "{}", out.stderr);
    assert!(out.stderr.contains("`bash(git status`"), "{}", out.stderr);
    assert!(out.stderr.contains("expected"), "{}", out.stderr);
}

/// `bypass` asks nothing, but the sandbox still holds: a write outside the
/// workspace fails with the sandbox's note, one inside succeeds.
#[tokio::test]
async fn in_bypass_mode_the_sandbox_still_blocks_writes_outside_the_workspace() {
    if !agentbus_engine::runtime::sandbox_support().is_available() {
        let why = format!("{:?}", agentbus_engine::runtime::sandbox_support());
        assert!(
            std::env::var_os("AGENTBUS_REQUIRE_LANDLOCK").is_none(),
            "Landlock is required here but missing: {why}"
        );
        eprintln!("skipped: Landlock is not available here ({why})");
        return;
    }
    let target = format!("/etc/agentbus-test-{}", std::process::id());
    let script = agentbus_testkit::Script::from_toml_str(&format!(
        r#"
[[response]]
tool_calls = [ {{ id = "w1", name = "bash", arguments = {{ command = "echo x > {target}" }} }},
               {{ id = "w2", name = "bash", arguments = {{ command = "touch ok && echo touched" }} }} ]

[[response]]
text = "Done: {{last_tool_result}}"
"#
    ))
    .unwrap();
    let f = Fixture::with_script(script).await;
    let out = f
        .run(&["run", "--json", "--permission-mode", "bypass", "write both"])
        .await;
    let written = std::path::Path::new(&target).exists();
    let _ = std::fs::remove_file(&target);
    assert!(!written, "the sandbox let a write to {target} through");
    let events = out.events();
    assert!(of_type(&events, "approval_request").is_empty());
    let results = of_type(&events, "tool_result");
    let blocked = results[0]["output"].as_str().unwrap();
    assert_eq!(results[0]["is_error"], true);
    assert!(blocked.contains("sandbox"), "{blocked}");
    assert!(blocked.contains("outside_sandbox"), "{blocked}");
    assert_eq!(results[1]["is_error"], false, "{}", results[1]["output"]);
    assert!(f.workspace().join("ok").exists());
}

/// A request left waiting by a process killed with SIGKILL is closed on
/// the next load like any interrupted call: `approval_resolved`
/// (cancelled), a cancelled tool result, the turn's error `result`.
#[tokio::test]
async fn a_request_waiting_when_the_process_is_killed_is_closed_on_the_next_load() {
    let f = fixture().await;
    let mut chat = f.spawn_with_stdin(&["chat", "--json"]);
    chat.send("clean up\n").await;
    let request = chat
        .wait_for_event(|e| e["type"] == "approval_request")
        .await;
    let id = request["session_id"].as_str().unwrap().to_string();
    chat.kill9();
    assert_eq!(chat.finish().await.code(), None, "killed by a signal");

    let resumed = f
        .run(&[
            "run",
            "--json",
            "--session",
            &id,
            "--permission-mode",
            "bypass",
            "test it",
        ])
        .await;
    assert_eq!(resumed.code(), Some(0), "{}", resumed.stderr);
    let events = resumed.events();
    let closed = of_type(&events, "system")
        .into_iter()
        .find(|e| e["subtype"] == "approval_resolved")
        .expect("the open request is closed");
    assert_eq!(closed["data"]["request_id"], request["request_id"]);
    assert_eq!(closed["data"]["outcome"], "cancelled");
    let results = of_type(&events, "tool_result");
    assert_eq!(results[0]["call_id"], request["call_id"]);
    assert_eq!(results[0]["cancelled"], true);
    let turns = of_type(&events, "result");
    assert_eq!(turns[0]["stop_reason"], "error");
    // The new turn ran in the mode the flag asked for: no question.
    assert_eq!(of_type(&events, "approval_request").len(), 0);
    assert_eq!(turns[1]["stop_reason"], "end_turn");
}
