//! A session rebuilt from its persisted events: the fold.
//!
//! Loading a session replays its log into a fresh state: history, model,
//! usage and the next input id come back exactly as the live session had
//! them (a property test in `tests.rs` checks this against the live core).
//! If the process died mid-turn, the log ends inside a turn; `restore` then
//! returns the events that close it — a cancelled result for every tool call
//! without one, and a `result` with `stop_reason: error` — so the history
//! the model sees next is valid. Pure: no I/O, no clock.

use super::context::compaction::Summary;
use super::effect::Effect;
use super::state::SessionState;
use super::step::push_tool_result;
use crate::model::ToolOutcome;
use crate::permissions::Rule;
use crate::protocol::context::Compacted;
use crate::protocol::system::{Attachments, ModelSwitched, SessionStarted};
use crate::protocol::{
    AgentMessage, AgentSwitched, ApprovalOutcome, ApprovalResolved, ContentBlock, EventEnvelope,
    InputId, Message, ModeChanged, ResultEvent, StopReason, SystemEvent, SystemSubtype, Usage,
};

/// Why a turn was closed on load.
pub const UNFINISHED_TURN: &str = "agentbus stopped before this turn finished (the process exited); the turn was closed when the session was loaded";

/// A turn seen in the log without its `result` yet.
struct OpenTurn {
    id: InputId,
    steps: u32,
    usage: Usage,
    last_text: String,
    /// Tool calls of the turn's last assistant message without a result.
    pending: Vec<(String, String)>,
    /// Approval requests not settled: (request id, call id, tool).
    requests: Vec<(String, String, String)>,
}

