//! Tools and approvals: each call admitted against the mode, the rules and
//! hooks; results recorded in call order; the next model call once the
//! batch is complete.

use super::{Step, notice};
use crate::model::{GrantedCall, ToolCall, ToolOutcome};
use crate::protocol::checkpoint::CheckpointRef;
use crate::protocol::hook::HookDecision;
use crate::protocol::{AgentMessage, InputId, Message, StopReason, ToolResultEvent};
use crate::session::core::effect::Effect;
use crate::session::core::permission::approval::{self, Settle};
use crate::session::core::permission::policy::{self, Verdict};
use crate::session::core::turn::{PendingCall, Phase, Turn, Waiting};

impl Step<'_> {
    /// Check `call` against the mode and the rules; a call that must ask
    /// emits its `approval_request` (and its timer, when requests time out).
    /// `hook`: what `PreToolUse` hooks decided (`allow` skips the mode's
    /// question but not a deny rule; `ask` asks whatever the mode says).
    pub(super) fn admit(
        &mut self,
        turn_id: InputId,
        call: ToolCall,
        hook: Option<(HookDecision, Option<String>)>,
    ) -> Admitted {
        let given = self.state.plan_tool_given();
        if let Some(answered) = crate::session::core::plan::answer(
            &mut self.state.plan,
            given,
            turn_id,
            &call,
            &mut self.fx,
        ) {
            return Admitted::Answered(answered, Vec::new());
        }
        if call.name == crate::session::core::agents::TASK_TOOL && self.state.config.task_tool {
            // The child session asks for what it does itself (its approvals
            // reach this session's front ends); starting it asks nothing.
            if crate::session::core::agents::allows(self.state.current_agent(), &call.name) {
                return Admitted::Runs(GrantedCall {
                    call,
                    grant: Default::default(),
                });
            }
        }
        if call.name == crate::session::core::skills::SKILL_TOOL && self.state.skill_tool() {
            let (answer, allowed) = self.state.config.skills.answer(&call.input);
            return Admitted::Answered(answer, allowed);
        }
        if !crate::session::core::agents::allows(self.state.current_agent(), &call.name) {
            return Admitted::Denied(ToolOutcome::error(format!(
                "Not run: the agent `{}` is not given the tool {}. Use the tools offered.",
                self.state.agent, call.name
            )));
        }
        // A model calls only what it was offered: a made-up name, or a tool
        // the session keeps for itself (`read_image`), is never run.
        let offered = self.state.offered_tools();
        if !offered.iter().any(|tool| tool.name == call.name) {
            let names: Vec<&str> = offered.iter().map(|tool| tool.name.as_str()).collect();
            return Admitted::Denied(ToolOutcome::error(format!(
                "unknown tool `{}`; the available tools are: {}",
                call.name,
                names.join(", ")
            )));
        }
        let verdict = policy::decide(
            &self.state.config.permissions,
            &self.state.permissions,
            std::path::Path::new(&self.state.config.workspace),
            &call.name,
            &call.input,
        );
        let verdict = match (hook, verdict) {
            (Some((HookDecision::Allow, _)), Verdict::Ask(asking)) => Verdict::Run(asking.grant),
            (Some((HookDecision::Ask, reason)), Verdict::Run(grant)) => {
                Verdict::Ask(policy::Asking {
                    reason: hook_asks(reason),
                    grant,
                    always: None,
                    mode: None,
                })
            }
            (Some((HookDecision::Ask, reason)), Verdict::Ask(mut asking)) => {
                asking.reason = hook_asks(reason);
                Verdict::Ask(asking)
            }
            (_, verdict) => verdict,
        };
        match verdict {
            Verdict::Run(grant) => Admitted::Runs(GrantedCall { call, grant }),
            Verdict::Deny(why) => Admitted::Denied(ToolOutcome::error(why)),
            Verdict::Ask(asking) => {
                let request_id = format!("t{turn_id}-{}", call.id);
                self.fx.emit(
                    Some(turn_id),
                    approval::request_event(&request_id, &call, &asking),
                );
                if let Some(after_ms) = self.state.config.permissions.approval_timeout_ms {
                    self.fx.push(Effect::ApprovalTimer {
                        request_id: request_id.clone(),
                        after_ms,
                    });
                }
                Admitted::Waits(Waiting {
                    request_id,
                    call: GrantedCall {
                        call,
                        grant: asking.grant,
                    },
                    always: asking.always,
                })
            }
        }
    }

    pub(super) fn on_tool_finished(
        &mut self,
        batch_id: u64,
        call_id: &str,
        (outcome, checkpoint): (ToolOutcome, Option<CheckpointRef>),
    ) {
        if self
            .state
            .turn
            .as_ref()
            .is_some_and(|t| matches!(t.phase, Phase::Attaching(_)))
        {
            self.on_attach_finished(batch_id, call_id, outcome);
            return;
        }
        let Some(Turn {
            id,
            phase: Phase::RunningTools {
                batch_id: current, ..
            },
            ..
        }) = self.state.turn.as_ref()
        else {
            return;
        };
        if *current != batch_id {
            return;
        }
        let turn_id = Some(*id);
        let mut limit = None;
        if let Some(Turn {
            phase: Phase::RunningTools { calls, .. },
            ..
        }) = self.state.turn.as_mut()
            && let Some(call) = calls
                .iter_mut()
                .find(|c| c.id == call_id && c.outcome.is_none())
        {
            call.outcome = Some(outcome);
            if let Some(kept) = checkpoint {
                self.state.checkpoints.count(&kept);
                if !self.state.checkpoints.limit_said {
                    limit = kept.limited.clone();
                }
                // Only a checkpoint that kept something is named on the event.
                call.checkpoint = (!kept.files.is_empty()).then_some(kept);
            }
        }
        if let Some(limit) = limit {
            self.state.checkpoints.limit_said = true;
            self.fx.emit(turn_id,
            notice(format!(
                "Checkpoints: {limit}. A rewind cannot restore what was not recorded; raise the limits under [checkpoints] to record more."
            )),
        );
        }
        self.record_finished_results();
        self.continue_after_tools();
    }

    /// An approval request is settled: tell everyone, run the call if it was
    /// allowed, and go on when the batch is complete.
    pub(super) fn on_settle(&mut self, request_id: &str, how: Settle) {
        let Some(settled) = approval::settle(self.state, request_id, how) else {
            return;
        };
        self.fx.emit(Some(settled.turn_id), settled.event);
        if let Some(rule) = settled.save {
            self.fx.push(Effect::SaveRule { rule });
        }
        if let Some(call) = settled.run {
            self.fx.push(Effect::RunTools {
                batch_id: settled.batch_id,
                calls: vec![call],
            });
        }
        self.record_finished_results();
        self.continue_after_tools();
    }

    /// Emit and record the results that are ready, in call order: a finished
    /// call waits for the calls before it.
    pub(super) fn record_finished_results(&mut self) {
        let Some(Turn {
            id,
            phase: Phase::RunningTools { calls, .. },
            ..
        }) = self.state.turn.as_mut()
        else {
            return;
        };
        for call in calls.iter_mut().filter(|c| !c.recorded) {
            let Some(outcome) = &call.outcome else { break };
            let recorded =
                record_tool_result(&mut self.state.history, *id, call, outcome.clone(), false);
            self.fx.push(recorded);
        }
    }

    /// When every call of the batch is recorded: call the model again, or stop
    /// at `max_steps`.
    pub(super) fn continue_after_tools(&mut self) {
        let Some(turn) = self.state.turn.as_ref() else {
            return;
        };
        let Phase::RunningTools { calls, .. } = &turn.phase else {
            return;
        };
        if !calls.iter().all(|c| c.recorded) {
            return;
        }
        if turn.steps >= self.state.max_steps() {
            self.end_turn(StopReason::MaxSteps, None);
        } else {
            self.call_model();
        }
    }

    /// A skill's `allowed-tools` hold from its loading to the end of the
    /// turn (the later calls of this reply included).
    pub(super) fn allow_for_turn(&mut self, allowed: Vec<crate::permissions::Rule>) {
        let for_turn = &mut self.state.permissions.for_turn;
        for rule in allowed {
            if !for_turn.contains(&rule) {
                for_turn.push(rule);
            }
        }
    }
}

