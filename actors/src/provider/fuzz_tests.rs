//! Property tests of the stream decoders (Chat, Responses, Anthropic): bytes → SSE frames (the real
//! `sse-stream` parser, fed in random chunks) → `ModelEvent`s → the
//! session core's `PartialMessage`, the way [`super::http::answer`] runs
//! them.
//!
//! Three kinds of input: random bytes; random SSE-looking lines; and whole
//! valid answers (text and tool calls) encoded in the wire format, which
//! must decode back to what was encoded — and, with one JSON value of one
//! frame replaced by another of any type, must still never panic, keep the
//! event stream well-formed, and fail (if they fail) with an error that
//! says what was wrong and quotes the frame. Also `Retry-After` headers and
//! backoff arithmetic on any numbers.

use super::anthropic;
use super::http::{FrameDecoder, FrameError, retry_after};
use super::openai;
use super::responses;
use super::retry::{RetryPolicy, delay_before};
use crate::model::ModelEvent;
use crate::session::core::partial::PartialMessage;
use futures::StreamExt;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

/// What one decoded stream came to.
#[derive(Debug)]
struct Outcome {
    events: Vec<ModelEvent>,
    error: Option<FrameError>,
}

/// `bytes` through the SSE parser in chunks of `chunk` bytes, then each
/// frame's data through `D`, stopping at the first error or the end of the
/// answer, as `http::answer` does.
fn decode<D: FrameDecoder>(bytes: &[u8], chunk: usize) -> Outcome {
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = bytes
        .chunks(chunk.max(1))
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let mut frames = sse_stream::SseStream::from_bytes_stream(futures::stream::iter(chunks));
    let mut decoder = D::default();
    let mut events = Vec::new();
    let mut error = None;
    let mut done = false;
    futures::executor::block_on(async {
        while let Some(frame) = frames.next().await {
            // A stream error (such as invalid UTF-8) ends the stream; the
            // provider reports it as `ProviderError::Stream`.
            let Ok(frame) = frame else { break };
            let Some(data) = frame.data else { continue };
            match decoder.decode(&data) {
                Ok(decoded) => {
                    events.extend(decoded.events);
                    if decoded.done {
                        done = true;
                        break;
                    }
                }
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
    });
    if !done && error.is_none() && decoder.saw_finish() {
        events.extend(decoder.finish());
    }
    Outcome { events, error }
}

/// What must hold of every decoded stream, whatever came in.
fn check_well_formed(outcome: &Outcome) -> Result<(), TestCaseError> {
    let mut started = BTreeSet::new();
    for (i, event) in outcome.events.iter().enumerate() {
        match event {
            ModelEvent::BlockStart { index, .. } => {
                started.insert(*index);
            }
            ModelEvent::TextDelta { index, .. }
            | ModelEvent::ThinkingDelta { index, .. }
            | ModelEvent::ThinkingSignature { index, .. }
            | ModelEvent::ToolInputDelta { index, .. }
            | ModelEvent::BlockStop { index } => {
                prop_assert!(
                    started.contains(index),
                    "event {i} names block {index}, which never started: {:?}",
                    outcome.events
                );
            }
            ModelEvent::Finished { finish_reason } => {
                prop_assert!(!finish_reason.is_empty());
                prop_assert_eq!(i, outcome.events.len() - 1, "Finished comes last");
            }
            // Whole in one event: it opens nothing.
            ModelEvent::Usage(_)
            | ModelEvent::RedactedThinking { .. }
            | ModelEvent::ReasoningItem { .. } => {}
            ModelEvent::Retrying { .. } => prop_assert!(false, "decoders never retry"),
        }
    }
    match &outcome.error {
        Some(FrameError::Garbage(detail)) => {
            prop_assert!(
                detail.contains(" in `"),
                "a garbage error quotes the frame: {detail}"
            );
            prop_assert!(
                !detail.starts_with(" in `"),
                "and says what was wrong: {detail}"
            );
        }
        Some(FrameError::Remote { kind, .. }) => prop_assert!(!kind.is_empty()),
        None => {}
    }
    // The session core folds whatever came.
    let mut partial = PartialMessage::default();
    for event in &outcome.events {
        partial.apply(event);
    }
    let _ = partial.finish(|i| format!("fallback_{i}"));
    Ok(())
}

/// A valid answer: thinking, text, then tool calls with object arguments.
#[derive(Clone, Debug)]
struct Answer {
    thinking: Vec<String>,
    text: Vec<String>,
    calls: Vec<(String, Map<String, Value>, Vec<usize>)>,
}

fn answer() -> impl Strategy<Value = Answer> {
    let piece = "[a-zA-Z0-9 ,.!?\n\"\\\\{}é☃😀]{1,12}";
    let arguments = proptest::collection::btree_map(
        "[a-z_]{1,8}",
        prop_oneof![
            any::<i64>().prop_map(Value::from),
            "[ -~é☃\n]{0,16}".prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
        ],
        0..4,
    )
    .prop_map(|m| m.into_iter().collect::<Map<String, Value>>());
    let call = (
        "[a-z_]{1,10}",
        arguments,
        proptest::collection::vec(1usize..8, 1..4),
    );
    (
        proptest::collection::vec(piece, 0..3),
        proptest::collection::vec(piece, 0..5),
        proptest::collection::vec(call, 0..3),
    )
        .prop_map(|(thinking, text, calls)| Answer {
            thinking,
            text,
            calls,
        })
}

/// `text` cut into pieces of about `sizes` characters (on char boundaries).
fn pieces(text: &str, sizes: &[usize]) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < chars.len() {
        let size = sizes[i % sizes.len()].max(1);
        out.push(chars[at..(at + size).min(chars.len())].iter().collect());
        at += size;
        i += 1;
    }
    out
}

fn sse(frames: &[Value]) -> String {
    frames
        .iter()
        .map(|f| format!("data: {f}\n\n"))
        .collect::<String>()
}

fn openai_frames(answer: &Answer) -> Vec<Value> {
    let delta = |d: Value| json!({"choices": [{"index": 0, "delta": d, "finish_reason": null}]});
    let mut frames: Vec<Value> = answer
        .thinking
        .iter()
        .map(|t| delta(json!({"reasoning_content": t})))
        .chain(answer.text.iter().map(|t| delta(json!({"content": t}))))
        .collect();
    for (i, (name, args, sizes)) in answer.calls.iter().enumerate() {
        frames.push(delta(
            json!({"tool_calls": [{"index": i, "id": format!("call_{i}"),
            "type": "function", "function": {"name": name, "arguments": ""}}]}),
        ));
        for piece in pieces(&Value::Object(args.clone()).to_string(), sizes) {
            frames.push(delta(
                json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]}),
            ));
        }
    }
    let reason = if answer.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    frames.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}));
    frames.push(json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}}));
    frames
}

