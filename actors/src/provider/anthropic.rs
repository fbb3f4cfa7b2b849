//! Anthropic Messages with SSE streaming — Anthropic's API, and the
//! `/v1/messages` endpoint of servers that mimic it (llama.cpp's among them).
//!
//! This module translates, in both directions, and nothing else:
//! - [`request_body`]: our [`ModelRequest`] to a `/v1/messages` body: the
//!   system prompt as a text block of `system`, tool results as
//!   `tool_result` blocks of a user message, consecutive same-role messages
//!   merged as the API requires; thinking and prompt caching as below;
//! - [`Decoder`]: `message_start`, `content_block_start/delta/stop` by index
//!   (`input_json_delta` pieces are joined by the session core and parsed
//!   once the block is complete; `thinking_delta` and `signature_delta`
//!   build a thinking block, `redacted_thinking` arrives whole),
//!   `message_delta` (stop reason; usage is cumulative, cache reads and
//!   writes included), `message_stop`; `ping` and unknown events ignored; a
//!   mid-stream `error` event reported so it is retried like an HTTP 529;
//! - [`attempt`]: one HTTP call that feeds the decoder.
//!
//! **Thinking** is the profile's [`ModelProfile::thinking`] (its default
//! follows the model family, see [`crate::settings::thinking`]): adaptive
//! is `"thinking": {"type": "adaptive"}`, a budget is `{"type": "enabled",
//! "budget_tokens": N}`, and the profile's `effort` goes in
//! `"output_config": {"effort": ...}` whenever it is set. With thinking on,
//! the signed thinking blocks of earlier answers go back in place, as a
//! tool round needs them (off, no thinking of any kind is sent). A budget
//! has two more rules: a request capped below it (a short summary) goes
//! without thinking, and so does one continuing a tool round whose answer
//! did not start with signed thinking (Anthropic refuses it); adaptive
//! thinking has neither (the model may skip thinking, so the API does not
//! demand it).
//!
//! **Prompt caching** (the profile's `cache`, on unless `"off"`): Anthropic
//! caches a prefix of the prompt — tools, then system, then messages — up
//! to a block marked `"cache_control": {"type": "ephemeral"}` (with `"ttl":
//! "1h"` for `cache = "1h"`), and a later request hits it when one of its
//! own marks, or a block up to 20 blocks before one, ends at the same
//! prefix. At most four marks; this module places them so that every turn
//! hits what the one before wrote:
//! 1. the last tool definition, and 2. the system prompt — the stable
//!    prefix, which stays cached when the conversation changes under it
//!    (a compaction) as long as the tools and the prompt do not;
//! 3. the last block of the newest message: the whole request is written,
//!    so the next request — the same prefix plus an answer and a tool
//!    result or a question — finds it within its lookback;
//! 4. the last block of the message the previous request ended with (the
//!    one before the newest assistant answer): a tool round that adds more
//!    than 20 blocks (many parallel calls and their results) would leave
//!    mark 3's lookback short of the previous write; this mark hits it
//!    exactly. When fewer blocks were added it is redundant but free.
//!
//! Thinking blocks take no mark (the API refuses one there); marks fall
//! back to the nearest earlier block that does. What keeps the prefix the
//! same from one request to the next is the session's business: the tools
//! in a deterministic order, a system prompt that changes only when the
//! prompt really does (see ARCHITECTURE.md, "Prompt caching").

use super::ModelStream;
use super::fields;
use super::http::{self, Decoded, FrameDecoder, FrameError, status_hint};
use crate::model::{ModelEvent, ModelRequest};
use crate::protocol::{BlockKind, ContentBlock, Message, Usage};
use crate::settings::{CacheSetting, ModelProfile, Thinking};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The `anthropic-version` header sent with every request.
pub const API_VERSION: &str = "2023-06-01";

/// Output cap when the profile sets none (the API requires one).
pub use crate::settings::ANTHROPIC_DEFAULT_MAX_TOKENS as DEFAULT_MAX_TOKENS;

/// The JSON body of a streaming `/v1/messages` request.
pub fn request_body(profile: &ModelProfile, request: &ModelRequest) -> Value {
    let max_tokens = request
        .output_cap(Some(
            profile.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        ))
        .unwrap_or(DEFAULT_MAX_TOKENS);
    let mut thinking = match profile.thinking() {
        // A request capped below the thinking budget (a short summary) goes
        // without thinking: Anthropic wants `max_tokens` above the budget.
        Thinking::Budget(budget) if budget >= max_tokens => Thinking::Off,
        other => other,
    };
    let history = super::images_for(profile, &request.messages);
    let mut wire = wire_messages(&history, thinking != Thinking::Off);
    if matches!(thinking, Thinking::Budget(_)) && !tool_round_has_its_thinking(&wire.messages) {
        // Anthropic refuses a budget when the answer being continued used a
        // tool without thinking first (the profile was switched to in the
        // middle of a tool round, or its thinking was never signed): this
        // one request goes without, the next turn thinks again. Adaptive
        // thinking has no such rule.
        tracing::debug!(
            "thinking left out of a request: the tool round it continues has no signed thinking"
        );
        thinking = Thinking::Off;
        wire = wire_messages(&history, false);
    }
    // A request nothing will read back (a summary) writes nothing either:
    // a cache write costs more than plain input.
    let cache = cache_control(profile.cache()).filter(|_| !request.cache_key.is_empty());
    if let Some(mark) = &cache {
        wire.mark_for_cache(mark);
    }
    let mut body = json!({
        "model": profile.model,
        "max_tokens": max_tokens,
        "messages": wire.messages,
        "stream": true,
    });
    match thinking {
        Thinking::Adaptive => body["thinking"] = json!({"type": "adaptive"}),
        Thinking::Budget(budget) => {
            body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
        }
        Thinking::Off => {}
    }
    if let Some(effort) = profile.effort {
        body["output_config"] = json!({"effort": effort.to_string()});
    }
    if !request.system_prompt.is_empty() {
        let mut block = json!({"type": "text", "text": request.system_prompt});
        if let Some(mark) = &cache {
            block["cache_control"] = mark.clone();
        }
        body["system"] = json!([block]);
    }
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        if let (Some(mark), Some(last)) = (&cache, tools.last_mut()) {
            last["cache_control"] = mark.clone();
        }
        body["tools"] = Value::Array(tools);
    }
    body
}

