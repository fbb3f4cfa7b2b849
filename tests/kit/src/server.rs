//! The HTTP server: binds 127.0.0.1, routes the four endpoints, records and
//! validates each request, and answers model calls from the script (through
//! the prompt cache, when the script caches prompts). This is
//! the public face of the kit ([`ScriptedModel`]); the rules it applies live
//! in the modules it calls.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Connections waiting to be accepted (the kernel caps it at
/// `net.core.somaxconn`).
const ACCEPT_QUEUE: u32 = 8192;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt as _;
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::cache::{self, CacheUsage, Clock, PromptCache};
use crate::playback::Playback;
use crate::record::{self, RecordedRequest, Recorder};
use crate::script::{ResponseKind, Script};
use crate::turn::Turn;
use crate::wire::{self, Wire};
use crate::{
    models, render_anthropic, render_openai, render_responses, stream, thinking, tokens, validate,
};

/// Largest request body accepted.
const MAX_BODY: usize = 32 * 1024 * 1024;

/// A running scripted model server. Dropping it stops the server (stalled
/// streams are ended too).
#[derive(Debug)]
pub struct ScriptedModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    task: JoinHandle<()>,
}

#[derive(Debug)]
struct Shared {
    playback: Mutex<Playback>,
    recorder: Arc<Recorder>,
    shutdown: watch::Receiver<bool>,
    serial: AtomicUsize,
    /// The script's `context_window`: when set, model calls are counted and
    /// oversize ones refused.
    context_window: Option<u64>,
    /// Whether model calls are counted (a window, or prompt caching).
    counts_tokens: bool,
    /// The prompt cache, when the script caches prompts.
    cache: Option<Mutex<PromptCache>>,
    /// The time the cache's entries expire by.
    clock: Clock,
}

impl ScriptedModel {
    /// Starts serving `script` on `127.0.0.1` on a free port.
    pub async fn start(script: Script) -> anyhow::Result<ScriptedModel> {
        ScriptedModel::start_on_port(script, 0).await
    }

    /// Starts serving `script` on `127.0.0.1:port` (`0` picks a free port).
    pub async fn start_on_port(script: Script, port: u16) -> anyhow::Result<ScriptedModel> {
        // A thousand sessions starting their turns at once connect at once:
        // the accept queue holds them all (tokio's default of 1,024 spills
        // over, and a dropped SYN is retried only after a second).
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.set_reuseaddr(true)?;
        socket.bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))?;
        let listener = socket.listen(ACCEPT_QUEUE)?;
        let addr = listener.local_addr()?;
        let (shutdown, shutdown_rx) = watch::channel(false);
        let context_window = script.context_window;
        let counts_tokens = script.counts_tokens();
        let cache = script
            .prompt_caching
            .then(|| Mutex::new(PromptCache::default()));
        let shared = Arc::new(Shared {
            playback: Mutex::new(Playback::new(script)),
            recorder: Arc::new(Recorder::new()),
            shutdown: shutdown_rx.clone(),
            serial: AtomicUsize::new(0),
            context_window,
            counts_tokens,
            cache,
            clock: Clock::new(),
        });
        let app = Router::new().fallback(handle).with_state(shared.clone());
        // Each frame leaves when it is written, as a model server's do
        // (Nagle's algorithm would hold a paced chunk back).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let mut stop = shutdown_rx;
        let task = tokio::spawn(async move {
            let serving = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stop.wait_for(|stopping| *stopping).await;
            });
            // Nobody is left to tell about an accept loop failure; the test
            // sees it as requests that never arrive.
            let _ = serving.await;
        });
        Ok(ScriptedModel {
            addr,
            shared,
            shutdown,
            task,
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Base URL for OpenAI clients, of either OpenAI wire (Chat
    /// Completions and Responses): `http://127.0.0.1:PORT/v1`.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Base URL for Anthropic clients: `http://127.0.0.1:PORT`.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request received so far, in arrival order (model calls, model
    /// listings and stray requests alike).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.recorder.requests()
    }

    /// The requests that were model calls (to any wire format's
    /// endpoint), in order.
    pub fn model_calls(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| {
                r.path.ends_with("/chat/completions")
                    || r.path.ends_with("/messages")
                    || r.path.ends_with("/responses")
            })
            .collect()
    }

    /// Every protocol violation so far, each prefixed with its request, e.g.
    /// `request 1 (POST /v1/chat/completions): messages[2]: ...`. The index
    /// is the request's position in [`requests`](Self::requests).
    pub fn violations(&self) -> Vec<String> {
        record::prefixed(&self.requests(), |request| &request.violations)
    }

    /// Every script-side problem so far (script exhausted, template with
    /// nothing to fill it, unknown endpoint), prefixed like
    /// [`violations`](Self::violations).
    pub fn problems(&self) -> Vec<String> {
        record::prefixed(&self.requests(), |request| &request.problems)
    }

    /// Resolves once at least `n` requests have arrived (they are recorded
    /// before their response is sent). Wrap it in `tokio::time::timeout`.
    pub async fn wait_for_requests(&self, n: usize) {
        self.shared.recorder.wait_for_requests(n).await;
    }

    /// Resolves once at least `n` stalled streams (`stall_after_chunks`) saw
    /// their client go away. Wrap it in `tokio::time::timeout`.
    pub async fn wait_for_disconnects(&self, n: usize) {
        self.shared.recorder.wait_for_disconnects(n).await;
    }

    /// How many stalled streams saw their client go away so far.
    pub fn disconnects(&self) -> usize {
        self.shared.recorder.disconnects()
    }

    /// Move the server's clock `by` forward at once: what the prompt cache
    /// holds expires as if that much time had passed (five minutes after
    /// its last use, an hour for Anthropic's `"ttl": "1h"`), without a test
    /// waiting for it.
    pub fn advance_clock(&self, by: std::time::Duration) {
        self.shared.clock.advance(by);
    }

    /// Responses of the script not consumed yet.
    pub fn remaining_responses(&self) -> usize {
        self.shared
            .playback
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remaining()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
        // Connections still open are not waited for.
        self.task.abort();
    }
}

