//! OpenAI Chat Completions with SSE streaming — the wire format of OpenAI,
//! llama.cpp's server, Ollama, vLLM, LM Studio, OpenRouter, Groq and more.
//!
//! This module translates, in both directions, and nothing else:
//! - [`request_body`]: our [`ModelRequest`] to a `/chat/completions` body;
//! - [`Decoder`]: `chat.completion.chunk` frames to [`ModelEvent`]s. Text
//!   arrives in `delta.content`; the model's reasoning, from servers that
//!   stream it, in `delta.reasoning_content` (llama.cpp, DeepSeek, vLLM) or
//!   `delta.reasoning` (OpenRouter), and becomes a thinking block ahead of
//!   the text; tool calls arrive as fragments keyed by
//!   `index` (id and name in the first, arguments spread over the rest);
//!   `finish_reason` comes in a late chunk and usage in the last one (with
//!   `stream_options.include_usage`), then `data: [DONE]`.
//! - [`attempt`]: one HTTP call that feeds the decoder (retries wrap it).
//!
//! Thinking is never sent back: these servers do not take it (DeepSeek
//! refuses a request whose messages carry `reasoning_content`).
//!
//! The session goes as `prompt_cache_key` (OpenAI's prompt cache routes
//! requests with the same key to the same cache) only to `api.openai.com`:
//! servers that mimic this wire check its fields their own way, and some
//! refuse one they do not know (NVIDIA's answers 400 "Unsupported
//! parameter(s): prompt_cache_key"; Mistral-style validators "Extra inputs
//! are not permitted"), while llama.cpp, vLLM and Ollama would ignore it
//! and cache by prefix anyway. A model OpenAI serves only on the Responses
//! API is refused here with a 404 that names `v1/responses`: the error then
//! says to switch the profile to `provider = "openai-responses"`.

use super::fields;
use super::http::{self, Decoded, FrameDecoder, FrameError, status_hint};
use super::{ModelStream, ProviderError};
use crate::model::{ModelEvent, ModelRequest};
use crate::protocol::{BlockKind, ContentBlock, Message, Usage};
use crate::settings::ModelProfile;
use futures::StreamExt;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The JSON body of a streaming `/chat/completions` request.
pub fn request_body(profile: &ModelProfile, request: &ModelRequest) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if !request.system_prompt.is_empty() {
        messages.push(json!({"role": "system", "content": request.system_prompt}));
    }
    let history = super::images_for(profile, &request.messages);
    messages.extend(history.iter().filter_map(wire_message));
    let mut body = json!({
        "model": profile.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({"type": "function", "function": {
                    "name": t.name, "description": t.description, "parameters": t.input_schema,
                }})
            })
            .collect();
    }
    if let Some(max) = request.output_cap(profile.max_output_tokens) {
        let field = profile.max_tokens_field.as_deref().unwrap_or("max_tokens");
        body[field] = json!(max);
    }
    if let Some(key) = super::cache_key(profile, request).filter(|_| is_openai(profile)) {
        body["prompt_cache_key"] = json!(key);
    }
    body
}

/// Whether the profile talks to OpenAI itself (`https://api.openai.com`),
/// which takes OpenAI's newer fields, rather than a server that mimics it.
fn is_openai(profile: &ModelProfile) -> bool {
    let url = profile.base_url.to_ascii_lowercase();
    url.strip_prefix("https://api.openai.com")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['/', ':']))
}

/// One history message on the wire; `None` for an assistant message with
/// nothing to send (only thinking, cut short by an interrupt).
fn wire_message(message: &Message) -> Option<Value> {
    Some(match message {
        Message::User { text, images } if images.is_empty() => {
            json!({"role": "user", "content": text})
        }
        // Chat Completions' content parts: the text, then each image as a
        // `data:` URL.
        Message::User { text, images } => {
            let mut parts = vec![json!({"type": "text", "text": text})];
            parts.extend(images.iter().map(|image| {
                json!({"type": "image_url", "image_url": {
                    "url": format!("data:{};base64,{}", image.media_type, image.data),
                }})
            }));
            json!({"role": "user", "content": parts})
        }
        Message::ToolResult {
            call_id, output, ..
        } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": output})
        }
        Message::Assistant { content, .. } => {
            // Text and tool calls only: thinking stays out.
            let text: String = content.iter().filter_map(|b| b.as_text()).collect();
            let calls: Vec<Value> = content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::ToolUse { id, name, input } => Some(json!({
                        "id": id, "type": "function",
                        "function": {"name": name, "arguments": arguments_text(input)},
                    })),
                    _ => None,
                })
                .collect();
            if text.is_empty() && calls.is_empty() && !content.is_empty() {
                return None;
            }
            let mut m = json!({"role": "assistant", "content": text});
            if !calls.is_empty() {
                if text.is_empty() {
                    m["content"] = Value::Null;
                }
                m["tool_calls"] = Value::Array(calls);
            }
            m
        }
    })
}

