//! One conversation, two wire formats: the scripted model answers the same
//! script over OpenAI Chat Completions and Anthropic Messages, and agentbus
//! must turn both into the same events.

use crate::support::*;
use serde_json::Value;

/// Events without what may differ between two runs: ids, times, durations,
/// the profile's name and the temporary workspace's path.
fn comparable(events: &[Value], workspace: &std::path::Path) -> Vec<Value> {
    let path = workspace.display().to_string();
    let name = workspace.file_name().unwrap().to_string_lossy().to_string();
    events
        .iter()
        .map(|e| {
            let text = e
                .to_string()
                .replace(&path, "<workspace>")
                .replace(&name, "<name>");
            let mut e: Value = serde_json::from_str(&text).unwrap();
            let map = e.as_object_mut().unwrap();
            for key in ["session_id", "at", "duration_ms", "model"] {
                map.remove(key);
            }
            if map["type"] == "system" && map["subtype"] == "session_started" {
                map.remove("message");
                map.remove("data");
            }
            e
        })
        .collect()
}

async fn run_through(profile: &str) -> (Vec<Value>, Fixture) {
    let fx = Fixture::new("file_tools").await;
    let out = fx
        .run(&["run", "--json", "--model", profile, "Make a todo file"])
        .await;
    assert_eq!(out.code(), Some(0), "{profile}: {}", out.stderr);
    fx.assert_requests_valid();
    (out.events(), fx)
}

#[tokio::test]
async fn the_same_conversation_gives_the_same_events_through_openai_and_anthropic() {
    let (openai, openai_fx) = run_through("scripted").await;
    let (anthropic, anthropic_fx) = run_through("scripted-anthropic").await;
    assert!(
        openai_fx
            .server
            .requests()
            .iter()
            .all(|r| r.path == "/v1/chat/completions")
    );
    assert!(
        anthropic_fx
            .server
            .requests()
            .iter()
            .all(|r| r.path == "/v1/messages")
    );
    let (a, b) = (
        comparable(&openai, openai_fx.workspace()),
        comparable(&anthropic, anthropic_fx.workspace()),
    );
    assert_eq!(a.len(), b.len(), "openai:\n{a:#?}\nanthropic:\n{b:#?}");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y);
    }
    let written = std::fs::read_to_string(anthropic_fx.workspace().join("notes/todo.txt")).unwrap();
    assert_eq!(written, "alpha\ngamma\n");
}

#[tokio::test]
async fn anthropic_requests_carry_tool_results_in_user_messages() {
    let (_, fx) = run_through("scripted-anthropic").await;
    let last = fx.server.requests().last().unwrap().body.clone();
    let messages = last["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "user"
        ]
    );
    let parallel_results = messages[6]["content"].as_array().unwrap();
    assert_eq!(
        parallel_results.len(),
        2,
        "both results of the parallel calls in one user message"
    );
    assert!(parallel_results.iter().all(|b| b["type"] == "tool_result"));
    assert!(last["system"].as_str().unwrap().contains("workspace:"));
    assert_eq!(fx.server.requests()[0].headers["x-api-key"], SECRET);
}