/// Everything about a request except its body.
struct Arrival {
    method: String,
    path: String,
    headers: BTreeMap<String, String>,
}

impl Arrival {
    fn record(self, shared: &Shared, body: Value, violations: Vec<String>) -> Recording {
        Recording {
            request: RecordedRequest {
                method: self.method,
                path: self.path,
                headers: self.headers,
                body,
                violations,
                problems: Vec::new(),
                response: None,
                input_tokens: None,
                refused_for_length: false,
                cache: None,
            },
            recorder: shared.recorder.clone(),
        }
    }
}

/// A request about to be recorded; problems may still be added.
struct Recording {
    request: RecordedRequest,
    recorder: Arc<Recorder>,
}

impl Recording {
    fn problem(mut self, problem: impl Into<String>) -> Recording {
        self.request.problems.push(problem.into());
        self
    }

    fn save(self) {
        self.recorder.record(self.request);
    }
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let arrival = Arrival {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        headers: header_map(&parts.headers),
    };
    let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(error) => {
            let message = format!("could not read the request body: {error}");
            arrival
                .record(&shared, Value::Null, Vec::new())
                .problem(message.clone())
                .save();
            return error_reply(Wire::OpenAi, StatusCode::BAD_REQUEST, &message);
        }
    };
    match (&parts.method, arrival.path.as_str()) {
        (&Method::POST, "/v1/chat/completions") => {
            model_call(&shared, Wire::OpenAi, arrival, &bytes)
        }
        (&Method::POST, "/v1/messages") => model_call(&shared, Wire::Anthropic, arrival, &bytes),
        (&Method::POST, "/v1/responses") => model_call(&shared, Wire::Responses, arrival, &bytes),
        (&Method::GET, "/v1/models") => {
            arrival.record(&shared, raw_body(&bytes), Vec::new()).save();
            axum::Json(json!({
                "object": "list",
                "data": [{"id": "scripted", "object": "model", "created": 0, "owned_by": "agentbus-testkit"}],
            }))
            .into_response()
        }
        _ => {
            let message = format!(
                "scripted model: no endpoint {} {}",
                arrival.method, arrival.path
            );
            arrival
                .record(&shared, raw_body(&bytes), Vec::new())
                .problem(message.clone())
                .save();
            error_reply(Wire::OpenAi, StatusCode::NOT_FOUND, &message)
        }
    }
}

