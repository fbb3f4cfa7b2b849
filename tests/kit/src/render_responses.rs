//! Renders a [`Turn`] as the events of an OpenAI Responses stream, in the
//! order and shape OpenAI's own streams have (and its published
//! `ResponseStreamEvent` schema describes), each with its
//! `sequence_number`: `response.created`, `response.in_progress`, then per
//! output item `response.output_item.added` … `response.output_item.done`,
//! and last `response.completed` (or `response.incomplete` when the answer
//! was cut at its length).
//!
//! Output items, in this order: the reasoning (for a script's `thinking`):
//! summary parts with their deltas only when the request asked for a
//! summary (`reasoning.summary`), and `encrypted_content` only when it
//! asked for that (`include: ["reasoning.encrypted_content"]`), sealed by
//! [`encrypted_reasoning`] so that an item sent back altered is caught;
//! then the text as one assistant message (content part, `output_text`
//! deltas); then each tool call as a `function_call` with its arguments'
//! deltas.

use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde_json::{Value, json};

use crate::turn::Turn;
use crate::wire;

/// The `encrypted_content` the scripted model seals a reasoning item with:
/// FNV-1a of its id and summary texts. The API refuses an item whose
/// encrypted content does not belong to it; the validation of requests
/// does the same with this.
pub(crate) fn encrypted_reasoning(id: &str, summary: &[&str]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in std::iter::once(id)
        .chain(summary.iter().copied())
        .flat_map(|text| text.as_bytes().iter().chain(b"\x00"))
    {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("gAAAAA-scripted-reasoning-{hash:016x}")
}

/// Numbers the events of one stream.
struct Events {
    frames: Vec<Bytes>,
    next: u64,
}

impl Events {
    fn push(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.next);
        self.next += 1;
        self.frames
            .push(Bytes::from(format!("event: {kind}\ndata: {data}\n\n")));
    }
}

/// The frames of the answer to `body`, the request.
pub(crate) fn render(turn: &Turn, body: &Value) -> Vec<Bytes> {
    let created_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let mut events = Events {
        frames: Vec::new(),
        next: 0,
    };
    let response = |status: &str, output: &[Value]| {
        let mut response = json!({
            "id": format!("resp_{}", turn.id),
            "object": "response",
            "created_at": created_at,
            "status": status,
            "error": null,
            "incomplete_details": null,
            "instructions": body.get("instructions").cloned().unwrap_or(Value::Null),
            "max_output_tokens": body.get("max_output_tokens").cloned().unwrap_or(Value::Null),
            "model": turn.model,
            "output": output,
            "parallel_tool_calls": true,
            "previous_response_id": null,
            "reasoning": body.get("reasoning").cloned().unwrap_or(Value::Null),
            "store": body.get("store").cloned().unwrap_or(json!(true)),
            "temperature": 1.0,
            "text": {"format": {"type": "text"}},
            "tool_choice": "auto",
            "tools": body.get("tools").cloned().unwrap_or(json!([])),
            "top_p": 1.0,
            "truncation": "disabled",
            "metadata": {},
        });
        if let Some(key) = body.get("prompt_cache_key").filter(|key| key.is_string()) {
            response["prompt_cache_key"] = key.clone();
        }
        response
    };
    events.push(
        "response.created",
        json!({"response": response("in_progress", &[])}),
    );
    events.push(
        "response.in_progress",
        json!({"response": response("in_progress", &[])}),
    );

    let mut output: Vec<Value> = Vec::new();
    if !turn.thinking.is_empty() {
        let item = reasoning(turn, body, output.len(), &mut events);
        output.push(item);
    }
    if !turn.text.is_empty() {
        let item = message(turn, output.len(), &mut events);
        output.push(item);
    }
    for (n, call) in turn.tool_calls.iter().enumerate() {
        let index = output.len();
        let id = format!("fc_{}_{n}", turn.id);
        let mut item = json!({
            "id": id, "type": "function_call", "status": "in_progress",
            "arguments": "", "call_id": call.id, "name": call.name,
        });
        events.push(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        );
        for piece in turn.pieces(&call.arguments) {
            events.push(
                "response.function_call_arguments.delta",
                json!({"item_id": id, "output_index": index, "delta": piece}),
            );
        }
        events.push(
            "response.function_call_arguments.done",
            json!({"item_id": id, "name": call.name, "output_index": index, "arguments": call.arguments}),
        );
        item["status"] = json!("completed");
        item["arguments"] = json!(call.arguments);
        events.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
        output.push(item);
    }

    // As on the Chat wire, the input includes what was read from the cache
    // (and OpenAI has no cache writes of its own: a count of them is input).
    let input = turn.usage.input_tokens
        + turn.usage.cache_read_input_tokens
        + turn.usage.cache_creation_input_tokens;
    let usage = json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": turn.cached_input_tokens(), "cache_write_tokens": 0},
        "output_tokens": turn.usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": turn.reasoning_tokens()},
        "total_tokens": input + turn.usage.output_tokens,
    });
    if turn.cut_at_length() {
        let mut finished = response("incomplete", &output);
        finished["incomplete_details"] = json!({"reason": "max_output_tokens"});
        finished["usage"] = usage;
        events.push("response.incomplete", json!({"response": finished}));
    } else {
        let mut finished = response("completed", &output);
        finished["completed_at"] = json!(created_at);
        finished["usage"] = usage;
        events.push("response.completed", json!({"response": finished}));
    }
    events.frames
}