/// Fold `events` (one session's persisted events, in seq order) into
/// `state`, a fresh state built from the current configuration. Returns the
/// effects that close an unfinished turn (empty when the log
/// ends between turns).
pub fn restore(state: &mut SessionState, events: &[EventEnvelope]) -> Vec<Effect> {
    let mut open: Option<OpenTurn> = None;
    for event in events {
        if let Some(turn_id) = event.turn_id {
            state.next_input_id = state.next_input_id.max(turn_id + 1);
        }
        state.context.seqs.observe(&event.message, event.seq);
        match &event.message {
            AgentMessage::System(s) => match s.subtype {
                SystemSubtype::Cleared => {
                    state.history.clear();
                    state.context.clear();
                    state.plan.clear();
                }
                SystemSubtype::Plan => {
                    if let Some(plan) = s.payload::<crate::protocol::Plan>() {
                        state.plan = plan.todos;
                    }
                }
                SystemSubtype::Compacted => {
                    if let Some(compacted) = s.payload::<Compacted>() {
                        state.context.summary = Some(Summary {
                            first_kept: compacted.first_kept.min(state.history.len()),
                            text: compacted.summary,
                        });
                        state.context.compactions += 1;
                        state.count_call(compacted.usage);
                    }
                }
                SystemSubtype::SessionStarted => {
                    let started = s.payload::<SessionStarted>().unwrap_or_default();
                    if let Some(context) = started.context {
                        state.context.session = Some(context);
                    }
                    // A new session's mode is its own; a resumed one keeps
                    // the mode it had (later `mode` events win).
                    if let Some(mode) = started.permission_mode.filter(|_| !started.resumed) {
                        state.permissions.mode = mode;
                    }
                    // Likewise its agent (a name no longer defined is kept:
                    // the session then runs like `build`, and says so).
                    if let Some(agent) = started.agent.filter(|_| !started.resumed) {
                        state.agent = agent;
                    }
                }
                SystemSubtype::Mode => {
                    if let Some(changed) = s.payload::<ModeChanged>() {
                        state.permissions.mode = changed.mode;
                    }
                }
                SystemSubtype::Agent => {
                    if let Some(switched) = s.payload::<AgentSwitched>() {
                        state.agent = switched.agent;
                        if state.config.models.iter().any(|m| m.name == switched.model) {
                            state.model = switched.model;
                        }
                        state.permissions.mode = switched.permission_mode;
                    }
                }
                SystemSubtype::ApprovalResolved => {
                    if let Some(resolved) = s.payload::<ApprovalResolved>() {
                        let own = resolved.child_session.is_none();
                        if let Some(rule) = resolved
                            .rule
                            .filter(|_| own)
                            .and_then(|r| Rule::parse(&r).ok())
                        {
                            state.permissions.add(rule);
                        }
                        if let Some(turn) = open.as_mut() {
                            turn.requests
                                .retain(|(id, _, _)| *id != resolved.request_id);
                        }
                    }
                }
                // A hook's feedback is a message the model read.
                SystemSubtype::HookContinued => {
                    if let Some(continued) = s.payload::<crate::protocol::hook::HookContinued>() {
                        state.history.push(Message::User {
                            text: crate::protocol::hook::feedback_text(
                                continued.event,
                                &continued.reason,
                            ),
                            images: Vec::new(),
                        });
                    }
                }
                // What the query took along joins its message.
                SystemSubtype::Attached => {
                    let query = state
                        .history
                        .iter_mut()
                        .rev()
                        .find(|m| matches!(m, Message::User { .. }));
                    if let (Some(query), Some(attachments)) = (query, s.payload::<Attachments>()) {
                        super::attach::join(query, &attachments);
                    }
                }
                SystemSubtype::ModelSwitched => {
                    let switched = s.payload::<ModelSwitched>();
                    if let Some(switched) =
                        switched.filter(|p| state.config.models.iter().any(|m| m.name == p.model))
                    {
                        state.model = switched.model;
                    }
                }
                _ => {}
            },
            AgentMessage::User(u) => {
                state.history.push(Message::User {
                    text: u.model_text().to_string(),
                    images: u.images.clone(),
                });
                open = Some(OpenTurn {
                    id: event.turn_id.unwrap_or_default(),
                    steps: 0,
                    usage: Usage::default(),
                    last_text: String::new(),
                    pending: Vec::new(),
                    requests: Vec::new(),
                });
            }
            AgentMessage::Assistant(a) => {
                state.history.push(Message::Assistant {
                    content: a.content.clone(),
                    interrupted: a.interrupted,
                });
                if a.context.is_some() {
                    state.context.last = a.context;
                }
                state.usage.model_calls += 1;
                if let Some(turn) = open.as_mut() {
                    turn.steps += 1;
                    turn.usage += a.usage;
                    let text: String = a.content.iter().filter_map(ContentBlock::as_text).collect();
                    if !text.is_empty() {
                        turn.last_text = text;
                    }
                    turn.pending = a
                        .content
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::ToolUse { id, name, .. } => {
                                Some((id.clone(), name.clone()))
                            }
                            _ => None,
                        })
                        .collect();
                }
            }
            AgentMessage::ToolResult(t) => {
                if let Some(checkpoint) = &t.checkpoint {
                    state.checkpoints.count(checkpoint);
                }
                state.history.push(Message::ToolResult {
                    call_id: t.call_id.clone(),
                    name: t.name.clone(),
                    output: t.output.clone(),
                    is_error: t.is_error,
                });
                if let Some(turn) = open.as_mut() {
                    turn.pending.retain(|(id, _)| *id != t.call_id);
                }
            }
            AgentMessage::Result(r) => {
                state.count_turn(r.usage);
                open = None;
            }
            AgentMessage::ApprovalRequest(r) => {
                if let Some(turn) = open.as_mut() {
                    turn.requests
                        .push((r.request_id.clone(), r.call_id.clone(), r.name.clone()));
                }
            }
            AgentMessage::StreamEvent(_) | AgentMessage::Error(_) => {}
        }
    }
    let mut effects = Vec::new();
    if let Some(turn) = open {
        close_unfinished(state, turn, &mut effects);
    }
    effects
}

fn close_unfinished(state: &mut SessionState, turn: OpenTurn, fx: &mut Vec<Effect>) {
    for (request_id, call_id, name) in turn.requests {
        let resolved = ApprovalResolved {
            request_id,
            call_id,
            outcome: ApprovalOutcome::Cancelled,
            message: None,
            rule: None,
            save: false,
            by: None,
            child_session: None,
        };
        fx.push(Effect::Emit {
            turn_id: Some(turn.id),
            message: AgentMessage::System(SystemEvent::new(
                format!("The request for {name} was cancelled: agentbus stopped while it waited."),
                &resolved,
            )),
        });
    }
    for call in turn.pending {
        let outcome = ToolOutcome::error(format!("not finished: {UNFINISHED_TURN}"));
        fx.push(push_tool_result(
            &mut state.history,
            turn.id,
            call,
            (outcome, None),
            true,
        ));
    }
    state.count_turn(turn.usage);
    fx.push(Effect::Emit {
        turn_id: Some(turn.id),
        message: AgentMessage::Result(ResultEvent {
            stop_reason: StopReason::Error,
            text: turn.last_text,
            usage: turn.usage,
            steps: turn.steps,
            duration_ms: 0,
            error: Some(UNFINISHED_TURN.to_string()),
            context: state.context.last,
        }),
    });
}
