//! Renders a [`Turn`] as the frames of an OpenAI Chat Completions stream,
//! shaped exactly like OpenAI's own `chat.completion.chunk` frames, so that a
//! client that works against this works against the real service.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde_json::{Value, json};

use crate::turn::Turn;

/// The SSE frames (`data: {json}\n\n`), ending with `data: [DONE]`; the
/// turn's thinking comes first as `delta.reasoning_content`. With
/// `include_usage` every chunk carries `"usage": null` and a last chunk with
/// no choices carries the usage, as OpenAI does for
/// `stream_options.include_usage` (with `prompt_tokens_details.cached_tokens`
/// when prompts are cached).
pub(crate) fn render(turn: &Turn, include_usage: bool) -> Vec<Bytes> {
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let chunk = |choices: Value, usage: Option<Value>| {
        let mut chunk = json!({
            "id": format!("chatcmpl-{}", turn.id),
            "object": "chat.completion.chunk",
            "created": created,
            "model": turn.model,
            "system_fingerprint": "fp_scripted",
            "choices": choices,
        });
        if include_usage {
            chunk["usage"] = usage.unwrap_or(Value::Null);
        }
        frame(&chunk)
    };
    let delta = |delta: Value| {
        chunk(
            json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": null}]),
            None,
        )
    };

    let mut frames = vec![delta(json!({"role": "assistant", "content": ""}))];
    // Reasoning first, as DeepSeek streams it (llama.cpp and vLLM alike).
    for piece in turn.pieces(&turn.thinking) {
        frames.push(delta(json!({"content": null, "reasoning_content": piece})));
    }
    for piece in turn.pieces(&turn.text) {
        frames.push(delta(json!({"content": piece})));
    }
    for (index, call) in turn.tool_calls.iter().enumerate() {
        frames.push(delta(json!({"tool_calls": [{
            "index": index,
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }]})));
        for piece in turn.pieces(&call.arguments) {
            frames.push(delta(json!({"tool_calls": [{
                "index": index,
                "function": {"arguments": piece},
            }]})));
        }
    }
    frames.push(chunk(
        json!([{
            "index": 0,
            "delta": {},
            "logprobs": null,
            "finish_reason": turn.openai_finish_reason(),
        }]),
        None,
    ));
    if include_usage {
        let usage = turn.usage;
        // OpenAI's prompt tokens include the cached ones (and it has no
        // cache writes of its own: a script's count of them is input too).
        let prompt =
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
        let mut reported = json!({
            "prompt_tokens": prompt,
            "completion_tokens": usage.output_tokens,
            "total_tokens": prompt + usage.output_tokens,
        });
        if turn.cache_reported {
            reported["prompt_tokens_details"] =
                json!({"cached_tokens": usage.cache_read_input_tokens, "audio_tokens": 0});
        }
        frames.push(chunk(json!([]), Some(reported)));
    }
    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
    frames
}

fn frame(data: &Value) -> Bytes {
    Bytes::from(format!("data: {data}\n\n"))
}
