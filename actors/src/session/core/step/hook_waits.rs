//! Hooks a session or a turn waits for: `SessionStart` before the first
//! query, `UserPromptSubmit` before a query enters the history,
//! `PreToolUse` before a call's permission check, `Stop` (a sub-agent's:
//! `SubagentStop`) when the model ends its answer. Each runs as an
//! `Effect::RunHook` and comes back as its answer, which steers the turn:
//! a query refused, a call's input changed or refused, the model sent back
//! to work (at most eight times a turn). Which hooks match, and what an
//! answer means, is `core/hooks.rs`.

use super::Step;
use super::tool_calls::Admitted;
use crate::model::{ToolCall, ToolOutcome};
use crate::protocol::hook::{HookAnswer, HookDecision, HookEvent};
use crate::protocol::{AgentMessage, InputId, Message, ResultEvent, StopReason, SystemEvent};
use crate::session::core::effect::Effect;
use crate::session::core::hooks::{self as hooks, HookWait};
use crate::session::core::turn::{Phase, PromptHook, Turn};

impl Step<'_> {
    /// Call `call` of batch `batch_id` waits for its `PreToolUse` hooks.
    pub(super) fn pre_tool_hooks(&mut self, batch_id: u64, call: ToolCall) {
        let hook_id = self.state.take_request_id();
        self.fx.push(Effect::RunHook {
            hook_id,
            event: HookEvent::PreToolUse,
            tool: Some(call.name.clone()),
            fields: {
                let mut fields =
                    hooks::tool_fields(&call.name, &call.input, &self.state.config.workspace);
                fields.insert("tool_use_id".into(), call.id.clone().into());
                fields
            },
        });
        self.state
            .hooks
            .waiting
            .insert(hook_id, HookWait::PreToolUse { batch_id, call });
    }

    /// `SessionStart` hooks run before the first query.
    pub(super) fn session_start_hooks(&mut self, resumed: bool) {
        let source = if resumed { "resume" } else { "startup" };
        if !hooks::any(
            &self.state.config.hooks,
            HookEvent::SessionStart,
            Some(source),
        ) {
            return;
        }
        let hook_id = self.state.take_request_id();
        let mut fields = serde_json::Map::new();
        fields.insert("source".into(), source.into());
        self.fx.push(Effect::RunHook {
            hook_id,
            event: HookEvent::SessionStart,
            tool: None,
            fields,
        });
        self.state.hooks.starting = true;
        self.state
            .hooks
            .waiting
            .insert(hook_id, HookWait::SessionStart);
    }

    /// The model ended its answer: when `Stop` hooks (a sub-agent's:
    /// `SubagentStop`) run, the turn waits for them. Returns whether it does.
    pub(super) fn stop_hooks(&mut self) -> bool {
        /// The most times hooks may send the model back within one turn.
        const MAX_CONTINUATIONS: u32 = 8;
        let event = if self.state.config.task_tool {
            HookEvent::Stop
        } else {
            HookEvent::SubagentStop
        };
        let Some(turn) = self.state.turn.as_ref() else {
            return false;
        };
        if turn.stop_continuations >= MAX_CONTINUATIONS
            || !hooks::any(&self.state.config.hooks, event, None)
        {
            return false;
        }
        let (turn_id, active, last) =
            (turn.id, turn.stop_continuations > 0, turn.last_text.clone());
        let hook_id = self.state.take_request_id();
        let mut fields = serde_json::Map::new();
        fields.insert("stop_hook_active".into(), active.into());
        fields.insert("last_assistant_message".into(), last.into());
        self.fx.push(Effect::RunHook {
            hook_id,
            event,
            tool: None,
            fields,
        });
        self.state
            .hooks
            .waiting
            .insert(hook_id, HookWait::Stop { turn_id });
        if let Some(turn) = self.state.turn.as_mut() {
            turn.phase = Phase::StopHook { hook_id };
        }
        true
    }

    /// The hooks of run `hook_id` answered.
    pub(super) fn on_hook_done(
        &mut self,
        hook_id: u64,
        answer: HookAnswer,
        ran: Vec<crate::protocol::hook::HookRan>,
    ) {
        let Some(wait) = self.state.hooks.waiting.remove(&hook_id) else {
            return;
        };
        let turn_id = match &wait {
            HookWait::PreToolUse { .. } | HookWait::SessionStart => {
                self.state.turn.as_ref().map(|t| t.id)
            }
            HookWait::Prompt { turn_id } | HookWait::Stop { turn_id } => Some(*turn_id),
        };
        for ran in &ran {
            self.fx.emit(turn_id, hooks::ran_event(ran));
        }
        match wait {
            HookWait::SessionStart => {
                self.state.hooks.starting = false;
                self.state.hooks.session_context = answer.context;
            }
            HookWait::PreToolUse { batch_id, call } => {
                self.on_pre_tool_answer(batch_id, call, answer)
            }
            HookWait::Prompt { turn_id } => self.on_prompt_answer(turn_id, hook_id, answer),
            HookWait::Stop { turn_id } => self.on_stop_answer(turn_id, hook_id, answer),
        }
    }

    /// A call's `PreToolUse` hooks answered: it is checked (with what they
    /// decided) and runs, asks or is refused, in its place in the batch.
    pub(super) fn on_pre_tool_answer(
        &mut self,
        batch_id: u64,
        mut call: ToolCall,
        answer: HookAnswer,
    ) {
        let Some(turn) = self.state.turn.as_ref() else {
            return;
        };
        let turn_id = turn.id;
        let still_waits = matches!(&turn.phase, Phase::RunningTools { batch_id: b, calls }
        if *b == batch_id && calls.iter().any(|c| c.id == call.id && c.outcome.is_none() && c.waiting.is_none()));
        if !still_waits {
            return;
        }
        if let Some(input) = answer.updated_input {
            call.input = hooks::tool_input_from_hook(&call.name, input);
        }
        let call_id = call.id.clone();
        let admitted = match answer.decision {
            Some(HookDecision::Deny | HookDecision::Block) => {
                Admitted::Denied(ToolOutcome::error(format!(
                    "Blocked by a PreToolUse hook: {}",
                    answer
                        .reason
                        .unwrap_or_else(|| "no reason given".to_string())
                )))
            }
            Some(decision) => self.admit(turn_id, call, Some((decision, answer.reason))),
            None => self.admit(turn_id, call, None),
        };
        let Some(Turn {
            phase: Phase::RunningTools { calls, .. },
            ..
        }) = self.state.turn.as_mut()
        else {
            return;
        };
        let Some(pending) = calls.iter_mut().find(|c| c.id == call_id) else {
            return;
        };
        match admitted {
            Admitted::Runs(granted) => self.fx.push(Effect::RunTools {
                batch_id,
                calls: vec![granted],
            }),
            Admitted::Denied(denied) => pending.outcome = Some(denied),
            Admitted::Waits(asked) => pending.waiting = Some(asked),
            Admitted::Answered(answer, allowed) => {
                pending.outcome = Some(answer);
                self.allow_for_turn(allowed);
            }
        }
        self.record_finished_results();
        self.continue_after_tools();
    }

    /// A query's `UserPromptSubmit` hooks answered: it is refused (never
    /// entering the history), or goes on with what they added.
    pub(super) fn on_prompt_answer(&mut self, turn_id: InputId, hook_id: u64, answer: HookAnswer) {
        let waiting = self.state.turn.as_ref().is_some_and(|t| {
            t.id == turn_id && matches!(&t.phase, Phase::PromptHook(p) if p.hook_id == hook_id)
        });
        if !waiting {
            return;
        }
        let Some(Turn {
            phase: Phase::PromptHook(prompt),
            ..
        }) = self.state.turn.take()
        else {
            return;
        };
        let blocked = matches!(
            answer.decision,
            Some(HookDecision::Block | HookDecision::Deny)
        );
        if blocked || answer.stop.is_some() {
            let why = answer
                .reason
                .filter(|_| blocked)
                .or(answer.stop)
                .unwrap_or_else(|| "no reason given".to_string());
            let error = format!("Not sent: a UserPromptSubmit hook blocked this query: {why}");
            self.fx.emit(
                Some(turn_id),
                AgentMessage::Result(ResultEvent {
                    stop_reason: StopReason::Error,
                    text: String::new(),
                    usage: Default::default(),
                    steps: 0,
                    duration_ms: 0,
                    error: Some(error),
                    context: self.state.context.last,
                }),
            );
            return;
        }
        let PromptHook {
            mut user,
            run_as,
            typed,
            ..
        } = *prompt;
        if !answer.context.is_empty() {
            let with = format!(
                "{}\n\n<user-prompt-submit-hook>\n{}\n</user-prompt-submit-hook>",
                user.model_text(),
                answer.context.join("\n")
            );
            user.prompt = Some(with);
        }
        self.submit_query(turn_id, user, run_as, typed);
    }

    /// A turn's `Stop` hooks answered: the turn ends, or (a hook blocked the
    /// stop) the model reads why and goes on.
    pub(super) fn on_stop_answer(&mut self, turn_id: InputId, hook_id: u64, answer: HookAnswer) {
        let max_steps = self.state.max_steps();
        let Some(turn) = self.state.turn.as_mut().filter(|t| {
            t.id == turn_id && matches!(t.phase, Phase::StopHook { hook_id: h } if h == hook_id)
        }) else {
            return;
        };
        let blocked = matches!(answer.decision, Some(HookDecision::Block))
            && answer.stop.is_none()
            && turn.steps < max_steps;
        if !blocked {
            self.end_turn(StopReason::EndTurn, None);
            return;
        }
        turn.stop_continuations += 1;
        let event = if self.state.config.task_tool {
            HookEvent::Stop
        } else {
            HookEvent::SubagentStop
        };
        let reason = answer.reason.unwrap_or_default();
        self.state.history.push(Message::User {
            text: crate::protocol::hook::feedback_text(event, &reason),
            images: Vec::new(),
        });
        let continued = crate::protocol::hook::HookContinued { event, reason };
        let message = format!(
            "A {event} hook sent the model back to work: {}",
            continued.reason
        );
        self.fx.emit(
            Some(turn_id),
            AgentMessage::System(SystemEvent::new(message, &continued)),
        );
        self.call_model();
    }
}
