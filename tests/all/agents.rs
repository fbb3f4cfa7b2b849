//! Named agents end to end: `[agents.NAME]` in the configuration, agent
//! files in `.agentbus/agents/` and `.claude/agents/` (a Claude Code file
//! as users write it), a bad file, `--agent`, `/agent`, the HTTP control
//! commands, the plan agent refusing writes, and the tool allow list
//! limiting the tools the model request offers (the scripted model records
//! every request).

use crate::support::server::error_of;
use crate::support::*;
use agentbus_testkit::offered_tools;
use serde_json::json;

fn write_agent(fx: &Fixture, folder: &str, file: &str, text: &str) -> std::path::PathBuf {
    let dir = fx.workspace().join(folder);
    std::fs::create_dir_all(&dir).expect("agents folder");
    let path = dir.join(file);
    std::fs::write(&path, text).expect("write agent file");
    path
}

#[tokio::test]
async fn a_configured_agent_brings_its_prompt_and_offers_only_its_tools() {
    let fx = Fixture::new("agents").await;
    fx.add_config(
        "[agents.reader]\ndescription = \"reads only\"\nprompt = \"READER-PROMPT: look, do not touch.\"\ntools = [\"read_file\", \"grep\"]\n",
    );
    let out = fx
        .run(&["run", "--json", "--agent", "reader", "hello"])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 1);
    let system = system_message(&calls[0].body);
    assert!(system.starts_with("READER-PROMPT"), "{system}");
    assert!(
        !system.contains("You are agentbus, a coding agent"),
        "the agent's prompt replaces the default one: {system}"
    );
    assert_eq!(offered_tools(&calls[0].body), ["read_file", "grep"]);
    let started = &out.events()[0];
    assert_eq!(started["data"]["agent"], "reader");
    assert_eq!(started["data"]["tools"], json!(["read_file", "grep"]));
}

