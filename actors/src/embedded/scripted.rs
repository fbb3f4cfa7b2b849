//! [`ScriptedProvider`]: a model that answers from a script, in process,
//! for tests of code built on the library — no HTTP, no network.
//!
//! Like a real model it only calls tools the request offered, and, given a
//! context window, counts each request's tokens (with
//! [`crate::tokens`], the convention agentbus counts with) and refuses an
//! oversize one with the error a provider gives
//! ([`ProviderError::is_context_overflow`] is true), consuming no reply.

use crate::model::{ModelEvent, ModelRequest};
use crate::protocol::{BlockKind, Message, Usage};
use crate::provider::{ModelClient, ModelStream, ProviderError};
use crate::tokens::{Encoding, REQUEST_OVERHEAD};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

/// What the scripted errors name as their source.
const URL: &str = "the scripted provider";

/// One scripted answer: text, tool calls, usage — or a failure.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScriptedReply {
    text: String,
    tool_calls: Vec<(String, String)>,
    usage: Option<Usage>,
    matching: Option<String>,
    failure: Option<(u16, String)>,
}

impl ScriptedReply {
    /// A reply with this text.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptedReply {
            text: text.into(),
            ..Default::default()
        }
    }

    /// A reply calling the tool `name` with `arguments` (a JSON object).
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        ScriptedReply::default().with_tool_call(name, arguments)
    }

    /// A reply that fails like a provider answering HTTP `status` with
    /// `message` (no event is streamed). A message a provider gives for an
    /// oversize request (e.g. "maximum context length") makes it a context
    /// overflow.
    pub fn failure(status: u16, message: impl Into<String>) -> Self {
        ScriptedReply {
            failure: Some((status, message.into())),
            ..Default::default()
        }
    }

    /// This reply with `text` (before its tool calls).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = text.into();
        self
    }

    /// This reply with one more tool call (calls are made in order).
    pub fn with_tool_call(mut self, name: impl Into<String>, arguments: Value) -> Self {
        self.tool_calls.push((name.into(), arguments.to_string()));
        self
    }

    /// This reply reporting this usage (default: the request's tokens and
    /// the reply's, counted as [`ScriptedProvider::count_tokens`] does —
    /// what a provider would report, so the agent's estimates calibrate
    /// to 1).
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = Some(Usage {
            input_tokens,
            output_tokens,
            ..Default::default()
        });
        self
    }

    /// Serve this reply only to a request whose last user message contains
    /// `text` (e.g. the compaction request, which ends with "Write the
    /// summary now, following the instructions."). Among replies for the
    /// same request, matching ones come first; the rest serve in order.
    pub fn matching(mut self, text: impl Into<String>) -> Self {
        self.matching = Some(text.into());
        self
    }
}

/// A [`ModelClient`] answering from a queue of [`ScriptedReply`]s, one per
/// model call, recording every request.
///
/// A request is refused (with a [`ProviderError`], consuming nothing when
/// it is too long) when: it is longer than the context window
/// ([`with_context_window`](Self::with_context_window)); no reply is left
/// for it; its reply calls a tool the request did not offer (the reply is
/// consumed, as a real model's bad answer would be); its reply is a
/// [`failure`](ScriptedReply::failure).
///
/// Share it with `Arc` to look at [`requests`](Self::requests) after a
/// run (`Arc<ScriptedProvider>` is a [`ModelClient`] too).
#[derive(Debug, Default)]
pub struct ScriptedProvider {
    script: Mutex<Script>,
    context_window: Option<u64>,
}

#[derive(Debug, Default)]
struct Script {
    replies: VecDeque<ScriptedReply>,
    requests: Vec<ModelRequest>,
}

impl ScriptedProvider {
    /// A provider with no reply yet.
    pub fn new() -> Self {
        ScriptedProvider::default()
    }

    /// A provider answering with `replies`, in order.
    pub fn with_replies(replies: impl IntoIterator<Item = ScriptedReply>) -> Self {
        let provider = ScriptedProvider::new();
        for reply in replies {
            provider.push(reply);
        }
        provider
    }

    /// This provider with one more reply.
    pub fn with_reply(self, reply: ScriptedReply) -> Self {
        self.push(reply);
        self
    }

    /// This provider refusing requests of more than `tokens` input tokens,
    /// as a provider refuses requests longer than its context window.
    pub fn with_context_window(mut self, tokens: u64) -> Self {
        self.context_window = Some(tokens);
        self
    }

    /// Add a reply at the end of the queue (also while it is in use).
    pub fn push(&self, reply: ScriptedReply) {
        self.lock().replies.push_back(reply);
    }