fn openai_sse(answer: &Answer) -> String {
    sse(&openai_frames(answer)) + "data: [DONE]\n\n"
}

fn anthropic_frames(answer: &Answer) -> Vec<Value> {
    let mut frames = vec![json!({"type": "message_start", "message": {"id": "m",
        "usage": {"input_tokens": 9, "output_tokens": 1}}})];
    let mut index = 0;
    if !answer.thinking.is_empty() {
        frames.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "thinking", "thinking": ""}}));
        for t in &answer.thinking {
            frames.push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "thinking_delta", "thinking": t}}));
        }
        frames.push(json!({"type": "content_block_delta", "index": index,
            "delta": {"type": "signature_delta", "signature": "c2lnbmVk"}}));
        frames.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    if !answer.text.is_empty() {
        frames.push(json!({"type": "content_block_start", "index": index,
            "content_block": {"type": "text", "text": ""}}));
        for t in &answer.text {
            frames.push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": t}}));
        }
        frames.push(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    for (i, (name, args, sizes)) in answer.calls.iter().enumerate() {
        let at = index + i;
        frames.push(json!({"type": "content_block_start", "index": at,
            "content_block": {"type": "tool_use", "id": format!("toolu_{i}"), "name": name, "input": {}}}));
        for piece in pieces(&Value::Object(args.clone()).to_string(), sizes) {
            frames.push(json!({"type": "content_block_delta", "index": at,
                "delta": {"type": "input_json_delta", "partial_json": piece}}));
        }
        frames.push(json!({"type": "content_block_stop", "index": at}));
    }
    let reason = if answer.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    frames.push(
        json!({"type": "message_delta", "delta": {"stop_reason": reason},
        "usage": {"output_tokens": 3}}),
    );
    frames.push(json!({"type": "message_stop"}));
    frames
}

/// A Responses stream of `answer`: the reasoning item (its summary deltas,
/// sealed), the message, each function call, `response.completed`.
fn responses_frames(answer: &Answer) -> Vec<Value> {
    let mut frames = vec![json!({"type": "response.created", "sequence_number": 0,
        "response": {"id": "resp", "status": "in_progress", "output": []}})];
    let mut index = 0;
    if !answer.thinking.is_empty() {
        frames.push(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": {"id": "rs", "type": "reasoning", "summary": []}}),
        );
        for t in &answer.thinking {
            frames.push(json!({"type": "response.reasoning_summary_text.delta",
                "output_index": index, "summary_index": 0, "delta": t}));
        }
        frames.push(
            json!({"type": "response.output_item.done", "output_index": index,
            "item": {"id": "rs", "type": "reasoning", "encrypted_content": "c2VhbGVk",
                     "summary": [{"type": "summary_text", "text": answer.thinking.concat()}]}}),
        );
        index += 1;
    }
    if !answer.text.is_empty() {
        frames.push(
            json!({"type": "response.output_item.added", "output_index": index,
            "item": {"id": "msg", "type": "message", "role": "assistant", "content": []}}),
        );
        for t in &answer.text {
            frames.push(
                json!({"type": "response.output_text.delta", "output_index": index,
                "content_index": 0, "delta": t}),
            );
        }
        frames.push(
            json!({"type": "response.output_item.done", "output_index": index,
            "item": {"id": "msg", "type": "message", "role": "assistant", "content": []}}),
        );
        index += 1;
    }
    for (i, (name, args, sizes)) in answer.calls.iter().enumerate() {
        let at = index + i;
        let item = |arguments: &str| {
            json!({"id": format!("fc_{i}"), "type": "function_call",
            "call_id": format!("call_{i}"), "name": name, "arguments": arguments})
        };
        frames.push(
            json!({"type": "response.output_item.added", "output_index": at, "item": item("")}),
        );
        let arguments = Value::Object(args.clone()).to_string();
        for piece in pieces(&arguments, sizes) {
            frames.push(json!({"type": "response.function_call_arguments.delta",
                "output_index": at, "delta": piece}));
        }
        frames.push(json!({"type": "response.output_item.done", "output_index": at, "item": item(&arguments)}));
    }
    frames.push(json!({"type": "response.completed", "response": {"status": "completed",
        "usage": {"input_tokens": 9, "input_tokens_details": {"cached_tokens": 2}, "output_tokens": 3}}}));
    frames
}

/// The decoded events make up `answer` again.
fn check_round_trip(outcome: &Outcome, answer: &Answer) -> Result<(), TestCaseError> {
    prop_assert!(outcome.error.is_none(), "{:?}", outcome.error);
    let mut partial = PartialMessage::default();
    for event in &outcome.events {
        partial.apply(event);
    }
    let message = partial.finish(|i| format!("fallback_{i}"));
    prop_assert_eq!(message.text(), answer.text.concat());
    let thinking: String = message
        .content
        .iter()
        .filter_map(|b| b.as_thinking())
        .collect();
    prop_assert_eq!(thinking, answer.thinking.concat());
    prop_assert_eq!(message.calls.len(), answer.calls.len());
    for (call, (name, args, _)) in message.calls.iter().zip(&answer.calls) {
        prop_assert_eq!(&call.name, name);
        prop_assert_eq!(&call.input, &Ok(Value::Object(args.clone())));
    }
    let finished = matches!(outcome.events.last(), Some(ModelEvent::Finished { .. }));
    prop_assert!(finished, "the answer finishes");
    Ok(())
}

/// Any JSON value, small.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        "[ -~]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 12, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Replace the value found by walking `path` (each step picks a child by
/// position) with `replacement`; an empty path replaces the whole value.
fn mutate(value: &mut Value, path: &[usize], replacement: Value) {
    let child = match (value, path.split_first()) {
        (Value::Object(map), Some((step, rest))) if !map.is_empty() => {
            let key = map
                .keys()
                .nth(step % map.len())
                .cloned()
                .unwrap_or_default();
            map.get_mut(&key).map(|v| (v, rest))
        }
        (Value::Array(items), Some((step, rest))) if !items.is_empty() => {
            let len = items.len();
            items.get_mut(step % len).map(|v| (v, rest))
        }
        (value, _) => {
            *value = replacement;
            return;
        }
    };
    if let Some((child, rest)) = child {
        mutate(child, rest, replacement);
    }
}

/// Random SSE-looking text: fields, comments, blank lines, JSON and not.
fn sse_lines() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        json_value().prop_map(|v| format!("data: {v}")),
        "[ -~]{0,20}".prop_map(|t| format!("data: {t}")),
        Just("data: [DONE]".to_string()),
        Just("data: {\"type\": \"message_stop\"}".to_string()),
        "[a-z_]{0,12}".prop_map(|t| format!("event: {t}")),
        "[ -~]{0,10}".prop_map(|t| format!(": {t}")),
        "[0-9]{0,4}".prop_map(|t| format!("id: {t}")),
        "[0-9a-z]{0,4}".prop_map(|t| format!("retry: {t}")),
        Just(String::new()),
        "[ -~]{0,12}",
    ];
    (
        proptest::collection::vec(line, 0..20),
        prop_oneof![Just("\n"), Just("\r\n"), Just("\r")],
    )
        .prop_map(|(lines, end)| lines.join(end) + end)
}

