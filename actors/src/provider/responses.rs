//! OpenAI Responses with SSE streaming (`provider = "openai-responses"`):
//! OpenAI's newer API, and the only one its Codex and `-pro` models answer
//! on (Chat Completions refuses them with "This model is only supported in
//! v1/responses"). Reasoning models keep their reasoning across a tool
//! round only here: each answer's `reasoning` item goes back with it.
//!
//! This module translates, in both directions, and nothing else:
//! - [`request_body`]: our [`ModelRequest`] to a `/responses` body. The
//!   system prompt is `instructions`; the history is a list of input items
//!   (user messages with `input_text` and `input_image` parts, earlier
//!   assistant text as assistant messages, each tool call a `function_call`
//!   and each result a `function_call_output`), and, in place before the
//!   items that followed them, the reasoning items of earlier answers,
//!   exactly as they came. Nothing is stored at OpenAI (`store: false`), so
//!   a reasoning model is asked for its reasoning encrypted
//!   (`include: ["reasoning.encrypted_content"]`) and for a summary to show;
//!   `reasoning.effort` comes from the profile's `effort`, the output cap
//!   is `max_output_tokens`, and the session is the `prompt_cache_key`.
//! - [`Decoder`]: the stream's events. Each output item (`message`,
//!   `function_call`, `reasoning`) becomes blocks: text deltas, a tool
//!   call's argument deltas, a reasoning summary as a thinking block, and at
//!   the item's end the whole reasoning item as an opaque
//!   [`ContentBlock::ReasoningItem`](crate::protocol::ContentBlock); then
//!   `response.completed` (usage, cached tokens counted apart as on the
//!   Chat wire) or `response.incomplete` (`max_tokens`). `response.failed`
//!   and `error` events are reported with their code, so that retries and
//!   the context-length path see what happened.
//! - [`attempt`]: one HTTP call that feeds the decoder (retries wrap it).
//!
//! What it must never do: send a reasoning item to another wire (the Chat
//! and Anthropic modules skip them), send one without the item that
//! followed it (the API refuses that), or ask a model that does not reason
//! for reasoning (OpenAI answers 400 "Encrypted content is not supported
//! with this model").

use super::ModelStream;
use super::fields;
use super::http::{self, Decoded, FrameDecoder, FrameError, status_hint};
use crate::model::{ModelEvent, ModelRequest};
use crate::protocol::{BlockKind, ContentBlock, Message, Usage};
use crate::settings::{Effort, ModelProfile};
use futures::StreamExt;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// What a request asks `include`d so that reasoning survives `store: false`.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// The JSON body of a streaming `/responses` request.
pub fn request_body(profile: &ModelProfile, request: &ModelRequest) -> Value {
    let reasons = reasons(&profile.model);
    let history = super::images_for(profile, &request.messages);
    let mut input = Vec::with_capacity(history.len());
    for message in history.iter() {
        input_items(message, reasons, &mut input);
    }
    let mut body = json!({
        "model": profile.model,
        "input": input,
        "stream": true,
        "store": false,
    });
    if !request.system_prompt.is_empty() {
        body["instructions"] = json!(request.system_prompt);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                    "strict": false,
                })
            })
            .collect();
    }
    if reasons {
        let mut reasoning = json!({"summary": "auto"});
        if let Some(effort) = profile.effort {
            reasoning["effort"] = json!(effort_value(effort, &profile.model));
        }
        body["reasoning"] = reasoning;
        body["include"] = json!([ENCRYPTED_REASONING]);
    }
    if let Some(max) = request.output_cap(profile.max_output_tokens) {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(key) = super::cache_key(profile, request) {
        body["prompt_cache_key"] = json!(key);
    }
    body
}

/// The id a model goes by, without a router's `vendor/` prefix, lowercased.
fn bare_id(model: &str) -> String {
    model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase()
}

/// Whether `model` is one of OpenAI's reasoning models — the o-series, the
/// gpt-5 family, Codex and gpt-oss models, but not the `-chat` ones — which
/// alone take `reasoning` and `include: ["reasoning.encrypted_content"]`.
/// Any other id (gpt-4.1, gpt-4o, a local server's model) gets neither.
pub fn reasons(model: &str) -> bool {
    let id = bare_id(model);
    if id.contains("chat") {
        return false;
    }
    let o_series =
        id.len() > 1 && id.starts_with('o') && id[1..].starts_with(|c: char| c.is_ascii_digit());
    o_series || id.starts_with("gpt-5") || id.contains("codex") || id.starts_with("gpt-oss")
}

/// `reasoning.effort` for a profile's `effort` on `model`. `max` is the
/// most the model takes, as OpenAI answers 400 ("Unsupported value") for a
/// level a model does not have: `max` on gpt-5.6 and later, `xhigh` on
/// gpt-5.1-codex-max and gpt-5.2 to 5.5, `high` on older models.
fn effort_value(effort: Effort, model: &str) -> &'static str {
    match effort {
        Effort::Low => "low",
        Effort::Medium => "medium",
        Effort::High => "high",
        Effort::Max => {
            let id = bare_id(model);
            let minor = id
                .strip_prefix("gpt-5.")
                .map(|rest| {
                    rest.chars()
                        .take_while(char::is_ascii_digit)
                        .collect::<String>()
                })
                .and_then(|digits| digits.parse::<u32>().ok());
            let major_later = id
                .strip_prefix("gpt-")
                .and_then(|rest| rest.split(['.', '-']).next())
                .and_then(|major| major.parse::<u32>().ok())
                .is_some_and(|major| major > 5);
            match minor {
                _ if major_later => "max",
                Some(minor) if minor >= 6 => "max",
                Some(minor) if minor >= 2 => "xhigh",
                _ if id.starts_with("gpt-5.1-codex-max") => "xhigh",
                _ => "high",
            }
        }
    }
}

