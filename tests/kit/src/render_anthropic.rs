//! Renders a [`Turn`] as the events of an Anthropic Messages stream, shaped
//! like Anthropic's own (`message_start`, content blocks, a `ping`,
//! `message_delta`, `message_stop`), so that a client that works against this
//! works against the real service. `message_start` carries the input usage
//! with its cache figures (0 when nothing was cached, as the API sends
//! them), `message_delta` the output tokens.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::thinking;
use crate::turn::Turn;

/// The SSE frames (`event: NAME\ndata: {json}\n\n`). Thinking, when there is
/// any, is block 0 (its deltas, then its `signature_delta`), then the text,
/// when there is any, and the tool uses; a `ping` comes right after the
/// first block starts (or after `message_start` when there are no blocks).
pub(crate) fn render(turn: &Turn) -> Vec<Bytes> {
    let mut frames = vec![event(
        "message_start",
        json!({
            "type": "message_start",
            "message": {
                "id": format!("msg_{}", turn.id),
                "type": "message",
                "role": "assistant",
                "model": turn.model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": turn.usage.input_tokens,
                    "cache_creation_input_tokens": turn.usage.cache_creation_input_tokens,
                    "cache_read_input_tokens": turn.usage.cache_read_input_tokens,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": turn.usage.cache_creation_input_tokens.saturating_sub(turn.usage.cache_creation_1h),
                        "ephemeral_1h_input_tokens": turn.usage.cache_creation_1h,
                    },
                    "output_tokens": 1,
                },
            },
        }),
    )];
    let ping = || event("ping", json!({"type": "ping"}));

    let mut blocks: Vec<(Value, Vec<Value>)> = Vec::new();
    if !turn.thinking.is_empty() {
        let deltas = turn
            .pieces(&turn.thinking)
            .into_iter()
            .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
            .chain([json!({"type": "signature_delta", "signature": thinking::signature(&turn.thinking)})])
            .collect();
        blocks.push((
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
        ));
    }
    if !turn.text.is_empty() {
        let deltas = turn
            .pieces(&turn.text)
            .into_iter()
            .map(|piece| json!({"type": "text_delta", "text": piece}))
            .collect();
        blocks.push((json!({"type": "text", "text": ""}), deltas));
    }
    for call in &turn.tool_calls {
        let deltas = turn
            .pieces(&call.arguments)
            .into_iter()
            .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
            .collect();
        blocks.push((
            json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}}),
            deltas,
        ));
    }

    if blocks.is_empty() {
        frames.push(ping());
    }
    for (index, (start, deltas)) in blocks.into_iter().enumerate() {
        frames.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        if index == 0 {
            frames.push(ping());
        }
        for delta in deltas {
            frames.push(event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        frames.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }

    frames.push(event(
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": turn.anthropic_stop_reason(), "stop_sequence": null},
            "usage": {"output_tokens": turn.usage.output_tokens},
        }),
    ));
    frames.push(event("message_stop", json!({"type": "message_stop"})));
    frames
}

fn event(name: &str, data: Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}
