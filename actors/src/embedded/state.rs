//! [`AgentState`]: one conversation as a value — the core's
//! [`SessionState`] and the events it was folded from.

use crate::protocol::context::ContextReport;
use crate::protocol::{
    AgentMessage, ContentBlock, ContextUsage, EventEnvelope, InputId, Message, ResultEvent,
    SessionId, Usage,
};
use crate::session::core::{Effect, Input, SessionState, context, step};

/// One conversation: its history, usage, context summary and the events
/// that made it, as a plain value.
///
/// [`Agent::run`](super::Agent::run) returns one;
/// [`Agent::continue_conversation`](super::Agent::continue_conversation)
/// takes one and returns the next (the one given is never changed).
/// Save it with [`to_json`](AgentState::to_json) or
/// [`save_to_file`](AgentState::save_to_file); loading folds the saved
/// events through the core again, as the daemon loads its sessions.
#[derive(Clone, Debug)]
pub struct AgentState {
    pub(super) session: SessionState,
    /// The persisted events (everything but `stream_event`), in seq order.
    pub(super) events: Vec<EventEnvelope>,
    /// The seq of the last event stamped, `stream_event`s included.
    pub(super) last_seq: u64,
}

impl AgentState {
    /// A new conversation on `session` (a fresh core state): the core
    /// announces it with its `session_started` event, as in the daemon.
    pub(super) fn start(session: SessionState, now_ms: u64) -> AgentState {
        let mut state = AgentState {
            session,
            events: Vec::new(),
            last_seq: 0,
        };
        let effects = step(
            &mut state.session,
            Input::Started { resumed: false },
            now_ms,
        );
        state.record_all(effects);
        state
    }

    /// Stamp `message` with the next seq, tell the core which seq it got
    /// (as the AgentLoop's `stamp` does) and keep it when it is persisted.
    pub(super) fn record(
        &mut self,
        turn_id: Option<InputId>,
        message: AgentMessage,
    ) -> EventEnvelope {
        self.last_seq += 1;
        self.session.context.seqs.observe(&message, self.last_seq);
        let envelope = EventEnvelope {
            session_id: self.session.session_id.clone(),
            seq: self.last_seq,
            turn_id,
            at: chrono::Utc::now(),
            message,
        };
        if envelope.message.is_persisted() {
            self.events.push(envelope.clone());
        }
        envelope
    }

    /// Record the events among `effects` (which, where this is used, hold
    /// nothing else: announcing a start, closing a turn on load).
    pub(super) fn record_all(&mut self, effects: Vec<Effect>) {
        for effect in effects {
            if let Effect::Emit { turn_id, message } = effect {
                self.record(turn_id, message);
            }
        }
    }

    /// The conversation's id (a time-ordered UUID, as the daemon's
    /// sessions have).
    pub fn session_id(&self) -> &SessionId {
        &self.session.session_id
    }

    /// The conversation as the model sees it (before any pruning or
    /// summary): every user message, assistant message and tool result.
    pub fn history(&self) -> &[Message] {
        &self.session.history
    }

    /// Every event of the conversation except `stream_event`s, in seq order
    /// — what the daemon would have stored.
    pub fn events(&self) -> &[EventEnvelope] {
        &self.events
    }

    /// The `result` of the last turn that ended, if any.
    pub fn last_result(&self) -> Option<&ResultEvent> {
        self.events.iter().rev().find_map(|e| match &e.message {
            AgentMessage::Result(r) => Some(r),
            _ => None,
        })
    }

    /// The final text of the last turn that ended (its `result`'s text);
    /// `None` before any turn ended.
    pub fn final_text(&self) -> Option<&str> {
        self.last_result().map(|r| r.text.as_str())
    }

    /// The text of the last assistant message that had any, whatever turn
    /// it belongs to (also while a turn is still running).
    pub fn last_text(&self) -> Option<String> {
        self.session.history.iter().rev().find_map(|m| match m {
            Message::Assistant { content, .. } => {
                let text: String = content.iter().filter_map(ContentBlock::as_text).collect();
                (!text.is_empty()).then_some(text)
            }
            _ => None,
        })
    }