proptest! {
    #[test]
    fn random_bytes_never_panic_either_decoder(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        chunk in 1usize..64,
    ) {
        check_well_formed(&decode::<openai::Decoder>(&bytes, chunk))?;
        check_well_formed(&decode::<anthropic::Decoder>(&bytes, chunk))?;
        check_well_formed(&decode::<responses::Decoder>(&bytes, chunk))?;
    }

    #[test]
    fn random_sse_lines_never_panic_either_decoder(text in sse_lines(), chunk in 1usize..64) {
        check_well_formed(&decode::<openai::Decoder>(text.as_bytes(), chunk))?;
        check_well_formed(&decode::<anthropic::Decoder>(text.as_bytes(), chunk))?;
        check_well_formed(&decode::<responses::Decoder>(text.as_bytes(), chunk))?;
    }

    #[test]
    fn frame_data_that_is_not_json_is_garbage_quoting_it(data in "[a-eg-mo-su-zA-Z<>#@!?=~][ -~]{0,40}") {
        for error in [
            openai::Decoder::default().decode(&data).err(),
            anthropic::Decoder::default().decode(&data).err(),
            responses::Decoder::default().decode(&data).err(),
        ] {
            let Some(FrameError::Garbage(detail)) = error else {
                return Err(TestCaseError::fail(format!("{data:?} decoded as {error:?}")));
            };
            prop_assert!(detail.contains(&format!("in `{}", data.trim().chars().take(20).collect::<String>())), "{detail}");
        }
    }

    #[test]
    fn openai_answers_decode_to_what_was_sent(answer in answer(), chunk in 1usize..48) {
        let outcome = decode::<openai::Decoder>(openai_sse(&answer).as_bytes(), chunk);
        check_well_formed(&outcome)?;
        check_round_trip(&outcome, &answer)?;
    }

    #[test]
    fn anthropic_answers_decode_to_what_was_sent(answer in answer(), chunk in 1usize..48) {
        let outcome = decode::<anthropic::Decoder>(sse(&anthropic_frames(&answer)).as_bytes(), chunk);
        check_well_formed(&outcome)?;
        check_round_trip(&outcome, &answer)?;
    }

    #[test]
    fn responses_answers_decode_to_what_was_sent(answer in answer(), chunk in 1usize..48) {
        let outcome = decode::<responses::Decoder>(sse(&responses_frames(&answer)).as_bytes(), chunk);
        check_well_formed(&outcome)?;
        check_round_trip(&outcome, &answer)?;
        let sealed = outcome.events.iter().any(|e| matches!(e, ModelEvent::ReasoningItem { .. }));
        prop_assert_eq!(sealed, !answer.thinking.is_empty(), "the reasoning item is kept");
    }

    #[test]
    fn responses_answers_with_one_value_changed_stay_well_formed(
        answer in answer(),
        frame in any::<prop::sample::Index>(),
        path in proptest::collection::vec(any::<usize>(), 0..6),
        replacement in json_value(),
        chunk in 1usize..48,
    ) {
        let mut frames = responses_frames(&answer);
        let at = frame.index(frames.len());
        mutate(&mut frames[at], &path, replacement);
        check_well_formed(&decode::<responses::Decoder>(sse(&frames).as_bytes(), chunk))?;
    }

    #[test]
    fn openai_answers_with_one_value_changed_stay_well_formed(
        answer in answer(),
        frame in any::<prop::sample::Index>(),
        path in proptest::collection::vec(any::<usize>(), 0..6),
        replacement in json_value(),
        chunk in 1usize..48,
    ) {
        let mut frames = openai_frames(&answer);
        let at = frame.index(frames.len());
        mutate(&mut frames[at], &path, replacement);
        let text = sse(&frames) + "data: [DONE]\n\n";
        check_well_formed(&decode::<openai::Decoder>(text.as_bytes(), chunk))?;
    }

    #[test]
    fn anthropic_answers_with_one_value_changed_stay_well_formed(
        answer in answer(),
        frame in any::<prop::sample::Index>(),
        path in proptest::collection::vec(any::<usize>(), 0..6),
        replacement in json_value(),
        chunk in 1usize..48,
    ) {
        let mut frames = anthropic_frames(&answer);
        let at = frame.index(frames.len());
        mutate(&mut frames[at], &path, replacement);
        check_well_formed(&decode::<anthropic::Decoder>(sse(&frames).as_bytes(), chunk))?;
    }

    #[test]
    fn retry_after_headers_of_any_text_never_panic(
        seconds in "[ -~]{0,24}",
        millis in "[ -~]{0,24}",
        number in any::<f64>(),
    ) {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        for (name, value) in [
            ("retry-after", seconds),
            ("retry-after-ms", millis),
            ("retry-after", number.to_string()),
            ("retry-after-ms", number.to_string()),
        ] {
            let mut headers = reqwest::header::HeaderMap::new();
            if let Ok(value) = reqwest::header::HeaderValue::from_str(&value) {
                headers.insert(name, value);
            }
            let _ = retry_after(&headers, now);
        }
    }

    #[test]
    fn backoff_never_panics_whatever_the_policy(
        max_retries in any::<u32>(),
        base_ms in any::<u64>(),
        max_secs in any::<u64>(),
        attempt in any::<u32>(),
        asked in proptest::option::of(any::<u64>()),
        jitter in any::<f64>(),
    ) {
        let policy = RetryPolicy {
            max_retries,
            base_delay: Duration::from_millis(base_ms),
            max_delay: Duration::from_secs(max_secs),
        };
        if let Some(delay) = delay_before(&policy, attempt, asked.map(Duration::from_millis), jitter) {
            // At most 125% of the cap (the jitter band), give or take the
            // float rounding of the spread.
            let bound = policy.max_delay.as_secs_f64() * 1.25 * (1.0 + 1e-12);
            prop_assert!(asked.is_some() || delay.as_secs_f64() <= bound, "{delay:?}");
        }
    }
}