/// The input items of one history message, appended to `input`.
fn input_items(message: &Message, reasons: bool, input: &mut Vec<Value>) {
    match message {
        Message::User { text, images } if images.is_empty() => {
            input.push(json!({"type": "message", "role": "user", "content": text}));
        }
        // The text, then each image as a `data:` URL.
        Message::User { text, images } => {
            let mut parts = vec![json!({"type": "input_text", "text": text})];
            parts.extend(images.iter().map(|image| {
                json!({
                    "type": "input_image",
                    "image_url": format!("data:{};base64,{}", image.media_type, image.data),
                    "detail": "auto",
                })
            }));
            input.push(json!({"type": "message", "role": "user", "content": parts}));
        }
        Message::ToolResult {
            call_id, output, ..
        } => {
            input.push(
                json!({"type": "function_call_output", "call_id": call_id, "output": output}),
            );
        }
        Message::Assistant { content, .. } => assistant_items(content, reasons, input),
    }
}

/// An answer's items in the order they came: its reasoning items (for a
/// reasoning model, and only when an item follows them: the API refuses a
/// reasoning item "without its required following item"), its text as one
/// assistant message per run of text, its tool calls. Thinking goes back
/// only inside its reasoning item.
fn assistant_items(content: &[ContentBlock], reasons: bool, input: &mut Vec<Value>) {
    let mut reasoning: Vec<Value> = Vec::new();
    let mut text = String::new();
    for block in content {
        match block {
            ContentBlock::Text { text: t } => text.push_str(t),
            ContentBlock::ReasoningItem {
                id,
                summary,
                encrypted_content,
            } => {
                flush_text(&mut text, &mut reasoning, input);
                if reasons {
                    let summary: Vec<Value> = summary
                        .iter()
                        .map(|s| json!({"type": "summary_text", "text": s}))
                        .collect();
                    reasoning.push(json!({
                        "type": "reasoning",
                        "id": id,
                        "summary": summary,
                        "encrypted_content": encrypted_content,
                    }));
                }
            }
            ContentBlock::ToolUse {
                id,
                name,
                input: arguments,
            } => {
                flush_text(&mut text, &mut reasoning, input);
                input.append(&mut reasoning);
                input.push(json!({
                    "type": "function_call",
                    "call_id": id,
                    "name": name,
                    "arguments": arguments_text(arguments),
                }));
            }
            ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. } => {}
        }
    }
    flush_text(&mut text, &mut reasoning, input);
}

/// The text gathered so far, as one assistant message after the reasoning
/// items that came before it.
fn flush_text(text: &mut String, reasoning: &mut Vec<Value>, input: &mut Vec<Value>) {
    if !text.is_empty() {
        input.append(reasoning);
        input
            .push(json!({"type": "message", "role": "assistant", "content": std::mem::take(text)}));
    }
}

/// Arguments as JSON text; arguments that were not a JSON object (garbage
/// from the model, or cut short by an interrupt) go as `{}`, as on the Chat
/// wire: the call's error result already quotes what the model sent.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::Object(_) => arguments.to_string(),
        _ => "{}".to_string(),
    }
}

/// What an output item of the answer became.
#[derive(Debug)]
enum Item {
    /// An assistant message; its text block once text came.
    Message { text: Option<usize> },
    /// A tool call's block; whether its arguments arrived already.
    FunctionCall { block: usize, has_arguments: bool },
    /// A reasoning item; the thinking block its summary streams into, and
    /// the summary part the last delta belonged to.
    Reasoning {
        thinking: Option<usize>,
        part: Option<u64>,
    },
    /// Something we do not pass on (a hosted tool's call, ...).
    Other,
}

/// Turns Responses stream events into [`ModelEvent`]s, numbering blocks in
/// the order they open.
#[derive(Debug, Default)]
pub struct Decoder {
    next_block: usize,
    /// By `output_index`.
    items: BTreeMap<u64, Item>,
    open_blocks: BTreeSet<usize>,
    called_a_tool: bool,
    finish_reason: Option<String>,
}

impl FrameDecoder for Decoder {
    const CUT_SHORT: &'static str = "the stream ended before response.completed";

    /// Decode the data of one frame (its `type` field names the event).
    fn decode(&mut self, data: &str) -> Result<Decoded, FrameError> {
        if data.trim() == "[DONE]" {
            // Servers that end every stream the Chat way.
            return Ok(Decoded {
                events: self.finish(),
                done: true,
            });
        }
        let event: Value = serde_json::from_str(data)
            .map_err(|e| FrameError::Garbage(format!("{e} in `{}`", http::short(data))))?;
        self.event(&event)
            .map_err(|what| FrameError::Garbage(format!("{what} in `{}`", http::short(data))))?
    }

    /// Close open blocks and report the finish.
    fn finish(&mut self) -> Vec<ModelEvent> {
        let mut events: Vec<ModelEvent> = std::mem::take(&mut self.open_blocks)
            .into_iter()
            .map(|index| ModelEvent::BlockStop { index })
            .collect();
        let finish_reason = self.finish_reason.clone().unwrap_or_else(|| {
            if self.called_a_tool {
                "tool_use"
            } else {
                "end_turn"
            }
            .to_string()
        });
        events.push(ModelEvent::Finished { finish_reason });
        events
    }

    /// Whether `response.completed` or `response.incomplete` arrived.
    fn saw_finish(&self) -> bool {
        self.finish_reason.is_some()
    }
}