    /// Every request received so far, refused ones included.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.lock().requests.clone()
    }

    /// How many replies are left.
    pub fn remaining(&self) -> usize {
        self.lock().replies.len()
    }

    /// The input tokens of `request` by agentbus's convention (what the
    /// context window is checked against): 3, plus the tool definitions'
    /// JSON, plus for the system prompt and each message 4 and its texts,
    /// with the tokenizer agentbus picks for the request's profile name.
    pub fn count_tokens(request: &ModelRequest) -> u64 {
        let encoding = Encoding::for_model(&request.profile);
        REQUEST_OVERHEAD
            + encoding.count_system(&request.system_prompt)
            + encoding.count_tools(&request.tools)
            + request
                .messages
                .iter()
                .map(|m| encoding.count_message(m))
                .sum::<u64>()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Script> {
        self.script.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The events of the reply to `request`, or why it is refused.
    fn answer(&self, request: ModelRequest) -> Result<Vec<ModelEvent>, ProviderError> {
        let mut script = self.lock();
        let index = script.requests.len();
        script.requests.push(request.clone());
        let counted = self.context_window.map(|_| Self::count_tokens(&request));
        if let (Some(window), Some(counted)) = (self.context_window, counted)
            && counted > window
        {
            return Err(status(
                400,
                format!(
                    "This model's maximum context length is {window} tokens. However, your messages resulted in {counted} tokens. Please reduce the length of the messages. (context_length_exceeded)"
                ),
            ));
        }
        let last_user = request.messages.iter().rev().find_map(|m| match m {
            Message::User { text, .. } => Some(text.as_str()),
            _ => None,
        });
        let matched = script.replies.iter().position(|r| {
            r.matching
                .as_deref()
                .is_some_and(|s| last_user.is_some_and(|u| u.contains(s)))
        });
        let position = matched.or_else(|| script.replies.iter().position(|r| r.matching.is_none()));
        let Some(reply) = position.and_then(|at| script.replies.remove(at)) else {
            return Err(status(
                500,
                format!(
                    "no scripted reply is left for request {index} (last user message: {:?})",
                    crate::text::ellipsize(last_user.unwrap_or_default(), 80)
                ),
            ));
        };
        drop(script);
        if let Some((code, message)) = reply.failure {
            return Err(status(code, message));
        }
        for (name, _) in &reply.tool_calls {
            if !request.tools.iter().any(|t| &t.name == name) {
                let offered: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
                return Err(status(
                    400,
                    format!(
                        "the reply calls the tool `{name}`, which the request did not offer (offered: {})",
                        if offered.is_empty() {
                            "none".to_string()
                        } else {
                            offered.join(", ")
                        }
                    ),
                ));
            }
        }
        let usage = reply.usage.unwrap_or_else(|| {
            let encoding = Encoding::for_model(&request.profile);
            let output = reply
                .tool_calls
                .iter()
                .map(|(_, arguments)| encoding.count(arguments))
                .sum::<u64>()
                + encoding.count(&reply.text);
            Usage {
                input_tokens: counted.unwrap_or_else(|| Self::count_tokens(&request)),
                output_tokens: output.max(1),
                ..Default::default()
            }
        });
        Ok(events(index, &reply.text, &reply.tool_calls, usage))
    }
}

impl ModelClient for ScriptedProvider {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        match self.answer(request) {
            Ok(events) => Box::pin(futures::stream::iter(events.into_iter().map(Ok))),
            Err(error) => Box::pin(futures::stream::once(async { Err(error) })),
        }
    }
}

/// A refusal as a provider's HTTP error.
fn status(status: u16, message: String) -> ProviderError {
    ProviderError::Status {
        url: URL.into(),
        status,
        message,
        hint: None,
        retry_after: None,
    }
}

/// The streamed events of one reply: a text block, one block per tool
/// call, the usage, the end.
fn events(
    request: usize,
    text: &str,
    tool_calls: &[(String, String)],
    usage: Usage,
) -> Vec<ModelEvent> {
    let mut events = Vec::new();
    let mut index = 0;
    if !text.is_empty() {
        events.push(ModelEvent::BlockStart {
            index,
            block: BlockKind::Text,
        });
        for piece in pieces(text) {
            events.push(ModelEvent::TextDelta {
                index,
                text: piece.to_string(),
            });
        }
        events.push(ModelEvent::BlockStop { index });
        index += 1;
    }
    for (n, (name, arguments)) in tool_calls.iter().enumerate() {
        events.push(ModelEvent::BlockStart {
            index,
            block: BlockKind::ToolUse {
                id: format!("scripted_{request}_{n}"),
                name: name.clone(),
            },
        });
        for piece in pieces(arguments) {
            events.push(ModelEvent::ToolInputDelta {
                index,
                partial_json: piece.to_string(),
            });
        }
        events.push(ModelEvent::BlockStop { index });
        index += 1;
    }
    events.push(ModelEvent::Usage(usage));
    events.push(ModelEvent::Finished {
        finish_reason: if tool_calls.is_empty() {
            "end_turn".into()
        } else {
            "tool_use".into()
        },
    });
    events
}

/// `text` in two pieces split at a character boundary, as a stream would
/// deliver it.
fn pieces(text: &str) -> Vec<&str> {
    let mut middle = text.len() / 2;
    while !text.is_char_boundary(middle) {
        middle += 1;
    }
    [&text[..middle], &text[middle..]]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect()
}
