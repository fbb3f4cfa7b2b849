//! The Anthropic Messages endpoint, checked from a client's side: the event
//! stream reassembles into exactly the scripted text and tool uses, in
//! Anthropic's event shapes, and requests are recorded and validated.

use std::collections::BTreeMap;

use crate::support::{Frame, post};
use agentbus_testkit::{Script, ScriptedModel};
use serde_json::{Value, json};

/// What an Anthropic streaming client ends up with.
#[derive(Debug, Default)]
struct Assembled {
    /// By block index: the block as started, plus text / partial JSON.
    blocks: BTreeMap<u64, (Value, String)>,
    /// The `signature_delta`s of thinking blocks, by index.
    signatures: BTreeMap<u64, String>,
    stop_reason: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    pings: usize,
}

/// Reassembles Anthropic stream events, asserting their shapes and order.
fn reassemble(frames: &[Frame]) -> Assembled {
    let mut out = Assembled::default();
    let mut open: Option<u64> = None;
    for (n, frame) in frames.iter().enumerate() {
        let event = frame.event.as_deref().expect("every frame names its event");
        let data = frame.json();
        assert_eq!(data["type"], event, "event name matches data.type");
        match event {
            "message_start" => {
                assert_eq!(n, 0, "message_start comes first");
                let message = &data["message"];
                assert_eq!(message["role"], "assistant");
                assert_eq!(message["type"], "message");
                assert!(
                    message["id"]
                        .as_str()
                        .is_some_and(|id| id.starts_with("msg_"))
                );
                assert_eq!(message["content"], json!([]));
                out.input_tokens = message["usage"]["input_tokens"].as_u64();
            }
            "ping" => out.pings += 1,
            "content_block_start" => {
                assert!(open.is_none(), "blocks do not overlap");
                let index = data["index"].as_u64().expect("index");
                assert_eq!(
                    index,
                    out.blocks.len() as u64,
                    "blocks are numbered in order"
                );
                out.blocks
                    .insert(index, (data["content_block"].clone(), String::new()));
                open = Some(index);
            }
            "content_block_delta" => {
                let index = data["index"].as_u64().expect("index");
                assert_eq!(open, Some(index), "delta of the open block");
                let (start, acc) = out.blocks.get_mut(&index).expect("started");
                let delta = &data["delta"];
                match (start["type"].as_str(), delta["type"].as_str()) {
                    (Some("text"), Some("text_delta")) => {
                        acc.push_str(delta["text"].as_str().expect("text"))
                    }
                    (Some("tool_use"), Some("input_json_delta")) => {
                        acc.push_str(delta["partial_json"].as_str().expect("partial_json"))
                    }
                    (Some("thinking"), Some("thinking_delta")) => {
                        acc.push_str(delta["thinking"].as_str().expect("thinking"))
                    }
                    (Some("thinking"), Some("signature_delta")) => {
                        let signature = delta["signature"].as_str().expect("signature");
                        let previous = out.signatures.insert(index, signature.to_owned());
                        assert!(previous.is_none(), "one signature per block");
                    }
                    other => panic!("delta {other:?} does not fit its block"),
                }
            }
            "content_block_stop" => {
                assert_eq!(
                    open.take(),
                    data["index"].as_u64(),
                    "stop of the open block"
                );
            }
            "message_delta" => {
                assert!(open.is_none());
                out.stop_reason = data["delta"]["stop_reason"].as_str().map(str::to_owned);
                out.output_tokens = data["usage"]["output_tokens"].as_u64();
            }
            "message_stop" => assert_eq!(n, frames.len() - 1, "message_stop comes last"),
            other => panic!("unknown event {other}"),
        }
    }
    out
}

fn messages_request() -> Value {
    json!({
        "model": "claude-test",
        "max_tokens": 1024,
        "stream": true,
        "system": "be brief",
        "messages": [{"role": "user", "content": "read a and b"}],
        "tools": [{"name": "read_file", "input_schema": {"type": "object"}}],
    })
}