/// What the permission check made of a call.
pub(super) enum Admitted {
    Runs(GrantedCall),
    Denied(ToolOutcome),
    Waits(Waiting),
    /// Answered by the core itself (`todo_write`, `skill`), with allow
    /// rules for the rest of the turn (a skill's `allowed-tools`).
    Answered(ToolOutcome, Vec<crate::permissions::Rule>),
}

/// Why an approval asks when a hook made it ask.
fn hook_asks(reason: Option<String>) -> String {
    match reason {
        Some(reason) => format!("a PreToolUse hook asks: {reason}"),
        None => "a PreToolUse hook asks for this call".to_string(),
    }
}

/// A pending call's result recorded (once); returned, its event.
pub(super) fn record_tool_result(
    history: &mut Vec<Message>,
    turn_id: InputId,
    call: &mut PendingCall,
    outcome: ToolOutcome,
    cancelled: bool,
) -> Effect {
    call.recorded = true;
    push_tool_result(
        history,
        turn_id,
        (call.id.clone(), call.name.clone()),
        (outcome, call.checkpoint.take()),
        cancelled,
    )
}

/// A tool call's result into the history; returned, the `tool_result`
/// event that says so.
pub(in crate::session::core) fn push_tool_result(
    history: &mut Vec<Message>,
    turn_id: InputId,
    (call_id, name): (String, String),
    (outcome, checkpoint): (ToolOutcome, Option<CheckpointRef>),
    cancelled: bool,
) -> Effect {
    history.push(Message::ToolResult {
        call_id: call_id.clone(),
        name: name.clone(),
        output: outcome.output.clone(),
        is_error: outcome.is_error,
    });
    Effect::Emit {
        turn_id: Some(turn_id),
        message: AgentMessage::ToolResult(ToolResultEvent {
            call_id,
            name,
            is_error: outcome.is_error,
            output: outcome.output,
            duration_ms: outcome.duration_ms,
            cancelled,
            checkpoint,
        }),
    }
}

/// The result of a call an interrupt stopped.
pub(super) fn cancelled_outcome() -> ToolOutcome {
    ToolOutcome::error(format!(
        "{} before this tool call finished",
        crate::model::INTERRUPTED
    ))
}
