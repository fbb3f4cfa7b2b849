//! The script format: what the scripted model answers, parsed and checked
//! before the server starts so that a typo fails the test at once rather than
//! as a confusing protocol error later.
//!
//! A script is TOML holding a list of `[[response]]` tables, consumed in order,
//! one per model call, each rendered in whichever wire format the request used
//! (OpenAI Chat Completions, OpenAI Responses or Anthropic Messages): every
//! key below works on each of them.
//!
//! ```toml
//! [[response]]
//! text = "Let me look."        # assistant text (optional)
//! tool_calls = [ { id = "call_1", name = "read_file", arguments = '{"path":"a.txt"}' } ]
//! chunk_size = 4               # split text and arguments into pieces of 4 chars
//! usage = { input_tokens = 12, output_tokens = 7 }
//! finish_reason = "length"     # override; OpenAI or Anthropic spelling
//! match = "alpha"              # only for requests whose last user text contains "alpha"
//! ```
//!
//! Keys of a streamed response:
//!
//! * `text` — assistant text. `{last_tool_result}` is replaced by the text of
//!   the request's last tool result and `{last_user}` by its last user text.
//! * `thinking` — the model's reasoning, streamed before the text (the same
//!   templates apply). OpenAI wire: as `delta.reasoning_content`, the way
//!   llama.cpp and DeepSeek stream it, whatever the request. Anthropic wire:
//!   as a `thinking` block with its `signature`, and only when the request
//!   asks for thinking (`"thinking": {"type": "enabled", ...}` or
//!   `{"type": "adaptive"}`) — the real API sends none otherwise. Responses
//!   wire: as a `reasoning` output item before the message, as a reasoning
//!   model always has one; its summary (the text, with
//!   `reasoning_summary_text` deltas) only when the request asks for one
//!   (`reasoning.summary`), and its `encrypted_content` only when the
//!   request asks for that (`include: ["reasoning.encrypted_content"]`) —
//!   sealed, so that an item sent back altered, or without its encrypted
//!   content under `store: false`, is a violation. Its tokens count in the
//!   output usage.
//! * `tool_calls` — `{ id, name, arguments }`; `id` defaults to
//!   `call_<response>_<n>`, `arguments` is a JSON string or a TOML table
//!   (rendered as JSON), default `{}`.
//! * `chunk_size` — pieces of N characters; by default text and arguments are
//!   each split into 3 pieces.
//! * `usage` — `{ input_tokens, output_tokens, cache_read_input_tokens,
//!   cache_creation_input_tokens }`, the first two defaulting to small
//!   non-zero numbers (10 and 5), the cache figures to 0; when tokens are
//!   counted (`context_window` or `prompt_caching`, below) to the request's
//!   counted input tokens — less what the prompt cache read and wrote,
//!   which are the cache figures — and a count of the streamed text and
//!   arguments (at least 1). A script's `input_tokens` wins over the count
//!   and the cache together (its cache figures are then its own, 0 unless
//!   given). The Responses wire reports the thinking's tokens as
//!   `output_tokens_details.reasoning_tokens`.
//! * `finish_reason` — `stop`/`end_turn`, `tool_calls`/`tool_use`,
//!   `length`/`max_tokens` are translated to the request's format (on the
//!   Responses wire `length`/`max_tokens` ends the stream with
//!   `response.incomplete`, reason `max_output_tokens`; anything else with
//!   `response.completed`); any other value is sent verbatim. By default:
//!   tool calls if there are any, else stop.
//! * `stall_after_chunks = N` — send the first N frames of the stream, then
//!   nothing until the client goes away (counted, see
//!   [`ScriptedModel::wait_for_disconnects`](crate::ScriptedModel::wait_for_disconnects)).
//! * `drop_after_chunks = N` — send the first N frames, then abort the
//!   connection. Frames count every `data:` frame, including OpenAI's
//!   `[DONE]`, Anthropic's `ping` and every event of a Responses stream
//!   (`response.created` is frame 1).
//! * `chunk_interval_ms = N` — pause N ms before every frame after the
//!   first, as a model generating tokens does.
//! * `after_requests = N` — send the first frame only once the server has
//!   received N requests (this one included): N responses scripted so are
//!   all streaming at once, whatever order their requests came in.
//! * `unoffered_tools = true` — the tool calls may name tools the request
//!   did not offer (a model making a tool up). Without it, a response whose
//!   call names a tool the request did not offer is served as scripted, and
//!   the request gets a protocol violation naming the tool and the offered
//!   ones: a real model only calls what it was offered, so either the
//!   script is wrong or agentbus left the tool out of the request.
//! * `stamped_chunks = N` — instead of `text`: N text pieces, each the
//!   wall-clock time it was sent (microseconds since the Unix epoch, 16
//!   digits) and a space. Benchmarks read the stamps to measure how long a
//!   chunk takes to reach a client.
//!
//! Other kinds of response (exclusive with the keys above except `match`):
//!
//! * `fixture = "openai/garbage.sse"` — a file under
//!   [`fixtures_dir`] (or an absolute path) served byte
//!   for byte as `text/event-stream`. Read when the script is loaded.
//! * `status = 429`, optional `headers = { "retry-after" = "1" }` and
//!   `body = '...'` — a plain HTTP reply, on any wire; `content-type`
//!   defaults to `application/json`.
//!
//! `match`: a response with `match = "s"` only serves requests whose last user
//! text contains `s`; among those they are consumed in order. Responses
//! without `match` serve every other request, in order. "Last user text" is
//! the text of the last user message that has any text: Anthropic user
//! messages holding only `tool_result` blocks are skipped, so routing is the
//! same in both formats and stays stable across a tool round.
//! Each image of that user message adds a line `[image: MEDIA_TYPE]` to its
//! text, so `match = "[image: "` serves requests that carry an image
//! (`match = "[image: image/png]"` a PNG). Image parts are validated as the
//! APIs do: the shape of the part or block, a supported media type, valid
//! base64 within 5 MB, and bytes of the kind the media type says.
//!
//! ## Context window
//!
//! A top-level key, written before the first `[[response]]` (TOML would put
//! it inside the table above it otherwise):
//!
//! ```toml
//! context_window = 8000
//!
//! [[response]]
//! text = "fits"
//! ```
//!
//! `context_window = N` makes the scripted model count every model call's
//! input tokens (see [`count_request`](crate::count_request) for the
//! convention) before a response is chosen, and record the count
//! ([`RecordedRequest::input_tokens`](crate::RecordedRequest::input_tokens)).
//! When the count plus the request's maximum output tokens (`max_tokens`, or
//! OpenAI's `max_completion_tokens` or `max_output_tokens`; 0 when absent)
//! exceeds N, the request is refused as the provider refuses it, with the
//! provider's error (HTTP 400 and its body; in the stream on the Responses
//! wire), and no response is consumed
//! ([`RecordedRequest::refused_for_length`](crate::RecordedRequest::refused_for_length)):
//!
//! * OpenAI: `{"error":{"message":"This model's maximum context length is N
//!   tokens. However, you requested T tokens (C in the messages, M in the
//!   completion). Please reduce the length of the messages or
//!   completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`
//!   with C the count, M the maximum output tokens and T = C + M;
//! * Anthropic, when C alone exceeds N: `{"type":"error","error":{"type":"invalid_request_error","message":"prompt
//!   is too long: C tokens > N maximum"}}`; otherwise `... "message":"input length and
//!   `max_tokens` exceed context limit: C + M > N, decrease input length or `max_tokens`
//!   and try again"` — both as the real API words them;
//! * OpenAI Responses (M is `max_output_tokens`): as OpenAI streams it, HTTP
//!   200 and `response.created`, `response.in_progress`, an `error` event
//!   `{"type":"error","error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Your
//!   input exceeds the context window of this model. Please adjust your
//!   input and try again.","param":"input"}}` and `response.failed` with
//!   that code and message.
//!
//! Without `context_window` nothing is counted or refused (unless
//! `prompt_caching = true`, below).
//!
//! ## Prompt caching
//!
//! Another top-level key: `prompt_caching = true | false`, by default on
//! exactly when `context_window` is set. On, the scripted model counts
//! every model call's tokens (as above) and caches prompts as the providers
//! do (the [`cache`](crate::cache) module has the rules): Anthropic the
//! prefixes up to the request's `cache_control` breakpoints, OpenAI every
//! prompt of at least 1,024 tokens, by `model` and `prompt_cache_key`; a
//! later request that shares a cached prefix reports it as read
//! (Anthropic's `cache_read_input_tokens`, with `cache_creation_input_tokens`
//! for what it wrote and `input_tokens` for the rest; OpenAI's
//! `prompt_tokens_details.cached_tokens`, in steps of 128, within
//! `prompt_tokens`). Entries live five minutes (an hour for Anthropic's
//! `"ttl": "1h"`) after their last use, on the server's clock, which tests
//! move with [`ScriptedModel::advance_clock`](crate::ScriptedModel::advance_clock)
//! instead of waiting. [`RecordedRequest`](crate::RecordedRequest) keeps
//! each call's figures.
//!
//! Whatever this says, an Anthropic request with more than four
//! `cache_control` blocks is refused with the API's HTTP 400 (`A maximum
//! of 4 blocks with cache_control may be provided. Found N.`), and so is
//! one marking a thinking block.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use axum::http::{HeaderName, HeaderValue, StatusCode};
use bytes::Bytes;
use serde::Deserialize;