#[tokio::test]
async fn an_agentbus_agent_file_sets_model_and_keeps_project_instructions() {
    let fx = Fixture::new("agents").await;
    std::fs::write(fx.workspace().join("AGENTS.md"), "PROJECT-RULE: be nice.").unwrap();
    write_agent(
        &fx,
        ".agentbus/agents",
        "quick.md",
        "---\nname: quick\ndescription: answers fast\nmodel: other\ndisallowedTools: [bash, write_file]\n---\nQUICK-PROMPT in {workspace}.\n",
    );
    let out = fx.run(&["run", "--json", "--agent", "quick", "hi"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let calls = fx.server.model_calls();
    let body = &calls[0].body;
    assert_eq!(body["model"], "scripted-other", "the agent's profile");
    let system = system_message(body);
    let workspace = fx.workspace().canonicalize().unwrap();
    assert!(
        system.starts_with(&format!("QUICK-PROMPT in {}.", workspace.display())),
        "{system}"
    );
    assert!(
        system.contains("PROJECT-RULE"),
        "instructions appended: {system}"
    );
    let tools = offered_tools(body);
    assert!(
        tools.contains(&"read_file".to_string()) && !tools.contains(&"bash".to_string()),
        "{tools:?}"
    );
    assert!(!tools.contains(&"write_file".to_string()), "{tools:?}");
}

#[tokio::test]
async fn a_claude_code_agent_file_works_unchanged() {
    let fx = Fixture::new("agents").await;
    let text =
        std::fs::read_to_string(agentbus_testkit::fixtures_dir().join("agents/claude-reviewer.md"))
            .expect("fixture");
    write_agent(&fx, ".claude/agents", "reviewer.md", &text);
    let out = fx
        .run(&["run", "--json", "--agent", "reviewer", "review it"])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let calls = fx.server.model_calls();
    let body = &calls[0].body;
    assert_eq!(
        body["model"], "scripted-main",
        "`sonnet` keeps the session's model"
    );
    assert!(
        system_message(body).starts_with("You are a senior code reviewer"),
        "{}",
        system_message(body)
    );
    let mut tools = offered_tools(body);
    tools.sort();
    assert_eq!(
        tools,
        ["bash", "glob", "grep", "read_file", "web_fetch"],
        "Read, Grep, Glob, Bash, WebFetch mapped onto ours"
    );
}

#[tokio::test]
async fn a_bad_agent_file_names_file_and_field_and_the_others_still_load() {
    let fx = Fixture::new("agents").await;
    let bad = write_agent(
        &fx,
        ".agentbus/agents",
        "broken.md",
        "---\nname: broken\npermissionMode: sometimes\n---\nbody\n",
    );
    write_agent(
        &fx,
        ".agentbus/agents",
        "good.md",
        "---\ndescription: fine\n---\nGOOD-PROMPT\n",
    );
    let out = fx.run(&["run", "--json", "--agent", "good", "hi"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let notice = events
        .iter()
        .find(|e| {
            e["subtype"] == "notice" && e["message"].as_str().unwrap_or("").contains("broken.md")
        })
        .unwrap_or_else(|| panic!("a notice about the bad file: {events:#?}"));
    let message = notice["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(&bad.display().to_string()) && message.contains("permissionMode"),
        "{message}"
    );
    assert!(system_message(&fx.server.model_calls()[0].body).starts_with("GOOD-PROMPT"));

    let out = fx.run(&["run", "--json", "--agent", "broken", "hi"]).await;
    assert_ne!(out.code(), Some(0));
    assert!(
        out.stderr.contains("unknown agent `broken`") && out.stderr.contains("build, plan, good"),
        "{}",
        out.stderr
    );
}

#[tokio::test]
async fn slash_agent_lists_switches_and_a_reloaded_session_keeps_the_agent() {
    let fx = Fixture::new("agents").await;
    write_agent(
        &fx,
        ".agentbus/agents",
        "helper.md",
        "---\ndescription: helps\n---\nHELPER\n",
    );
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("/agent\n").await;
    let listed = chat.wait_for_event(|e| e["subtype"] == "agents").await;
    assert_eq!(listed["data"]["active"], "build");
    let names: Vec<&str> = listed["data"]["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(names, ["build", "plan", "helper"]);
    assert!(
        listed["message"]
            .as_str()
            .unwrap_or_default()
            .contains("helper — helps"),
        "{listed}"
    );
    chat.send("/agent plan\nhello\n/quit\n").await;
    let switched = chat.wait_for_event(|e| e["subtype"] == "agent").await;
    assert_eq!(switched["data"]["agent"], "plan");
    assert_eq!(switched["data"]["permission_mode"], "plan");
    let id = switched["session_id"].as_str().expect("an id").to_string();
    chat.wait_for_event(|e| e["type"] == "result").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let system = system_message(&fx.server.model_calls()[0].body);
    assert!(system.contains("plan agent"), "{system}");

    // Loaded again, the session is still the plan agent's.
    let out = fx.run(&["run", "--json", "--session", &id, "again"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let started = &out.events()[0];
    assert_eq!(started["data"]["agent"], "plan", "{started}");
    assert_eq!(started["data"]["permission_mode"], "plan");
    let calls = fx.server.model_calls();
    assert!(system_message(&calls[1].body).contains("plan agent"));
}

#[tokio::test]
async fn the_plan_agent_refuses_writes() {
    let fx = Fixture::new("agents").await;
    let out = fx
        .run(&["run", "--json", "--agent", "plan", "write the plan down"])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let result = of_type(&events, "tool_result");
    assert_eq!(result.len(), 1, "{events:#?}");
    assert_eq!(result[0]["is_error"], true);
    assert!(
        result[0]["output"]
            .as_str()
            .unwrap_or_default()
            .contains("plan"),
        "{}",
        result[0]
    );
    assert!(
        !fx.workspace().join("plan.txt").exists(),
        "nothing was written"
    );
    assert_eq!(events[0]["data"]["permission_mode"], "plan");
}

#[tokio::test]
async fn agents_over_http_at_creation_and_as_control_commands() {
    let fx = Fixture::new("agents").await;
    let server = fx.serve().await;
    let id = server.create_session_with(json!({"agent": "plan"})).await;
    let mut events = server.sse(&id, None).await;
    let started = events.until(|e| e["subtype"] == "session_started").await;
    assert_eq!(started["data"]["agent"], "plan");
    assert_eq!(started["data"]["permission_mode"], "plan");

    for body in [
        json!({"command": "switch_agent", "name": "build"}),
        json!({"command": "list_agents"}),
    ] {
        let response = server
            .post(&format!("/v1/sessions/{id}/input"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
    }
    let switched = events.until(|e| e["subtype"] == "agent").await;
    assert_eq!(switched["data"]["agent"], "build");
    assert_eq!(switched["data"]["previous"], "plan");
    assert_eq!(
        switched["data"]["permission_mode"], "bypass",
        "the configured mode"
    );
    let listed = events.until(|e| e["subtype"] == "agents").await;
    assert_eq!(listed["data"]["active"], "build");

    let error = error_of(
        server
            .post("/v1/sessions")
            .json(&json!({"agent": "nobody"})),
        400,
    )
    .await;
    assert!(
        error.contains("unknown agent `nobody`") && error.contains("build, plan"),
        "{error}"
    );

    // The agents a workspace offers, for pickers (`agent acp --attach`).
    write_agent(
        &fx,
        ".claude/agents",
        "reviewer.md",
        "---\ndescription: Reviews code\n---\nREVIEW\n",
    );
    let ws = fx.workspace().display().to_string();
    let listed: serde_json::Value = server
        .get(&format!("/v1/agents?workspace={ws}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = listed["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["build", "plan", "reviewer"], "{listed}");
    assert_eq!(listed["agents"][2]["description"], "Reviews code");
    let error = error_of(server.get("/v1/agents?workspace=relative/dir"), 400).await;
    assert!(error.contains("`relative/dir`"), "{error}");
}
