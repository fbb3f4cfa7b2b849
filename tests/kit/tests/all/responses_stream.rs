//! The OpenAI Responses endpoint, checked from a client's side: every event
//! is in OpenAI's published `ResponseStreamEvent` schema, numbered in
//! order, named on its `event:` line; the items reassemble into exactly
//! the scripted reasoning, text and tool calls; a reasoning item goes back
//! only as it came; and the API's refusals come in its own shapes.

use crate::support::{Frame, post};
use agentbus_testkit::{OpenAiSchema, Script, ScriptedModel, schema_violations};
use serde_json::{Value, json};

/// What a Responses client ends up with.
#[derive(Debug, Default)]
struct Assembled {
    /// The finished output items, in order.
    items: Vec<Value>,
    text: String,
    summary: String,
    /// Arguments by `output_index`, from the deltas.
    arguments: std::collections::BTreeMap<u64, String>,
    /// The last event (`response.completed` or `.incomplete`).
    last: Value,
}

/// Reassembles a stream, asserting every event on the way.
fn reassemble(frames: &[Frame]) -> Assembled {
    let mut out = Assembled::default();
    for (n, frame) in frames.iter().enumerate() {
        let event = frame.json();
        assert_eq!(frame.event.as_deref(), event["type"].as_str(), "{event}");
        assert_eq!(event["sequence_number"], n, "{event}");
        let violations = schema_violations(OpenAiSchema::ResponseStreamEvent, &event);
        assert!(violations.is_empty(), "{violations:#?}");
        let index = event["output_index"].as_u64().unwrap_or_default();
        match event["type"].as_str().unwrap_or_default() {
            "response.output_text.delta" => out
                .text
                .push_str(event["delta"].as_str().unwrap_or_default()),
            "response.reasoning_summary_text.delta" => out
                .summary
                .push_str(event["delta"].as_str().unwrap_or_default()),
            "response.function_call_arguments.delta" => out
                .arguments
                .entry(index)
                .or_default()
                .push_str(event["delta"].as_str().unwrap_or_default()),
            "response.output_item.done" => out.items.push(event["item"].clone()),
            _ => {}
        }
        out.last = event;
    }
    out
}

fn script(toml: &str) -> Script {
    Script::from_toml_str(toml).expect("valid script")
}

/// A request as agentbus makes it for a reasoning model.
fn request(input: Value) -> Value {
    json!({
        "model": "gpt-5.1-codex", "stream": true, "store": false,
        "include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"},
        "instructions": "You are a coding agent.",
        "tools": [{"type": "function", "name": "read_file", "description": "read a file",
                   "parameters": {"type": "object"}, "strict": false}],
        "input": input,
    })
}

