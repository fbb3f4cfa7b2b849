//! The OpenAI Chat Completions endpoint, checked from a client's side: the
//! streamed chunks reassemble into exactly the scripted text and tool calls,
//! in OpenAI's frame shapes, and requests are recorded and validated.

use std::collections::BTreeMap;

use crate::support::{Frame, post, request};
use agentbus_testkit::{Script, ScriptedModel};
use serde_json::{Value, json};

/// What an OpenAI streaming client ends up with.
#[derive(Debug, Default)]
struct Assembled {
    content: String,
    /// `reasoning_content`, joined.
    reasoning: String,
    /// Whether reasoning came after content started.
    reasoning_after_content: bool,
    /// By `index`: (id, name, arguments).
    calls: BTreeMap<u64, (String, String, String)>,
    finish_reason: Option<String>,
    usage: Option<Value>,
}

/// Reassembles OpenAI stream frames, asserting the frame shapes on the way.
fn reassemble(frames: &[Frame]) -> Assembled {
    let (last, chunks) = frames.split_last().expect("frames");
    assert_eq!(last.data, "[DONE]", "stream must end with [DONE]");
    assert!(frames.iter().all(|frame| frame.event.is_none()));
    let mut out = Assembled::default();
    let mut id = None;
    for (n, frame) in chunks.iter().enumerate() {
        let chunk = frame.json();
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert!(chunk["created"].is_u64());
        let chunk_id = chunk["id"].as_str().expect("id").to_owned();
        assert_eq!(
            id.get_or_insert(chunk_id.clone()),
            &chunk_id,
            "one id per stream"
        );
        let choices = chunk["choices"].as_array().expect("choices");
        if choices.is_empty() {
            assert_eq!(n, chunks.len() - 1, "the usage chunk comes last");
            out.usage = Some(chunk["usage"].clone());
            continue;
        }
        assert!(out.finish_reason.is_none(), "chunk after finish_reason");
        let choice = &choices[0];
        assert_eq!(choice["index"], 0);
        let delta = &choice["delta"];
        if n == 0 {
            assert_eq!(delta, &json!({"role": "assistant", "content": ""}));
        }
        if let Some(text) = delta.get("reasoning_content").and_then(Value::as_str) {
            out.reasoning_after_content |= !out.content.is_empty();
            out.reasoning.push_str(text);
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            out.content.push_str(text);
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call["index"].as_u64().expect("tool call index");
            let arguments = call["function"]["arguments"]
                .as_str()
                .expect("arguments string");
            if let Some(call_id) = call.get("id") {
                assert_eq!(call["type"], "function");
                assert_eq!(arguments, "", "first fragment has empty arguments");
                let previous = out.calls.insert(
                    index,
                    (
                        call_id.as_str().expect("id").to_owned(),
                        call["function"]["name"].as_str().expect("name").to_owned(),
                        String::new(),
                    ),
                );
                assert!(previous.is_none(), "call {index} started twice");
            } else {
                assert!(call.get("type").is_none() && call["function"].get("name").is_none());
                out.calls
                    .get_mut(&index)
                    .expect("fragment of a started call")
                    .2
                    .push_str(arguments);
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            assert_eq!(delta, &json!({}), "the finish chunk has an empty delta");
            out.finish_reason = Some(reason.to_owned());
        }
    }
    out
}

fn chat_request(extra: Value) -> Value {
    let mut body = json!({
        "model": "gpt-test",
        "stream": true,
        "messages": [{"role": "user", "content": "read a and b"}],
        "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}],
    });
    if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
        body.extend(extra.clone());
    }
    body
}

const TEXT_AND_TWO_CALLS: &str = r#"
[[response]]
text = "Let me read both files, one moment."
tool_calls = [
  { id = "call_a", name = "read_file", arguments = '{"path":"a.txt"}' },
  { id = "call_b", name = "read_file", arguments = '{"path":"dir/b.txt","max_bytes":100}' },
]
chunk_size = 5
usage = { input_tokens = 12, output_tokens = 7 }
"#;

