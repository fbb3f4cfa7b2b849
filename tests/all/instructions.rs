//! Project instructions end to end: `AGENTS.md` in the workspace (else
//! `CLAUDE.md`) and the user's in the configuration directory reach the
//! model in the system prompt of the request the scripted model records;
//! `/context` and `/debug` show them; a file that cannot be read is a
//! notice, not a failed run; `/init` is a turn asking for an AGENTS.md.

use crate::support::*;
use serde_json::Value;

/// The user-level `AGENTS.md` of the fixture's home (`XDG_CONFIG_HOME`).
fn write_user_instructions(fx: &Fixture, text: &str) -> std::path::PathBuf {
    let dir = fx.home.path().join(".config").join("agentbus");
    std::fs::create_dir_all(&dir).expect("config dir");
    let path = dir.join("AGENTS.md");
    std::fs::write(&path, text).expect("write user AGENTS.md");
    path
}

#[tokio::test]
async fn agents_md_reaches_the_model_in_the_system_prompt_after_the_users_own() {
    let fx = Fixture::new("plain_reply").await;
    let project = fx.workspace().join("AGENTS.md");
    std::fs::write(
        &project,
        "PROJECT-RULE: run `make check` before you finish.",
    )
    .unwrap();
    std::fs::write(fx.workspace().join("CLAUDE.md"), "CLAUDE-RULE").unwrap();
    let user = write_user_instructions(&fx, "USER-RULE: answer tersely.");

    let out = fx.run(&["run", "--json", "Say hello"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 1);
    let system = system_message(&calls[0].body);
    let (user_at, project_at) = (system.find("USER-RULE"), system.find("PROJECT-RULE"));
    assert!(
        user_at.is_some() && project_at.is_some() && user_at < project_at,
        "{system}"
    );
    assert!(
        system.contains(&format!(
            "# Project instructions from {}",
            project.display()
        )),
        "{system}"
    );
    assert!(!system.contains("CLAUDE-RULE"), "AGENTS.md wins: {system}");

    let events = out.events();
    let started = &events[0];
    assert_eq!(started["subtype"], "session_started");
    let shown: Vec<&str> = started["data"]["instructions"]
        .as_array()
        .expect("instructions listed")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let canonical = |p: &std::path::Path| p.canonicalize().unwrap().display().to_string();
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert_eq!(canonical(std::path::Path::new(shown[0])), canonical(&user));
    assert_eq!(
        canonical(std::path::Path::new(shown[1])),
        canonical(&project)
    );
    fx.assert_requests_valid();
}

#[tokio::test]
async fn claude_md_is_read_when_there_is_no_agents_md() {
    let fx = Fixture::new("plain_reply").await;
    std::fs::write(fx.workspace().join("CLAUDE.md"), "CLAUDE-RULE: use tabs.").unwrap();
    let out = fx.run(&["run", "Say hello"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let system = system_message(&fx.server.model_calls()[0].body);
    assert!(system.contains("CLAUDE-RULE: use tabs."), "{system}");
    assert!(system.contains("CLAUDE.md"), "{system}");
}

#[tokio::test]
async fn context_and_debug_show_the_instructions() {
    let fx = Fixture::new("plain_reply").await;
    std::fs::write(fx.workspace().join("AGENTS.md"), "PROJECT-RULE ".repeat(50)).unwrap();

    let out = fx.run(&["run", "--json", "/context"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let reply = of_type(&out.events(), "system")
        .into_iter()
        .find(|e| e["subtype"] == "context")
        .cloned()
        .expect("a /context reply");
    assert!(
        reply["data"]["instructions"].as_u64().unwrap_or(0) > 50,
        "{reply}"
    );
    let files = reply["data"]["instruction_files"]
        .as_array()
        .expect("files");
    assert_eq!(files.len(), 1);
    assert!(
        files[0]["path"]
            .as_str()
            .unwrap_or_default()
            .ends_with("AGENTS.md")
    );
    assert!(
        reply["message"]
            .as_str()
            .unwrap_or_default()
            .contains("AGENTS.md")
    );

    let out = fx.run(&["run", "--json", "/debug", "full"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let debug = of_type(&out.events(), "system")
        .into_iter()
        .find(|e| e["subtype"] == "debug")
        .cloned()
        .expect("a /debug reply");
    assert!(
        debug["message"]
            .as_str()
            .unwrap_or_default()
            .contains("PROJECT-RULE"),
        "{debug}"
    );
    assert!(
        fx.server.model_calls().is_empty(),
        "commands never reach the model"
    );
}

#[tokio::test]
async fn an_unreadable_agents_md_is_a_notice_naming_it_and_the_run_goes_on() {
    let fx = Fixture::new("plain_reply").await;
    let path = fx.workspace().join("AGENTS.md");
    std::fs::write(&path, b"not \xff\xfe utf-8").unwrap();
    let out = fx.run(&["run", "--json", "Say hello"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let notice = of_type(&events, "system")
        .into_iter()
        .find(|e| e["subtype"] == "notice")
        .cloned()
        .expect("a notice");
    let text = notice["message"].as_str().unwrap_or_default();
    assert!(
        text.contains("AGENTS.md") && text.contains("UTF-8"),
        "{text}"
    );
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");
    let system = system_message(&fx.server.model_calls()[0].body);
    assert!(!system.contains("Project instructions"), "{system}");
}

#[tokio::test]
async fn init_asks_the_model_for_an_agents_md_and_the_model_writes_it() {
    let fx = Fixture::new("init_writes_agents_md").await;
    let out = fx.run(&["run", "--json", "/init"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let user = of_type(&events, "user");
    assert_eq!(user.len(), 1);
    assert_eq!(user[0]["text"], "/init", "what was typed");
    let asked = user[0]["prompt"].as_str().unwrap_or_default();
    assert!(
        asked.starts_with("Look at this workspace") && asked.contains("write an AGENTS.md"),
        "{asked}"
    );
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 3);
    assert_eq!(
        agentbus_testkit::last_user_text(&calls[0].body).as_deref(),
        Some(asked)
    );
    let written = std::fs::read_to_string(fx.workspace().join("AGENTS.md")).expect("AGENTS.md");
    assert!(written.contains("make test"), "{written}");
    assert_eq!(the_result(&events)["stop_reason"], "end_turn");
    fx.assert_requests_valid();
}

#[tokio::test]
async fn init_with_an_agents_md_asks_to_improve_it() {
    let fx = Fixture::new("plain_reply").await;
    std::fs::write(fx.workspace().join("AGENTS.md"), "Old notes.").unwrap();
    let out = fx.run(&["run", "--json", "/init"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let asked =
        agentbus_testkit::last_user_text(&fx.server.model_calls()[0].body).unwrap_or_default();
    assert!(asked.contains("improve its AGENTS.md"), "{asked}");
}
