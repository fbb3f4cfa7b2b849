//! Hooks end to end, with the files a Claude Code project keeps: a
//! `PreToolUse` hook that blocks `rm -rf` (exit 2, the model reads why), a
//! `PostToolUse` formatter after an edit, an `http` hook whose `deny` is
//! obeyed, project hooks that wait for `agentbus hooks trust`, a
//! `UserPromptSubmit` hook that refuses a query or adds context, a `Stop`
//! hook that sends the model back once, and `SessionStart` context in the
//! system prompt. The real binary, the scripted model, real processes.

use crate::support::*;
use agentbus_testkit::Script;
use serde_json::{Value, json};
use std::path::Path;

/// Write `.claude/settings.json` with `hooks` into `workspace`.
fn project_hooks(workspace: &Path, hooks: Value) {
    let dir = workspace.join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("settings.json"),
        json!({ "hooks": hooks }).to_string(),
    )
    .unwrap();
}

fn command(text: &str) -> Value {
    json!([{"type": "command", "command": text}])
}

/// The guard of the issue: blocks any command holding `rm -rf`.
const GUARD: &str = r#"input=$(cat); case "$input" in *'rm -rf'*) echo "rm -rf is not allowed here; delete files one by one" >&2; exit 2;; esac"#;

/// A formatter: upper-cases the edited file (named by `file_path`, as in
/// Claude Code) and notes that it ran.
const FORMATTER: &str = r#"f=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"]["file_path"])'); echo "$f" >> "$CLAUDE_PROJECT_DIR/formatted.log"; tr a-z A-Z < "$f" > "$f.tmp" && mv "$f.tmp" "$f""#;

fn tool_results(events: &[Value]) -> Vec<&Value> {
    of_type(events, "tool_result")
}

fn hook_events(events: &[Value]) -> Vec<&Value> {
    events.iter().filter(|e| e["subtype"] == "hook").collect()
}