/// The reasoning item's events; returns the finished item.
fn reasoning(turn: &Turn, body: &Value, index: usize, events: &mut Events) -> Value {
    let id = format!("rs_{}", turn.id);
    let summary: Vec<&str> = if wire::asks_reasoning_summary(body) {
        vec![turn.thinking.as_str()]
    } else {
        Vec::new()
    };
    let mut item = json!({"id": id, "type": "reasoning", "summary": []});
    if wire::includes_encrypted_reasoning(body) {
        item["encrypted_content"] = json!(encrypted_reasoning(&id, &summary));
    }
    events.push(
        "response.output_item.added",
        json!({"output_index": index, "item": item}),
    );
    for (k, text) in summary.iter().enumerate() {
        let part = |text: &str| json!({"type": "summary_text", "text": text});
        events.push(
            "response.reasoning_summary_part.added",
            json!({"item_id": id, "output_index": index, "summary_index": k, "part": part("")}),
        );
        for piece in turn.pieces(text) {
            events.push(
                "response.reasoning_summary_text.delta",
                json!({"item_id": id, "output_index": index, "summary_index": k, "delta": piece}),
            );
        }
        events.push(
            "response.reasoning_summary_text.done",
            json!({"item_id": id, "output_index": index, "summary_index": k, "text": text}),
        );
        events.push(
            "response.reasoning_summary_part.done",
            json!({"item_id": id, "output_index": index, "summary_index": k, "part": part(text)}),
        );
    }
    item["summary"] = summary
        .iter()
        .map(|text| json!({"type": "summary_text", "text": text}))
        .collect();
    events.push(
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    );
    item
}

/// The assistant message's events; returns the finished item.
fn message(turn: &Turn, index: usize, events: &mut Events) -> Value {
    let id = format!("msg_{}", turn.id);
    let part = |text: &str| json!({"type": "output_text", "annotations": [], "logprobs": [], "text": text});
    let mut item = json!({
        "id": id, "type": "message", "status": "in_progress", "content": [], "role": "assistant",
    });
    events.push(
        "response.output_item.added",
        json!({"output_index": index, "item": item}),
    );
    events.push(
        "response.content_part.added",
        json!({"item_id": id, "output_index": index, "content_index": 0, "part": part("")}),
    );
    for piece in turn.pieces(&turn.text) {
        events.push(
            "response.output_text.delta",
            json!({"item_id": id, "output_index": index, "content_index": 0, "delta": piece, "logprobs": []}),
        );
    }
    events.push(
        "response.output_text.done",
        json!({"item_id": id, "output_index": index, "content_index": 0, "text": turn.text, "logprobs": []}),
    );
    events.push(
        "response.content_part.done",
        json!({"item_id": id, "output_index": index, "content_index": 0, "part": part(&turn.text)}),
    );
    item["status"] = json!("completed");
    item["content"] = json!([part(&turn.text)]);
    events.push(
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    );
    item
}

