//! Custom slash commands end to end: a Claude Code project's
//! `.claude/commands/review.md` (`description`, `argument-hint`,
//! `$ARGUMENTS`) run as `/review src/main.rs` from `run`, the piped chat,
//! a real `agentbus serve` over HTTP and an editor over ACP; `$1 $2`; a
//! namespaced command; the workspace's commands over the user's and
//! `.agentbus` over `.claude`; a bad file and a file named like a built-in
//! command, each named in a notice; `/help` listing them; a command's
//! `model` for its query alone. The scripted model records every request:
//! the tests read what the model received.

use crate::acp::editor::{Behaviour, new_session, prompt, with_editor};
use crate::support::*;
use agent_client_protocol::v1::schema::{AvailableCommandInput, SessionUpdate, StopReason};
use agentbus_testkit::last_user_text;
use serde_json::{Value, json};
use std::path::Path;

/// The review command of a Claude Code project, as its users keep it.
fn claude_review() -> String {
    std::fs::read_to_string(agentbus_testkit::fixtures_dir().join("commands/review.md"))
        .expect("fixture")
}

fn write(root: &Path, file: &str, text: &str) -> std::path::PathBuf {
    let path = root.join(file);
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("commands folder");
    std::fs::write(&path, text).expect("write command file");
    path
}

/// What the model received as the last user message of each request.
fn asked(fx: &Fixture) -> Vec<String> {
    fx.server
        .model_calls()
        .iter()
        .map(|call| last_user_text(&call.body).unwrap_or_default())
        .collect()
}

/// The `/review src/main.rs` the model must receive.
const REVIEW_OPENING: &str = "Review the code in src/main.rs.\n\nLook for:";