impl Decoder {
    /// One stream event. The outer error is a frame of the wrong shape
    /// (naming the field); the inner result is the decoded frame or the
    /// error the server reported in it.
    fn event(&mut self, event: &Value) -> Result<Result<Decoded, FrameError>, String> {
        let event = fields::object(event, "the event")?;
        let kind = fields::text(event, "type", "")?
            .ok_or("the event has no `type`; expected e.g. \"response.output_text.delta\"")?;
        let output_index = || -> Result<u64, String> {
            fields::whole(event, "output_index", "")?
                .ok_or_else(|| format!("{kind} has no `output_index`"))
        };
        let delta = || -> Result<&str, String> {
            Ok(fields::text(event, "delta", "")?.unwrap_or_default())
        };
        let mut events = Vec::new();
        match kind {
            "response.output_item.added" => {
                let item = fields::table(event, "item", "")?
                    .ok_or("response.output_item.added has no `item`")?;
                self.item_added(output_index()?, item, &mut events)?;
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let text = delta()?;
                self.text(output_index()?, text, &mut events);
            }
            "response.function_call_arguments.delta" => {
                let arguments = delta()?;
                self.arguments(output_index()?, arguments, &mut events);
            }
            "response.function_call_arguments.done" => {
                // The whole arguments, for a server that sent no deltas.
                let index = output_index()?;
                if let Some(Item::FunctionCall {
                    has_arguments: false,
                    ..
                }) = self.items.get(&index)
                {
                    let arguments = fields::text(event, "arguments", "")?.unwrap_or_default();
                    self.arguments(index, arguments, &mut events);
                }
            }
            "response.reasoning_summary_text.delta" => {
                let part = fields::whole(event, "summary_index", "")?;
                let text = delta()?;
                self.thinking(output_index()?, part, text, &mut events);
            }
            // Raw reasoning, from servers that show it (gpt-oss on vLLM or
            // Ollama): thinking too.
            "response.reasoning_text.delta" => {
                let text = delta()?;
                self.thinking(output_index()?, None, text, &mut events);
            }
            "response.output_item.done" => {
                let item = fields::table(event, "item", "")?
                    .ok_or("response.output_item.done has no `item`")?;
                self.item_done(output_index()?, item, &mut events)?;
            }
            "response.completed" | "response.incomplete" => {
                let response = fields::table(event, "response", "")?
                    .ok_or_else(|| format!("{kind} has no `response`"))?;
                if let Some(usage) = fields::table(response, "usage", "response.")? {
                    events.push(ModelEvent::Usage(parse_usage(usage)?));
                }
                self.finish_reason = Some(if kind == "response.completed" {
                    if self.called_a_tool {
                        "tool_use"
                    } else {
                        "end_turn"
                    }
                    .to_string()
                } else {
                    let reason = fields::table(response, "incomplete_details", "response.")?
                        .map(|d| fields::text(d, "reason", "response.incomplete_details."))
                        .transpose()?
                        .flatten()
                        .unwrap_or("incomplete");
                    normalise_incomplete_reason(reason)
                });
                events.extend(self.finish());
                return Ok(Ok(Decoded { events, done: true }));
            }
            "response.failed" => {
                let error = fields::table(event, "response", "")?
                    .map(|r| fields::table(r, "error", "response."))
                    .transpose()?
                    .flatten();
                return Ok(Err(remote_error(error, true)));
            }
            "error" => {
                // The document's shape has `code`, `message` and `param` on
                // the event; OpenAI's stream has also been seen nesting
                // them under `error` (with a `type`).
                // (The event's own `type` is just "error".)
                return Ok(Err(match fields::table(event, "error", "")? {
                    Some(nested) => remote_error(Some(nested), true),
                    None => remote_error(Some(event), false),
                }));
            }
            // response.created, .in_progress, content parts, the `.done`
            // of texts (their deltas said it all), hosted tools' progress,
            // and event types added later.
            _ => {}
        }
        Ok(Ok(Decoded {
            events,
            done: false,
        }))
    }

    fn item_added(
        &mut self,
        output_index: u64,
        item: &Map<String, Value>,
        events: &mut Vec<ModelEvent>,
    ) -> Result<(), String> {
        const ITEM: &str = "item.";
        let state = match fields::text(item, "type", ITEM)? {
            Some("message") => Item::Message { text: None },
            Some("function_call") => {
                let id = fields::text(item, "call_id", ITEM)?.unwrap_or_default();
                let name = fields::text(item, "name", ITEM)?.unwrap_or_default();
                let block = self.open(
                    BlockKind::ToolUse {
                        id: id.to_string(),
                        name: name.to_string(),
                    },
                    events,
                );
                self.called_a_tool = true;
                let arguments = fields::text(item, "arguments", ITEM)?.unwrap_or_default();
                if !arguments.is_empty() {
                    events.push(ModelEvent::ToolInputDelta {
                        index: block,
                        partial_json: arguments.to_string(),
                    });
                }
                Item::FunctionCall {
                    block,
                    has_arguments: !arguments.is_empty(),
                }
            }
            Some("reasoning") => Item::Reasoning {
                thinking: None,
                part: None,
            },
            Some(_) => Item::Other,
            None => return Err("item has no `type`".into()),
        };
        self.items.insert(output_index, state);
        Ok(())
    }