#[tokio::test]
async fn openai_text_and_parallel_tool_calls_reassemble() {
    let server = ScriptedModel::start(Script::from_toml_str(TEXT_AND_TWO_CALLS).unwrap())
        .await
        .unwrap();
    let body = chat_request(json!({"stream_options": {"include_usage": true}}));
    let reply = post(server.addr(), "/v1/chat/completions", &body).await;

    assert_eq!(reply.status, 200);
    assert!(reply.complete);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let frames = reply.frames();
    let out = reassemble(&frames);
    assert_eq!(out.content, "Let me read both files, one moment.");
    assert_eq!(
        out.calls.into_values().collect::<Vec<_>>(),
        [
            (
                "call_a".into(),
                "read_file".into(),
                r#"{"path":"a.txt"}"#.into()
            ),
            (
                "call_b".into(),
                "read_file".into(),
                r#"{"path":"dir/b.txt","max_bytes":100}"#.into()
            ),
        ]
    );
    assert_eq!(out.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(
        out.usage,
        Some(json!({"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}))
    );
    // chunk_size = 5 really split the text: 35 chars -> 7 content frames.
    let content_frames = frames
        .iter()
        .filter(|frame| frame.data.contains(r#""content":"#) && !frame.data.contains(r#""role""#))
        .count();
    assert_eq!(content_frames, 7);
    // Every chunk but the usage one carries "usage": null when usage is asked for.
    assert!(
        frames[..frames.len() - 2]
            .iter()
            .all(|frame| frame.json()["usage"].is_null())
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body, body);
    assert_eq!(requests[0].response, Some(0));
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
    assert_eq!(server.remaining_responses(), 0);
}

#[tokio::test]
async fn openai_usage_chunk_only_when_requested() {
    let script =
        Script::from_toml_str("[[response]]\ntext = 'hi'\nfinish_reason = 'length'").unwrap();
    let server = ScriptedModel::start(script).await.unwrap();
    let reply = post(
        server.addr(),
        "/v1/chat/completions",
        &chat_request(json!({})),
    )
    .await;
    let frames = reply.frames();
    let out = reassemble(&frames);
    assert_eq!(out.content, "hi");
    assert!(out.calls.is_empty());
    assert_eq!(out.finish_reason.as_deref(), Some("length"));
    assert_eq!(out.usage, None);
    assert!(
        frames[..frames.len() - 1]
            .iter()
            .all(|frame| frame.json().get("usage").is_none())
    );
}

#[tokio::test]
async fn openai_rejects_non_streaming_request() {
    let server = ScriptedModel::start(Script::from_toml_str("[[response]]\ntext='x'").unwrap())
        .await
        .unwrap();
    let reply = post(
        server.addr(),
        "/v1/chat/completions",
        &chat_request(json!({"stream": false})),
    )
    .await;
    assert_eq!(reply.status, 400);
    let message = reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("streaming is required"), "{message}");
    // Recorded, but it consumed nothing.
    server.wait_for_requests(1).await;
    assert_eq!(server.requests()[0].response, None);
    assert_eq!(server.remaining_responses(), 1);
}

#[tokio::test]
async fn malformed_json_body_gets_400_not_a_panic() {
    let server = ScriptedModel::start(Script::from_toml_str("[[response]]\ntext='x'").unwrap())
        .await
        .unwrap();
    for (path, body) in [
        ("/v1/chat/completions", &b"{not json"[..]),
        ("/v1/chat/completions", &b"[1,2,3]"[..]),
        ("/v1/messages", &b"{\"stream\":true,\"messages\":7}"[..]),
        ("/v1/messages", &b"\xff\xfe"[..]),
    ] {
        let reply = request(server.addr(), "POST", path, &[], body).await;
        assert_eq!(reply.status, 400, "{path} {body:?}");
        assert!(reply.json()["error"]["message"].is_string());
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert!(
        requests
            .iter()
            .all(|request| !request.violations.is_empty())
    );
    assert_eq!(requests[0].body, json!("{not json"));
    assert_eq!(server.remaining_responses(), 1);
}

#[tokio::test]
async fn records_headers_and_lists_models() {
    let server = ScriptedModel::start(Script::from_toml_str("").unwrap())
        .await
        .unwrap();
    assert!(server.openai_base_url().ends_with("/v1"));
    assert!(
        server
            .openai_base_url()
            .starts_with(&server.anthropic_base_url())
    );
    let reply = request(
        server.addr(),
        "GET",
        "/v1/models",
        &[("authorization", "Bearer sk-test")],
        b"",
    )
    .await;
    assert_eq!(reply.status, 200);
    let list = reply.json();
    assert_eq!(list["object"], "list");
    assert_eq!(list["data"][0]["id"], "scripted");
    let recorded = &server.requests()[0];
    assert_eq!(recorded.method, "GET");
    assert_eq!(recorded.path, "/v1/models");
    assert_eq!(
        recorded.headers.get("authorization").map(String::as_str),
        Some("Bearer sk-test")
    );

    let reply = request(server.addr(), "GET", "/v2/nothing", &[], b"").await;
    assert_eq!(reply.status, 404);
    assert_eq!(server.problems().len(), 1, "{:#?}", server.problems());
    assert!(server.problems()[0].starts_with("request 1 (GET /v2/nothing): "));
}

#[tokio::test]
async fn openai_thinking_streams_as_reasoning_content_before_the_text() {
    let script = Script::from_toml_str(
        "[[response]]\nthinking = 'First the files, then the answer.'\ntext = 'Done.'\nchunk_size = 4",
    )
    .unwrap();
    let server = ScriptedModel::start(script).await.unwrap();
    let reply = post(
        server.addr(),
        "/v1/chat/completions",
        &chat_request(json!({})),
    )
    .await;
    assert_eq!(reply.status, 200);
    let out = reassemble(&reply.frames());
    assert_eq!(out.reasoning, "First the files, then the answer.");
    assert!(!out.reasoning_after_content, "reasoning comes first");
    assert_eq!(out.content, "Done.");
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
}