#[tokio::test]
async fn anthropic_text_and_tool_uses_reassemble() {
    let script = Script::from_toml_str(
        r#"
        [[response]]
        text = "Reading both — one moment."
        tool_calls = [
          { id = "toolu_a", name = "read_file", arguments = '{"path":"a.txt"}' },
          { id = "toolu_b", name = "read_file", arguments = { path = "b.txt" } },
        ]
        chunk_size = 3
        usage = { input_tokens = 21, output_tokens = 9 }
        "#,
    )
    .unwrap();
    let server = ScriptedModel::start(script).await.unwrap();
    let reply = post(server.addr(), "/v1/messages", &messages_request()).await;
    assert_eq!(reply.status, 200);
    assert!(reply.complete);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));

    let out = reassemble(&reply.frames());
    assert_eq!(out.pings, 1);
    assert_eq!(out.input_tokens, Some(21));
    assert_eq!(out.output_tokens, Some(9));
    assert_eq!(out.stop_reason.as_deref(), Some("tool_use"));
    let blocks: Vec<(Value, String)> = out.blocks.into_values().collect();
    assert_eq!(blocks.len(), 3);
    assert_eq!(
        blocks[0],
        (
            json!({"type": "text", "text": ""}),
            "Reading both — one moment.".into()
        )
    );
    assert_eq!(
        blocks[1],
        (
            json!({"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}}),
            r#"{"path":"a.txt"}"#.into()
        )
    );
    assert_eq!(blocks[2].0["id"], "toolu_b");
    let input: Value = serde_json::from_str(&blocks[2].1).unwrap();
    assert_eq!(input, json!({"path": "b.txt"}));

    assert!(server.violations().is_empty(), "{:#?}", server.violations());
    assert_eq!(server.requests()[0].path, "/v1/messages");
}

#[tokio::test]
async fn anthropic_plain_reply_and_finish_override() {
    let script = Script::from_toml_str(
        "[[response]]\ntext = 'cut short'\nfinish_reason = 'length'\n\
         [[response]]\n",
    )
    .unwrap();
    let server = ScriptedModel::start(script).await.unwrap();
    let out = reassemble(
        &post(server.addr(), "/v1/messages", &messages_request())
            .await
            .frames(),
    );
    assert_eq!(out.stop_reason.as_deref(), Some("max_tokens"));
    assert_eq!(out.blocks.len(), 1);
    assert_eq!(out.blocks[&0].1, "cut short");

    // An empty response: no blocks, still a ping and a proper ending.
    let out = reassemble(
        &post(server.addr(), "/v1/messages", &messages_request())
            .await
            .frames(),
    );
    assert!(out.blocks.is_empty());
    assert_eq!(out.pings, 1);
    assert_eq!(out.stop_reason.as_deref(), Some("end_turn"));
}

#[tokio::test]
async fn anthropic_errors_use_anthropic_error_shape() {
    let server = ScriptedModel::start(Script::from_toml_str("").unwrap())
        .await
        .unwrap();
    let mut body = messages_request();
    body["stream"] = json!(false);
    let reply = post(server.addr(), "/v1/messages", &body).await;
    assert_eq!(reply.status, 400);
    let error = reply.json();
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "invalid_request_error");
}

/// A request that enables thinking (with room for it under `max_tokens`).
fn thinking_request() -> Value {
    let mut body = messages_request();
    body["max_tokens"] = json!(4096);
    body["thinking"] = json!({"type": "enabled", "budget_tokens": 1024});
    body
}

#[tokio::test]
async fn anthropic_thinks_only_when_asked_and_signs_its_thinking() {
    let script = Script::from_toml_str(
        "[[response]]\nthinking = 'Read a, then b.'\ntext = 'Reading.'\n\
         [[response]]\nthinking = 'Read a, then b.'\ntext = 'Reading.'\n",
    )
    .unwrap();
    let server = ScriptedModel::start(script).await.unwrap();
    let plain = reassemble(
        &post(server.addr(), "/v1/messages", &messages_request())
            .await
            .frames(),
    );
    assert_eq!(plain.blocks.len(), 1, "no thinking unasked: {plain:?}");
    assert_eq!(plain.blocks[&0].1, "Reading.");

    let thought = reassemble(
        &post(server.addr(), "/v1/messages", &thinking_request())
            .await
            .frames(),
    );
    assert_eq!(
        thought.blocks[&0],
        (
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            "Read a, then b.".into()
        )
    );
    assert!(thought.signatures[&0].len() > 10, "{thought:?}");
    assert_eq!(thought.blocks[&1].1, "Reading.");
    assert!(server.violations().is_empty(), "{:#?}", server.violations());
}

#[tokio::test]
async fn a_tool_round_without_its_signed_thinking_is_refused_with_the_apis_400() {
    let script = Script::from_toml_str(
        "[[response]]\nthinking = 'Read a first.'\n\
         tool_calls = [{ id = 'toolu_1', name = 'read_file', arguments = { path = 'a' } }]\n\
         [[response]]\ntext = 'A says hi.'\n",
    )
    .unwrap();
    let server = ScriptedModel::start(script).await.unwrap();
    let first = reassemble(
        &post(server.addr(), "/v1/messages", &thinking_request())
            .await
            .frames(),
    );
    let signature = first.signatures[&0].clone();
    let continued = |thinking: Option<Value>| {
        let mut assistant = vec![
            json!({"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}),
        ];
        if let Some(thinking) = thinking {
            assistant.insert(0, thinking);
        }
        let mut body = thinking_request();
        body["messages"] = json!([
            {"role": "user", "content": "read a and b"},
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"}]},
        ]);
        body
    };
    let refusals = [
        (
            None,
            "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`.",
        ),
        (
            Some(json!({"type": "thinking", "thinking": "Read b first.", "signature": signature})),
            "messages.1.content.0: Invalid `signature` in `thinking` block",
        ),
    ];
    for (thinking, says) in refusals {
        let reply = post(server.addr(), "/v1/messages", &continued(thinking)).await;
        assert_eq!(reply.status, 400);
        let error = reply.json();
        assert_eq!(error["type"], "error");
        assert_eq!(error["error"]["type"], "invalid_request_error");
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with(says), "{message}");
    }
    assert_eq!(server.violations().len(), 2, "{:#?}", server.violations());
    assert_eq!(
        server.remaining_responses(),
        1,
        "a refusal consumes nothing"
    );

    let sealed = json!({"type": "thinking", "thinking": "Read a first.", "signature": signature});
    let reply = post(server.addr(), "/v1/messages", &continued(Some(sealed))).await;
    assert_eq!(reply.status, 200);
    assert_eq!(reassemble(&reply.frames()).blocks[&0].1, "A says hi.");
    assert_eq!(server.violations().len(), 2, "the sealed thinking passes");
}
