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