/// The `cache_control` value of a profile's caching; `None` when off.
fn cache_control(cache: CacheSetting) -> Option<Value> {
    match cache {
        CacheSetting::FiveMinutes => Some(json!({"type": "ephemeral"})),
        CacheSetting::OneHour => Some(json!({"type": "ephemeral", "ttl": "1h"})),
        CacheSetting::Off => None,
    }
}

/// Whether the last assistant message, when it used a tool, starts with its
/// thinking: what Anthropic demands of a request that enables thinking
/// with a budget ("a final `assistant` message must start with a thinking
/// block").
fn tool_round_has_its_thinking(messages: &[Value]) -> bool {
    let Some(last) = messages.iter().rev().find(|m| m["role"] == "assistant") else {
        return true;
    };
    let blocks = last["content"].as_array().map_or(&[][..], Vec::as_slice);
    let used_a_tool = blocks.iter().any(|b| b["type"] == "tool_use");
    let thought_first = blocks
        .first()
        .is_some_and(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking");
    !used_a_tool || thought_first
}

/// The messages of a request, and where the previous request ended.
struct WireMessages {
    messages: Vec<Value>,
    /// How many blocks (of all messages, in order) the previous request
    /// carried: those before the newest assistant answer. `None` before the
    /// first answer.
    previous_blocks: Option<usize>,
}

impl WireMessages {
    /// Mark the last block of the newest message and the last block of the
    /// previous request's messages (module doc, marks 3 and 4).
    fn mark_for_cache(&mut self, mark: &Value) {
        let total: usize = self.messages.iter().map(|m| blocks_of(m).len()).sum();
        let mut marked = None;
        for end in [Some(total), self.previous_blocks] {
            let Some(at) = end.and_then(|end| self.markable_at_or_before(end)) else {
                continue;
            };
            if marked == Some(at) {
                continue;
            }
            if let Some(block) = self.block_mut(at) {
                block["cache_control"] = mark.clone();
                marked = Some(at);
            }
        }
    }

    /// The last block among the first `end` that may carry a mark.
    fn markable_at_or_before(&self, end: usize) -> Option<usize> {
        let flat: Vec<&Value> = self.messages.iter().flat_map(blocks_of).collect();
        (0..end.min(flat.len())).rev().find(|at| {
            let block = flat[*at];
            match block["type"].as_str() {
                Some("thinking" | "redacted_thinking") | None => false,
                Some("text") => block["text"].as_str().is_some_and(|t| !t.is_empty()),
                Some(_) => true,
            }
        })
    }

    /// Block `at`, counting the blocks of all messages in order.
    fn block_mut(&mut self, mut at: usize) -> Option<&mut Value> {
        for message in &mut self.messages {
            let blocks = message["content"].as_array_mut()?;
            if at < blocks.len() {
                return blocks.get_mut(at);
            }
            at -= blocks.len();
        }
        None
    }
}

/// The content blocks of a wire message.
fn blocks_of(message: &Value) -> &[Value] {
    message["content"].as_array().map_or(&[], Vec::as_slice)
}

/// History to Anthropic messages: roles alternate, tool results ride in user
/// messages ahead of any text, and empty messages are left out. Thinking
/// goes back only when `thinking` (the request enables it), and then only
/// signed thinking and redacted thinking, exactly as they came.
fn wire_messages(history: &[Message], thinking: bool) -> WireMessages {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut blocks_so_far = 0;
    let mut previous_blocks = None;
    for message in history {
        let (role, blocks) = match message {
            Message::User { text, images } => {
                let text = if text.trim().is_empty() {
                    "(empty message)"
                } else {
                    text
                };
                // Images first, as Anthropic advises, then the text.
                let mut blocks: Vec<Value> = images
                    .iter()
                    .map(|image| {
                        json!({"type": "image", "source": {
                            "type": "base64",
                            "media_type": image.media_type,
                            "data": image.data,
                        }})
                    })
                    .collect();
                blocks.push(json!({"type": "text", "text": text}));
                ("user", blocks)
            }
            Message::Assistant { content, .. } => (
                "assistant",
                content
                    .iter()
                    .filter_map(|block| wire_block(block, thinking))
                    .collect(),
            ),
            Message::ToolResult {
                call_id,
                output,
                is_error,
                ..
            } => {
                let output = if output.is_empty() {
                    "(no output)"
                } else {
                    output
                };
                let block = json!({"type": "tool_result", "tool_use_id": wire_id(call_id),
                                   "content": output, "is_error": is_error});
                ("user", vec![block])
            }
        };
        if blocks.is_empty() {
            continue;
        }
        if role == "assistant" {
            // The previous request ended where this answer begins.
            previous_blocks = Some(blocks_so_far);
        }
        blocks_so_far += blocks.len();
        match out.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    WireMessages {
        messages: out
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect(),
        previous_blocks: previous_blocks.filter(|blocks| *blocks > 0),
    }
}

/// One block of an assistant message on the wire; `None` for thinking that
/// does not go back.
fn wire_block(block: &ContentBlock, thinking: bool) -> Option<Value> {
    Some(match block {
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::Thinking {
            thinking: text,
            signature: Some(signature),
        } if thinking => json!({"type": "thinking", "thinking": text, "signature": signature}),
        ContentBlock::RedactedThinking { data } if thinking => {
            json!({"type": "redacted_thinking", "data": data})
        }
        // OpenAI's reasoning items go back to the Responses wire alone.
        ContentBlock::Thinking { .. }
        | ContentBlock::RedactedThinking { .. }
        | ContentBlock::ReasoningItem { .. } => return None,
        ContentBlock::ToolUse { id, name, input } => {
            // Arguments that were not an object (model garbage, or cut short
            // by an interrupt) go back as {}; the error result quotes them.
            let input = if input.is_object() {
                input.clone()
            } else {
                json!({})
            };
            json!({"type": "tool_use", "id": wire_id(id), "name": name, "input": input})
        }
    })
}

/// Tool-use ids must match `^[a-zA-Z0-9_-]+$`; ids made elsewhere (another
/// provider's, after `/model`) are mapped the same way on both sides.
fn wire_id(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Turns Anthropic stream events into [`ModelEvent`]s. Block indexes are
/// Anthropic's own; blocks we do not use (server tools, ...) are skipped.
#[derive(Debug, Default)]
pub struct Decoder {
    /// Indexes of the blocks we passed on.
    open: BTreeSet<usize>,
    stop_reason: Option<String>,
}

impl FrameDecoder for Decoder {
    const CUT_SHORT: &'static str = "the stream ended before message_stop";

    /// Decode the data of one frame (its `type` field names the event).
    fn decode(&mut self, data: &str) -> Result<Decoded, FrameError> {
        let event: Value = serde_json::from_str(data)
            .map_err(|e| FrameError::Garbage(format!("{e} in `{}`", http::short(data))))?;
        self.event(&event)
            .map_err(|what| FrameError::Garbage(format!("{what} in `{}`", http::short(data))))?
    }

    /// Close open blocks and report the finish.
    fn finish(&mut self) -> Vec<ModelEvent> {
        let mut events: Vec<ModelEvent> = std::mem::take(&mut self.open)
            .into_iter()
            .map(|index| ModelEvent::BlockStop { index })
            .collect();
        events.push(ModelEvent::Finished {
            finish_reason: self
                .stop_reason
                .clone()
                .unwrap_or_else(|| "end_turn".into()),
        });
        events
    }

    /// Whether a stop reason arrived (the answer is complete even if the
    /// server never sends `message_stop`).
    fn saw_finish(&self) -> bool {
        self.stop_reason.is_some()
    }
}

impl Decoder {
    /// One stream event. The outer error is a frame of the wrong shape
    /// (naming the field); the inner result is the decoded frame or the
    /// error the server reported in it.
    fn event(&mut self, event: &Value) -> Result<Result<Decoded, FrameError>, String> {
        let event = fields::object(event, "the event")?;
        let kind = fields::text(event, "type", "")?
            .ok_or("the event has no `type`; expected e.g. \"content_block_delta\"")?;
        let index = || -> Result<usize, String> {
            let index = fields::whole(event, "index", "")?
                .ok_or_else(|| format!("{kind} has no `index`"))?;
            usize::try_from(index).map_err(|_| format!("index {index} is out of range"))
        };
        let mut events = Vec::new();
        match kind {
            "message_start" => {
                let message = fields::table(event, "message", "")?;
                if let Some(usage) = message
                    .map(|m| fields::table(m, "usage", "message."))
                    .transpose()?
                    .flatten()
                {
                    events.push(ModelEvent::Usage(parse_usage(usage, "message.usage.")?));
                }
            }
            "content_block_start" => {
                let index = index()?;
                let block = fields::table(event, "content_block", "")?
                    .ok_or("content_block_start has no `content_block`")?;
                const BLOCK: &str = "content_block.";
                match fields::text(block, "type", BLOCK)? {
                    Some("text") => {
                        self.open.insert(index);
                        events.push(ModelEvent::BlockStart {
                            index,
                            block: BlockKind::Text,
                        });
                        if let Some(text) =
                            fields::text(block, "text", BLOCK)?.filter(|t| !t.is_empty())
                        {
                            events.push(ModelEvent::TextDelta {
                                index,
                                text: text.to_string(),
                            });
                        }
                    }
                    Some("tool_use") => {
                        let id = fields::text(block, "id", BLOCK)?.unwrap_or_default();
                        let name = fields::text(block, "name", BLOCK)?.unwrap_or_default();
                        let input = fields::table(block, "input", BLOCK)?;
                        self.open.insert(index);
                        events.push(ModelEvent::BlockStart {
                            index,
                            block: BlockKind::ToolUse {
                                id: id.to_string(),
                                name: name.to_string(),
                            },
                        });
                        if let Some(input) = input.filter(|i| !i.is_empty()) {
                            events.push(ModelEvent::ToolInputDelta {
                                index,
                                partial_json: Value::Object(input.clone()).to_string(),
                            });
                        }
                    }
                    Some("thinking") => {
                        self.open.insert(index);
                        events.push(ModelEvent::BlockStart {
                            index,
                            block: BlockKind::Thinking,
                        });
                        if let Some(text) =
                            fields::text(block, "thinking", BLOCK)?.filter(|t| !t.is_empty())
                        {
                            events.push(ModelEvent::ThinkingDelta {
                                index,
                                text: text.to_string(),
                            });
                        }
                        if let Some(signature) =
                            fields::text(block, "signature", BLOCK)?.filter(|s| !s.is_empty())
                        {
                            events.push(ModelEvent::ThinkingSignature {
                                index,
                                signature: signature.to_string(),
                            });
                        }
                    }
                    Some("redacted_thinking") => {
                        // Whole at its start, no deltas: never opened.
                        let data = fields::text(block, "data", BLOCK)?
                            .ok_or("a redacted_thinking block has no `data`")?;
                        events.push(ModelEvent::RedactedThinking {
                            index,
                            data: data.to_string(),
                        });
                    }
                    Some(_) => {} // server tools, ...: not passed on
                    None => return Err("content_block has no `type`".into()),
                }
            }
            "content_block_delta" => {
                let index = index()?;
                let delta = fields::table(event, "delta", "")?
                    .ok_or("content_block_delta has no `delta`")?;
                if self.open.contains(&index) {
                    match fields::text(delta, "type", "delta.")? {
                        Some("text_delta") => events.push(ModelEvent::TextDelta {
                            index,
                            text: fields::text(delta, "text", "delta.")?
                                .unwrap_or_default()
                                .to_string(),
                        }),
                        Some("input_json_delta") => events.push(ModelEvent::ToolInputDelta {
                            index,
                            partial_json: fields::text(delta, "partial_json", "delta.")?
                                .unwrap_or_default()
                                .to_string(),
                        }),
                        Some("thinking_delta") => events.push(ModelEvent::ThinkingDelta {
                            index,
                            text: fields::text(delta, "thinking", "delta.")?
                                .unwrap_or_default()
                                .to_string(),
                        }),
                        Some("signature_delta") => events.push(ModelEvent::ThinkingSignature {
                            index,
                            signature: fields::text(delta, "signature", "delta.")?
                                .unwrap_or_default()
                                .to_string(),
                        }),
                        Some(_) => {}
                        None => return Err("delta has no `type`".into()),
                    }
                }
            }
            "content_block_stop" => {
                let index = index()?;
                if self.open.remove(&index) {
                    events.push(ModelEvent::BlockStop { index });
                }
            }
            "message_delta" => {
                if let Some(delta) = fields::table(event, "delta", "")?
                    && let Some(reason) = fields::text(delta, "stop_reason", "delta.")?
                {
                    self.stop_reason = Some(reason.to_string());
                }
                if let Some(usage) = fields::table(event, "usage", "")? {
                    events.push(ModelEvent::Usage(parse_usage(usage, "usage.")?));
                }
            }
            "message_stop" => {
                return Ok(Ok(Decoded {
                    events: self.finish(),
                    done: true,
                }));
            }
            "error" => {
                let error = event.get("error");
                let text = |key: &str| error.and_then(|e| e.get(key)).and_then(Value::as_str);
                return Ok(Err(FrameError::Remote {
                    kind: text("type")
                        .filter(|k| !k.is_empty())
                        .unwrap_or("error")
                        .to_string(),
                    message: text("message")
                        .map(String::from)
                        .or_else(|| error.map(Value::to_string))
                        .unwrap_or_default(),
                }));
            }
            _ => {} // ping, and event types added later
        }
        Ok(Ok(Decoded {
            events,
            done: false,
        }))
    }
}

fn parse_usage(usage: &Map<String, Value>, path: &str) -> Result<Usage, String> {
    let n = |key: &str| fields::whole(usage, key, path).map(Option::unwrap_or_default);
    Ok(Usage {
        input_tokens: n("input_tokens")?,
        output_tokens: n("output_tokens")?,
        cache_read_input_tokens: n("cache_read_input_tokens")?,
        cache_creation_input_tokens: n("cache_creation_input_tokens")?,
    })
}

/// The endpoint for a base URL such as `https://api.anthropic.com`.
pub fn endpoint(base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

/// One call to the model, streaming its answer (no retries here).
pub fn attempt(http: reqwest::Client, profile: ModelProfile, request: ModelRequest) -> ModelStream {
    let url = endpoint(&profile.base_url);
    let body = request_body(&profile, &request);
    let built = http::post(&http, &url, &profile, &request.profile, &body, |b, key| {
        let b = b.header("anthropic-version", API_VERSION);
        match key {
            Some(key) => b.header("x-api-key", key),
            None => b,
        }
    });
    let idle = profile.idle_timeout();
    http::answer::<Decoder>(built, url, idle, move |status| {
        status_hint(status, &profile, &request.profile)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ToolOrigin, ToolSpec};
    use crate::session::core::partial::PartialMessage;
    use crate::settings::{Effort, ProviderKind};

    /// Replay a fixture through the real SSE parser in chunks of `size`
    /// bytes, then through the decoder.
    async fn replay(name: &str, size: usize) -> Result<Vec<ModelEvent>, FrameError> {
        super::super::replay_tests::replay::<Decoder>("anthropic", name, size).await
    }

    fn assemble(events: &[ModelEvent]) -> PartialMessage {
        let mut p = PartialMessage::default();
        for e in events {
            p.apply(e);
        }
        p
    }

    #[tokio::test]
    async fn text_and_tool_use_decode_identically_at_every_chunk_size() {
        let whole = replay("tool_use.sse", 1 << 20).await.unwrap();
        for size in [1, 2, 3, 7, 50] {
            assert_eq!(
                replay("tool_use.sse", size).await.unwrap(),
                whole,
                "chunk size {size}"
            );
        }
        let m = assemble(&whole).finish(|i| i.to_string());
        assert_eq!(m.text(), "Okay, let me check ☃ the weather.");
        assert_eq!(m.calls.len(), 2);
        assert_eq!(m.calls[0].id, "toolu_01A");
        assert_eq!(
            m.calls[0].input,
            Ok(json!({"location": "San Francisco, CA", "unit": "°F"}))
        );
        assert_eq!(m.calls[1].name, "list_dir");
        assert_eq!(
            m.calls[1].input,
            Ok(json!({})),
            "an empty tool input is {{}}"
        );
        assert!(
            matches!(whole.last(), Some(ModelEvent::Finished { finish_reason }) if finish_reason == "tool_use")
        );
        // Usage: input from message_start, cumulative output from message_delta.
        let mut usage = Usage::default();
        for e in &whole {
            if let ModelEvent::Usage(u) = e {
                usage.overwrite_with(*u);
            }
        }
        assert_eq!(usage.input_tokens, 472);
        assert_eq!(usage.output_tokens, 89);
        assert_eq!(usage.cache_read_input_tokens, 100);
    }

    #[tokio::test]
    async fn cache_reads_and_writes_come_through_from_either_usage_event() {
        // Today's API repeats the input figures, cumulatively, in
        // `message_delta`; either way the last word is the same.
        let whole = replay("cache_hit.sse", 1 << 20).await.unwrap();
        for size in [1, 5, 64] {
            assert_eq!(replay("cache_hit.sse", size).await.unwrap(), whole);
        }
        let mut usage = Usage::default();
        let mut reports = 0;
        for e in &whole {
            if let ModelEvent::Usage(u) = e {
                usage.overwrite_with(*u);
                reports += 1;
            }
        }
        assert_eq!(reports, 2);
        assert_eq!(
            usage,
            Usage {
                input_tokens: 3,
                output_tokens: 6,
                cache_read_input_tokens: 7366,
                cache_creation_input_tokens: 646,
            }
        );
    }

    #[tokio::test]
    async fn thinking_streams_before_the_text_and_keeps_its_signature() {
        let whole = replay("thinking_then_text.sse", 1 << 20).await.unwrap();
        for size in [1, 2, 16, 50] {
            assert_eq!(
                replay("thinking_then_text.sse", size).await.unwrap(),
                whole,
                "chunk size {size}"
            );
        }
        assert_eq!(
            whole[..5],
            [
                ModelEvent::Usage(Usage {
                    input_tokens: 12,
                    output_tokens: 1,
                    ..Default::default()
                }),
                ModelEvent::BlockStart {
                    index: 0,
                    block: BlockKind::Thinking
                },
                ModelEvent::ThinkingDelta {
                    index: 0,
                    text: "2 + 2 is 4.".into()
                },
                ModelEvent::ThinkingSignature {
                    index: 0,
                    signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3h".into()
                },
                ModelEvent::BlockStop { index: 0 },
            ]
        );
        let m = assemble(&whole).finish(|i| i.to_string());
        assert_eq!(m.text(), "The answer is 4.", "thinking is not the answer");
        assert_eq!(
            m.content[0],
            ContentBlock::Thinking {
                thinking: "2 + 2 is 4.".into(),
                signature: Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3h".into()),
            }
        );
    }

    #[tokio::test]
    async fn redacted_thinking_is_kept_whole_and_never_streamed() {
        let whole = replay("redacted_thinking_then_tool_use.sse", 1 << 20)
            .await
            .unwrap();
        for size in [1, 3, 64] {
            assert_eq!(
                replay("redacted_thinking_then_tool_use.sse", size)
                    .await
                    .unwrap(),
                whole,
                "chunk size {size}"
            );
        }
        assert!(
            !whole.iter().any(|e| matches!(
                e,
                ModelEvent::BlockStart { index: 1, .. } | ModelEvent::BlockStop { index: 1 }
            )),
            "the redacted block opens and closes nothing a front end sees: {whole:#?}"
        );
        let m = assemble(&whole).finish(|i| i.to_string());
        assert_eq!(
            m.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "The file may be large; list the folder first.".into(),
                    signature: Some("ErUBCkYIBhgCIkB0ThinkingSig==".into()),
                },
                ContentBlock::RedactedThinking {
                    data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj".into()
                },
                ContentBlock::ToolUse {
                    id: "toolu_01T".into(),
                    name: "list_dir".into(),
                    input: json!({"path": "."}),
                },
            ]
        );
    }

    /// A tool round of a model that thought: the question, its answer
    /// (thinking, redacted thinking, a tool call) and the call's result.
    fn tool_round(signature: Option<&str>) -> ModelRequest {
        ModelRequest {
            profile: "p".into(),
            cache_key: String::new(),
            max_output_tokens: None,
            system_prompt: String::new(),
            messages: vec![
                Message::user("list it"),
                Message::Assistant {
                    content: vec![
                        ContentBlock::Thinking {
                            thinking: "list the folder".into(),
                            signature: signature.map(String::from),
                        },
                        ContentBlock::RedactedThinking {
                            data: "opaque".into(),
                        },
                        ContentBlock::ToolUse {
                            id: "toolu_1".into(),
                            name: "list_dir".into(),
                            input: json!({}),
                        },
                    ],
                    interrupted: false,
                },
                Message::ToolResult {
                    call_id: "toolu_1".into(),
                    name: "list_dir".into(),
                    output: "a.txt".into(),
                    is_error: false,
                },
            ],
            tools: Default::default(),
        }
    }

    fn thinking_profile(budget: Option<u32>) -> ModelProfile {
        let mut profile = ModelProfile::new(ProviderKind::Anthropic, "claude-x", "http://h");
        profile.thinking_budget = budget;
        profile
    }

    #[test]
    fn with_thinking_enabled_signed_thinking_goes_back_in_place() {
        let body = request_body(&thinking_profile(Some(2048)), &tool_round(Some("sig")));
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "thinking", "thinking": "list the folder", "signature": "sig"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}},
            ])
        );
    }

    #[test]
    fn without_thinking_enabled_no_thinking_is_sent() {
        let body = request_body(&thinking_profile(None), &tool_round(Some("sig")));
        assert!(body.get("thinking").is_none(), "{body}");
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}])
        );
    }

    #[test]
    fn a_tool_round_without_signed_thinking_is_continued_without_thinking() {
        // Anthropic would refuse thinking here: the answer being continued
        // used a tool and does not start with (signed) thinking.
        let mut request = tool_round(None);
        if let Message::Assistant { content, .. } = &mut request.messages[1] {
            content.remove(1);
        }
        let body = request_body(&thinking_profile(Some(2048)), &request);
        assert!(body.get("thinking").is_none(), "{body}");
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}])
        );
        // Once that round is over (a plain answer followed), the next
        // request thinks again.
        request.messages.push(Message::Assistant {
            content: vec![ContentBlock::Text {
                text: "a.txt".into(),
            }],
            interrupted: false,
        });
        request.messages.push(Message::user("thanks"));
        let body = request_body(&thinking_profile(Some(2048)), &request);
        assert_eq!(body["thinking"]["budget_tokens"], 2048);
    }

    /// A profile for `model` on Anthropic's API, caching as it defaults.
    fn claude(model: &str) -> ModelProfile {
        ModelProfile::new(ProviderKind::Anthropic, model, "https://api.anthropic.com")
    }

    #[test]
    fn adaptive_thinking_and_effort_for_the_families_that_take_them() {
        let mut opus = claude("claude-opus-4-7");
        let body = request_body(&opus, &tool_round(Some("sig")));
        assert_eq!(body["thinking"], json!({"type": "adaptive"}));
        assert!(body.get("output_config").is_none(), "no effort, none sent");
        assert_eq!(
            body["messages"][1]["content"][0]["signature"], "sig",
            "signed thinking goes back with adaptive thinking too"
        );
        opus.effort = Some(Effort::Max);
        let body = request_body(&opus, &tool_round(Some("sig")));
        assert_eq!(body["output_config"], json!({"effort": "max"}));
        for (model, default) in [
            ("claude-opus-4-6", json!({"type": "adaptive"})),
            ("claude-sonnet-4-6-20260101", json!({"type": "adaptive"})),
            ("claude-opus-4-7@bedrock", json!({"type": "adaptive"})),
            ("claude-sonnet-4-5", Value::Null),
            ("local", Value::Null),
        ] {
            let body = request_body(&claude(model), &tool_round(Some("sig")));
            assert_eq!(body["thinking"], default, "{model}");
        }
        let mut sonnet = claude("claude-sonnet-4-5");
        sonnet.thinking = Some(Thinking::Budget(2048));
        let body = request_body(&sonnet, &tool_round(Some("sig")));
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        let mut quiet = claude("claude-opus-4-7");
        quiet.thinking = Some(Thinking::Off);
        quiet.effort = Some(Effort::Low);
        let body = request_body(&quiet, &tool_round(Some("sig")));
        assert!(body.get("thinking").is_none(), "{body}");
        assert_eq!(
            body["output_config"],
            json!({"effort": "low"}),
            "effort also governs answers without thinking"
        );
    }

    #[test]
    fn adaptive_thinking_continues_a_tool_round_that_did_not_think() {
        // Unlike a budget, adaptive thinking does not demand that the answer
        // being continued started with thinking: the model may skip it.
        let mut request = tool_round(None);
        if let Message::Assistant { content, .. } = &mut request.messages[1] {
            content.remove(1);
        }
        let body = request_body(&claude("claude-opus-4-7"), &request);
        assert_eq!(body["thinking"], json!({"type": "adaptive"}));
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {}}])
        );
    }

    /// The most blocks one request may mark with `cache_control`.
    const MAX_CACHE_BREAKPOINTS: usize = 4;

    /// Where a body carries `cache_control`: each mark's JSON pointer.
    fn marks(body: &Value) -> Vec<String> {
        fn walk(value: &Value, at: String, found: &mut Vec<String>) {
            match value {
                Value::Object(map) => {
                    if map.contains_key("cache_control") {
                        found.push(at.clone());
                    }
                    for (key, value) in map {
                        walk(value, format!("{at}/{key}"), found);
                    }
                }
                Value::Array(items) => {
                    for (i, value) in items.iter().enumerate() {
                        walk(value, format!("{at}/{i}"), found);
                    }
                }
                _ => {}
            }
        }
        let mut found = Vec::new();
        walk(body, String::new(), &mut found);
        found.sort();
        found
    }

    fn tool(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("the {name} tool"),
            input_schema: std::sync::Arc::new(json!({"type": "object"})),
            origin: ToolOrigin::Builtin,
        }
    }

    /// A conversation: a question, then `rounds` tool rounds of `calls`
    /// parallel calls each, then a plain answer and a new question.
    fn conversation(rounds: usize, calls: usize) -> ModelRequest {
        let mut messages = vec![Message::user("look around")];
        for round in 0..rounds {
            messages.push(Message::Assistant {
                content: (0..calls)
                    .map(|call| ContentBlock::ToolUse {
                        id: format!("toolu_{round}_{call}"),
                        name: "list_dir".into(),
                        input: json!({"path": format!("dir{call}")}),
                    })
                    .collect(),
                interrupted: false,
            });
            messages.extend((0..calls).map(|call| Message::ToolResult {
                call_id: format!("toolu_{round}_{call}"),
                name: "list_dir".into(),
                output: format!("files of dir{call}"),
                is_error: false,
            }));
        }
        ModelRequest {
            profile: "p".into(),
            cache_key: "session".into(),
            max_output_tokens: None,
            system_prompt: "You are agentbus.".into(),
            messages,
            tools: std::sync::Arc::new(vec![tool("read_file"), tool("list_dir")]),
        }
    }

    #[test]
    fn cache_marks_go_on_the_tools_the_system_prompt_and_the_newest_messages() {
        let body = request_body(&claude("claude-sonnet-4-6"), &conversation(1, 2));
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(
            marks(&body),
            [
                // The previous request ended with the question...
                "/messages/0/content/0",
                // ...this one with the second tool result.
                "/messages/2/content/1",
                "/system/0",
                "/tools/1",
            ]
        );
        assert_eq!(body["tools"][1]["cache_control"], ephemeral);
        assert!(body["tools"][0].get("cache_control").is_none());
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "You are agentbus.", "cache_control": ephemeral}])
        );
        assert_eq!(
            body["messages"][2]["content"][1]["cache_control"],
            ephemeral
        );
    }

    #[test]
    fn a_tool_round_longer_than_the_lookback_is_bridged_by_the_previous_requests_mark() {
        // 12 calls and 12 results: 24 blocks since the previous request's
        // last block, more than the 20 a mark looks back.
        let request = conversation(2, 12);
        let body = request_body(&claude("claude-opus-4-7"), &request);
        let messages = body["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 5);
        assert_eq!(
            marks(&body),
            [
                "/messages/2/content/11", // the end of the previous request
                "/messages/4/content/11", // the newest block
                "/system/0",
                "/tools/1",
            ]
        );
    }

    #[test]
    fn never_more_than_four_marks_and_none_with_caching_off() {
        let shapes = [
            conversation(0, 0),
            conversation(1, 1),
            conversation(3, 30),
            ModelRequest {
                tools: Default::default(),
                system_prompt: String::new(),
                ..conversation(2, 3)
            },
        ];
        for request in &shapes {
            for cache in [CacheSetting::FiveMinutes, CacheSetting::OneHour] {
                let mut profile = claude("claude-opus-4-7");
                profile.cache = Some(cache);
                let body = request_body(&profile, request);
                let found = marks(&body);
                assert!(
                    !found.is_empty() && found.len() <= MAX_CACHE_BREAKPOINTS,
                    "{found:?}"
                );
                let text = body.to_string();
                assert_eq!(
                    text.matches(r#""ttl":"1h""#).count(),
                    if cache == CacheSetting::OneHour {
                        found.len()
                    } else {
                        0
                    },
                    "{text}"
                );
            }
            let mut off = claude("claude-opus-4-7");
            off.cache = Some(CacheSetting::Off);
            assert_eq!(marks(&request_body(&off, request)), Vec::<String>::new());
        }
        // The first request: no previous request to mark.
        let first = request_body(&claude("claude-opus-4-7"), &conversation(0, 0));
        assert_eq!(
            marks(&first),
            ["/messages/0/content/0", "/system/0", "/tools/1"]
        );
    }

    #[test]
    fn a_request_without_a_cache_key_marks_nothing() {
        // A compaction's summary: nothing will read it back.
        let mut request = conversation(2, 0);
        request.cache_key = String::new();
        let body = request_body(&claude("claude-opus-4-7"), &request);
        assert!(marks(&body).is_empty(), "{:?}", marks(&body));
    }

    #[test]
    fn thinking_blocks_take_no_mark() {
        // A request ending with an assistant answer that only thought (an
        // interrupted reply): the mark goes on the block before it.
        let mut request = tool_round(Some("sig"));
        request.cache_key = "session".into();
        request.messages.truncate(2);
        if let Message::Assistant { content, .. } = &mut request.messages[1] {
            content.truncate(2);
        }
        let body = request_body(&claude("claude-opus-4-7"), &request);
        assert_eq!(marks(&body), ["/messages/0/content/0"]);
    }

    #[tokio::test]
    async fn a_mid_stream_error_event_is_reported() {
        let err = replay("overloaded_mid_stream.sse", 9).await.unwrap_err();
        assert_eq!(
            err,
            FrameError::Remote {
                kind: "overloaded_error".into(),
                message: "Overloaded".into()
            }
        );
    }

    #[test]
    fn images_go_as_base64_image_blocks_before_the_text() {
        let mut profile = ModelProfile::new(ProviderKind::Anthropic, "claude", "http://h");
        profile.images = Some(true);
        profile.cache = Some(CacheSetting::Off);
        let request = ModelRequest {
            profile: "p".into(),
            cache_key: String::new(),
            max_output_tokens: None,
            system_prompt: String::new(),
            messages: vec![Message::User {
                text: "what is this?".into(),
                images: vec![crate::protocol::Image {
                    source: "pic.jpg".into(),
                    media_type: "image/jpeg".into(),
                    data: "/9j/4A==".into(),
                }],
            }],
            tools: Default::default(),
        };
        let body = request_body(&profile, &request);
        assert_eq!(
            body["messages"],
            json!([{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4A=="}},
                {"type": "text", "text": "what is this?"},
            ]}])
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert!(matches!(
            Decoder::default().decode("{nope"),
            Err(FrameError::Garbage(_))
        ));
    }

    #[test]
    fn history_maps_to_alternating_messages_with_tool_results_in_user_turns() {
        let mut profile = ModelProfile::new(
            ProviderKind::Anthropic,
            "claude-x",
            "https://api.anthropic.com",
        );
        profile.max_output_tokens = Some(1000);
        profile.cache = Some(CacheSetting::Off);
        let request = ModelRequest {
            profile: "p".into(),
            cache_key: String::new(),
            max_output_tokens: None,
            system_prompt: "sys".into(),
            messages: vec![
                Message::user("hi"),
                Message::Assistant {
                    content: vec![
                        ContentBlock::Text {
                            text: "Looking.".into(),
                        },
                        ContentBlock::ToolUse {
                            id: "call.1".into(),
                            name: "bash".into(),
                            input: json!({"command": "ls"}),
                        },
                        ContentBlock::ToolUse {
                            id: "call_2".into(),
                            name: "bash".into(),
                            input: Value::String("{broken".into()),
                        },
                    ],
                    interrupted: false,
                },
                Message::ToolResult {
                    call_id: "call.1".into(),
                    name: "bash".into(),
                    output: "a".into(),
                    is_error: false,
                },
                Message::ToolResult {
                    call_id: "call_2".into(),
                    name: "bash".into(),
                    output: "bad".into(),
                    is_error: true,
                },
                Message::user("next"),
                Message::Assistant {
                    content: vec![],
                    interrupted: true,
                },
                Message::user("again"),
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
            body["system"],
            json!([{"type": "text", "text": "sys"}]),
            "caching off: the prompt is one plain text block"
        );
        assert_eq!(body["max_tokens"], 1000);
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        let messages = body["messages"].as_array().unwrap();
        let roles: Vec<&str> = messages
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            ["user", "assistant", "user"],
            "same-role messages merged, empty ones dropped"
        );
        assert_eq!(
            messages[1]["content"][1]["id"], "call_1",
            "ids mapped to the allowed alphabet"
        );
        assert_eq!(messages[1]["content"][2]["input"], json!({}));
        let user = messages[2]["content"].as_array().unwrap();
        assert_eq!(user[0]["type"], "tool_result");
        assert_eq!(user[0]["tool_use_id"], "call_1");
        assert_eq!(user[1]["is_error"], true);
        assert_eq!(user[2], json!({"type": "text", "text": "next"}));
        assert_eq!(user[3], json!({"type": "text", "text": "again"}));
    }

    #[test]
    fn endpoints_accept_base_urls_with_or_without_v1() {
        assert_eq!(
            endpoint("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:8080/v1/"),
            "http://127.0.0.1:8080/v1/messages"
        );
    }
}