async fn trust(fx: &Fixture) {
    let out = fx.run(&["hooks", "trust"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(
        out.stdout_text().contains("Trusted."),
        "{}",
        out.stdout_text()
    );
}

#[tokio::test]
async fn project_hooks_block_rm_rf_and_format_edits_once_trusted() {
    let script = Script::from_toml_str(
        r#"
[[response]]
tool_calls = [ { id = "b1", name = "bash", arguments = { command = "mkdir -p junk && touch keep.txt && rm -rf junk" } } ]
[[response]]
tool_calls = [ { id = "w1", name = "write_file", arguments = { path = "notes.txt", content = "hello\n" } } ]
[[response]]
text = "done"
[[response]]
tool_calls = [ { id = "b2", name = "bash", arguments = { command = "mkdir -p junk && touch keep.txt && rm -rf junk" } } ]
[[response]]
tool_calls = [ { id = "w2", name = "write_file", arguments = { path = "notes.txt", content = "hello\n" } } ]
[[response]]
text = "done"
"#,
    )
    .unwrap();
    let fx = Fixture::with_script(script).await;
    project_hooks(
        fx.workspace(),
        json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": command(GUARD)}],
            "PostToolUse": [{"matcher": "Edit|Write", "hooks": command(FORMATTER)}],
        }),
    );

    // Before trust: a notice names the file, and neither hook runs (the
    // session is in bypass mode: the command runs).
    let out = fx.run(&["run", "--json", "clean up"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let notice = events
        .iter()
        .find(|e| {
            e["subtype"] == "notice"
                && e["message"]
                    .as_str()
                    .unwrap_or("")
                    .contains(".claude/settings.json")
        })
        .expect("a notice about the untrusted hooks");
    assert!(
        notice["message"]
            .as_str()
            .unwrap()
            .contains("agentbus hooks trust"),
        "{notice}"
    );
    assert!(hook_events(&events).is_empty());
    assert_eq!(tool_results(&events)[0]["is_error"], false);
    assert_eq!(
        std::fs::read_to_string(fx.workspace().join("notes.txt")).unwrap(),
        "hello\n"
    );

    trust(&fx).await;
    std::fs::remove_file(fx.workspace().join("keep.txt")).unwrap();
    let out = fx.run(&["run", "--json", "clean up"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let results = tool_results(&events);
    assert_eq!(results[0]["is_error"], true);
    let blocked = results[0]["output"].as_str().unwrap();
    assert!(blocked.contains("rm -rf is not allowed here"), "{blocked}");
    assert!(
        !fx.workspace().join("keep.txt").exists(),
        "the command never ran"
    );
    // The model read the hook's reason.
    let messages = fx.request_messages();
    let seen = serde_json::to_string(&messages[4]).unwrap();
    assert!(seen.contains("rm -rf is not allowed here"), "{seen}");
    // The formatter ran after the write, on the file's absolute path.
    assert_eq!(
        std::fs::read_to_string(fx.workspace().join("notes.txt")).unwrap(),
        "HELLO\n"
    );
    let log = std::fs::read_to_string(fx.workspace().join("formatted.log")).unwrap();
    assert_eq!(
        log.trim(),
        fx.workspace().join("notes.txt").display().to_string()
    );
    // Every run is a stored `hook` event.
    let hooks = hook_events(&events);
    assert_eq!(hooks.len(), 2, "{hooks:?}");
    assert_eq!(hooks[0]["data"]["event"], "PreToolUse");
    assert_eq!(hooks[0]["data"]["decision"], "deny");
    assert_eq!(hooks[1]["data"]["event"], "PostToolUse");
    assert_eq!(hooks[1]["data"]["outcome"], "ok");
    let id = session_id(&events);
    let shown = fx.run(&["sessions", "show", &id, "--json"]).await;
    assert_eq!(
        shown.stdout_text().matches("\"subtype\":\"hook\"").count(),
        2
    );

    // A change to the hooks must be trusted again.
    project_hooks(
        fx.workspace(),
        json!({"PreToolUse": [{"matcher": "Bash", "hooks": command("exit 0")}]}),
    );
    let listed = fx.run(&["hooks", "list"]).await;
    assert!(
        listed.stdout_text().contains("NOT trusted"),
        "{}",
        listed.stdout_text()
    );
}

/// A local HTTP server answering every POST with `answer`, keeping the
/// bodies it received.
async fn http_hook(answer: Value) -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    use axum::{Json, Router, routing::post};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    let app = Router::new().route(
        "/hook",
        post(
            move |headers: axum::http::HeaderMap, Json(body): Json<Value>| {
                let kept = kept.clone();
                let answer = answer.clone();
                async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string();
                    kept.lock()
                        .unwrap()
                        .push(json!({"body": body, "authorization": auth}));
                    Json(answer)
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

#[tokio::test]
async fn an_http_hook_gets_the_pre_tool_use_json_and_its_deny_is_obeyed() {
    let script = Script::from_toml_str(
        r#"
[[response]]
tool_calls = [ { id = "b1", name = "bash", arguments = { command = "echo ran > ran.txt" } } ]
[[response]]
text = "ok"
"#,
    )
    .unwrap();
    let fx = Fixture::with_script(script).await;
    let deny = json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "the policy server says no"}});
    let (url, seen) = http_hook(deny).await;
    // Configured hooks are the user's own: no trust needed.
    fx.add_config(&format!(
        "[[hooks.PreToolUse]]\nmatcher = \"bash\"\nhooks = [{{ type = \"http\", url = \"{url}\", headers = {{ Authorization = \"Bearer $HOOK_TOKEN\" }}, allowed_env_vars = [\"HOOK_TOKEN\"] }}]\n"
    ));
    let out = fx
        .run_with_env(&["run", "--json", "go"], &[("HOOK_TOKEN", "t0k")])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let result = tool_results(&events)[0];
    assert_eq!(result["is_error"], true);
    assert!(
        result["output"]
            .as_str()
            .unwrap()
            .contains("the policy server says no"),
        "{result}"
    );
    assert!(!fx.workspace().join("ran.txt").exists());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let body = &seen[0]["body"];
    assert_eq!(body["hook_event_name"], "PreToolUse");
    assert_eq!(body["tool_name"], "bash");
    assert_eq!(body["tool_input"]["command"], "echo ran > ran.txt");
    assert_eq!(body["session_id"], session_id(&events));
    assert_eq!(body["permission_mode"], "bypass");
    assert_eq!(seen[0]["authorization"], "Bearer t0k");
}

#[tokio::test]
async fn a_prompt_hook_refuses_a_query_or_adds_context() {
    let fx = Fixture::new("plain_reply").await;
    fx.add_config(&format!(
        "[[hooks.UserPromptSubmit]]\nhooks = [{{ type = \"command\", command = '''{}''' }}]\n",
        r#"p=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["prompt"])'); case "$p" in *secret*) echo "no secrets in prompts" >&2; exit 2;; *) echo "branch: main";; esac"#
    ));
    let out = fx.run(&["run", "--json", "my secret is 42"]).await;
    let events = out.events();
    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "error");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .contains("no secrets in prompts"),
        "{result}"
    );
    assert!(
        of_type(&events, "user").is_empty(),
        "the query was never shown nor kept"
    );
    assert!(fx.server.model_calls().is_empty(), "the model never saw it");

    let out = fx.run(&["run", "--json", "say hello"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let messages = fx.request_messages();
    let user = serde_json::to_string(messages[0].last().unwrap()).unwrap();
    assert!(
        user.contains("say hello") && user.contains("branch: main"),
        "{user}"
    );
}

#[tokio::test]
async fn a_stop_hook_sends_the_model_back_once_and_session_start_adds_context() {
    let script = Script::from_toml_str(
        "[[response]]\ntext = \"first answer\"\n[[response]]\ntext = \"tests run, all green\"\n",
    )
    .unwrap();
    let fx = Fixture::with_script(script).await;
    let stop = r#"active=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["stop_hook_active"])'); if [ "$active" = False ]; then echo '{"decision": "block", "reason": "run the tests before you finish"}'; fi"#;
    fx.add_config(&format!(
        "[[hooks.Stop]]\nhooks = [{{ type = \"command\", command = '''{stop}''' }}]\n\
         [[hooks.SessionStart]]\nhooks = [{{ type = \"command\", command = \"echo 'ON-CALL: ada'\" }}]\n"
    ));
    let out = fx.run(&["run", "--json", "finish"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    assert_eq!(the_result(&events)["text"], "tests run, all green");
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 2);
    let second = serde_json::to_string(&fx.request_messages()[1]).unwrap();
    assert!(
        second.contains("run the tests before you finish"),
        "{second}"
    );
    assert!(system_message(&calls[0].body).contains("ON-CALL: ada"));
    assert_eq!(
        events
            .iter()
            .filter(|e| e["subtype"] == "hook_continued")
            .count(),
        1
    );
    // The feedback is part of the stored conversation: a resumed session
    // sends it again.
    let id = session_id(&events);
    let shown = fx.run(&["sessions", "show", &id, "--json"]).await;
    assert!(shown.stdout_text().contains("hook_continued"));
}