/// A body that is not a model call: JSON if it parses, else its text.
fn raw_body(bytes: &Bytes) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

fn model_call(shared: &Shared, wire: Wire, arrival: Arrival, bytes: &Bytes) -> Response {
    let body: Value = match serde_json::from_slice(bytes) {
        Ok(body) => body,
        Err(error) => {
            let message = format!("request body is not JSON: {error}");
            arrival
                .record(shared, raw_body(bytes), vec![message.clone()])
                .save();
            return error_reply(wire, StatusCode::BAD_REQUEST, &message);
        }
    };
    let violations = validate::request(wire, &body);
    // Counted as the provider counts: without the cache marks.
    let input_tokens = shared
        .counts_tokens
        .then(|| tokens::count_request(wire, &cache::canonical(&body)));
    let unusable = if !body.is_object() {
        Some("request body must be a JSON object".to_owned())
    } else if wire == Wire::Responses
        && !body
            .get("input")
            .is_some_and(|input| input.is_array() || input.is_string())
    {
        Some("request body needs an `input` (a string or an array of items)".to_owned())
    } else if wire != Wire::Responses && !body.get("messages").is_some_and(Value::is_array) {
        Some("request body needs a `messages` array".to_owned())
    } else if body.get("stream") != Some(&Value::Bool(true)) {
        Some(
            "streaming is required: the scripted model only answers requests with \"stream\": true"
                .to_owned(),
        )
    } else {
        None
    };
    let mut recording = arrival.record(shared, body, violations);
    recording.request.input_tokens = input_tokens;
    if let Some(message) = unusable {
        recording.save();
        return error_reply(wire, StatusCode::BAD_REQUEST, &message);
    }
    answer(shared, wire, recording)
}

/// Picks the scripted response for a valid model call, records the request
/// and renders the reply. A Responses-only model on Chat Completions, and
/// then a request over the context window, are refused first, without
/// consuming a response.
fn answer(shared: &Shared, wire: Wire, mut recording: Recording) -> Response {
    let body = &recording.request.body;
    if wire == Wire::OpenAi && models::responses_only(&wire::model(body)) {
        // A profile's mistake, not agentbus's: refused as OpenAI refuses
        // it, and no violation.
        recording.save();
        let body = json!({"error": {
            "message": models::RESPONSES_ONLY,
            "type": "invalid_request_error",
            "param": "model",
            "code": null,
        }});
        return (StatusCode::NOT_FOUND, axum::Json(body)).into_response();
    }
    if let (Some(window), Some(counted)) = (shared.context_window, recording.request.input_tokens) {
        let completion = tokens::max_output_tokens(wire, body);
        if counted.saturating_add(completion) > window {
            recording.request.refused_for_length = true;
            let model = wire::model(body);
            recording.save();
            return too_long_reply(wire, window, counted, completion, &model);
        }
    }
    if wire == Wire::Anthropic
        && let Some(message) = thinking::refusal(body)
    {
        // Refused as the API refuses it, and a violation: agentbus sent
        // something a real provider rejects.
        recording
            .request
            .violations
            .push(format!("thinking: {message}"));
        recording.save();
        return error_reply(wire, StatusCode::BAD_REQUEST, &message);
    }
    if wire == Wire::Anthropic
        && let Some(message) = cache::refusal(body)
    {
        recording
            .request
            .violations
            .push(format!("cache_control: {message}"));
        recording.save();
        return error_reply(wire, StatusCode::BAD_REQUEST, &message);
    }
    let chosen = shared
        .playback
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .next(wire::last_user_text(body).as_deref());
    let (index, response) = match chosen {
        Ok(chosen) => chosen,
        Err(message) => {
            recording.problem(message.clone()).save();
            return error_reply(wire, StatusCode::INTERNAL_SERVER_ERROR, &message);
        }
    };
    recording.request.response = Some(index);
    match response.kind {
        ResponseKind::Http {
            status,
            headers,
            body,
        } => {
            recording.save();
            let mut reply = Response::new(Body::from(body));
            *reply.status_mut() = status;
            reply.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            for (name, value) in headers {
                reply.headers_mut().insert(name, value);
            }
            reply
        }
        ResponseKind::Fixture(bytes) => {
            recording.save();
            event_stream(Body::from(bytes))
        }
        ResponseKind::Stream(spec) => {
            if !spec.unoffered_tools {
                let offered = wire::offered_tools(body);
                let unoffered = spec
                    .tool_calls
                    .iter()
                    .filter(|c| !offered.contains(&c.name))
                    .map(|call| {
                        format!(
                            "tools: response {index} calls the tool `{}`, which this request did not offer (offered: {offered:?}); a real model only calls offered tools (set `unoffered_tools = true` on the response to script a made-up tool)",
                            call.name
                        )
                    });
                recording.request.violations.extend(unoffered);
            }
            let serial = shared.serial.fetch_add(1, Ordering::Relaxed);
            let cached: Option<CacheUsage> = match (&shared.cache, recording.request.input_tokens) {
                (Some(cache), Some(total)) => {
                    Some(cache.lock().unwrap_or_else(PoisonError::into_inner).serve(
                        wire,
                        body,
                        total,
                        shared.clock.now(),
                    ))
                }
                _ => None,
            };
            let (turn, problems) = Turn::resolve(
                &spec,
                wire,
                body,
                serial,
                recording.request.input_tokens,
                cached,
            );
            recording.request.cache = cached;
            let frames = match wire {
                Wire::OpenAi => render_openai::render(&turn, wire::include_usage(body)),
                Wire::Anthropic => render_anthropic::render(&turn),
                Wire::Responses => render_responses::render(&turn, body),
            };
            recording.request.problems.extend(problems);
            recording.save();
            event_stream(stream::body(
                frames,
                spec.ending,
                spec.chunk_interval,
                spec.after_requests,
                shared.recorder.clone(),
                shared.shutdown.clone(),
            ))
        }
    }
}