/// Arguments as JSON text. Arguments that were not a JSON object (garbage
/// from the model, or cut short by an interrupt) are sent as `{}`: servers
/// parse the history's arguments and would refuse the request, and the
/// call's error result already quotes what the model sent.
fn arguments_text(input: &Value) -> String {
    match input {
        Value::Object(_) => input.to_string(),
        _ => "{}".to_string(),
    }
}

/// Turns `chat.completion.chunk` frames into [`ModelEvent`]s, numbering
/// blocks in the order they open.
#[derive(Debug, Default)]
pub struct Decoder {
    next_block: usize,
    text_block: Option<usize>,
    /// The thinking block reasoning goes to while no text or tool call
    /// came after it.
    thinking_block: Option<usize>,
    /// OpenAI tool-call index → our block index.
    tool_blocks: BTreeMap<u64, usize>,
    open_blocks: Vec<usize>,
    finish_reason: Option<String>,
    finished: bool,
}

impl FrameDecoder for Decoder {
    const CUT_SHORT: &'static str = "the stream ended before the answer was complete";

    /// Decode the data of one SSE frame.
    fn decode(&mut self, data: &str) -> Result<Decoded, FrameError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(Decoded {
                events: self.finish(),
                done: true,
            });
        }
        if let Some(events) = self.plain_chunk(data) {
            return Ok(Decoded {
                events,
                done: false,
            });
        }
        let chunk: Value = serde_json::from_str(data)
            .map_err(|e| FrameError::Garbage(format!("{e} in `{}`", http::short(data))))?;
        if let Some(err) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .map(String::from)
                .unwrap_or_else(|| err.to_string());
            let kind = err
                .get("type")
                .and_then(Value::as_str)
                .filter(|k| !k.is_empty())
                .unwrap_or("an error")
                .to_string();
            return Err(FrameError::Remote { kind, message });
        }
        let events = self
            .chunk(&chunk)
            .map_err(|what| FrameError::Garbage(format!("{what} in `{}`", http::short(data))))?;
        Ok(Decoded {
            events,
            done: false,
        })
    }

    /// Close every open block and report the finish. Called at `[DONE]`, or
    /// at the end of a stream that gave a `finish_reason` but no `[DONE]`.
    fn finish(&mut self) -> Vec<ModelEvent> {
        if self.finished {
            return Vec::new();
        }
        self.finished = true;
        let mut events: Vec<ModelEvent> = self
            .open_blocks
            .drain(..)
            .map(|index| ModelEvent::BlockStop { index })
            .collect();
        let finish_reason = self.finish_reason.clone().unwrap_or_else(|| {
            if self.tool_blocks.is_empty() {
                "end_turn"
            } else {
                "tool_use"
            }
            .to_string()
        });
        events.push(ModelEvent::Finished { finish_reason });
        events
    }

    /// Whether a `finish_reason` arrived (the answer is complete even if the
    /// server never sends `[DONE]`).
    fn saw_finish(&self) -> bool {
        self.finish_reason.is_some()
    }
}

