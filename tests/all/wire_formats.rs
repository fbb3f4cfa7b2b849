//! One conversation, two wire formats: the scripted model answers the same
//! script over OpenAI Chat Completions and Anthropic Messages, and agentbus
//! must turn both into the same events — the model's thinking included,
//! which each format streams and takes back in its own way.

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
            // A checkpoint's id is unique to its run; what it names is not.
            if let Some(checkpoint) = map.get_mut("checkpoint").and_then(Value::as_object_mut) {
                checkpoint.remove("id");
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
    assert!(
        last["system"][0]["text"]
            .as_str()
            .unwrap()
            .contains("workspace:"),
        "the system prompt is one text block: {}",
        last["system"]
    );
    assert_eq!(fx.server.requests()[0].headers["x-api-key"], SECRET);
}

/// `run --json PROMPT` through `profile` against the `thinking` script
/// (with the `scripted-thinking` profile configured).
async fn think_through(profile: &str, prompt: &str) -> (Vec<Value>, Fixture) {
    let fx = Fixture::new("thinking").await;
    fx.add_thinking_profile();
    std::fs::write(fx.workspace().join("notes.txt"), "buy milk\n").unwrap();
    let out = fx.run(&["run", "--json", "--model", profile, prompt]).await;
    assert_eq!(out.code(), Some(0), "{profile}: {}", out.stderr);
    fx.assert_requests_valid();
    (out.events(), fx)
}

/// The `event` of every `stream_event`.
fn deltas(events: &[Value]) -> Vec<&Value> {
    of_type(events, "stream_event")
        .into_iter()
        .map(|e| &e["event"])
        .collect()
}

#[tokio::test]
async fn thinking_streams_before_the_answer_through_openai_and_anthropic() {
    for profile in ["scripted", "scripted-thinking"] {
        let (events, _fx) = think_through(profile, "what is 2 + 2?").await;
        let deltas = deltas(&events);
        let thinking_start = deltas
            .iter()
            .position(|d| d["type"] == "block_start" && d["block"]["type"] == "thinking")
            .unwrap_or_else(|| panic!("{profile}: no thinking block opens: {deltas:#?}"));
        let first_thought = deltas
            .iter()
            .position(|d| d["type"] == "thinking_delta")
            .unwrap_or_else(|| panic!("{profile}: no thinking_delta"));
        let first_text = deltas
            .iter()
            .position(|d| d["type"] == "text_delta")
            .unwrap_or_else(|| panic!("{profile}: no text_delta"));
        assert!(
            thinking_start < first_thought && first_thought < first_text,
            "{profile}: thinking streams first: {deltas:#?}"
        );
        let index = &deltas[thinking_start]["index"];
        assert!(
            deltas[first_thought..first_text]
                .iter()
                .any(|d| d["type"] == "block_stop" && &d["index"] == index),
            "{profile}: the thinking block closes before the text: {deltas:#?}"
        );
        let thought: String = deltas
            .iter()
            .filter(|d| d["type"] == "thinking_delta")
            .map(|d| d["text"].as_str().unwrap())
            .collect();
        assert_eq!(thought, "Two and two make four.", "{profile}");

        let assistant = of_type(&events, "assistant")[0];
        let block = &assistant["content"][0];
        assert_eq!(block["type"], "thinking", "{profile}: {assistant}");
        assert_eq!(block["thinking"], "Two and two make four.");
        match profile {
            "scripted" => assert!(
                block.get("signature").is_none(),
                "reasoning_content is unsigned: {block}"
            ),
            _ => assert!(
                block["signature"].as_str().is_some_and(|s| !s.is_empty()),
                "Anthropic's thinking keeps its signature: {block}"
            ),
        }
        assert_eq!(
            assistant["content"][1],
            serde_json::json!({"type": "text", "text": "4"})
        );
        assert_eq!(
            the_result(&events)["text"],
            "4",
            "{profile}: thinking is not the answer"
        );
    }
}

#[tokio::test]
async fn anthropic_without_a_thinking_budget_asks_for_no_thinking_and_gets_none() {
    let (events, fx) = think_through("scripted-anthropic", "what is 2 + 2?").await;
    let request = &fx.server.model_calls()[0].body;
    assert!(request.get("thinking").is_none(), "{request}");
    assert!(
        !deltas(&events)
            .iter()
            .any(|d| d["type"] == "thinking_delta"),
        "the real API sends no thinking unasked"
    );
    let assistant = of_type(&events, "assistant")[0];
    assert_eq!(
        assistant["content"],
        serde_json::json!([{"type": "text", "text": "4"}])
    );
}

#[tokio::test]
async fn an_anthropic_tool_round_sends_the_signed_thinking_back() {
    let (events, fx) = think_through("scripted-thinking", "read the notes").await;
    assert_eq!(the_result(&events)["text"], "The notes say: buy milk.");
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 2);
    for call in &calls {
        assert_eq!(
            call.body["thinking"],
            serde_json::json!({"type": "enabled", "budget_tokens": 2048})
        );
    }
    // The first answer, as stored: its signed thinking, its text, its call.
    let first = &of_type(&events, "assistant")[0]["content"];
    assert_eq!(first[0]["type"], "thinking");
    let sent_back = &calls[1].body["messages"][1];
    assert_eq!(sent_back["role"], "assistant");
    assert_eq!(
        sent_back["content"][0],
        serde_json::json!({
            "type": "thinking",
            "thinking": "The notes are in notes.txt; read them before answering.",
            "signature": first[0]["signature"],
        }),
        "the thinking goes back first, with its signature, unchanged"
    );
    assert_eq!(sent_back["content"][1]["type"], "text");
    assert_eq!(sent_back["content"][2]["type"], "tool_use");
    // The scripted model checks the signature and the thinking's place as
    // the API does: a request it refused would have failed the turn.
    assert!(calls.iter().all(|c| c.violations.is_empty()));
}

#[tokio::test]
async fn openai_compatible_reasoning_is_never_sent_back() {
    let (events, fx) = think_through("scripted", "read the notes").await;
    assert_eq!(the_result(&events)["text"], "The notes say: buy milk.");
    let first = &of_type(&events, "assistant")[0]["content"];
    assert_eq!(first[0]["type"], "thinking", "{first}");
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 2);
    let sent_back = &calls[1].body["messages"][2];
    assert_eq!(sent_back["role"], "assistant");
    assert_eq!(
        sent_back.as_object().map(|m| {
            let mut keys: Vec<&str> = m.keys().map(String::as_str).collect();
            keys.sort_unstable();
            keys
        }),
        Some(vec!["content", "role", "tool_calls"]),
        "no reasoning_content (DeepSeek refuses it): {sent_back}"
    );
    assert_eq!(sent_back["content"], "Let me read them.");
}