#[tokio::test]
async fn a_tool_round_streams_openais_events_and_its_reasoning_goes_back_whole() {
    let server = ScriptedModel::start(script(
        r#"
        [[response]]
        thinking = "Read the notes first."
        text = "Let me read it."
        tool_calls = [ { id = "call_1", name = "read_file", arguments = { path = "notes.txt" } } ]
        usage = { input_tokens = 120, output_tokens = 30 }

        [[response]]
        text = "The notes say: {last_tool_result}"
        "#,
    ))
    .await
    .expect("start");
    let question = json!({"type": "message", "role": "user", "content": "summarise notes.txt"});
    let reply = post(server.addr(), "/v1/responses", &request(json!([question]))).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let first = reassemble(&reply.frames());
    assert_eq!(first.summary, "Read the notes first.");
    assert_eq!(first.text, "Let me read it.");
    assert_eq!(first.arguments[&2], r#"{"path":"notes.txt"}"#);
    let kinds: Vec<&str> = first
        .items
        .iter()
        .filter_map(|i| i["type"].as_str())
        .collect();
    assert_eq!(kinds, ["reasoning", "message", "function_call"]);
    assert_eq!(first.last["type"], "response.completed");
    assert_eq!(
        first.last["response"]["usage"]["input_tokens_details"]["cached_tokens"],
        0
    );
    assert_eq!(first.last["response"]["usage"]["input_tokens"], 120);
    let reasoning = first.items[0].clone();
    assert!(reasoning["encrypted_content"].is_string(), "{reasoning}");

    // The answer goes back, reasoning first, then the call's output.
    let mut input = vec![question.clone(), reasoning.clone()];
    input.push(json!({"type": "message", "role": "assistant", "content": "Let me read it."}));
    input.push(
        json!({"type": "function_call", "call_id": "call_1", "name": "read_file",
                      "arguments": "{\"path\":\"notes.txt\"}"}),
    );
    input.push(json!({"type": "function_call_output", "call_id": "call_1", "output": "alpha"}));
    let reply = post(
        server.addr(),
        "/v1/responses",
        &request(Value::Array(input.clone())),
    )
    .await;
    assert_eq!(reassemble(&reply.frames()).text, "The notes say: alpha");
    assert!(server.violations().is_empty(), "{:#?}", server.violations());

    // Altered, it is refused as the API refuses it.
    let mut tampered = input;
    tampered[1]["summary"][0]["text"] = json!("Something else.");
    let server = ScriptedModel::start(script("[[response]]\ntext = 'x'"))
        .await
        .expect("start");
    post(
        server.addr(),
        "/v1/responses",
        &request(Value::Array(tampered)),
    )
    .await;
    let violations = server.violations();
    assert_eq!(violations.len(), 1, "{violations:#?}");
    assert!(
        violations[0].contains("could not be verified"),
        "{violations:#?}"
    );
}

#[tokio::test]
async fn a_request_outside_openais_schema_is_a_violation() {
    let server = ScriptedModel::start(script("[[response]]\ntext = 'ok'"))
        .await
        .expect("start");
    let mut body = request(json!("hi"));
    body["reasoning"] = json!({"effort": "ultra"});
    let reply = post(server.addr(), "/v1/responses", &body).await;
    assert_eq!(reply.status, 200, "served anyway, and recorded");
    let violations = server.violations();
    assert!(
        violations
            .iter()
            .any(|v| v.contains("/reasoning/effort")
                && v.contains("(OpenAI's `CreateResponse` schema)")),
        "{violations:#?}"
    );
}

#[tokio::test]
async fn a_responses_only_model_is_refused_on_chat_completions_with_openais_404() {
    let server = ScriptedModel::start(script("[[response]]\ntext = 'ok'"))
        .await
        .expect("start");
    let chat = json!({"model": "gpt-5.1-codex", "stream": true,
                      "messages": [{"role": "user", "content": "hi"}]});
    let reply = post(server.addr(), "/v1/chat/completions", &chat).await;
    assert_eq!(reply.status, 404);
    assert_eq!(
        reply.json(),
        json!({"error": {
            "message": "This model is only supported in v1/responses and not in v1/chat/completions.",
            "type": "invalid_request_error", "param": "model", "code": null,
        }})
    );
    assert_eq!(server.remaining_responses(), 1, "no response consumed");
    assert!(
        server.violations().is_empty(),
        "a profile's mistake, not a protocol violation"
    );
    // The same model on its own wire is answered.
    let reply = post(server.addr(), "/v1/responses", &request(json!("hi"))).await;
    assert_eq!(reassemble(&reply.frames()).text, "ok");
}

#[tokio::test]
async fn too_long_a_request_is_refused_in_the_stream_as_openai_does() {
    let server = ScriptedModel::start(script("context_window = 50\n[[response]]\ntext = 'never'"))
        .await
        .expect("start");
    let long = "word ".repeat(200);
    let reply = post(server.addr(), "/v1/responses", &request(json!(long))).await;
    assert_eq!(reply.status, 200);
    let events: Vec<Value> = reply.frames().iter().map(Frame::json).collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "error",
            "response.failed"
        ]
    );
    assert_eq!(
        events[2]["error"],
        json!({"type": "invalid_request_error", "code": "context_length_exceeded",
               "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
               "param": "input"})
    );
    let recorded = &server.requests()[0];
    assert!(recorded.refused_for_length);
    assert_eq!(server.remaining_responses(), 1);
}

#[tokio::test]
async fn statuses_and_cut_answers_work_on_the_responses_wire() {
    let server = ScriptedModel::start(script(
        r#"
        [[response]]
        status = 429
        headers = { "retry-after" = "1" }
        body = '{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}'

        [[response]]
        text = "The summary is"
        finish_reason = "length"
        "#,
    ))
    .await
    .expect("start");
    let body = request(json!("summarise"));
    let reply = post(server.addr(), "/v1/responses", &body).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.header("retry-after"), Some("1"));
    let reply = post(server.addr(), "/v1/responses", &body).await;
    let cut = reassemble(&reply.frames());
    assert_eq!(cut.text, "The summary is");
    assert_eq!(cut.last["type"], "response.incomplete");
    assert_eq!(
        cut.last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    // A Chat Completions body on this endpoint is refused.
    let chat = json!({"model": "gpt-5.1-codex", "stream": true, "messages": [{"role": "user", "content": "hi"}]});
    let reply = post(server.addr(), "/v1/responses", &chat).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("`input`")
    );
}