use crate::fixtures_dir;

/// A parsed, checked script. Build one with [`Script::from_file`] or
/// [`Script::from_toml_str`] and hand it to
/// [`ScriptedModel::start`](crate::ScriptedModel::start).
#[derive(Debug, Clone)]
pub struct Script {
    pub(crate) responses: Vec<ScriptedResponse>,
    /// `context_window`: the token limit requests are checked against.
    pub(crate) context_window: Option<u64>,
    /// `prompt_caching`: whether prompts are cached (and so counted).
    pub(crate) prompt_caching: bool,
}

/// One `[[response]]`, checked.
#[derive(Debug, Clone)]
pub(crate) struct ScriptedResponse {
    /// `match`: the substring the last user text must contain.
    pub match_text: Option<String>,
    pub kind: ResponseKind,
}

#[derive(Debug, Clone)]
pub(crate) enum ResponseKind {
    /// A rendered SSE stream.
    Stream(StreamSpec),
    /// Raw bytes served as `text/event-stream`.
    Fixture(Bytes),
    /// A plain HTTP reply.
    Http {
        status: StatusCode,
        headers: Vec<(HeaderName, HeaderValue)>,
        body: Bytes,
    },
}

#[derive(Debug, Clone)]
pub(crate) struct StreamSpec {
    /// Template text; see [`crate::wire`] for the substitutions.
    pub text: String,
    /// Template of the reasoning streamed before the text (empty: none).
    pub thinking: String,
    pub tool_calls: Vec<ToolCall>,
    pub chunk_size: Option<usize>,
    /// `usage` as the script gives it; what it leaves out is filled in when
    /// the turn is resolved.
    pub usage: ScriptUsage,
    pub finish_reason: Option<String>,
    pub ending: Ending,
    /// Pause before each frame after the first.
    pub chunk_interval: Option<Duration>,
    /// Hold the first frame until this many requests have arrived.
    pub after_requests: Option<usize>,
    /// The calls may name tools the request did not offer (a model that
    /// makes a tool up); otherwise such a call is a protocol violation.
    pub unoffered_tools: bool,
}