impl Decoder {
    /// The events of a chunk that carries only text, reasoning or a finish
    /// (almost every chunk of an answer), read straight into borrowed
    /// fields instead of a JSON tree. `None` for anything else — tool
    /// calls, usage, an error, a field of an unexpected type — which
    /// [`chunk`](Self::chunk) then reads field by field, naming what is
    /// wrong: the two readings agree on every chunk this one accepts.
    fn plain_chunk(&mut self, data: &str) -> Option<Vec<ModelEvent>> {
        let Object(chunk) = serde_json::from_str::<Object<PlainChunk<'_>>>(data).ok()?;
        let extra =
            |raw: Option<&serde_json::value::RawValue>| raw.is_some_and(|r| r.get() != "null");
        if extra(chunk.error) || extra(chunk.usage) {
            return None;
        }
        let mut events = Vec::new();
        let Some(Object(choice)) = chunk.choices.and_then(|c| c.into_iter().next()) else {
            return Some(events);
        };
        if let Some(Object(delta)) = choice.delta {
            if extra(delta.tool_calls) {
                return None;
            }
            let reasoning = delta
                .reasoning_content
                .filter(|t| !t.is_empty())
                .or(delta.reasoning.filter(|t| !t.is_empty()));
            if let Some(reasoning) = reasoning {
                self.thinking(&reasoning, &mut events);
            }
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                self.text(&text, &mut events);
            }
        }
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(normalise_finish_reason(&reason));
        }
        Some(events)
    }

    /// The events of one `chat.completion.chunk`; a field of the wrong type
    /// is the error, naming it.
    fn chunk(&mut self, chunk: &Value) -> Result<Vec<ModelEvent>, String> {
        let chunk = fields::object(chunk, "the chunk")?;
        let mut events = Vec::new();
        if let Some(choice) = fields::list(chunk, "choices", "")?.and_then(|c| c.first()) {
            let choice = fields::object(choice, "choices[0]")?;
            if let Some(delta) = fields::table(choice, "delta", "choices[0].")? {
                const DELTA: &str = "choices[0].delta.";
                // Some servers send the same reasoning under both names:
                // `reasoning_content` wins.
                let reasoning = match fields::text(delta, "reasoning_content", DELTA)?
                    .filter(|t| !t.is_empty())
                {
                    Some(reasoning) => Some(reasoning),
                    None => fields::text(delta, "reasoning", DELTA)?.filter(|t| !t.is_empty()),
                };
                if let Some(reasoning) = reasoning {
                    self.thinking(reasoning, &mut events);
                }
                if let Some(text) = fields::text(delta, "content", DELTA)?.filter(|t| !t.is_empty())
                {
                    self.text(text, &mut events);
                }
                for (i, call) in fields::list(delta, "tool_calls", DELTA)?
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    let path = format!("{DELTA}tool_calls[{i}]");
                    self.tool_fragment(fields::object(call, &path)?, &path, &mut events)?;
                }
            }
            if let Some(reason) = fields::text(choice, "finish_reason", "choices[0].")? {
                self.finish_reason = Some(normalise_finish_reason(reason));
            }
        }
        if let Some(usage) = fields::table(chunk, "usage", "")? {
            events.push(ModelEvent::Usage(parse_usage(usage)?));
        }
        Ok(events)
    }

    fn thinking(&mut self, text: &str, events: &mut Vec<ModelEvent>) {
        let index = match self.thinking_block {
            Some(i) => i,
            None => {
                // Text that comes after this reasoning starts a new block.
                self.text_block = None;
                let i = self.open(BlockKind::Thinking, events);
                self.thinking_block = Some(i);
                i
            }
        };
        events.push(ModelEvent::ThinkingDelta {
            index,
            text: text.to_string(),
        });
    }

    fn text(&mut self, text: &str, events: &mut Vec<ModelEvent>) {
        let index = match self.text_block {
            Some(i) => i,
            None => {
                self.thinking_block = None;
                let i = self.open(BlockKind::Text, events);
                self.text_block = Some(i);
                i
            }
        };
        events.push(ModelEvent::TextDelta {
            index,
            text: text.to_string(),
        });
    }

    fn tool_fragment(
        &mut self,
        call: &Map<String, Value>,
        path: &str,
        events: &mut Vec<ModelEvent>,
    ) -> Result<(), String> {
        let path = format!("{path}.");
        let oa_index =
            fields::whole(call, "index", &path)?.unwrap_or(self.tool_blocks.len() as u64);
        let function_path = format!("{path}function.");
        let function = fields::table(call, "function", &path)?;
        let index = match self.tool_blocks.get(&oa_index) {
            Some(i) => *i,
            None => {
                // Text or reasoning that comes after a tool call starts a
                // new block.
                self.text_block = None;
                self.thinking_block = None;
                let id = fields::text(call, "id", &path)?
                    .unwrap_or_default()
                    .to_string();
                let name = match function {
                    Some(f) => fields::text(f, "name", &function_path)?.unwrap_or_default(),
                    None => "",
                }
                .to_string();
                let i = self.open(BlockKind::ToolUse { id, name }, events);
                self.tool_blocks.insert(oa_index, i);
                i
            }
        };
        let arguments = match function {
            Some(f) => fields::text(f, "arguments", &function_path)?,
            None => None,
        };
        if let Some(args) = arguments.filter(|a| !a.is_empty()) {
            events.push(ModelEvent::ToolInputDelta {
                index,
                partial_json: args.to_string(),
            });
        }
        Ok(())
    }

    /// Open the next block. The previous one is complete by then: OpenAI
    /// streams text, then each tool call in turn, as Anthropic does with its
    /// explicit block stops.
    fn open(&mut self, block: BlockKind, events: &mut Vec<ModelEvent>) -> usize {
        events.extend(
            self.open_blocks
                .drain(..)
                .map(|index| ModelEvent::BlockStop { index }),
        );
        let index = self.next_block;
        self.next_block += 1;
        self.open_blocks.push(index);
        events.push(ModelEvent::BlockStart { index, block });
        index
    }
}

