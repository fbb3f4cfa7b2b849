//! The model call: the request prepared (or compaction first, or the turn
//! refused as too long), its stream applied, a failure or an overflow
//! refusal handled.

use super::{Step, notice, retrying_event};
use crate::model::ContextRefusal;
use crate::model::ModelEvent;
use crate::protocol::context::CompactionTrigger;
use crate::protocol::system::Retrying;
use crate::protocol::{AgentMessage, ErrorEvent, ErrorKind, StopReason, StreamDelta, StreamEvent};
use crate::session::core::context::{self, Next};
use crate::session::core::effect::Effect;
use crate::session::core::partial::PartialMessage;
use crate::session::core::turn::Phase;

impl Step<'_> {
    /// Make the turn's next model call with the model's view of the
    /// conversation — or, when the view passed `auto_compact_at`, compact first
    /// (at most once per call); or, when even the current turn alone cannot
    /// fit, end the turn saying so, having sent nothing.
    pub(super) fn call_model(&mut self) {
        self.call_model_after(CompactionTrigger::Auto);
    }

    /// [`call_model`], saying `trigger` should a compaction run first.
    pub(super) fn call_model_after(&mut self, trigger: CompactionTrigger) {
        let Some(turn) = self.state.turn.as_ref() else {
            return;
        };
        let turn_id = turn.id;
        let allow_compaction = !turn.call.compacted;
        match context::prepare(self.state, allow_compaction) {
            Next::Compact(plan) => {
                self.start_compaction(turn_id, trigger, plan, false);
            }
            Next::TooLong(why) => {
                self.fx.emit(
                    Some(turn_id),
                    AgentMessage::Error(ErrorEvent {
                        kind: ErrorKind::Context,
                        message: why.clone(),
                    }),
                );
                self.end_turn(StopReason::Error, Some(why));
            }
            Next::Call(prepared) => {
                if let Some(text) = prepared.warning {
                    self.fx.emit(Some(turn_id), notice(text));
                }
                let warned = self
                    .state
                    .turn
                    .as_ref()
                    .is_some_and(|t| t.warned_over_budget);
                if !warned && !prepared.notices.is_empty() {
                    for text in prepared.notices {
                        self.fx.emit(Some(turn_id), notice(text));
                    }
                    if let Some(turn) = self.state.turn.as_mut() {
                        turn.warned_over_budget = true;
                    }
                }
                let request_id = self.state.take_request_id();
                if let Some(turn) = self.state.turn.as_mut() {
                    turn.call.counted = prepared.counted;
                    turn.phase = Phase::Streaming {
                        request_id,
                        partial: PartialMessage::default(),
                    };
                }
                self.fx.push(Effect::CallModel {
                    request_id,
                    request: prepared.request,
                });
            }
        }
    }

    pub(super) fn on_model_event(&mut self, request_id: u64, event: ModelEvent) {
        if self
            .state
            .compacting
            .as_ref()
            .is_some_and(|c| c.request_id == request_id)
        {
            self.on_compaction_event(event);
            return;
        }
        let include_partial = self.state.config.include_partial_messages;
        let Some(turn) = self.state.turn.as_mut() else {
            return;
        };
        let turn_id = Some(turn.id);
        let Phase::Streaming {
            request_id: current,
            partial,
        } = &mut turn.phase
        else {
            return;
        };
        if *current != request_id {
            return; // a cancelled call's late event
        }
        partial.apply(&event);
        let delta = match event {
            ModelEvent::BlockStart { index, block } => {
                Some(StreamDelta::BlockStart { index, block })
            }
            ModelEvent::TextDelta { index, text } => Some(StreamDelta::TextDelta { index, text }),
            ModelEvent::ThinkingDelta { index, text } => {
                Some(StreamDelta::ThinkingDelta { index, text })
            }
            // Opaque: kept in the message, never streamed to front ends.
            ModelEvent::ThinkingSignature { .. }
            | ModelEvent::RedactedThinking { .. }
            | ModelEvent::ReasoningItem { .. } => None,
            ModelEvent::ToolInputDelta {
                index,
                partial_json,
            } => Some(StreamDelta::ToolInputDelta {
                index,
                partial_json,
            }),
            ModelEvent::BlockStop { index } => Some(StreamDelta::BlockStop { index }),
            ModelEvent::Usage(_) => None,
            ModelEvent::Retrying {
                attempt,
                delay_ms,
                reason,
            } => {
                let had_output = !partial.is_empty();
                *partial = PartialMessage::default();
                if had_output && include_partial {
                    self.fx.emit(
                        turn_id,
                        AgentMessage::StreamEvent(StreamEvent {
                            event: StreamDelta::Discard {
                                reason: reason.clone(),
                            },
                        }),
                    );
                }
                let retrying = Retrying {
                    attempt,
                    delay_ms,
                    reason,
                };
                self.fx.emit(turn_id, retrying_event(&retrying));
                None
            }
            ModelEvent::Finished { finish_reason } => {
                let partial = std::mem::take(partial);
                self.finish_model_call(request_id, partial, finish_reason);
                return;
            }
        };
        if let Some(delta) = delta.filter(|_| include_partial) {
            self.fx.emit(
                turn_id,
                AgentMessage::StreamEvent(StreamEvent { event: delta }),
            );
        }
    }

    pub(super) fn on_model_failed(
        &mut self,
        request_id: u64,
        error: String,
        too_long: Option<ContextRefusal>,
    ) {
        if let Some(call) = self
            .state
            .compacting
            .take_if(|c| c.request_id == request_id)
        {
            // Too long itself: learn the window, and quote less, once.
            let shorter = too_long.filter(|_| !call.shortened).and_then(|refusal| {
                let window_only = ContextRefusal {
                    input_tokens: None,
                    ..refusal
                };
                context::learn_refusal(self.state, &call.profile, &window_only, None);
                let cap = match (refusal.input_tokens, refusal.input_budget(0)) {
                    (Some(counted), Some(budget)) if counted > 0 => {
                        call.quoted_tokens.saturating_mul(budget) / counted * 8 / 10
                    }
                    _ => call.quoted_tokens * 6 / 10,
                };
                context::plan_compaction(self.state, call.focus.as_deref(), Some(cap))
            });
            match shorter {
                Some(plan) => {
                    self.start_compaction(call.input_id, call.trigger, plan, true);
                }
                None => self.compaction_failed(call, &error),
            }
            return;
        }
        let include_partial = self.state.config.include_partial_messages;
        let Some(turn) = self.state.turn.as_ref() else {
            return;
        };
        let Phase::Streaming {
            request_id: current,
            partial,
        } = &turn.phase
        else {
            return;
        };
        if *current != request_id {
            return;
        }
        let turn_id = Some(turn.id);
        if include_partial && !partial.is_empty() {
            self.fx.emit(
                turn_id,
                AgentMessage::StreamEvent(StreamEvent {
                    event: StreamDelta::Discard {
                        reason: "the model call failed".into(),
                    },
                }),
            );
        }
        if let Some(refusal) = too_long {
            if !turn.call.retried_overflow {
                self.retry_shorter(&error, &refusal);
                return;
            }
            // The retry was refused too: what it said still counts for the
            // next turn.
            let (model, counted) = (self.state.model.clone(), turn.call.counted.clone());
            context::learn_refusal(self.state, &model, &refusal, counted);
        }
        self.fx.emit(
            turn_id,
            AgentMessage::Error(ErrorEvent {
                kind: ErrorKind::Provider,
                message: error.clone(),
            }),
        );
        self.end_turn(StopReason::Error, Some(error));
    }

    /// The provider refused the request as too long: learn what it said (its
    /// count and its window win over our estimates), then plan the call again —
    /// compacting first when the older turns are worth it and no compaction ran
    /// for this call — and try exactly once more. A refusal that says nothing
    /// makes every estimate count higher, and the window smaller than our count
    /// of the refused request.
    pub(super) fn retry_shorter(&mut self, error: &str, refusal: &ContextRefusal) {
        let Some(turn) = self.state.turn.as_mut() else {
            return;
        };
        turn.call.retried_overflow = true;
        let (turn_id, counted) = (turn.id, turn.call.counted.clone());
        let model = self.state.model.clone();
        if !context::learn_refusal(self.state, &model, refusal, counted) {
            self.state.context.ledger.distrust();
        }
        self.fx.emit(Some(turn_id),
        notice(format!(
            "The provider refused the request as too long ({error}); shortening the model's view and trying once more."
        )),
    );
        self.call_model_after(CompactionTrigger::Overflow);
    }
}
