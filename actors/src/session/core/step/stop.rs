//! The end of a turn: an interrupt that keeps the history valid, and the
//! one `result` every turn ends with.

use super::model_reply::{Reply, record_assistant};
use super::tool_calls::{cancelled_outcome, push_tool_result, record_tool_result};
use super::{Step, notice};
use crate::protocol::{AgentMessage, ResultEvent, StopReason};
use crate::session::core::effect::Effect;
use crate::session::core::permission::approval::{self, Settle};
use crate::session::core::turn::Phase;

impl Step<'_> {
    /// Cancel the running turn, keeping the history valid: the part of the
    /// message that streamed is kept (marked interrupted) and every tool call
    /// without a result gets a cancelled one.
    pub(super) fn interrupt(&mut self) {
        if let Some(call) = self.state.compacting.take() {
            self.fx.push(Effect::CancelModel {
                request_id: call.request_id,
            });
            if self.state.pending_command == Some(call.input_id) {
                self.state.pending_command = None;
                self.fx.emit(
                    Some(call.input_id),
                    notice("Compaction interrupted; the conversation is unchanged."),
                );
            }
        }
        for request_id in approval::waiting(self.state) {
            if let Some(settled) = approval::settle(self.state, &request_id, Settle::Cancelled) {
                self.fx.emit(Some(settled.turn_id), settled.event);
            }
        }
        if self
            .state
            .turn
            .as_ref()
            .is_some_and(|t| matches!(t.phase, Phase::Attaching(_)))
        {
            self.finish_attaching(true);
            return;
        }
        let model = self.state.model.clone();
        let Some(turn) = self.state.turn.as_mut() else {
            return;
        };
        let turn_id = turn.id;
        match &mut turn.phase {
            Phase::Streaming {
                request_id,
                partial,
            } => {
                let request_id = *request_id;
                self.fx.push(Effect::CancelModel { request_id });
                if !partial.is_empty() {
                    let assembled = partial.finish(|index| format!("call_{request_id}_{index}"));
                    let usage = partial.usage;
                    let reply = Reply {
                        model: &model,
                        message: &assembled,
                        usage,
                        context: None,
                        finish_reason: "interrupted".into(),
                        interrupted: true,
                    };
                    record_assistant(&mut self.state.history, turn, reply, &mut self.fx);
                    self.state.usage.model_calls += 1;
                    for call in assembled.calls {
                        self.fx.push(push_tool_result(
                            &mut self.state.history,
                            turn_id,
                            (call.id, call.name),
                            (cancelled_outcome(), None),
                            true,
                        ));
                    }
                }
            }
            Phase::RunningTools { batch_id, calls } => {
                self.fx.push(Effect::CancelTools {
                    batch_id: *batch_id,
                });
                for call in calls.iter_mut().filter(|c| !c.recorded) {
                    let (outcome, cancelled) = match call.outcome.clone() {
                        Some(done) => (done, false),
                        None => (cancelled_outcome(), true),
                    };
                    let recorded = record_tool_result(
                        &mut self.state.history,
                        turn_id,
                        call,
                        outcome,
                        cancelled,
                    );
                    self.fx.push(recorded);
                }
            }
            Phase::Compacting
            | Phase::WaitingForMcp
            | Phase::Attaching(_)
            | Phase::PromptHook(_)
            | Phase::StopHook { .. } => {}
        }
        self.end_turn(StopReason::Cancelled, None);
    }

    pub(super) fn end_turn(&mut self, stop_reason: StopReason, error: Option<String>) {
        let Some(turn) = self.state.turn.take() else {
            return;
        };
        if let Some(call) = self.state.compacting.take_if(|c| c.input_id == turn.id) {
            self.fx.push(Effect::CancelModel {
                request_id: call.request_id,
            });
        }
        self.state.count_turn(turn.usage);
        if let Some(model) = turn.session_model {
            self.state.model = model;
        }
        self.state.permissions.for_turn.clear();
        self.fx.emit(
            Some(turn.id),
            AgentMessage::Result(ResultEvent {
                stop_reason,
                text: turn.last_text,
                usage: turn.usage,
                steps: turn.steps,
                duration_ms: self.now_ms.saturating_sub(turn.started_at_ms),
                error,
                context: self.state.context.last,
            }),
        );
    }
}