/// A `chat.completion.chunk` as [`Decoder::plain_chunk`] reads it: the
/// fields the decoder uses, borrowed where the text has no escapes; every
/// other field is skipped unread. `null` and absent are the same.
#[derive(serde::Deserialize)]
struct PlainChunk<'a> {
    #[serde(borrow)]
    choices: Option<Vec<Object<PlainChoice<'a>>>>,
    #[serde(borrow)]
    usage: Option<&'a serde_json::value::RawValue>,
    #[serde(borrow)]
    error: Option<&'a serde_json::value::RawValue>,
}

#[derive(serde::Deserialize)]
struct PlainChoice<'a> {
    #[serde(borrow)]
    delta: Option<Object<PlainDelta<'a>>>,
    #[serde(borrow)]
    finish_reason: Option<std::borrow::Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct PlainDelta<'a> {
    #[serde(borrow)]
    content: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    reasoning_content: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    reasoning: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    tool_calls: Option<&'a serde_json::value::RawValue>,
}

/// A struct read only from a JSON object: serde's derived structs also
/// take an array of their fields in order, which the wire never sends and
/// [`Decoder::chunk`] refuses.
struct Object<T>(T);

impl<'de, T: serde::Deserialize<'de>> serde::Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer
            .deserialize_map(Fields(std::marker::PhantomData))
            .map(Object)
    }
}

fn normalise_finish_reason(reason: &str) -> String {
    match reason {
        "stop" => "end_turn".into(),
        "tool_calls" | "function_call" => "tool_use".into(),
        "length" => "max_tokens".into(),
        other => other.into(),
    }
}

/// OpenAI's `prompt_tokens` includes the cached ones; `Usage` counts them
/// apart, as Anthropic does (`input_tokens` is the uncached input), so that
/// costs and context figures mean the same for both formats.
fn parse_usage(usage: &Map<String, Value>) -> Result<Usage, String> {
    let n = |key: &str| fields::whole(usage, key, "usage.").map(Option::unwrap_or_default);
    let cached = match fields::table(usage, "prompt_tokens_details", "usage.")? {
        Some(details) => fields::whole(details, "cached_tokens", "usage.prompt_tokens_details.")?
            .unwrap_or_default(),
        None => 0,
    };
    Ok(Usage {
        input_tokens: n("prompt_tokens")?.saturating_sub(cached),
        output_tokens: n("completion_tokens")?,
        cache_read_input_tokens: cached,
        cache_creation_input_tokens: 0,
    })
}

/// The endpoint for a base URL such as `http://127.0.0.1:8080/v1`.
pub fn endpoint(base_url: &str) -> String {
    format!("{}/chat/completions", base_url.trim_end_matches('/'))
}

/// One call to the model, streaming its answer (no retries here).
pub fn attempt(http: reqwest::Client, profile: ModelProfile, request: ModelRequest) -> ModelStream {
    let url = endpoint(&profile.base_url);
    let body = request_body(&profile, &request);
    let built = http::post(
        &http,
        &url,
        &profile,
        &request.profile,
        &body,
        |b, key| match key {
            Some(key) => b.bearer_auth(key),
            None => b,
        },
    );
    let idle = profile.idle_timeout();
    let advice = responses_only_hint(&profile, &request.profile);
    let answer = http::answer::<Decoder>(built, url, idle, move |status| {
        status_hint(status, &profile, &request.profile)
    });
    Box::pin(answer.map(move |item| item.map_err(|error| with_responses_hint(error, &advice))))
}

/// What to do about a model that answers only on the Responses API.
fn responses_only_hint(profile: &ModelProfile, profile_name: &str) -> String {
    format!(
        "model `{}` is served on OpenAI's Responses API only: set `provider = \"openai-responses\"` in model profile `{profile_name}`",
        profile.model
    )
}

