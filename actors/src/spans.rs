//! The spans of a session's work, shaped after OpenTelemetry's GenAI
//! semantic conventions: one `turn` per user turn, and beneath it each
//! model call (`chat {model}`), tool call (`execute_tool {tool}`, with the
//! MCP request `tools/call {tool}` beneath it when the tool is an MCP
//! server's), approval wait and store commit. Every span carries
//! `session.id`.
//!
//! They are plain `tracing` spans of one target, [`TARGET`]. The binary
//! sends them on as OTLP traces when `[telemetry]` says where
//! (`src/telemetry.rs`), and leaves them out of the logs; with nothing
//! listening, making one costs a check of a cached flag, and no field is
//! formatted. The AgentLoop makes them (`session/turn_trace.rs`) and hands
//! each tool call's span to the ToolExecutor in its `RunTool`; the session
//! core never sees them.
//!
//! Never carries what was said or done: no prompt, reply, thinking, tool
//! argument or output, error text from a provider, and no secret — names,
//! ids, counts, classes of error and outcomes only.

use crate::model::{ModelEvent, ToolCall};
use crate::protocol::{ModelInfo, SessionId, Usage};
use crate::provider::ProviderError;
use tracing::Span;
use tracing::field::Empty;

/// The target of every span made here (and of nothing else).
pub const TARGET: &str = "agentbus_spans";

