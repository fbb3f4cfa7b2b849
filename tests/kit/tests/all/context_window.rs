//! `context_window`: the scripted model counts every model call's tokens,
//! refuses oversize requests with each provider's own error (consuming no
//! response), and reports the count as the streamed usage.

use crate::support::{Frame, post};
use agentbus_testkit::{Script, ScriptedModel, Wire, count_request, count_text};
use serde_json::{Value, json};

fn script(toml: &str) -> Script {
    Script::from_toml_str(toml).expect("valid script")
}

const OPENAI_MODEL: &str = "gpt-4o-mini";
const ANTHROPIC_MODEL: &str = "claude-sonnet-4";

/// A small OpenAI request: a developer prompt, a user turn, a tool round.
fn openai_request(user: &str, max_completion_tokens: u64) -> Value {
    json!({
        "model": OPENAI_MODEL,
        "stream": true,
        "stream_options": {"include_usage": true},
        "max_completion_tokens": max_completion_tokens,
        "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}],
        "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": user},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "forty-two"}]},
        ],
    })
}

/// [`openai_request`]'s tokens, summed from its pieces by the convention.
fn openai_expected(user: &str) -> u64 {
    let count = |text: &str| count_text(OPENAI_MODEL, text);
    // The `tools` array's JSON text as serde_json writes it (keys sorted,
    // or as written when the build enables serde_json's `preserve_order`).
    let tools = openai_request(user, 0)["tools"].to_string();
    3 + count(&tools)
        + (4 + count("Be brief."))
        + (4 + count(user))
        + (4 + count("read_file") + count(r#"{"path":"a.txt"}"#))
        + (4 + count("forty-two"))
}

/// A small Anthropic request: a system prompt of two blocks, a tool round.
fn anthropic_request(user: &str, max_tokens: u64) -> Value {
    json!({
        "model": ANTHROPIC_MODEL,
        "stream": true,
        "max_tokens": max_tokens,
        "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Use tools."}],
        "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": user},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "forty-two"},
                {"type": "text", "text": "and?"},
            ]},
        ],
    })
}

