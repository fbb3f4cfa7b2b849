//! The OpenAI Responses wire end to end, as a new user meets it: a profile
//! `provider = "openai-responses"` for a model OpenAI serves there alone
//! (`gpt-5.1-codex`) reads a file and answers through the built binary;
//! every body the scripted model receives is in OpenAI's `CreateResponse`
//! schema and its rules; the model's reasoning goes back with the next
//! request exactly as it came; a 429 is retried; and the same model behind
//! a Chat Completions profile is refused with advice to switch.

use crate::support::*;
use agentbus_testkit::{OpenAiSchema, schema_violations};
use serde_json::{Value, json};

/// A workspace with notes to summarise and a `codex` profile for
/// gpt-5.1-codex over the Responses wire.
async fn codex_with_notes(script: &str) -> Fixture {
    let fx = Fixture::new(script).await;
    fx.add_responses_profile("codex", "gpt-5.1-codex");
    std::fs::write(
        fx.workspace().join("notes.txt"),
        "- buy milk\n- fix the bike\n",
    )
    .expect("write notes.txt");
    fx
}

/// The input items of a recorded request.
fn items(body: &Value) -> Vec<Value> {
    body["input"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn a_responses_only_model_reads_the_notes_and_summarises_them() {
    let fx = codex_with_notes("responses_notes").await;
    let out = fx
        .run(&["run", "--model", "codex", "read notes.txt and summarise"])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(
        out.stdout,
        ["Your notes list two errands: buy milk and fix the bike."],
        "the answer, without the thinking"
    );

    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 2, "the tool round and the answer");
    for call in &calls {
        assert_eq!(call.path, "/v1/responses");
        assert_eq!(call.headers["authorization"], format!("Bearer {SECRET}"));
        let body = &call.body;
        assert_eq!(body["model"], "gpt-5.1-codex");
        assert_eq!(body["stream"], true);
        assert_eq!(body["store"], false);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["reasoning"]["summary"], "auto");
        assert!(
            body["instructions"]
                .as_str()
                .is_some_and(|i| i.contains("workspace:")),
            "the system prompt is the instructions"
        );
        let read_file = body["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == "read_file")
            .expect("read_file offered");
        assert_eq!(read_file["type"], "function");
        assert_eq!(read_file["strict"], false);
        assert!(read_file["parameters"].is_object());
        assert!(
            body["prompt_cache_key"]
                .as_str()
                .is_some_and(|k| !k.is_empty()),
            "the session is the prompt cache key"
        );
        let violations = schema_violations(OpenAiSchema::CreateResponse, body);
        assert!(violations.is_empty(), "{violations:#?}");
    }

    // The second request: the question, the first answer's items in the
    // order they came (its reasoning item first, sealed as the model
    // sealed it), the call's output.
    let second = items(&calls[1].body);
    let kinds: Vec<(&str, &str)> = second
        .iter()
        .map(|i| {
            (
                i["type"].as_str().unwrap_or("message"),
                i["role"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("message", "user"),
            ("reasoning", ""),
            ("message", "assistant"),
            ("function_call", ""),
            ("function_call_output", ""),
        ]
    );
    assert_eq!(second[0]["content"], "read notes.txt and summarise");
    let reasoning = &second[1];
    assert_eq!(reasoning["id"], "rs_scripted0");
    assert_eq!(
        reasoning["summary"],
        json!([{"type": "summary_text", "text": "The user wants a summary of notes.txt: read it first."}])
    );
    assert!(
        reasoning["encrypted_content"]
            .as_str()
            .is_some_and(|e| !e.is_empty()),
        "{reasoning}"
    );
    assert_eq!(second[2]["content"], "Let me read the notes.");
    assert_eq!(second[3]["call_id"], "call_notes");
    assert_eq!(second[3]["name"], "read_file");
    assert_eq!(
        serde_json::from_str::<Value>(second[3]["arguments"].as_str().unwrap_or_default())
            .expect("JSON arguments"),
        json!({"path": "notes.txt"})
    );
    assert_eq!(second[4]["call_id"], "call_notes");
    assert!(
        second[4]["output"]
            .as_str()
            .is_some_and(|o| o.contains("buy milk") && o.contains("fix the bike")),
        "{}",
        second[4]
    );
    // The kit checked the rest: calls answered, the reasoning item sealed
    // as it sent it and followed by its items, the schema.
    fx.assert_requests_valid();

    // The thinking was shown and kept: `sessions show` has it.
    let listed = fx.run(&["sessions", "list", "--json"]).await;
    let sessions: Vec<Value> = serde_json::from_str(&listed.stdout_text()).expect("JSON list");
    let id = sessions[0]["id"].as_str().expect("a session id");
    let shown = fx.run(&["sessions", "show", id]).await.stdout_text();
    assert!(
        shown.contains("thinking: The user wants a summary of notes.txt: read it first."),
        "{shown}"
    );
}

#[tokio::test]
async fn the_events_carry_the_reasoning_as_thinking_and_an_opaque_item() {
    let fx = codex_with_notes("responses_notes").await;
    let out = fx
        .run(&[
            "run",
            "--json",
            "--model",
            "codex",
            "read notes.txt and summarise",
        ])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    assert_gap_free(&events);
    let thinking: String = of_type(&events, "stream_event")
        .iter()
        .filter(|e| e["event"]["type"] == "thinking_delta")
        .filter_map(|e| e["event"]["text"].as_str())
        .collect();
    assert_eq!(
        thinking,
        "The user wants a summary of notes.txt: read it first.Two errands: milk and the bike."
    );
    let assistants = of_type(&events, "assistant");
    let first: Vec<&str> = assistants[0]["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|b| b["type"].as_str())
        .collect();
    assert_eq!(first, ["thinking", "reasoning_item", "text", "tool_use"]);
    let result = the_result(&events);
    assert_eq!(result["stop_reason"], "end_turn");
    assert_eq!(
        result["text"],
        "Your notes list two errands: buy milk and fix the bike."
    );
    assert_eq!(result["steps"], 2);
}

#[tokio::test]
async fn a_rate_limit_on_the_responses_wire_is_retried() {
    let fx = codex_with_notes("responses_rate_limited").await;
    let out = fx
        .run(&["run", "--json", "--model", "codex", "hello"])
        .await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    let retrying: Vec<&Value> = of_type(&events, "system")
        .into_iter()
        .filter(|e| e["subtype"] == "retrying")
        .collect();
    assert_eq!(retrying.len(), 1, "{events:#?}");
    assert!(
        retrying[0].to_string().contains("HTTP 429"),
        "{}",
        retrying[0]
    );
    assert_eq!(the_result(&events)["text"], "Answer after the retry.");
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c.path == "/v1/responses"));
    assert_eq!(calls[0].body, calls[1].body, "the same request again");
}

#[tokio::test]
async fn a_responses_only_model_behind_a_chat_profile_is_told_to_switch() {
    let fx = Fixture::new("plain_reply").await;
    fx.add_config(&format!(
        "[models.codex-on-chat]\nprovider = \"openai\"\nmodel = \"gpt-5.1-codex\"\n\
         base_url = \"{}\"\napi_key = \"{SECRET}\"\nretry_base_delay_ms = 1\n",
        fx.server.openai_base_url()
    ));
    let out = fx.run(&["run", "--model", "codex-on-chat", "hello"]).await;
    assert_ne!(out.code(), Some(0), "the turn failed");
    let shown = format!("{}\n{}", out.stdout_text(), out.stderr);
    assert!(
        shown.contains(
            "This model is only supported in v1/responses and not in v1/chat/completions."
        ) && shown
            .contains("set `provider = \"openai-responses\"` in model profile `codex-on-chat`"),
        "{shown}"
    );
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 1, "a 404 is not retried");
    assert_eq!(calls[0].path, "/v1/chat/completions");
    assert_eq!(
        fx.server.remaining_responses(),
        1,
        "the model never answered"
    );
}