fn event_stream(body: Body) -> Response {
    let mut reply = Response::new(body);
    let headers = reply.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    reply
}

/// A JSON error in the provider's own error shape (OpenAI's two wires
/// share theirs).
fn error_reply(wire: Wire, status: StatusCode, message: &str) -> Response {
    let body = match wire {
        Wire::OpenAi | Wire::Responses => json!({"error": {
            "message": message,
            "type": if status.is_server_error() { "server_error" } else { "invalid_request_error" },
            "code": null,
        }}),
        Wire::Anthropic => json!({"type": "error", "error": {
            "type": if status.is_server_error() { "api_error" } else { "invalid_request_error" },
            "message": message,
        }}),
    };
    (status, axum::Json(body)).into_response()
}

/// The provider's refusal of a request whose `prompt` input tokens plus
/// `completion` maximum output tokens exceed the context `window`. On the
/// Responses wire it comes in the stream, as OpenAI sends it.
fn too_long_reply(wire: Wire, window: u64, prompt: u64, completion: u64, model: &str) -> Response {
    let body = match wire {
        Wire::Responses => {
            let frames = render_responses::too_long(model);
            return event_stream(Body::from(frames.concat()));
        }
        Wire::OpenAi => json!({"error": {
            "message": format!(
                "This model's maximum context length is {window} tokens. However, you requested \
                 {} tokens ({prompt} in the messages, {completion} in the completion). \
                 Please reduce the length of the messages or completion.",
                prompt.saturating_add(completion),
            ),
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }}),
        // Anthropic says which of the two overflowed: the prompt alone, or
        // the prompt with the requested output.
        Wire::Anthropic if prompt > window => json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": format!("prompt is too long: {prompt} tokens > {window} maximum"),
        }}),
        Wire::Anthropic => json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": format!(
                "input length and `max_tokens` exceed context limit: {prompt} + {completion} > {window}, \
                 decrease input length or `max_tokens` and try again"
            ),
        }}),
    };
    (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
}

fn header_map(headers: &HeaderMap) -> BTreeMap<String, String> {
    let mut map: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in headers {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        map.entry(name.as_str().to_owned())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(&value);
            })
            .or_insert(value);
    }
    map
}