/// [`anthropic_request`]'s tokens, summed from its pieces by the convention.
fn anthropic_expected(user: &str) -> u64 {
    let count = |text: &str| count_text(ANTHROPIC_MODEL, text);
    let tools = anthropic_request(user, 0)["tools"].to_string();
    3 + count(&tools)
        + (4 + count("Be brief.") + count("Use tools."))
        + (4 + count(user))
        + (4 + count("Looking.") + count("read_file") + count(r#"{"path":"a.txt"}"#))
        + (4 + count("forty-two") + count("and?"))
}

/// The usage object of an OpenAI stream's last chunk before `[DONE]`.
fn openai_usage(frames: &[Frame]) -> Value {
    let [.., usage, done] = frames else {
        panic!("too few frames: {frames:?}");
    };
    assert_eq!(done.data, "[DONE]");
    let usage = usage.json();
    assert_eq!(
        usage["choices"],
        json!([]),
        "the usage chunk has no choices"
    );
    usage["usage"].clone()
}

/// `(message_start input_tokens, message_delta output_tokens)`.
fn anthropic_usage(frames: &[Frame]) -> (Option<u64>, Option<u64>) {
    let data = |event: &str| {
        frames
            .iter()
            .find(|frame| frame.event.as_deref() == Some(event))
            .map(Frame::json)
            .unwrap_or_else(|| panic!("no {event} in {frames:?}"))
    };
    (
        data("message_start")["message"]["usage"]["input_tokens"].as_u64(),
        data("message_delta")["usage"]["output_tokens"].as_u64(),
    )
}

#[test]
fn the_convention_on_small_requests() {
    let user = "What does a.txt say? Answer in one word.";
    assert_eq!(
        count_request(Wire::OpenAi, &openai_request(user, 10)),
        openai_expected(user)
    );
    assert_eq!(
        count_request(Wire::Anthropic, &anthropic_request(user, 10)),
        anthropic_expected(user)
    );
    // The encodings really differ for this text, so the model choice matters.
    let text = "Grüße aus Köln — 12345 tokens?";
    assert_ne!(
        count_text(OPENAI_MODEL, text),
        count_text(ANTHROPIC_MODEL, text)
    );
}

#[tokio::test]
async fn openai_fitting_request_reports_the_count_as_usage() {
    let reply_text = "The file says forty-two.";
    let server = ScriptedModel::start(script(&format!(
        "context_window = 100000\n[[response]]\ntext = '{reply_text}'\n"
    )))
    .await
    .unwrap();
    let user = "What does a.txt say?";
    let reply = post(
        server.addr(),
        "/v1/chat/completions",
        &openai_request(user, 1000),
    )
    .await;
    assert_eq!(reply.status, 200);
    let expected = openai_expected(user);
    let output = count_text(OPENAI_MODEL, reply_text);
    assert_eq!(
        openai_usage(&reply.frames()),
        json!({
            "prompt_tokens": expected, "completion_tokens": output, "total_tokens": expected + output,
            // A window turns prompt caching on: nothing was cached yet.
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        })
    );
    let request = &server.requests()[0];
    assert_eq!(request.input_tokens, Some(expected));
    assert!(!request.refused_for_length);
    assert_eq!(request.response, Some(0));
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
    assert!(server.problems().is_empty(), "{:#?}", server.problems());
}

#[tokio::test]
async fn anthropic_fitting_request_reports_the_count_as_usage() {
    let server = ScriptedModel::start(script(
        r#"
        context_window = 100000

        [[response]]
        text = "Reading it again."
        tool_calls = [ { name = "read_file", arguments = { path = "a.txt" } } ]

        [[response]]
        text = "scripted usage wins"
        usage = { input_tokens = 7 }
        "#,
    ))
    .await
    .unwrap();
    let user = "What does a.txt say?";
    let body = anthropic_request(user, 1000);
    let reply = post(server.addr(), "/v1/messages", &body).await;
    assert_eq!(reply.status, 200);
    let expected = anthropic_expected(user);
    let output = count_text(ANTHROPIC_MODEL, "Reading it again.")
        + count_text(ANTHROPIC_MODEL, r#"{"path":"a.txt"}"#);
    assert_eq!(
        anthropic_usage(&reply.frames()),
        (Some(expected), Some(output))
    );

    let reply = post(server.addr(), "/v1/messages", &body).await;
    assert_eq!(
        anthropic_usage(&reply.frames()),
        (
            Some(7),
            Some(count_text(ANTHROPIC_MODEL, "scripted usage wins"))
        )
    );
    let counts: Vec<_> = server
        .requests()
        .iter()
        .map(|request| request.input_tokens)
        .collect();
    assert_eq!(counts, [Some(expected), Some(expected)]);
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
}

#[tokio::test]
async fn openai_oversize_request_gets_context_length_exceeded() {
    let user = "Please summarise the following. ".repeat(40);
    let prompt = openai_expected(&user);
    let completion = 200;
    // One token short of what the request needs.
    let window = prompt + completion - 1;
    let server = ScriptedModel::start(script(&format!(
        "context_window = {window}\n[[response]]\ntext = 'fits'\n"
    )))
    .await
    .unwrap();

    let reply = post(
        server.addr(),
        "/v1/chat/completions",
        &openai_request(&user, completion),
    )
    .await;
    assert_eq!(reply.status, 400);
    let total = prompt + completion;
    assert_eq!(
        reply.json(),
        json!({"error": {
            "message": format!(
                "This model's maximum context length is {window} tokens. However, you requested \
                 {total} tokens ({prompt} in the messages, {completion} in the completion). \
                 Please reduce the length of the messages or completion."
            ),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }})
    );
    assert_eq!(server.remaining_responses(), 1, "nothing was consumed");

    // Exactly at the window fits, and gets the response the refusal left.
    let reply = post(
        server.addr(),
        "/v1/chat/completions",
        &openai_request(&user, completion - 1),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(server.remaining_responses(), 0);

    let requests = server.requests();
    assert_eq!(requests[0].input_tokens, Some(prompt));
    assert!(requests[0].refused_for_length);
    assert_eq!(requests[0].response, None);
    assert!(!requests[1].refused_for_length);
    assert_eq!(requests[1].response, Some(0));
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
    assert!(server.problems().is_empty(), "{:#?}", server.problems());
}

#[tokio::test]
async fn anthropic_oversize_request_gets_prompt_too_long() {
    let user = "Please summarise the following. ".repeat(40);
    let prompt = anthropic_expected(&user);
    let max_tokens = 300;
    let window = prompt + max_tokens - 1;
    let server = ScriptedModel::start(script(&format!(
        "context_window = {window}\n[[response]]\ntext = 'fits'\n"
    )))
    .await
    .unwrap();

    let reply = post(
        server.addr(),
        "/v1/messages",
        &anthropic_request(&user, max_tokens),
    )
    .await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json(),
        json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": format!(
                "input length and `max_tokens` exceed context limit: {prompt} + {max_tokens} > {window}, \
                 decrease input length or `max_tokens` and try again"
            ),
        }})
    );
    assert_eq!(server.remaining_responses(), 1, "nothing was consumed");

    // The prompt alone over the window is "prompt is too long".
    let small = ScriptedModel::start(script(&format!(
        "context_window = {}\n[[response]]\ntext = 'fits'\n",
        prompt - 1
    )))
    .await
    .unwrap();
    let reply = post(small.addr(), "/v1/messages", &anthropic_request(&user, 1)).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json()["error"]["message"],
        format!(
            "prompt is too long: {prompt} tokens > {} maximum",
            prompt - 1
        )
    );

    let reply = post(
        server.addr(),
        "/v1/messages",
        &anthropic_request(&user, max_tokens - 1),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(server.remaining_responses(), 0);

    let requests = server.requests();
    assert!(requests[0].refused_for_length);
    assert_eq!(requests[0].response, None);
    assert_eq!(requests[1].input_tokens, Some(prompt));
    assert_eq!(requests[1].response, Some(0));
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
    assert!(server.problems().is_empty(), "{:#?}", server.problems());
}

#[tokio::test]
async fn without_a_window_nothing_is_counted() {
    let server = ScriptedModel::start(script("[[response]]\ntext = 'hi'\n"))
        .await
        .unwrap();
    let reply = post(
        server.addr(),
        "/v1/chat/completions",
        &openai_request(&"long ".repeat(5000), 1_000_000),
    )
    .await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        openai_usage(&reply.frames()),
        json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15})
    );
    let request = &server.requests()[0];
    assert_eq!(request.input_tokens, None);
    assert!(!request.refused_for_length);
}