/// Stands for the send time in a `stamped_chunks` piece until the frame is
/// sent; exactly as long as the 16-digit time that replaces it.
pub(crate) const SENT_AT_MARKER: &str = "{sent_at_micros}";

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolCall {
    pub id: String,
    pub name: String,
    /// JSON text of the arguments, as a model would stream it.
    pub arguments: String,
}

/// What a streamed answer reports as its usage. `input_tokens` is the
/// uncached input, as Anthropic counts it (OpenAI's `prompt_tokens` adds
/// the cache read back).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
    /// The part of `cache_creation_input_tokens` written for an hour.
    pub cache_creation_1h: u64,
}

/// A response's `usage` keys, each optional.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ScriptUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cache_read_input_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
}

/// How a rendered stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Complete,
    /// Send this many frames, then hold the connection open silently.
    StallAfter(usize),
    /// Send this many frames, then abort the connection.
    DropAfter(usize),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    context_window: Option<u64>,
    prompt_caching: Option<bool>,
    #[serde(default)]
    response: Vec<RawResponse>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResponse {
    text: Option<String>,
    thinking: Option<String>,
    tool_calls: Option<Vec<RawToolCall>>,
    chunk_size: Option<usize>,
    usage: Option<RawUsage>,
    finish_reason: Option<String>,
    #[serde(rename = "match")]
    match_text: Option<String>,
    fixture: Option<String>,
    status: Option<u16>,
    headers: Option<BTreeMap<String, String>>,
    body: Option<String>,
    stall_after_chunks: Option<usize>,
    drop_after_chunks: Option<usize>,
    chunk_interval_ms: Option<u64>,
    after_requests: Option<usize>,
    stamped_chunks: Option<usize>,
    unoffered_tools: Option<bool>,
    /// Only here to explain the mistake: they are top-level keys.
    context_window: Option<toml::Value>,
    prompt_caching: Option<toml::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolCall {
    id: Option<String>,
    name: String,
    arguments: Option<RawArguments>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawArguments {
    Json(String),
    Table(serde_json::Map<String, serde_json::Value>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl Script {
    /// Reads and checks a script file.
    pub fn from_file(path: impl AsRef<Path>) -> anyhow::Result<Script> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading script {}", path.display()))?;
        Script::from_toml_str(&text).with_context(|| format!("in script {}", path.display()))
    }

    /// Parses and checks a script given as TOML text (for scripts a test
    /// generates). Fixture files it names are read now.
    pub fn from_toml_str(toml_text: &str) -> anyhow::Result<Script> {
        let raw: RawScript = toml::from_str(toml_text).context("parsing script TOML")?;
        if raw.context_window == Some(0) {
            bail!("`context_window` must be at least 1");
        }
        let responses = raw
            .response
            .into_iter()
            .enumerate()
            .map(|(index, raw)| check(index, raw).with_context(|| format!("response[{index}]")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        Ok(Script {
            responses,
            context_window: raw.context_window,
            prompt_caching: raw.prompt_caching.unwrap_or(raw.context_window.is_some()),
        })
    }

    /// The script's `context_window`, if it sets one.
    pub fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    /// Whether prompts are cached (`prompt_caching`, by default whether
    /// there is a `context_window`).
    pub fn prompt_caching(&self) -> bool {
        self.prompt_caching
    }

    /// Whether model calls are counted: with a `context_window` or prompt
    /// caching.
    pub(crate) fn counts_tokens(&self) -> bool {
        self.context_window.is_some() || self.prompt_caching
    }

    /// Number of responses in the script.
    pub fn len(&self) -> usize {
        self.responses.len()
    }

    /// Whether the script has no responses at all.
    pub fn is_empty(&self) -> bool {
        self.responses.is_empty()
    }
}

fn check(index: usize, mut raw: RawResponse) -> anyhow::Result<ScriptedResponse> {
    for (key, misplaced) in [
        ("context_window", raw.context_window.is_some()),
        ("prompt_caching", raw.prompt_caching.is_some()),
    ] {
        if misplaced {
            bail!(
                "`{key}` is a top-level key of the script: \
                 write it before the first [[response]]"
            );
        }
    }
    let match_text = raw.match_text.take();
    let streamed = raw.text.is_some()
        || raw.thinking.is_some()
        || raw.tool_calls.is_some()
        || raw.chunk_size.is_some()
        || raw.usage.is_some()
        || raw.finish_reason.is_some()
        || raw.stall_after_chunks.is_some()
        || raw.drop_after_chunks.is_some()
        || raw.chunk_interval_ms.is_some()
        || raw.after_requests.is_some()
        || raw.stamped_chunks.is_some();
    let http = raw.status.is_some() || raw.headers.is_some() || raw.body.is_some();
    let fixture = raw.fixture.is_some();
    if [streamed, http, fixture]
        .iter()
        .filter(|kind| **kind)
        .count()
        > 1
    {
        bail!(
            "mixes kinds of response: a streamed reply (text, tool_calls, ...), \
             a plain HTTP reply (status, headers, body) and a fixture are exclusive"
        );
    }
    let kind = if let Some(fixture) = raw.fixture {
        let path = fixtures_dir().join(&fixture);
        let bytes =
            std::fs::read(&path).with_context(|| format!("reading fixture {}", path.display()))?;
        ResponseKind::Fixture(Bytes::from(bytes))
    } else if http {
        check_http(raw.status, raw.headers, raw.body)?
    } else {
        ResponseKind::Stream(check_stream(index, raw)?)
    };
    Ok(ScriptedResponse { match_text, kind })
}

fn check_http(
    status: Option<u16>,
    headers: Option<BTreeMap<String, String>>,
    body: Option<String>,
) -> anyhow::Result<ResponseKind> {
    let Some(status) = status else {
        bail!("`headers` and `body` need a `status`");
    };
    let status = StatusCode::from_u16(status).with_context(|| format!("bad status {status}"))?;
    let headers = headers
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| {
            let header = HeaderName::from_bytes(name.as_bytes())
                .with_context(|| format!("bad header name {name:?}"))?;
            let value = HeaderValue::from_str(&value)
                .with_context(|| format!("bad value for header {name:?}"))?;
            Ok((header, value))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(ResponseKind::Http {
        status,
        headers,
        body: Bytes::from(body.unwrap_or_default()),
    })
}

fn check_stream(index: usize, raw: RawResponse) -> anyhow::Result<StreamSpec> {
    if raw.chunk_size == Some(0) {
        bail!("`chunk_size` must be at least 1");
    }
    let (text, chunk_size) = match raw.stamped_chunks {
        Some(_) if raw.text.is_some() || raw.chunk_size.is_some() => {
            bail!("`stamped_chunks` makes the text itself: drop `text` and `chunk_size`")
        }
        Some(n) => {
            let piece = format!("{SENT_AT_MARKER} ");
            (piece.repeat(n), Some(piece.len()))
        }
        None => (raw.text.unwrap_or_default(), raw.chunk_size),
    };
    let ending = match (raw.stall_after_chunks, raw.drop_after_chunks) {
        (Some(_), Some(_)) => bail!("`stall_after_chunks` and `drop_after_chunks` are exclusive"),
        (Some(n), None) => Ending::StallAfter(n),
        (None, Some(n)) => Ending::DropAfter(n),
        (None, None) => Ending::Complete,
    };
    let tool_calls = raw
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(n, call)| {
            let arguments = match call.arguments {
                None => "{}".to_owned(),
                Some(RawArguments::Json(text)) => text,
                Some(RawArguments::Table(table)) => serde_json::Value::Object(table).to_string(),
            };
            ToolCall {
                id: call.id.unwrap_or_else(|| format!("call_{index}_{n}")),
                name: call.name,
                arguments,
            }
        })
        .collect();
    let usage = raw
        .usage
        .map_or_else(ScriptUsage::default, |usage| ScriptUsage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            cache_read_input_tokens: usage.cache_read_input_tokens,
            cache_creation_input_tokens: usage.cache_creation_input_tokens,
        });
    Ok(StreamSpec {
        text,
        thinking: raw.thinking.unwrap_or_default(),
        tool_calls,
        chunk_size,
        usage,
        finish_reason: raw.finish_reason,
        ending,
        chunk_interval: raw.chunk_interval_ms.map(Duration::from_millis),
        after_requests: raw.after_requests,
        unoffered_tools: raw.unoffered_tools.unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(script: &Script, index: usize) -> &StreamSpec {
        match &script.responses[index].kind {
            ResponseKind::Stream(spec) => spec,
            other => panic!("response {index} is not a stream: {other:?}"),
        }
    }

    #[test]
    fn parses_all_stream_keys() {
        let script = Script::from_toml_str(
            r#"
            [[response]]
            text = "hi"
            thinking = "greet them"
            tool_calls = [
              { id = "c1", name = "read_file", arguments = '{"path":"a"}' },
              { name = "ls", arguments = { dir = "." } },
              { name = "noargs" },
            ]
            chunk_size = 2
            usage = { output_tokens = 9 }
            finish_reason = "length"
            match = "alpha"
            stall_after_chunks = 3
            "#,
        )
        .expect("valid script");
        assert_eq!(script.len(), 1);
        assert_eq!(script.responses[0].match_text.as_deref(), Some("alpha"));
        let spec = stream(&script, 0);
        assert_eq!(spec.text, "hi");
        assert_eq!(spec.thinking, "greet them");
        assert_eq!(spec.chunk_size, Some(2));
        assert_eq!(spec.usage.input_tokens, None);
        assert_eq!(spec.usage.output_tokens, Some(9));
        assert_eq!(script.context_window(), None);
        assert_eq!(spec.finish_reason.as_deref(), Some("length"));
        assert_eq!(spec.ending, Ending::StallAfter(3));
        assert_eq!(spec.tool_calls[0].id, "c1");
        assert_eq!(spec.tool_calls[0].arguments, r#"{"path":"a"}"#);
        assert_eq!(spec.tool_calls[1].id, "call_0_1");
        assert_eq!(spec.tool_calls[1].arguments, r#"{"dir":"."}"#);
        assert_eq!(spec.tool_calls[2].arguments, "{}");
    }

    #[test]
    fn parses_http_and_fixture_responses() {
        let script = Script::from_toml_str(
            r#"
            [[response]]
            status = 429
            headers = { "retry-after" = "1" }
            body = '{"error":{"message":"rate limited"}}'

            [[response]]
            fixture = "openai/garbage.sse"
            "#,
        )
        .expect("valid script");
        match &script.responses[0].kind {
            ResponseKind::Http {
                status,
                headers,
                body,
            } => {
                assert_eq!(status.as_u16(), 429);
                assert_eq!(headers[0].0.as_str(), "retry-after");
                assert!(body.starts_with(b"{\"error\""));
            }
            other => panic!("not http: {other:?}"),
        }
        assert!(
            matches!(&script.responses[1].kind, ResponseKind::Fixture(bytes) if !bytes.is_empty())
        );
    }

    #[test]
    fn rejects_bad_scripts() {
        for (bad, why) in [
            ("[[response]]\ntext = 'a'\nstatus = 500", "mixes kinds"),
            ("[[response]]\nfixture = 'x'\ntext = 'a'", "mixes kinds"),
            ("[[response]]\nstatus = 500\nthinking = 'a'", "mixes kinds"),
            ("[[response]]\ntxet = 'a'", "unknown field"),
            ("[[response]]\nchunk_size = 0", "chunk_size"),
            (
                "[[response]]\nstall_after_chunks = 1\ndrop_after_chunks = 1",
                "exclusive",
            ),
            ("[[response]]\nbody = 'x'", "need a `status`"),
            (
                "[[response]]\nstamped_chunks = 2\ntext = 'a'",
                "drop `text`",
            ),
            ("[[response]]\nstatus = 1000", "bad status"),
            (
                "[[response]]\nfixture = 'no/such/file.sse'",
                "reading fixture",
            ),
            ("context_window = 0", "at least 1"),
            ("context_window = -5", "context_window"),
            ("context_window = 'big'", "context_window"),
            (
                "[[response]]\ntext = 'a'\ncontext_window = 100",
                "before the first [[response]]",
            ),
        ] {
            let error = Script::from_toml_str(bad).expect_err(bad);
            let message = format!("{error:#}");
            assert!(message.contains(why), "{bad:?} gave {message:?}");
        }
    }

    #[test]
    fn stamped_chunks_are_pieces_of_one_marker_each() {
        let script =
            Script::from_toml_str("[[response]]\nstamped_chunks = 3\nchunk_interval_ms = 5")
                .expect("valid script");
        let spec = stream(&script, 0);
        let pieces = crate::turn::pieces(&spec.text, spec.chunk_size);
        assert_eq!(pieces, vec!["{sent_at_micros} "; 3]);
        assert_eq!(spec.chunk_interval, Some(Duration::from_millis(5)));
    }

    #[test]
    fn context_window_is_a_top_level_key() {
        let script = Script::from_toml_str(
            "context_window = 8000\n[[response]]\ntext = 'a'\nusage = { input_tokens = 3 }",
        )
        .expect("valid script");
        assert_eq!(script.context_window(), Some(8000));
        assert_eq!(script.len(), 1);
        let usage = stream(&script, 0).usage;
        assert_eq!(usage.input_tokens, Some(3));
        assert_eq!(usage.output_tokens, None);
    }

    #[test]
    fn empty_script_is_allowed() {
        assert!(Script::from_toml_str("").expect("empty").is_empty());
    }
}