/// `turn`: one user turn of session `session` (a root: nothing of the
/// caller's becomes its parent). Its seq, stop reason and token usage are
/// recorded as they become known ([`record_usage`], [`record_turn_end`]).
pub fn turn(session: &SessionId, turn_id: u64) -> Span {
    tracing::info_span!(
        target: TARGET,
        parent: None,
        "turn",
        session.id = %session,
        gen_ai.conversation.id = %session,
        agentbus.turn.id = turn_id as i64,
        agentbus.turn.seq = Empty,
        agentbus.turn.stop_reason = Empty,
        agentbus.turn.steps = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// The turn's seq (its `user` event's).
pub fn record_turn_seq(turn: &Span, seq: u64) {
    turn.record("agentbus.turn.seq", seq as i64);
}

/// How the turn ended: its stop reason, model calls and tokens.
pub fn record_turn_end(turn: &Span, stop_reason: &str, steps: u32, usage: &Usage) {
    turn.record("agentbus.turn.stop_reason", stop_reason);
    turn.record("agentbus.turn.steps", i64::from(steps));
    record_usage(turn, usage);
    if stop_reason == "error" {
        turn.record("error.type", "error");
        turn.record("otel.status_code", "error");
    }
}

/// Token counts, as the GenAI conventions name them:
/// `gen_ai.usage.input_tokens` counts every input token (cached ones too),
/// the cache's share is said beside it.
pub fn record_usage(span: &Span, usage: &Usage) {
    span.record("gen_ai.usage.input_tokens", count(usage.all_input()));
    span.record("gen_ai.usage.output_tokens", count(usage.output_tokens));
    if usage.cache_read_input_tokens > 0 {
        span.record(
            "gen_ai.usage.cache_read.input_tokens",
            count(usage.cache_read_input_tokens),
        );
    }
    if usage.cache_creation_input_tokens > 0 {
        span.record(
            "gen_ai.usage.cache_creation.input_tokens",
            count(usage.cache_creation_input_tokens),
        );
    }
}

/// An integer attribute (OTLP's are signed; a `u64` would go as text).
fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The `gen_ai.provider.name` of a profile's wire format.
fn provider_name(wire: &str) -> &str {
    match wire {
        "openai" | "openai-responses" => "openai",
        other => other,
    }
}

/// `chat {model}`: one model call of `turn` on profile `profile` (`model`
/// describes it when the session knows it), retries included.
pub fn model_call(
    turn: &Span,
    session: &SessionId,
    profile: &str,
    model: Option<&ModelInfo>,
    max_tokens: Option<u32>,
) -> Span {
    let (provider, model_id) = match model {
        Some(info) => (provider_name(&info.provider), info.model.as_str()),
        None => ("unknown", profile),
    };
    let span = tracing::info_span!(
        target: TARGET,
        parent: turn,
        "chat",
        otel.name = %format_args!("chat {model_id}"),
        otel.kind = "client",
        session.id = %session,
        gen_ai.conversation.id = %session,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = provider,
        gen_ai.request.model = model_id,
        gen_ai.request.max_tokens = Empty,
        agentbus.model.profile = profile,
        agentbus.model.attempts = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.response.finish_reasons = Empty,
        agentbus.outcome = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    );
    if let Some(max) = max_tokens {
        span.record("gen_ai.request.max_tokens", i64::from(max));
    }
    span
}

/// What one model call's stream showed, recorded on its span: attempts,
/// tokens, the finish reason, or the class of its failure. A call dropped
/// before its end (an interrupt) is recorded as `cancelled`.
pub struct ModelCallTrace {
    span: Span,
    attempts: u32,
    usage: Usage,
    ended: bool,
}

impl ModelCallTrace {
    pub fn new(span: Span) -> Self {
        ModelCallTrace {
            span,
            attempts: 1,
            usage: Usage::default(),
            ended: false,
        }
    }

    /// One item of the call's stream.
    pub fn saw(&mut self, item: &Option<Result<ModelEvent, ProviderError>>) {
        if self.span.is_disabled() || self.ended {
            return;
        }
        match item {
            Some(Ok(ModelEvent::Usage(usage))) => self.usage.overwrite_with(*usage),
            Some(Ok(ModelEvent::Retrying { .. })) => {
                self.attempts += 1;
                self.usage = Usage::default();
            }
            Some(Ok(ModelEvent::Finished { finish_reason })) => {
                self.span
                    .record("gen_ai.response.finish_reasons", finish_reason.as_str());
                self.end("ok");
            }
            Some(Ok(_)) => {}
            Some(Err(error)) => {
                self.span.record("error.type", error.error_type().as_str());
                self.span.record("otel.status_code", "error");
                self.end("error");
            }
            None => {
                self.span.record("error.type", "stream_ended");
                self.span.record("otel.status_code", "error");
                self.end("error");
            }
        }
    }

    fn end(&mut self, outcome: &str) {
        self.ended = true;
        self.span.record("agentbus.outcome", outcome);
        self.span
            .record("agentbus.model.attempts", i64::from(self.attempts));
        record_usage(&self.span, &self.usage);
    }
}

impl Drop for ModelCallTrace {
    fn drop(&mut self) {
        if !self.ended && !self.span.is_disabled() {
            self.end("cancelled");
        }
    }
}

/// `execute_tool {tool}`: tool call `call` of `turn`; `mcp_server` names
/// the server whose tool it is. Its outcome is recorded by whoever runs
/// it ([`record_tool_outcome`]).
pub fn tool_call(
    turn: &Span,
    session: &SessionId,
    call: &ToolCall,
    mcp_server: Option<&str>,
) -> Span {
    tracing::info_span!(
        target: TARGET,
        parent: turn,
        "execute_tool",
        otel.name = %format_args!("execute_tool {}", call.name),
        session.id = %session,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.type = if mcp_server.is_some() { "extension" } else { "function" },
        agentbus.mcp.server = mcp_server,
        agentbus.outcome = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// How a tool call ended: `ok`, `error` (`error_type` says which kind:
/// `tool_error`, `timeout`, ...) or `cancelled`.
pub fn record_tool_outcome(span: &Span, outcome: &str, error_type: Option<&str>) {
    span.record("agentbus.outcome", outcome);
    if let Some(kind) = error_type {
        span.record("error.type", kind);
        span.record("otel.status_code", "error");
    }
}

/// What a tool needs to trace the calls it makes elsewhere: its call's
/// span and session (none when the call is not traced).
#[derive(Clone, Debug)]
pub struct CallTrace {
    pub span: Span,
    pub session: Option<SessionId>,
}

impl Default for CallTrace {
    fn default() -> Self {
        CallTrace {
            span: Span::none(),
            session: None,
        }
    }
}

impl CallTrace {
    /// `tools/call {tool}`: the MCP request for `tool` (its name on the
    /// server) to server `server`, beneath the call's span (none when the
    /// call is not traced).
    pub fn mcp_call(&self, server: &str, tool: &str) -> Span {
        if self.span.is_none() {
            return Span::none();
        }
        let session = self.session.as_ref().map(|s| s.0.as_str()).unwrap_or("");
        tracing::info_span!(
            target: TARGET,
            parent: &self.span,
            "mcp",
            otel.name = %format_args!("tools/call {tool}"),
            otel.kind = "client",
            session.id = session,
            mcp.method.name = "tools/call",
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = tool,
            agentbus.mcp.server = server,
            agentbus.outcome = Empty,
            error.type = Empty,
            otel.status_code = Empty,
        )
    }
}

/// `approval wait`: the time turn `turn` waits for the user's answer to
/// the approval request of call `call_id` (of tool `tool`); the answer is
/// recorded with [`record_approval`].
pub fn approval_wait(
    turn: &Span,
    session: &SessionId,
    request_id: &str,
    tool: &str,
    call_id: &str,
) -> Span {
    tracing::info_span!(
        target: TARGET,
        parent: turn,
        "approval wait",
        session.id = %session,
        gen_ai.tool.name = tool,
        gen_ai.tool.call.id = call_id,
        agentbus.approval.request_id = request_id,
        agentbus.approval.outcome = Empty,
    )
}

/// The answer to an approval request (`allowed_once`, `rejected`, ...).
pub fn record_approval(span: &Span, outcome: &str) {
    span.record("agentbus.approval.outcome", outcome);
}

/// `store commit`: the commit of `events` events of `turn`.
pub fn store_commit(turn: &Span, session: &SessionId, events: usize) -> Span {
    tracing::info_span!(
        target: TARGET,
        parent: turn,
        "store commit",
        session.id = %session,
        agentbus.store.events = count(events as u64),
        agentbus.outcome = Empty,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// How a commit ended: `None` when it was stored, else the class of the
/// failure.
pub fn record_commit(span: &Span, failure: Option<&str>) {
    match failure {
        None => span.record("agentbus.outcome", "ok"),
        Some(kind) => {
            span.record("agentbus.outcome", "error");
            span.record("error.type", kind);
            span.record("otel.status_code", "error")
        }
    };
}