#[tokio::test]
async fn a_claude_code_command_runs_unchanged_from_run() {
    let fx = Fixture::new("commands").await;
    let file = write(
        fx.workspace(),
        ".claude/commands/review.md",
        &claude_review(),
    );
    let out = fx.run(&["run", "--json", "/review src/main.rs"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let listed = &events[0]["data"]["commands"];
    assert_eq!(
        listed,
        &json!([{
            "command": "/review [file]",
            "description": "Review a file for bugs, security issues and style",
            "name": "review",
            "source": file.display().to_string(),
        }]),
        "session_started lists the session's commands"
    );
    let user = of_type(&events, "user");
    assert_eq!(user.len(), 1);
    assert_eq!(user[0]["text"], "/review src/main.rs", "what was typed");
    let prompt = user[0]["prompt"].as_str().expect("the prompt");
    assert!(prompt.starts_with(REVIEW_OPENING), "{prompt}");
    assert_eq!(asked(&fx), [prompt], "the model received the prompt");
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");
    fx.assert_requests_valid();
}

#[tokio::test]
async fn positional_arguments_and_the_piped_chat() {
    let fx = Fixture::new("commands").await;
    write(
        fx.workspace(),
        ".agentbus/commands/compare.md",
        "---\ndescription: Compare two files\nargument-hint: <a> <b>\n---\nCompare $1 with $2; all: $ARGUMENTS\n",
    );
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("/compare \"old main.rs\" new.rs\n/quit\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        asked(&fx),
        ["Compare old main.rs with new.rs; all: \"old main.rs\" new.rs"]
    );
}

#[tokio::test]
async fn a_namespaced_command_is_named_after_its_folder() {
    let fx = Fixture::new("commands").await;
    write(
        fx.workspace(),
        ".claude/commands/frontend/component.md",
        "Write a React component named $ARGUMENTS.",
    );
    let out = fx
        .run(&["run", "--json", "/frontend:component Button"])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let listed = &out.events()[0]["data"]["commands"][0];
    assert_eq!(listed["name"], "frontend:component");
    assert_eq!(
        listed["description"], "Write a React component named $ARGUMENTS.",
        "without a description, the first line"
    );
    // Claude Code also names it by the file alone: so does agentbus, when
    // no other command ends in that name.
    let out = fx.run(&["run", "--json", "/component Card"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        of_type(&out.events(), "user")[0]["text"],
        "/frontend:component Card"
    );
    assert_eq!(
        asked(&fx),
        [
            "Write a React component named Button.",
            "Write a React component named Card."
        ]
    );
}

#[tokio::test]
async fn the_workspaces_commands_win_over_the_users_and_agentbus_over_claude() {
    let fx = Fixture::new("commands").await;
    let home = fx.home.path();
    write(
        home,
        ".claude/commands/review.md",
        "USER-CLAUDE review $ARGUMENTS",
    );
    write(home, ".claude/commands/deploy.md", "USER-CLAUDE deploy");
    write(
        home,
        ".config/agentbus/commands/deploy.md",
        "USER-AGENTBUS deploy",
    );
    write(home, ".claude/commands/mine.md", "USER-CLAUDE mine");
    write(
        fx.workspace(),
        ".claude/commands/review.md",
        "WS-CLAUDE review $ARGUMENTS",
    );
    write(fx.workspace(), ".claude/commands/test.md", "WS-CLAUDE test");
    write(
        fx.workspace(),
        ".agentbus/commands/test.md",
        "WS-AGENTBUS test",
    );
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("/review x\n/deploy\n/mine\n/test\n/quit\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        asked(&fx),
        [
            "WS-CLAUDE review x",
            "USER-AGENTBUS deploy",
            "USER-CLAUDE mine",
            "WS-AGENTBUS test"
        ]
    );
}

#[tokio::test]
async fn a_bad_file_and_a_built_in_name_are_named_and_help_lists_the_rest() {
    let fx = Fixture::new("commands").await;
    let review = write(
        fx.workspace(),
        ".claude/commands/review.md",
        &claude_review(),
    );
    let bad = write(
        fx.workspace(),
        ".claude/commands/broken.md",
        "---\ndescription: broken\nallowed-tools: 42\n---\nDo it.\n",
    );
    let clear = write(
        fx.workspace(),
        ".agentbus/commands/clear.md",
        "Clear the cache.",
    );
    let out = fx.run(&["run", "--json", "/help"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let notices: Vec<&str> = events
        .iter()
        .filter(|e| e["subtype"] == "notice")
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("Command file not used:")
                && n.contains(&bad.display().to_string())
                && n.contains("field `allowed-tools`")),
        "{notices:#?}"
    );
    assert!(
        notices
            .iter()
            .any(|n| n.contains(&clear.display().to_string())
                && n.contains("`/clear` is a built-in command")),
        "{notices:#?}"
    );
    let help = events
        .iter()
        .find(|e| e["subtype"] == "help")
        .expect("the /help reply");
    let message = help["message"].as_str().unwrap_or_default();
    let custom = message
        .split("Custom commands:")
        .nth(1)
        .unwrap_or_else(|| panic!("no custom section: {message}"));
    assert!(
        custom.contains("/review [file]")
            && custom.contains(&format!(
                "Review a file for bugs, security issues and style ({})",
                review.display()
            )),
        "{message}"
    );
    assert!(message.contains("Command files not used:"), "{message}");
    let entries = help["data"].as_array().expect("the commands");
    let review_entry = entries
        .iter()
        .find(|e| e["name"] == "review")
        .expect("review listed");
    assert_eq!(review_entry["source"], review.display().to_string());
    let clear_entries: Vec<&Value> = entries.iter().filter(|e| e["name"] == "clear").collect();
    assert_eq!(clear_entries.len(), 1);
    assert!(
        clear_entries[0].get("source").is_none(),
        "the built-in /clear"
    );

    // `/clear` is still the built-in command: nothing reaches the model.
    let out = fx.run(&["run", "--json", "/clear"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert!(out.events().iter().any(|e| e["subtype"] == "cleared"));
    assert!(fx.server.model_calls().is_empty());
}

#[tokio::test]
async fn a_commands_model_answers_its_query_alone() {
    let fx = Fixture::new("commands").await;
    write(
        fx.workspace(),
        ".claude/commands/quick.md",
        "---\nmodel: other\n---\nAnswer quickly: $ARGUMENTS\n",
    );
    write(
        fx.workspace(),
        ".claude/commands/haiku.md",
        "---\nmodel: claude-3-5-haiku-20241022\n---\nAnswer in a haiku: $ARGUMENTS\n",
    );
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("/quick what is 2+2\nand now?\n/haiku rust\n/quit\n")
        .await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stdout: {:#?}", out.events());
    let models: Vec<Value> = fx
        .server
        .model_calls()
        .iter()
        .map(|c| c.body["model"].clone())
        .collect();
    assert_eq!(models, ["scripted-other", "scripted-main", "scripted-main"]);
    let events = out.events();
    let notice = events
        .iter()
        .find(|e| {
            e["subtype"] == "notice"
                && e["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("claude-3-5-haiku-20241022")
        })
        .unwrap_or_else(|| panic!("a notice about the model: {events:#?}"));
    assert!(
        notice["message"]
            .as_str()
            .unwrap_or_default()
            .contains("the session's model (scripted) answers"),
        "{notice}"
    );
}

#[tokio::test]
async fn a_custom_command_runs_over_http_as_text_or_by_name() {
    let fx = Fixture::new("commands").await;
    write(
        fx.workspace(),
        ".claude/commands/review.md",
        &claude_review(),
    );
    let server = fx.serve().await;
    let id = server.create_session().await;
    let mut sse = server.sse(&id, None).await;
    let input = server.input(&id, "/review src/main.rs").await;
    let result = sse.result_of(input).await;
    assert_eq!(result["stop_reason"], "end_turn");
    let user = sse
        .events
        .iter()
        .find(|e| e["type"] == "user" && e["turn_id"] == input)
        .expect("the user event");
    assert_eq!(user["text"], "/review src/main.rs");
    let started = &sse.events[0];
    assert_eq!(started["data"]["commands"][0]["name"], "review");

    let response = server
        .post(&format!("/v1/sessions/{id}/input"))
        .json(&json!({"command": "custom", "name": "review", "arguments": "lib.rs"}))
        .send()
        .await
        .expect("POST input");
    assert_eq!(response.status(), 202);
    let accepted: Value = response.json().await.expect("JSON");
    let by_name = accepted["input_id"].as_u64().expect("an input id");
    sse.result_of(by_name).await;
    let asked = asked(&fx);
    assert!(asked[0].starts_with(REVIEW_OPENING), "{asked:?}");
    assert!(
        asked[1].starts_with("Review the code in lib.rs."),
        "{asked:?}"
    );
    // The conversation reads back as the model saw it.
    let messages = server
        .get_json(&format!("/v1/sessions/{id}/messages"))
        .await;
    let first = messages["history"][0].to_string();
    assert!(first.contains("Review the code in src/main.rs."), "{first}");
}

#[tokio::test]
async fn an_editor_is_offered_the_commands_and_runs_one() {
    let fx = Fixture::new("commands").await;
    write(
        fx.workspace(),
        ".claude/commands/review.md",
        &claude_review(),
    );
    let ws = fx.workspace().to_path_buf();
    with_editor(&fx, &[], Behaviour::default(), async |cx, editor| {
        let id = new_session(&cx, &ws).await?;
        let offered = |seen: &crate::acp::editor::Seen| {
            seen.updates.iter().find_map(|u| match u {
                SessionUpdate::AvailableCommandsUpdate(update) => Some(update.clone()),
                _ => None,
            })
        };
        editor.wait_until(|seen| offered(seen).is_some()).await;
        let commands = offered(&editor.seen()).expect("offered").available_commands;
        let review = commands
            .iter()
            .find(|c| c.name == "review")
            .unwrap_or_else(|| panic!("/review is not offered: {commands:#?}"));
        assert_eq!(
            review.description,
            "Review a file for bugs, security issues and style"
        );
        match &review.input {
            Some(AvailableCommandInput::Unstructured(input)) => assert_eq!(input.hint, "[file]"),
            other => panic!("no input hint: {other:?}"),
        }
        assert!(commands.iter().any(|c| c.name == "compact"));
        let answer = prompt(&cx, &id, "/review src/main.rs").await?;
        assert_eq!(answer.stop_reason, StopReason::EndTurn);
        assert!(editor.take().agent_text().contains("Reviewed."));
        Ok(())
    })
    .await;
    let asked = asked(&fx);
    assert_eq!(asked.len(), 1);
    assert!(asked[0].starts_with(REVIEW_OPENING), "{asked:?}");
}