/// OpenAI's refusal of a Responses-only model ("This model is only
/// supported in v1/responses and not in v1/chat/completions.") with
/// `advice` as its hint, in place of the 404's usual one.
fn with_responses_hint(error: ProviderError, advice: &str) -> ProviderError {
    match error {
        ProviderError::Status {
            url,
            status,
            message,
            retry_after,
            ..
        } if message.contains("v1/responses") => ProviderError::Status {
            url,
            status,
            message,
            hint: Some(advice.to_string()),
            retry_after,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ToolOrigin, ToolSpec};
    use crate::session::core::partial::PartialMessage;
    use crate::settings::ProviderKind;

    /// The fast reading of a plain chunk gives what the field-by-field one
    /// gives, frame by frame through a whole answer, and steps aside
    /// (`None`) for every chunk it does not cover — tool calls, usage, an
    /// error, wrong types, arrays where objects belong.
    #[test]
    fn the_plain_chunk_reading_agrees_with_the_field_by_field_one() {
        let answer = [
            r#"{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"think \"hard\"\n"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"","reasoning":"twice"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Hello, "},"logprobs":null}],"usage":null}"#,
            r#"{"choices":[{"delta":{"content":"w\u00f6rld\n"}},{"index":1,"delta":{"content":"not read"}}]}"#,
            r#"{"choices":[]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        ];
        let mut fast = Decoder::default();
        let mut slow = Decoder::default();
        for data in answer {
            let read = fast.plain_chunk(data);
            assert!(read.is_some(), "the plain reading takes {data}");
            let chunk: Value = serde_json::from_str(data).expect("valid JSON");
            assert_eq!(read, slow.chunk(&chunk).ok(), "{data}");
        }
        assert_eq!(fast.finish(), slow.finish());
        let other = [
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
            r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
            r#"{"choices":[{"delta":{"content":5}}]}"#,
            r#"{"choices":[{"delta":[null,null,null,null]}]}"#,
            r#"{"choices":[[{"content":"x"},null]]}"#,
            r#"[[{"delta":{"content":"x"}}],null,null]"#,
            r#"{"choices":{"delta":{"content":"x"}}}"#,
        ];
        for data in other {
            assert_eq!(Decoder::default().plain_chunk(data), None, "{data}");
        }
    }

    /// Replay a fixture through the real SSE parser in chunks of `size`
    /// bytes, then through the decoder.
    async fn replay(name: &str, size: usize) -> Vec<ModelEvent> {
        super::super::replay_tests::replay::<Decoder>("openai", name, size)
            .await
            .expect("the fixture decodes")
    }

    fn assemble(events: &[ModelEvent]) -> PartialMessage {
        let mut p = PartialMessage::default();
        for e in events {
            p.apply(e);
        }
        p
    }

    #[tokio::test]
    async fn text_reply_decodes_identically_at_every_chunk_size() {
        let whole = replay("text_reply.sse", usize::MAX >> 1).await;
        for size in [1, 2, 3, 7, 64] {
            assert_eq!(
                replay("text_reply.sse", size).await,
                whole,
                "chunk size {size}"
            );
        }
        let m = assemble(&whole).finish(|i| i.to_string());
        assert_eq!(m.text(), "Hello, wörld! ☃");
        assert!(
            matches!(whole.last(), Some(ModelEvent::Finished { finish_reason }) if finish_reason == "end_turn")
        );
        // prompt_tokens 21, of which 4 cached.
        assert!(whole.contains(&ModelEvent::Usage(Usage {
            input_tokens: 17,
            output_tokens: 6,
            cache_read_input_tokens: 4,
            cache_creation_input_tokens: 0,
        })));
    }

    #[tokio::test]
    async fn parallel_tool_calls_accumulate_by_index() {
        for size in [1, 5, 4096] {
            let events = replay("parallel_tool_calls.sse", size).await;
            let m = assemble(&events).finish(|i| i.to_string());
            assert_eq!(m.text(), "Checking both.");
            assert_eq!(m.calls.len(), 2);
            assert_eq!(m.calls[0].id, "call_a");
            assert_eq!(m.calls[0].name, "read_file");
            assert_eq!(m.calls[0].input, Ok(json!({"path": "notes/ünïcode.txt"})));
            assert_eq!(m.calls[1].id, "call_b");
            assert_eq!(m.calls[1].input, Ok(json!({"command": "ls -la"})));
            assert!(
                matches!(events.last(), Some(ModelEvent::Finished { finish_reason }) if finish_reason == "tool_use")
            );
        }
    }

    #[tokio::test]
    async fn reasoning_content_streams_as_a_thinking_block_before_the_text() {
        let whole = replay("reasoning_content.sse", usize::MAX >> 1).await;
        for size in [1, 2, 3, 7, 64] {
            assert_eq!(
                replay("reasoning_content.sse", size).await,
                whole,
                "chunk size {size}"
            );
        }
        let starts: Vec<(usize, &BlockKind)> = whole
            .iter()
            .filter_map(|e| match e {
                ModelEvent::BlockStart { index, block } => Some((*index, block)),
                _ => None,
            })
            .collect();
        assert_eq!(
            starts,
            [
                (0, &BlockKind::Thinking),
                (1, &BlockKind::Text),
                (
                    2,
                    &BlockKind::ToolUse {
                        id: "call_r1".into(),
                        name: "read_file".into()
                    }
                )
            ]
        );
        let stop_thinking = whole
            .iter()
            .position(|e| *e == ModelEvent::BlockStop { index: 0 });
        let first_text = whole
            .iter()
            .position(|e| matches!(e, ModelEvent::TextDelta { .. }));
        assert!(
            stop_thinking < first_text,
            "the thinking block closes before the text: {whole:#?}"
        );
        let m = assemble(&whole).finish(|i| i.to_string());
        assert_eq!(
            m.content[0],
            ContentBlock::Thinking {
                thinking: "The user wants the notes — naïve ☃ plan: read the file.".into(),
                signature: None,
            },
            "a server's reasoning is unsigned"
        );
        assert_eq!(m.text(), "Let me read it.");
        assert_eq!(m.calls[0].input, Ok(json!({"path": "notes.txt"})));
    }

    #[tokio::test]
    async fn openrouter_reasoning_streams_as_thinking() {
        for size in [1, 5, 4096] {
            let events = replay("reasoning.sse", size).await;
            let m = assemble(&events).finish(|i| i.to_string());
            assert_eq!(m.content[0].as_thinking(), Some("Two plus two is four."));
            assert_eq!(m.text(), "4");
            assert!(
                matches!(events.last(), Some(ModelEvent::Finished { finish_reason }) if finish_reason == "end_turn")
            );
        }
    }

    #[tokio::test]
    async fn reasoning_sent_under_both_names_counts_once() {
        let events = replay("reasoning_under_both_names.sse", 10).await;
        let m = assemble(&events).finish(|i| i.to_string());
        assert_eq!(m.content[0].as_thinking(), Some("Short answer."));
        assert_eq!(m.text(), "Yes.");
    }

    #[test]
    fn images_go_as_content_parts_with_data_urls() {
        let mut profile = ModelProfile::new(ProviderKind::Openai, "gpt-4.1", "http://h/v1");
        profile.images = Some(true);
        let request = ModelRequest {
            profile: "p".into(),
            cache_key: String::new(),
            max_output_tokens: None,
            system_prompt: String::new(),
            messages: vec![Message::User {
                text: "what is this?".into(),
                images: vec![crate::protocol::Image {
                    source: "pic.png".into(),
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                }],
            }],
            tools: Default::default(),
        };
        let body = request_body(&profile, &request);
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ]}])
        );
    }

    #[test]
    fn a_profile_without_images_gets_a_line_naming_each_instead() {
        let mut profile = ModelProfile::new(ProviderKind::Openai, "m", "http://h/v1");
        profile.images = Some(false);
        let request = ModelRequest {
            profile: "p".into(),
            cache_key: String::new(),
            max_output_tokens: None,
            system_prompt: String::new(),
            messages: vec![Message::User {
                text: "see".into(),
                images: vec![crate::protocol::Image {
                    source: "pic.png".into(),
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into(),
                }],
            }],
            tools: Default::default(),
        };
        let body = request_body(&profile, &request);
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": "see\n\n[image left out: pic.png]"}])
        );
    }

    #[test]
    fn thinking_is_never_sent_back() {
        let profile = ModelProfile::new(ProviderKind::Openai, "deepseek-reasoner", "http://h/v1");
        let thinking = |text: &str| ContentBlock::Thinking {
            thinking: text.into(),
            signature: None,
        };
        let request = ModelRequest {
            profile: "p".into(),
            cache_key: String::new(),
            max_output_tokens: None,
            system_prompt: String::new(),
            messages: vec![
                Message::user("hi"),
                Message::Assistant {
                    content: vec![
                        thinking("greet back"),
                        ContentBlock::Text {
                            text: "Hello".into(),
                        },
                    ],
                    interrupted: false,
                },
                Message::user("again"),
                // Cut short while it thought: nothing to send.
                Message::Assistant {
                    content: vec![thinking("hm")],
                    interrupted: true,
                },
                Message::user("and again"),
            ],
            tools: Default::default(),
        };
        let body = request_body(&profile, &request);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "Hello"},
                {"role": "user", "content": "again"},
                {"role": "user", "content": "and again"},
            ])
        );
    }

    #[test]
    fn garbage_frames_and_error_frames_are_errors() {
        let mut d = Decoder::default();
        assert!(
            matches!(d.decode("{not json"), Err(FrameError::Garbage(g)) if g.contains("not json"))
        );
        let err = d
            .decode(r#"{"error":{"message":"overloaded","type":"server_error"}}"#)
            .unwrap_err();
        assert_eq!(
            err,
            FrameError::Remote {
                kind: "server_error".into(),
                message: "overloaded".into()
            }
        );
    }

    #[test]
    fn history_maps_to_openai_messages() {
        let mut profile = ModelProfile::new(ProviderKind::Openai, "gpt-x", "http://h/v1");
        profile.max_output_tokens = Some(100);
        let request = ModelRequest {
            profile: "p".into(),
            cache_key: String::new(),
            max_output_tokens: None,
            system_prompt: "sys".into(),
            messages: vec![
                Message::user("hi"),
                Message::Assistant {
                    content: vec![
                        ContentBlock::ToolUse {
                            id: "c1".into(),
                            name: "bash".into(),
                            input: json!({"command": "ls"}),
                        },
                        ContentBlock::ToolUse {
                            id: "c2".into(),
                            name: "bash".into(),
                            input: Value::String("{broken".into()),
                        },
                    ],
                    interrupted: false,
                },
                Message::ToolResult {
                    call_id: "c1".into(),
                    name: "bash".into(),
                    output: "a".into(),
                    is_error: false,
                },
                Message::ToolResult {
                    call_id: "c2".into(),
                    name: "bash".into(),
                    output: "bad json".into(),
                    is_error: true,
                },
            ],
            tools: std::sync::Arc::new(vec![ToolSpec {
                name: "bash".into(),
                description: "run".into(),
                input_schema: std::sync::Arc::new(json!({"type": "object"})),
                origin: ToolOrigin::Builtin,
            }]),
        };
        let body = request_body(&profile, &request);
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "sys"})
        );
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["arguments"],
            r#"{"command":"ls"}"#
        );
        assert_eq!(
            body["messages"][2]["tool_calls"][1]["function"]["arguments"], "{}",
            "garbage arguments are not sent back"
        );
        assert_eq!(body["messages"][3]["role"], "tool");
        assert_eq!(body["tools"][0]["function"]["name"], "bash");
        assert_eq!(body["max_tokens"], 100);
        assert_eq!(body["stream_options"]["include_usage"], true);
    }

    /// A request with every kind of message: a system prompt, a text and an
    /// image query, thinking, text and tool calls (one with garbage
    /// arguments), their results, tools, a cap and a cache key.
    fn every_shape() -> ModelRequest {
        ModelRequest {
            profile: "p".into(),
            cache_key: "0199a7e0-session".into(),
            max_output_tokens: Some(500),
            system_prompt: "sys".into(),
            messages: vec![
                Message::user("hi"),
                Message::User {
                    text: "what is this?".into(),
                    images: vec![crate::protocol::Image {
                        source: "pic.png".into(),
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    }],
                },
                Message::Assistant {
                    content: vec![
                        ContentBlock::Thinking {
                            thinking: "look".into(),
                            signature: None,
                        },
                        ContentBlock::ReasoningItem {
                            id: "rs_1".into(),
                            summary: vec!["look".into()],
                            encrypted_content: "sealed".into(),
                        },
                        ContentBlock::Text {
                            text: "Looking.".into(),
                        },
                        ContentBlock::ToolUse {
                            id: "c1".into(),
                            name: "bash".into(),
                            input: json!({"command": "ls"}),
                        },
                        ContentBlock::ToolUse {
                            id: "c2".into(),
                            name: "bash".into(),
                            input: Value::String("{broken".into()),
                        },
                    ],
                    interrupted: false,
                },
                Message::ToolResult {
                    call_id: "c1".into(),
                    name: "bash".into(),
                    output: "a".into(),
                    is_error: false,
                },
                Message::ToolResult {
                    call_id: "c2".into(),
                    name: "bash".into(),
                    output: "bad json".into(),
                    is_error: true,
                },
                Message::Assistant {
                    content: vec![ContentBlock::ToolUse {
                        id: "c3".into(),
                        name: "bash".into(),
                        input: json!({}),
                    }],
                    interrupted: false,
                },
                Message::ToolResult {
                    call_id: "c3".into(),
                    name: "bash".into(),
                    output: String::new(),
                    is_error: false,
                },
                Message::Assistant {
                    content: vec![ContentBlock::Text {
                        text: "Done.".into(),
                    }],
                    interrupted: false,
                },
                Message::user("thanks"),
            ],
            tools: std::sync::Arc::new(vec![ToolSpec {
                name: "bash".into(),
                description: "run".into(),
                input_schema: std::sync::Arc::new(
                    json!({"type": "object", "properties": {"command": {"type": "string"}}}),
                ),
                origin: ToolOrigin::Builtin,
            }]),
        }
    }

    #[test]
    fn every_body_shape_validates_against_openais_schema() {
        use agentbus_testkit::{OpenAiSchema, schema_violations};
        let mut hosted =
            ModelProfile::new(ProviderKind::Openai, "gpt-4.1", "https://api.openai.com/v1");
        hosted.max_tokens_field = Some("max_completion_tokens".into());
        let mut local = ModelProfile::new(ProviderKind::Openai, "qwen", "http://127.0.0.1:8080/v1");
        local.images = Some(false);
        local.max_output_tokens = Some(300);
        let mut bare = every_shape();
        bare.system_prompt = String::new();
        bare.tools = Default::default();
        bare.max_output_tokens = None;
        for (profile, request) in [
            (&hosted, every_shape()),
            (&local, every_shape()),
            (&hosted, bare),
        ] {
            let body = request_body(profile, &request);
            let violations = schema_violations(OpenAiSchema::CreateChatCompletionRequest, &body);
            assert!(violations.is_empty(), "{violations:#?}\n{body:#}");
        }
        let body = request_body(&hosted, &every_shape());
        assert_eq!(body["max_completion_tokens"], 500);
        assert!(
            !body.to_string().contains("sealed"),
            "reasoning items go to the Responses wire alone: {body}"
        );
    }

    #[test]
    fn the_session_is_the_prompt_cache_key_toward_openai_alone() {
        let request = every_shape();
        let key = |url: &str, cache: Option<crate::settings::CacheSetting>| {
            let mut profile = ModelProfile::new(ProviderKind::Openai, "gpt-4.1", url);
            profile.cache = cache;
            request_body(&profile, &request)
                .get("prompt_cache_key")
                .cloned()
        };
        assert_eq!(
            key("https://api.openai.com/v1", None),
            Some(json!("0199a7e0-session"))
        );
        assert_eq!(
            key(
                "https://API.openai.com",
                Some(crate::settings::CacheSetting::OneHour)
            ),
            Some(json!("0199a7e0-session"))
        );
        assert_eq!(
            key(
                "https://api.openai.com/v1",
                Some(crate::settings::CacheSetting::Off)
            ),
            None,
            "cache = \"off\""
        );
        for other in [
            "http://127.0.0.1:8080/v1",
            "https://integrate.api.nvidia.com/v1",
            "https://api.openai.com.evil.example/v1",
            "https://openrouter.ai/api/v1",
        ] {
            assert_eq!(key(other, None), None, "{other}");
        }
        let mut keyless = request.clone();
        keyless.cache_key = String::new();
        let profile =
            ModelProfile::new(ProviderKind::Openai, "gpt-4.1", "https://api.openai.com/v1");
        assert!(
            request_body(&profile, &keyless)
                .get("prompt_cache_key")
                .is_none()
        );
    }

    #[test]
    fn a_model_served_on_the_responses_api_alone_is_told_to_switch_wire() {
        let profile = ModelProfile::new(
            ProviderKind::Openai,
            "gpt-5.1-codex",
            "https://api.openai.com/v1",
        );
        let advice = responses_only_hint(&profile, "codex");
        let refused = ProviderError::Status {
            url: "https://api.openai.com/v1/chat/completions".into(),
            status: 404,
            message: "This model is only supported in v1/responses and not in v1/chat/completions."
                .into(),
            hint: Some("check base_url".into()),
            retry_after: None,
        };
        let shown = with_responses_hint(refused, &advice).to_string();
        assert!(
            shown.contains("only supported in v1/responses")
                && shown.contains(
                    "(model `gpt-5.1-codex` is served on OpenAI's Responses API only: set `provider = \"openai-responses\"` in model profile `codex`)"
                ),
            "{shown}"
        );
        let other = ProviderError::Status {
            url: "u".into(),
            status: 404,
            message: "no such model".into(),
            hint: Some("check base_url".into()),
            retry_after: None,
        };
        assert!(
            with_responses_hint(other, &advice)
                .to_string()
                .contains("(check base_url)")
        );
    }
}