    fn item_done(
        &mut self,
        output_index: u64,
        item: &Map<String, Value>,
        events: &mut Vec<ModelEvent>,
    ) -> Result<(), String> {
        const ITEM: &str = "item.";
        if !self.items.contains_key(&output_index) {
            // Never announced: take it as added now.
            self.item_added(output_index, item, events)?;
        }
        match self.items.get(&output_index) {
            Some(Item::Message { text }) => {
                if let Some(block) = *text {
                    self.close(block, events);
                }
            }
            Some(Item::FunctionCall {
                block,
                has_arguments,
            }) => {
                let (block, has_arguments) = (*block, *has_arguments);
                if !has_arguments {
                    let arguments = fields::text(item, "arguments", ITEM)?.unwrap_or_default();
                    self.arguments(output_index, arguments, events);
                }
                self.close(block, events);
            }
            Some(Item::Reasoning { thinking, .. }) => {
                if let Some(block) = *thinking {
                    self.close(block, events);
                }
                let encrypted = fields::text(item, "encrypted_content", ITEM)?.unwrap_or_default();
                // Without its encrypted content the item cannot go back
                // (nothing is stored at OpenAI): its summary was shown.
                if !encrypted.is_empty() {
                    let id =
                        fields::text(item, "id", ITEM)?.ok_or("a reasoning item has no `id`")?;
                    let mut summary = Vec::new();
                    for (k, part) in fields::list(item, "summary", ITEM)?
                        .into_iter()
                        .flatten()
                        .enumerate()
                    {
                        let path = format!("item.summary[{k}]");
                        let part = fields::object(part, &path)?;
                        let text = fields::text(part, "text", &format!("{path}."))?;
                        summary.push(text.unwrap_or_default().to_string());
                    }
                    let index = self.next_block;
                    self.next_block += 1;
                    events.push(ModelEvent::ReasoningItem {
                        index,
                        id: id.to_string(),
                        summary,
                        encrypted_content: encrypted.to_string(),
                    });
                }
            }
            Some(Item::Other) | None => {}
        }
        Ok(())
    }

    fn text(&mut self, output_index: u64, text: &str, events: &mut Vec<ModelEvent>) {
        if text.is_empty() {
            return;
        }
        let item = self
            .items
            .entry(output_index)
            .or_insert(Item::Message { text: None });
        let existing = match item {
            Item::Message { text } => *text,
            _ => return,
        };
        let index = match existing {
            Some(index) => index,
            None => {
                let index = self.open(BlockKind::Text, events);
                if let Some(Item::Message { text }) = self.items.get_mut(&output_index) {
                    *text = Some(index);
                }
                index
            }
        };
        events.push(ModelEvent::TextDelta {
            index,
            text: text.to_string(),
        });
    }

    fn arguments(&mut self, output_index: u64, arguments: &str, events: &mut Vec<ModelEvent>) {
        if let Some(Item::FunctionCall {
            block,
            has_arguments,
        }) = self.items.get_mut(&output_index)
            && !arguments.is_empty()
        {
            *has_arguments = true;
            events.push(ModelEvent::ToolInputDelta {
                index: *block,
                partial_json: arguments.to_string(),
            });
        }
    }

    /// Summary (or reasoning) text of a reasoning item; summary parts are
    /// separated by a blank line.
    fn thinking(
        &mut self,
        output_index: u64,
        part: Option<u64>,
        text: &str,
        events: &mut Vec<ModelEvent>,
    ) {
        if text.is_empty() {
            return;
        }
        let item = self.items.entry(output_index).or_insert(Item::Reasoning {
            thinking: None,
            part: None,
        });
        let (existing, previous_part) = match item {
            Item::Reasoning { thinking, part } => (*thinking, *part),
            _ => return,
        };
        let (index, separator) = match existing {
            Some(index) => {
                let new_part = part.is_some() && previous_part.is_some() && part != previous_part;
                (index, new_part)
            }
            None => (self.open(BlockKind::Thinking, events), false),
        };
        if let Some(Item::Reasoning { thinking, part: p }) = self.items.get_mut(&output_index) {
            *thinking = Some(index);
            if part.is_some() {
                *p = part;
            }
        }
        let text = if separator {
            format!("\n\n{text}")
        } else {
            text.to_string()
        };
        events.push(ModelEvent::ThinkingDelta { index, text });
    }

    /// Open the next block.
    fn open(&mut self, block: BlockKind, events: &mut Vec<ModelEvent>) -> usize {
        let index = self.next_block;
        self.next_block += 1;
        self.open_blocks.insert(index);
        events.push(ModelEvent::BlockStart { index, block });
        index
    }

    fn close(&mut self, index: usize, events: &mut Vec<ModelEvent>) {
        if self.open_blocks.remove(&index) {
            events.push(ModelEvent::BlockStop { index });
        }
    }
}

/// `response.incomplete`'s reason as a finish reason.
fn normalise_incomplete_reason(reason: &str) -> String {
    match reason {
        "max_output_tokens" => "max_tokens".into(),
        other => other.into(),
    }
}