/// The refusal of a request longer than the model's context window, as
/// OpenAI streams it on `/v1/responses`: the response is created, then an
/// `error` event (the error nested under `error`, as OpenAI sends it) and
/// `response.failed`, both with code `context_length_exceeded`.
pub(crate) fn too_long(model: &str) -> Vec<Bytes> {
    let created_at = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    const MESSAGE: &str = "Your input exceeds the context window of this model. Please adjust your input and try again.";
    let response = |status: &str, error: Value| {
        json!({
            "id": "resp_too_long", "object": "response", "created_at": created_at,
            "status": status, "error": error, "incomplete_details": null, "instructions": null,
            "model": model, "output": [], "parallel_tool_calls": true, "tool_choice": "auto",
            "tools": [], "temperature": 1.0, "top_p": 1.0, "metadata": {},
        })
    };
    let mut events = Events {
        frames: Vec::new(),
        next: 0,
    };
    events.push(
        "response.created",
        json!({"response": response("in_progress", Value::Null)}),
    );
    events.push(
        "response.in_progress",
        json!({"response": response("in_progress", Value::Null)}),
    );
    events.push(
        "error",
        json!({"error": {
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
            "message": MESSAGE,
            "param": "input",
        }}),
    );
    events.push(
        "response.failed",
        json!({"response": response("failed", json!({"code": "context_length_exceeded", "message": MESSAGE}))}),
    );
    events.frames
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openapi::{OpenAiSchema, schema_violations};
    use crate::script::{Ending, ScriptUsage, StreamSpec, ToolCall};
    use crate::wire::Wire;

    fn events(frames: &[Bytes]) -> Vec<Value> {
        frames
            .iter()
            .map(|frame| {
                let text = String::from_utf8_lossy(frame);
                let (event_line, data) = text
                    .trim_end()
                    .split_once('\n')
                    .expect("an event line and a data line");
                let data: Value =
                    serde_json::from_str(data.strip_prefix("data: ").expect("a data line"))
                        .expect("JSON data");
                assert_eq!(
                    event_line.strip_prefix("event: "),
                    data["type"].as_str(),
                    "the event line names the data's type"
                );
                data
            })
            .collect()
    }

    fn turn(body: &Value, thinking: &str, text: &str, calls: usize) -> Turn {
        let spec = StreamSpec {
            text: text.into(),
            thinking: thinking.into(),
            tool_calls: (0..calls)
                .map(|n| ToolCall {
                    id: format!("call_{n}"),
                    name: "read_file".into(),
                    arguments: format!("{{\"path\":\"{n}.txt\"}}"),
                })
                .collect(),
            chunk_size: Some(4),
            usage: ScriptUsage::default(),
            finish_reason: None,
            ending: Ending::Complete,
            chunk_interval: None,
            after_requests: None,
            unoffered_tools: false,
        };
        Turn::resolve(&spec, Wire::Responses, body, 7, None, None).0
    }

    fn asking(summary: bool, encrypted: bool) -> Value {
        let mut body = json!({"model": "gpt-5.1-codex", "stream": true, "store": false,
                              "instructions": "be brief", "input": "read both"});
        if summary {
            body["reasoning"] = json!({"summary": "auto"});
        }
        if encrypted {
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
        body
    }

    #[test]
    fn every_event_is_in_openais_schema_and_numbered_in_order() {
        for (summary, encrypted) in [(true, true), (false, false), (true, false)] {
            let body = asking(summary, encrypted);
            let frames = render(&turn(&body, "Read both.", "Reading both files.", 2), &body);
            for (n, event) in events(&frames).iter().enumerate() {
                assert_eq!(event["sequence_number"], n, "{event}");
                let violations = schema_violations(OpenAiSchema::ResponseStreamEvent, event);
                assert!(violations.is_empty(), "{violations:#?}\n{event:#}");
            }
        }
    }

    #[test]
    fn the_sequence_is_openais() {
        let body = asking(true, true);
        let kinds: Vec<String> = events(&render(&turn(&body, "Hmm.", "Yes.", 1), &body))
            .iter()
            .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
            .collect();
        let expected = [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.reasoning_summary_part.added",
            "response.reasoning_summary_text.delta",
            "response.reasoning_summary_text.done",
            "response.reasoning_summary_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ];
        assert_eq!(kinds, expected);
    }

    #[test]
    fn reasoning_shows_only_what_the_request_asked_for() {
        let plain = asking(false, false);
        let all = events(&render(&turn(&plain, "secret plan", "ok", 0), &plain));
        let item = &all[2]["item"];
        assert_eq!(item["type"], "reasoning");
        assert_eq!(item["summary"], json!([]));
        assert!(item.get("encrypted_content").is_none(), "{item}");
        assert!(!all.iter().any(|e| e.to_string().contains("secret plan")));

        let asked = asking(true, true);
        let all = events(&render(&turn(&asked, "secret plan", "ok", 0), &asked));
        let done = all
            .iter()
            .find(|e| e["type"] == "response.output_item.done")
            .expect("the reasoning item's end");
        assert_eq!(
            done["item"]["summary"],
            json!([{"type": "summary_text", "text": "secret plan"}])
        );
        assert_eq!(
            done["item"]["encrypted_content"],
            encrypted_reasoning("rs_scripted7", &["secret plan"])
        );
    }

    #[test]
    fn usage_reports_cached_tokens_and_a_cut_answer_is_incomplete() {
        let body = asking(false, false);
        let mut cut = turn(&body, "", "The summary is", 0);
        cut.finish_reason = Some("length".into());
        let all = events(&render(&cut, &body));
        let last = all.last().expect("events");
        assert_eq!(last["type"], "response.incomplete");
        assert_eq!(
            last["response"]["incomplete_details"]["reason"],
            "max_output_tokens"
        );
        assert_eq!(
            last["response"]["usage"]["input_tokens_details"]["cached_tokens"],
            0
        );
        assert!(schema_violations(OpenAiSchema::ResponseStreamEvent, last).is_empty());
    }

    #[test]
    fn a_refusal_for_length_streams_an_error_then_a_failed_response() {
        let all = events(&too_long("gpt-5.1-codex"));
        let kinds: Vec<&str> = all.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "response.created",
                "response.in_progress",
                "error",
                "response.failed"
            ]
        );
        assert_eq!(all[2]["error"]["code"], "context_length_exceeded");
        assert_eq!(
            all[3]["response"]["error"]["code"],
            "context_length_exceeded"
        );
    }
}