    /// Tokens used by the whole conversation (summed over every model
    /// call, compactions included), as the provider reported them.
    pub fn usage(&self) -> Usage {
        self.session.usage.total
    }

    /// Tokens used by the last turn that ended.
    pub fn last_turn_usage(&self) -> Usage {
        self.session.usage.last_turn
    }

    /// Model calls made so far (compactions included).
    pub fn model_calls(&self) -> u64 {
        self.session.usage.model_calls
    }

    /// Turns that ended so far.
    pub fn turns(&self) -> u64 {
        self.session.usage.turns
    }

    /// US dollars spent, when the model's prices are known.
    pub fn cost_usd(&self) -> Option<f64> {
        self.session.usage.cost_usd
    }

    /// How full the context window was after the last model call (`used`
    /// of `limit` tokens), as `assistant` and `result` events report it.
    pub fn context_usage(&self) -> Option<ContextUsage> {
        self.session.context.last
    }

    /// Where the budget of the next request would go — what `/context`
    /// shows: system prompt, tool definitions, messages, tool outputs, how
    /// many messages the model sees of how many, compactions.
    pub fn context_report(&self) -> ContextReport {
        let mut session = self.session.clone();
        context::report(&mut session)
    }

    /// The summary that stands for the older turns in the model's view,
    /// once the conversation has been compacted.
    pub fn summary(&self) -> Option<&str> {
        self.session
            .context
            .summary
            .as_ref()
            .map(|s| s.text.as_str())
    }

    /// How many compactions shaped the model's view (since the last
    /// `/clear`).
    pub fn compactions(&self) -> u64 {
        self.session.context.compactions
    }

    /// The model profile the conversation uses now.
    pub fn model(&self) -> &str {
        &self.session.model
    }

    /// The core's state, for what the accessors above do not show. Read
    /// only: the core's rules keep it consistent.
    pub fn session(&self) -> &SessionState {
        &self.session
    }

    /// Whether the conversation can be continued: no turn, compaction or
    /// command is in progress and nothing is queued.
    pub fn is_finished(&self) -> bool {
        self.unfinished().is_none()
    }

    /// What keeps the conversation from being continued, if anything.
    pub(super) fn unfinished(&self) -> Option<Unfinished> {
        let session = &self.session;
        if let Some(turn) = &session.turn {
            return Some(Unfinished::Running {
                input_id: turn.id,
                waiting_for: waiting_for(session),
            });
        }
        if let Some(call) = &session.compacting {
            return Some(Unfinished::Running {
                input_id: call.input_id,
                waiting_for: "the summary of a compaction".into(),
            });
        }
        if let Some(input_id) = session.pending_command {
            return Some(Unfinished::Running {
                input_id,
                waiting_for: "a session command's reply".into(),
            });
        }
        let first = session.queue.front()?;
        Some(Unfinished::Queued {
            queued: session.queue.len(),
            first: first.input_id,
        })
    }
}

/// Why a state cannot be continued (see [`AgentState::is_finished`]).
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Unfinished {
    /// An input is in progress.
    Running {
        input_id: InputId,
        waiting_for: String,
    },
    /// Inputs wait in the queue.
    Queued { queued: usize, first: InputId },
}

/// What the running turn waits for, in words.
fn waiting_for(session: &SessionState) -> String {
    if session.compacting.is_some() {
        return "the summary of a compaction".into();
    }
    if session.running_model_call().is_some() {
        return "the model's reply".into();
    }
    match session.running_tool_batch() {
        Some(_) => {
            let pending: Vec<String> = session
                .turn
                .iter()
                .flat_map(|t| match &t.phase {
                    crate::session::core::turn::Phase::RunningTools { calls, .. } => calls
                        .iter()
                        .filter(|c| c.outcome.is_none())
                        .map(|c| format!("`{}`", c.name))
                        .collect(),
                    _ => Vec::new(),
                })
                .collect();
            format!("tool results ({})", pending.join(", "))
        }
        None => "its next model call".into(),
    }
}
