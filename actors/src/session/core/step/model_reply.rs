//! The model's reply complete: recorded, then its tool calls admitted (or
//! the turn's stop hooks run, or the turn ends).

use super::tool_calls::Admitted;
use super::{Effects, Step};
use crate::model::{ToolCall, ToolOutcome};
use crate::protocol::hook::HookEvent;
use crate::protocol::{AgentMessage, AssistantEvent, ContextUsage, Message, StopReason};
use crate::session::core::context;
use crate::session::core::effect::Effect;
use crate::session::core::hooks;
use crate::session::core::partial::{AssembledMessage, PartialMessage};
use crate::session::core::turn::{CallAttempt, PendingCall, Phase, Turn};

impl Step<'_> {
    /// The model's message is complete: record it, then run its tool calls or
    /// end the turn.
    pub(super) fn finish_model_call(
        &mut self,
        request_id: u64,
        partial: PartialMessage,
        finish_reason: String,
    ) {
        let assembled = partial.finish(|index| format!("call_{request_id}_{index}"));
        let model = self.state.model.clone();
        let usage = partial.usage;
        let counted = self
            .state
            .turn
            .as_ref()
            .and_then(|t| t.call.counted.clone());
        let reported =
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
        if let Some(counted) = counted.filter(|_| reported > 0) {
            self.state.context.ledger.observe(counted, reported);
        }
        if reported > 0 {
            context::learn_accepted(self.state, &model, reported);
        }
        let used = if reported > 0 {
            reported + usage.output_tokens
        } else {
            context::tokens_after(self.state)
                + self.state.context.ledger.text_tokens(&assembled.text())
        };
        self.state.context.last = Some(ContextUsage {
            used,
            limit: context::limit(self.state),
        });
        let context_usage = self.state.context.last;
        let Some(turn) = self.state.turn.as_mut() else {
            return;
        };
        turn.call = CallAttempt::default();
        let reply = Reply {
            model: &model,
            message: &assembled,
            usage,
            context: context_usage,
            finish_reason,
            interrupted: false,
        };
        record_assistant(&mut self.state.history, turn, reply, &mut self.fx);
        self.state.usage.model_calls += 1;

        if assembled.calls.is_empty() {
            if !self.stop_hooks() {
                self.end_turn(StopReason::EndTurn, None);
            }
            return;
        }
        let batch_id = self.state.take_request_id();
        let turn_id = self.state.turn.as_ref().map_or(0, |t| t.id);
        let mut pending = Vec::new();
        let mut runnable = Vec::new();
        for call in assembled.calls {
            let (mut outcome, mut waiting) = (None, None);
            match call.input {
                Ok(input) => {
                    let tool_call = ToolCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        input,
                    };
                    if hooks::any(
                        &self.state.config.hooks,
                        HookEvent::PreToolUse,
                        Some(&call.name),
                    ) {
                        self.pre_tool_hooks(batch_id, tool_call);
                    } else {
                        match self.admit(turn_id, tool_call, None) {
                            Admitted::Runs(granted) => runnable.push(granted),
                            Admitted::Denied(denied) => outcome = Some(denied),
                            Admitted::Waits(asked) => waiting = Some(asked),
                            Admitted::Answered(answer, allowed) => {
                                self.allow_for_turn(allowed);
                                outcome = Some(answer);
                            }
                        }
                    }
                }
                Err(reason) => {
                    outcome = Some(ToolOutcome::error(format!(
                        "{reason}. Call {} again with a JSON object of arguments.",
                        call.name
                    )))
                }
            }
            pending.push(PendingCall {
                id: call.id,
                name: call.name,
                outcome,
                recorded: false,
                waiting,
                checkpoint: None,
            });
        }
        if let Some(turn) = self.state.turn.as_mut() {
            turn.phase = Phase::RunningTools {
                batch_id,
                calls: pending,
            };
        }
        if !runnable.is_empty() {
            self.fx.push(Effect::RunTools {
                batch_id,
                calls: runnable,
            });
        }
        self.record_finished_results();
        self.continue_after_tools();
    }
}

/// A reply of the model as it is recorded: into the history and out as an
/// `assistant` event.
pub(super) struct Reply<'a> {
    pub model: &'a str,
    pub message: &'a AssembledMessage,
    pub usage: crate::protocol::Usage,
    pub context: Option<ContextUsage>,
    pub finish_reason: String,
    /// Cut short by an interrupt (what streamed is kept).
    pub interrupted: bool,
}

/// Record `reply` as the turn's next step.
pub(super) fn record_assistant(
    history: &mut Vec<Message>,
    turn: &mut Turn,
    reply: Reply<'_>,
    fx: &mut Effects,
) {
    let Reply {
        model,
        message,
        usage,
        context,
        finish_reason,
        interrupted,
    } = reply;
    turn.steps += 1;
    turn.usage += usage;
    let text = message.text();
    if !text.is_empty() {
        turn.last_text = text;
    }
    history.push(Message::Assistant {
        content: message.content.clone(),
        interrupted,
    });
    fx.emit(
        Some(turn.id),
        AgentMessage::Assistant(AssistantEvent {
            content: message.content.clone(),
            model: model.to_string(),
            usage,
            finish_reason,
            interrupted,
            context,
        }),
    );
}
