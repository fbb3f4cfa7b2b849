//! The spans of the turns one AgentLoop runs ([`crate::spans`]): a `turn`
//! span from the step that starts a turn to the step that ends it (its
//! last events committed), and the spans of its work made beneath it —
//! model calls, tool calls, approval waits, store commits.
//!
//! The AgentLoop tells it which turn the core says runs (before a step's
//! effects are performed, and after), and every event it stamps; it asks
//! it for the span of each piece of work it starts. Owns nothing else and
//! decides nothing: with no telemetry the spans are disabled and every
//! call here is a check of a flag. Never reaches into the core, which
//! knows nothing of spans.

use crate::model::{ModelRequest, ToolCall, ToolOrigin, ToolSpec};
use crate::protocol::{AgentMessage, ApprovalResolved, InputId, ModelInfo, SessionId};
use crate::spans;
use std::collections::HashMap;
use tracing::Span;

pub struct TurnTraces {
    session: SessionId,
    /// The running turn's span, and, while its last events are being
    /// committed, the span of a turn that has just ended.
    turns: Vec<(InputId, Span)>,
    /// The approval requests waiting for an answer: their turn and span.
    approvals: HashMap<String, (InputId, Span)>,
}

impl TurnTraces {
    pub fn new(session: SessionId) -> Self {
        TurnTraces {
            session,
            turns: Vec::new(),
            approvals: HashMap::new(),
        }
    }

    /// The core says turn `running` runs (told after a step, before its
    /// effects): a turn not seen before gets its span.
    pub fn started(&mut self, running: Option<InputId>) {
        if let Some(id) = running
            && !self.turns.iter().any(|(turn, _)| *turn == id)
        {
            self.turns.push((id, spans::turn(&self.session, id)));
        }
    }

    /// The step's effects were performed: the spans of the turns that no
    /// longer run end (and those of their approval waits, answered or not).
    pub fn settle(&mut self, running: Option<InputId>) {
        if self.turns.iter().all(|(turn, _)| Some(*turn) == running) {
            return;
        }
        self.turns.retain(|(turn, _)| Some(*turn) == running);
        self.approvals.retain(|_, (turn, _)| Some(*turn) == running);
    }

    fn span_of(&self, turn: Option<InputId>) -> Option<&Span> {
        let turn = turn?;
        self.turns
            .iter()
            .find(|(id, _)| *id == turn)
            .map(|(_, span)| span)
            .filter(|span| !span.is_disabled())
    }

    /// What an event stamped with `seq` tells the spans of its turn: the
    /// turn's seq (`user`), its end (`result`), an approval asked or
    /// answered.
    pub fn saw(&mut self, turn_id: Option<InputId>, message: &AgentMessage, seq: u64) {
        let Some(turn) = self.span_of(turn_id) else {
            return;
        };
        match message {
            AgentMessage::User(_) => spans::record_turn_seq(turn, seq),
            AgentMessage::Result(result) => spans::record_turn_end(
                turn,
                result.stop_reason.as_str(),
                result.steps,
                &result.usage,
            ),
            AgentMessage::ApprovalRequest(asked) if asked.child_session.is_none() => {
                let span = spans::approval_wait(
                    turn,
                    &self.session,
                    &asked.request_id,
                    &asked.name,
                    &asked.call_id,
                );
                if let Some(turn_id) = turn_id {
                    self.approvals
                        .insert(asked.request_id.clone(), (turn_id, span));
                }
            }
            AgentMessage::System(system) if !self.approvals.is_empty() => {
                if let Some(resolved) = system.payload::<ApprovalResolved>()
                    && let Some((_, span)) = self.approvals.remove(&resolved.request_id)
                {
                    let outcome = serde_json::to_value(resolved.outcome)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default();
                    spans::record_approval(&span, &outcome);
                }
            }
            _ => {}
        }
    }

    /// The span of a model call of turn `running` (none outside a turn).
    pub fn model_call(
        &self,
        running: Option<InputId>,
        request: &ModelRequest,
        models: &[ModelInfo],
    ) -> Span {
        let Some(turn) = self.span_of(running) else {
            return Span::none();
        };
        let model = models.iter().find(|m| m.name == request.profile);
        let max_tokens = request.output_cap(model.and_then(|m| m.max_output_tokens));
        spans::model_call(turn, &self.session, &request.profile, model, max_tokens)
    }

    /// The span of tool call `call` of turn `running`, one of `tools`
    /// (none outside a turn).
    pub fn tool_call(&self, running: Option<InputId>, call: &ToolCall, tools: &[ToolSpec]) -> Span {
        let Some(turn) = self.span_of(running) else {
            return Span::none();
        };
        let server = tools
            .iter()
            .find(|t| t.name == call.name)
            .and_then(|t| match &t.origin {
                ToolOrigin::Mcp { server, .. } => Some(server.as_str()),
                ToolOrigin::Builtin => None,
            });
        spans::tool_call(turn, &self.session, call, server)
    }

    /// The span of a commit whose last event belongs to turn `turn_id`
    /// (none for a commit outside a turn).
    pub fn store_commit(&self, turn_id: Option<InputId>, events: usize) -> Span {
        match self.span_of(turn_id) {
            Some(turn) => spans::store_commit(turn, &self.session, events),
            None => Span::none(),
        }
    }
}