/// Inputs the properties found, kept as plain tests.
#[test]
fn a_retry_after_beyond_any_duration_is_no_wait_not_a_panic() {
    let now = SystemTime::UNIX_EPOCH;
    for (name, value) in [
        ("retry-after-ms", "inf"),
        ("retry-after-ms", "1e300"),
        ("retry-after", "1e300"),
    ] {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert(name, reqwest::header::HeaderValue::from_static(value));
        assert_eq!(retry_after(&headers, now), None, "{name}: {value}");
    }
}

#[test]
fn a_huge_configured_backoff_is_capped_not_a_panic() {
    let policy = RetryPolicy {
        max_retries: 3,
        base_delay: Duration::from_millis(u64::MAX),
        max_delay: Duration::from_secs(u64::MAX),
    };
    assert!(delay_before(&policy, 2, None, 0.99).is_some());
}

#[test]
fn frames_of_the_wrong_shape_name_the_field() {
    let garbage = |e: Result<_, FrameError>| match e {
        Err(FrameError::Garbage(detail)) => detail,
        other => panic!("expected garbage, got {other:?}"),
    };
    let detail =
        garbage(openai::Decoder::default().decode(r#"{"choices":[{"delta":{"content":5}}]}"#));
    assert!(
        detail.starts_with("choices[0].delta.content is a whole number; expected a string in `"),
        "{detail}"
    );
    let detail = garbage(openai::Decoder::default().decode("42"));
    assert!(
        detail.starts_with("the chunk is a whole number; expected an object"),
        "{detail}"
    );
    let detail = garbage(openai::Decoder::default().decode(
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":{"a":1}}}]}}]}"#,
    ));
    assert!(
        detail.starts_with(
            "choices[0].delta.tool_calls[0].function.arguments is an object; expected a string"
        ),
        "{detail}"
    );
    let detail = garbage(anthropic::Decoder::default().decode(r#"{"index":0}"#));
    assert!(detail.starts_with("the event has no `type`"), "{detail}");
    let detail = garbage(anthropic::Decoder::default().decode(
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":"3"}}"#,
    ));
    assert!(
        detail.starts_with("usage.output_tokens is a string; expected a whole number"),
        "{detail}"
    );
}