/// A failure the stream reported (`response.failed`'s `error`, or an
/// `error` event; `typed`: its `type` field is the error's kind). The kind
/// is the error's `type` when it has one, else
/// its code when another attempt could succeed (`server_error`,
/// `rate_limit_exceeded`, ...), else `invalid_request_error`, so that a
/// refusal is not retried; the code is added to the message, so that a
/// context-length refusal is known as one even with an empty message.
fn remote_error(error: Option<&Map<String, Value>>, typed: bool) -> FrameError {
    let text = |key: &str| {
        error
            .and_then(|e| e.get(key))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let code = text("code");
    const TRANSIENT: [&str; 5] = [
        "server_error",
        "rate_limit_exceeded",
        "server_is_overloaded",
        "slow_down",
        "vector_store_timeout",
    ];
    let kind = match (text("type").filter(|_| typed), code) {
        (Some(kind), _) => kind.to_string(),
        (None, Some(code)) if TRANSIENT.contains(&code) => code.to_string(),
        (None, _) => "invalid_request_error".to_string(),
    };
    let message = match (text("message"), code) {
        (Some(message), Some(code)) if !message.contains(code) => format!("{message} ({code})"),
        (Some(message), _) => message.to_string(),
        (None, Some(code)) => code.to_string(),
        (None, None) => error
            .map(|e| Value::Object(e.clone()).to_string())
            .unwrap_or_else(|| "the response failed without saying why".to_string()),
    };
    FrameError::Remote { kind, message }
}

/// OpenAI's `input_tokens` includes the cached ones; `Usage` counts them
/// apart (`input_tokens` is the uncached input), exactly as the Chat wire
/// reads `prompt_tokens_details.cached_tokens`. `output_tokens` includes
/// the reasoning tokens.
fn parse_usage(usage: &Map<String, Value>) -> Result<Usage, String> {
    const USAGE: &str = "response.usage.";
    let n = |key: &str| fields::whole(usage, key, USAGE).map(Option::unwrap_or_default);
    let cached = match fields::table(usage, "input_tokens_details", USAGE)? {
        Some(details) => fields::whole(
            details,
            "cached_tokens",
            "response.usage.input_tokens_details.",
        )?
        .unwrap_or_default(),
        None => 0,
    };
    Ok(Usage {
        input_tokens: n("input_tokens")?.saturating_sub(cached),
        output_tokens: n("output_tokens")?,
        cache_read_input_tokens: cached,
        cache_creation_input_tokens: 0,
    })
}

/// The endpoint for a base URL such as `https://api.openai.com/v1`.
pub fn endpoint(base_url: &str) -> String {
    format!("{}/responses", base_url.trim_end_matches('/'))
}

/// Whether a failure is OpenAI refusing reasoning summaries to an
/// organisation it has not verified ("Your organization must be verified
/// to generate reasoning summaries").
fn refuses_summaries(error: &super::ProviderError) -> bool {
    matches!(
        error,
        super::ProviderError::Status { status: 400, message, .. }
            if message.contains("reasoning summaries")
    )
}

/// One call to the model, streaming its answer (no retries here). When
/// OpenAI refuses the reasoning summary (an unverified organisation), the
/// call is made again at once without one: the model still reasons, its
/// thinking is just not shown.
pub fn attempt(http: reqwest::Client, profile: ModelProfile, request: ModelRequest) -> ModelStream {
    let body = request_body(&profile, &request);
    let asks_summary = body.pointer("/reasoning/summary").is_some();
    let call = move |body: &Value| {
        let url = endpoint(&profile.base_url);
        let built = http::post(
            &http,
            &url,
            &profile,
            &request.profile,
            body,
            |b, key| match key {
                Some(key) => b.bearer_auth(key),
                None => b,
            },
        );
        let idle = profile.idle_timeout();
        let (profile, name) = (profile.clone(), request.profile.clone());
        http::answer::<Decoder>(built, url, idle, move |status| {
            status_hint(status, &profile, &name)
        })
    };
    if !asks_summary {
        return call(&body);
    }
    Box::pin(async_stream::stream! {
        let mut stream = call(&body);
        let first = stream.next().await;
        if let Some(Err(error)) = &first
            && refuses_summaries(error)
        {
            tracing::info!("asking again without a reasoning summary: {error}");
            let mut body = body;
            if let Some(reasoning) = body.get_mut("reasoning").and_then(Value::as_object_mut) {
                reasoning.remove("summary");
            }
            let mut again = call(&body);
            while let Some(item) = again.next().await {
                yield item;
            }
            return;
        }
        if let Some(item) = first {
            yield item;
        }
        while let Some(item) = stream.next().await {
            yield item;
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ToolOrigin, ToolSpec};
    use crate::protocol::Image;
    use crate::session::core::partial::PartialMessage;
    use crate::settings::{CacheSetting, ProviderKind};
    use agentbus_testkit::{OpenAiSchema, schema_violations};

    fn fixture(name: &str) -> String {
        super::super::replay_tests::fixture("openai-responses", name)
    }

    /// Replay a fixture through the real SSE parser in chunks of `size`
    /// bytes, then through the decoder.
    async fn replay(name: &str, size: usize) -> Result<Vec<ModelEvent>, FrameError> {
        super::super::replay_tests::replay::<Decoder>("openai-responses", name, size).await
    }

    /// The same events at every chunk size.
    async fn replay_at_every_size(name: &str) -> Result<Vec<ModelEvent>, FrameError> {
        let whole = replay(name, 1 << 20).await;
        for size in [1, 2, 3, 7, 64] {
            assert_eq!(
                replay(name, size).await,
                whole,
                "{name} at chunk size {size}"
            );
        }
        whole
    }

    fn assemble(events: &[ModelEvent]) -> crate::session::core::partial::AssembledMessage {
        let mut p = PartialMessage::default();
        for e in events {
            p.apply(e);
        }
        p.finish(|i| i.to_string())
    }

    fn usage_of(events: &[ModelEvent]) -> Option<Usage> {
        events.iter().rev().find_map(|e| match e {
            ModelEvent::Usage(u) => Some(*u),
            _ => None,
        })
    }

    fn finish_of(events: &[ModelEvent]) -> Option<&str> {
        match events.last() {
            Some(ModelEvent::Finished { finish_reason }) => Some(finish_reason),
            _ => None,
        }
    }

    #[tokio::test]
    async fn a_text_reply_decodes_identically_at_every_chunk_size() {
        let events = replay_at_every_size("text_reply.sse")
            .await
            .expect("decodes");
        let m = assemble(&events);
        assert_eq!(m.text(), "Hello, wörld! ☃");
        assert_eq!(finish_of(&events), Some("end_turn"));
        // input_tokens 21, of which 4 cached: counted apart as on the Chat
        // wire.
        assert_eq!(
            usage_of(&events),
            Some(Usage {
                input_tokens: 17,
                output_tokens: 6,
                cache_read_input_tokens: 4,
                cache_creation_input_tokens: 0,
            })
        );
    }

    #[tokio::test]
    async fn reasoning_streams_as_thinking_and_its_item_is_kept_whole_in_place() {
        let events = replay_at_every_size("reasoning_text_and_tool_call.sse")
            .await
            .expect("decodes");
        let starts: Vec<(usize, &BlockKind)> = events
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
                (2, &BlockKind::Text),
                (
                    3,
                    &BlockKind::ToolUse {
                        id: "call_Rd1".into(),
                        name: "read_file".into()
                    }
                )
            ],
            "the reasoning item (block 1) arrives whole and opens nothing"
        );
        let m = assemble(&events);
        assert_eq!(
            m.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "**Reading the notes**\n\nThe user wants a summary of notes.txt — naïve ☃ plan.\n\nCall read_file first.".into(),
                    signature: None,
                },
                ContentBlock::ReasoningItem {
                    id: "rs_01".into(),
                    summary: vec![
                        "**Reading the notes**\n\nThe user wants a summary of notes.txt — naïve ☃ plan.".into(),
                        "Call read_file first.".into(),
                    ],
                    encrypted_content: "gAAAAABpReAsOnInG-sealed-by-openai_7Q==".into(),
                },
                ContentBlock::Text {
                    text: "Let me read it.".into()
                },
                ContentBlock::ToolUse {
                    id: "call_Rd1".into(),
                    name: "read_file".into(),
                    input: json!({"path": "notes/ünïcode.txt"}),
                },
            ]
        );
        assert_eq!(finish_of(&events), Some("tool_use"));
        assert_eq!(
            usage_of(&events),
            Some(Usage {
                input_tokens: 176,
                output_tokens: 310,
                cache_read_input_tokens: 1024,
                cache_creation_input_tokens: 0,
            }),
            "output tokens include the reasoning"
        );
    }

    #[tokio::test]
    async fn tool_calls_take_their_arguments_from_deltas_or_from_the_finished_item() {
        let events = replay_at_every_size("parallel_tool_calls.sse")
            .await
            .expect("decodes");
        let m = assemble(&events);
        assert_eq!(m.calls.len(), 2);
        assert_eq!(m.calls[0].id, "call_a");
        assert_eq!(m.calls[0].input, Ok(json!({"path": "a.txt"})));
        assert_eq!(m.calls[1].id, "call_b");
        assert_eq!(m.calls[1].name, "bash");
        assert_eq!(m.calls[1].input, Ok(json!({"command": "ls -la"})));
        assert_eq!(finish_of(&events), Some("tool_use"));
        assert_eq!(
            usage_of(&events),
            Some(Usage {
                input_tokens: 50,
                output_tokens: 20,
                ..Usage::default()
            }),
            "no details: nothing cached"
        );
    }

    #[tokio::test]
    async fn an_incomplete_answer_finishes_as_max_tokens_with_its_text() {
        let events = replay_at_every_size("incomplete.sse")
            .await
            .expect("decodes");
        assert_eq!(assemble(&events).text(), "The summary is");
        assert_eq!(finish_of(&events), Some("max_tokens"));
        assert_eq!(usage_of(&events).map(|u| u.output_tokens), Some(16));
    }

    #[tokio::test]
    async fn a_failed_response_is_a_remote_error_worth_retrying() {
        let error = replay("failed_server_error.sse", 5)
            .await
            .expect_err("failed");
        assert_eq!(
            error,
            FrameError::Remote {
                kind: "server_error".into(),
                message: "The model failed to generate a response. (server_error)".into(),
            }
        );
        assert!(error.into_provider("u").is_retryable());
        let rate = replay("error_event.sse", 3)
            .await
            .expect_err("an error event");
        assert!(
            matches!(&rate, FrameError::Remote { kind, message } if kind == "rate_limit_exceeded" && message.starts_with("Rate limit reached")),
            "{rate:?}"
        );
        assert!(rate.into_provider("u").is_retryable());
    }

    #[tokio::test]
    async fn a_context_length_refusal_is_known_as_one_and_not_retried() {
        let error = replay("context_length_exceeded.sse", 4)
            .await
            .expect_err("refused");
        assert_eq!(
            error,
            FrameError::Remote {
                kind: "invalid_request_error".into(),
                message: "Your input exceeds the context window of this model. Please adjust your input and try again. (context_length_exceeded)".into(),
            }
        );
        let error = error.into_provider("http://h/v1/responses");
        assert!(error.is_context_overflow(), "{error}");
        assert!(!error.is_retryable(), "{error}");
        // response.failed alone, with no message at all, says it too.
        let mut d = Decoder::default();
        let bare = d
            .decode(r#"{"type":"response.failed","sequence_number":3,"response":{"status":"failed","error":{"code":"context_length_exceeded","message":""}}}"#)
            .expect_err("failed");
        let bare = bare.into_provider("u");
        assert!(bare.is_context_overflow() && !bare.is_retryable(), "{bare}");
    }

    #[test]
    fn garbage_and_events_of_the_wrong_shape_are_errors_naming_the_field() {
        let mut d = Decoder::default();
        assert!(matches!(d.decode("{nope"), Err(FrameError::Garbage(_))));
        let no_type = d.decode(r#"{"sequence_number":1}"#).expect_err("no type");
        assert!(
            matches!(&no_type, FrameError::Garbage(g) if g.contains("no `type`")),
            "{no_type:?}"
        );
        let wrong = d
            .decode(r#"{"type":"response.output_text.delta","output_index":0,"delta":7}"#)
            .expect_err("a number for text");
        assert!(
            matches!(&wrong, FrameError::Garbage(g) if g.contains("delta is a whole number; expected a string")),
            "{wrong:?}"
        );
        // Events we do not use are skipped.
        let skipped = d
            .decode(r#"{"type":"response.web_search_call.searching","output_index":0}"#)
            .expect("skipped");
        assert_eq!(skipped, Decoded::default());
    }

    fn spec(name: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: format!("the {name} tool"),
            input_schema: std::sync::Arc::new(
                json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ),
            origin: ToolOrigin::Builtin,
        }
    }

    /// A reasoning model's tool round: the question (with an image), its
    /// answer (summary, reasoning item, text, a call with garbage
    /// arguments and a good one), the results, and the next question.
    fn tool_round() -> ModelRequest {
        ModelRequest {
            profile: "codex".into(),
            cache_key: "0199a7e0-session".into(),
            max_output_tokens: None,
            system_prompt: "You are a coding agent.".into(),
            messages: vec![
                Message::User {
                    text: "what is in this picture and notes.txt?".into(),
                    images: vec![Image {
                        source: "pic.png".into(),
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgo=".into(),
                    }],
                },
                Message::Assistant {
                    content: vec![
                        ContentBlock::Thinking {
                            thinking: "Read the notes.".into(),
                            signature: None,
                        },
                        ContentBlock::ReasoningItem {
                            id: "rs_01".into(),
                            summary: vec!["Read the notes.".into()],
                            encrypted_content: "gAAAAABsealed".into(),
                        },
                        ContentBlock::Text {
                            text: "Reading.".into(),
                        },
                        ContentBlock::ToolUse {
                            id: "call_1".into(),
                            name: "read_file".into(),
                            input: json!({"path": "notes.txt"}),
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
                    call_id: "call_1".into(),
                    name: "read_file".into(),
                    output: "alpha".into(),
                    is_error: false,
                },
                Message::ToolResult {
                    call_id: "call_2".into(),
                    name: "bash".into(),
                    output: "bad arguments".into(),
                    is_error: true,
                },
            ],
            tools: std::sync::Arc::new(vec![spec("read_file"), spec("bash")]),
        }
    }

    fn codex() -> ModelProfile {
        let mut profile = ModelProfile::new(
            ProviderKind::OpenaiResponses,
            "gpt-5.1-codex",
            "http://h/v1",
        );
        profile.images = Some(true);
        profile
    }

    /// Fails naming every place `body` breaks OpenAI's `CreateResponse`.
    fn assert_valid(body: &Value) {
        let violations = schema_violations(OpenAiSchema::CreateResponse, body);
        assert!(violations.is_empty(), "{violations:#?}\n{body:#}");
    }

    #[test]
    fn a_tool_round_goes_as_input_items_with_the_reasoning_in_place() {
        let body = request_body(&codex(), &tool_round());
        assert_valid(&body);
        assert_eq!(body["instructions"], "You are a coding agent.");
        assert_eq!(body["store"], false);
        assert_eq!(body["stream"], true);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(
            body["reasoning"],
            json!({"summary": "auto"}),
            "no effort set"
        );
        assert_eq!(body["prompt_cache_key"], "0199a7e0-session");
        assert!(body.get("max_output_tokens").is_none());
        assert_eq!(
            body["input"],
            json!([
                {"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "what is in this picture and notes.txt?"},
                    {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"},
                ]},
                {"type": "reasoning", "id": "rs_01",
                 "summary": [{"type": "summary_text", "text": "Read the notes."}],
                 "encrypted_content": "gAAAAABsealed"},
                {"type": "message", "role": "assistant", "content": "Reading."},
                {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"},
                {"type": "function_call", "call_id": "call_2", "name": "bash", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "alpha"},
                {"type": "function_call_output", "call_id": "call_2", "output": "bad arguments"},
            ])
        );
        assert_eq!(
            body["tools"][0],
            json!({"type": "function", "name": "read_file", "description": "the read_file tool",
                   "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
                   "strict": false})
        );
    }

    #[test]
    fn effort_cap_and_cache_settings_shape_the_body() {
        let mut profile = codex();
        profile.effort = Some(Effort::High);
        profile.max_output_tokens = Some(4000);
        let mut request = tool_round();
        let body = request_body(&profile, &request);
        assert_valid(&body);
        assert_eq!(
            body["reasoning"],
            json!({"summary": "auto", "effort": "high"})
        );
        assert_eq!(body["max_output_tokens"], 4000);
        // A summarising request is capped lower.
        request.max_output_tokens = Some(600);
        let body = request_body(&profile, &request);
        assert_eq!(body["max_output_tokens"], 600);
        // Caching off: no key.
        profile.cache = Some(CacheSetting::Off);
        let body = request_body(&profile, &request);
        assert_valid(&body);
        assert!(body.get("prompt_cache_key").is_none(), "{body}");
        profile.cache = Some(CacheSetting::OneHour);
        request.cache_key = String::new();
        assert!(
            request_body(&profile, &request)
                .get("prompt_cache_key")
                .is_none()
        );
        for effort in [Effort::Low, Effort::Medium, Effort::Max] {
            profile.effort = Some(effort);
            assert_valid(&request_body(&profile, &request));
        }
    }

    #[test]
    fn max_effort_is_the_most_each_model_takes() {
        for (model, expected) in [
            ("gpt-5.1-codex", "high"),
            ("gpt-5-codex", "high"),
            ("o3-pro", "high"),
            ("gpt-5.1-codex-max", "xhigh"),
            ("gpt-5.2", "xhigh"),
            ("gpt-5.3-codex", "xhigh"),
            ("gpt-5.5", "xhigh"),
            ("gpt-5.6-sol", "max"),
            ("openai/gpt-5.6", "max"),
            ("gpt-6", "max"),
        ] {
            assert_eq!(effort_value(Effort::Max, model), expected, "{model}");
        }
        assert_eq!(effort_value(Effort::Low, "gpt-5.6"), "low");
    }

    #[test]
    fn only_reasoning_models_are_asked_for_reasoning() {
        for model in [
            "gpt-5.1-codex",
            "codex-mini-latest",
            "o3-pro",
            "o4-mini",
            "gpt-5",
            "openai/gpt-5.2",
            "gpt-oss-120b",
        ] {
            assert!(reasons(model), "{model}");
        }
        for model in [
            "gpt-4.1",
            "gpt-4o-mini",
            "gpt-5-chat-latest",
            "qwen3:8b",
            "scripted-main",
            "omni-moderation",
        ] {
            assert!(!reasons(model), "{model}");
        }
        // gpt-4.1 answers 400 to `include: ["reasoning.encrypted_content"]`:
        // no reasoning is asked for, and none goes back.
        let mut profile = codex();
        profile.model = "gpt-4.1".into();
        profile.effort = Some(Effort::High);
        let body = request_body(&profile, &tool_round());
        assert_valid(&body);
        assert!(
            body.get("include").is_none() && body.get("reasoning").is_none(),
            "{body}"
        );
        assert!(
            !body["input"]
                .as_array()
                .expect("input")
                .iter()
                .any(|item| item["type"] == "reasoning"),
            "{body}"
        );
    }

    #[test]
    fn a_reasoning_item_with_nothing_after_it_stays_home() {
        // Cut short by an interrupt after it reasoned: the API refuses a
        // reasoning item "without its required following item".
        let request = ModelRequest {
            messages: vec![
                Message::user("think"),
                Message::Assistant {
                    content: vec![ContentBlock::ReasoningItem {
                        id: "rs_x".into(),
                        summary: Vec::new(),
                        encrypted_content: "sealed".into(),
                    }],
                    interrupted: true,
                },
                Message::user("again"),
            ],
            tools: Default::default(),
            system_prompt: String::new(),
            ..tool_round()
        };
        let body = request_body(&codex(), &request);
        assert_valid(&body);
        assert_eq!(
            body["input"],
            json!([
                {"type": "message", "role": "user", "content": "think"},
                {"type": "message", "role": "user", "content": "again"},
            ])
        );
        assert!(body.get("instructions").is_none() && body.get("tools").is_none());
    }

    #[test]
    fn a_profile_without_images_gets_a_line_naming_each_instead() {
        let mut profile = codex();
        profile.images = Some(false);
        let body = request_body(&profile, &tool_round());
        assert_valid(&body);
        assert_eq!(
            body["input"][0],
            json!({"type": "message", "role": "user",
                   "content": "what is in this picture and notes.txt?\n\n[image left out: pic.png]"})
        );
    }

    #[tokio::test]
    async fn a_decoded_answer_goes_back_exactly_as_it_came() {
        let events = replay("reasoning_text_and_tool_call.sse", 1 << 20)
            .await
            .expect("decodes");
        let answer = assemble(&events);
        let request = ModelRequest {
            messages: vec![
                Message::user("summarise notes.txt"),
                Message::Assistant {
                    content: answer.content,
                    interrupted: false,
                },
                Message::ToolResult {
                    call_id: "call_Rd1".into(),
                    name: "read_file".into(),
                    output: "alpha".into(),
                    is_error: false,
                },
            ],
            ..tool_round()
        };
        let body = request_body(&codex(), &request);
        assert_valid(&body);
        let sent = &body["input"][1];
        // The finished item, as the stream's output_item.done had it.
        let received = fixture("reasoning_text_and_tool_call.sse")
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .filter_map(|data| serde_json::from_str::<Value>(data).ok())
            .find(|e| e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning")
            .map(|e| e["item"].clone())
            .expect("the reasoning item in the fixture");
        assert_eq!(sent, &received);
        assert_eq!(body["input"][2]["role"], "assistant");
        assert_eq!(body["input"][3]["type"], "function_call");
        assert_eq!(body["input"][3]["call_id"], "call_Rd1");
    }

    #[test]
    fn reasoning_items_never_reach_another_wire() {
        let request = tool_round();
        let chat = super::super::openai::request_body(
            &ModelProfile::new(ProviderKind::Openai, "gpt-5.1", "https://api.openai.com/v1"),
            &request,
        );
        let anthropic = super::super::anthropic::request_body(
            &ModelProfile::new(
                ProviderKind::Anthropic,
                "claude-x",
                "https://api.anthropic.com",
            ),
            &request,
        );
        let mut thinking = ModelProfile::new(ProviderKind::Anthropic, "claude-x", "http://h");
        thinking.thinking_budget = Some(2048);
        let anthropic_thinking = super::super::anthropic::request_body(&thinking, &request);
        for body in [chat, anthropic, anthropic_thinking] {
            let text = body.to_string();
            assert!(
                !text.contains("gAAAAABsealed") && !text.contains("rs_01"),
                "{text}"
            );
        }
    }

    #[test]
    fn endpoints_append_responses_to_the_base_url() {
        assert_eq!(
            endpoint("https://api.openai.com/v1/"),
            "https://api.openai.com/v1/responses"
        );
        assert_eq!(
            endpoint("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1/responses"
        );
    }
}
