//! The transition function: every conversation rule, applied to one input.
//!
//! [`step`] is the core's one entry: it takes the session's state and one
//! [`Input`] and gives back the [`Effect`]s the driver must carry out, in
//! order. While it runs, the state, the input's time and the effects so far
//! travel together as one [`Step`]; each phase of a conversation is a file
//! of its own that adds methods to it:
//!
//! - `start`: the session's announcement and its tool catalog;
//! - `queue`: inputs accepted in order, commands applied, turns opened;
//! - `attachments`: `@` mentions read and `!command`s run before the model;
//! - `model_call`: the request, its stream, its failures and overflow retry;
//! - `compaction`: the summarising call and the turn resumed after it;
//! - `model_reply`: a complete reply recorded and its tool calls admitted;
//! - `tool_calls`: permissions and approvals, results in call order;
//! - `hook_waits`: the hooks a session or turn waits for, and their answers;
//! - `subagents`: a `task` call's child session reported;
//! - `stop`: interrupts and the `result` that ends every turn.
//!
//! Pure, like the whole core: no I/O, no clock (the time comes with the
//! input), and the same state and input always give the same state and
//! effects.

mod attachments;
mod compaction;
mod hook_waits;
mod model_call;
mod model_reply;
mod queue;
mod start;
mod stop;
mod subagents;
mod tool_calls;

pub(super) use tool_calls::push_tool_result;

use super::effect::Effect;
use super::hooks;
use super::mcp_wait;
use super::permission::approval::Settle;
use super::state::SessionState;
use crate::protocol::system::Retrying;
use crate::protocol::{AgentMessage, InputId, SystemEvent, SystemSubtype};
use crate::session::core::input::Input;

/// Apply one input to `state`, returning what the driver must do, in
/// order. Pure: the same state and input give the same state and effects.
pub fn step(state: &mut SessionState, input: Input, now_ms: u64) -> Vec<Effect> {
    let mut step = Step {
        state,
        now_ms,
        fx: Effects::default(),
    };
    step.apply(input);
    step.fx.0
}

/// One input being applied: the session's state, the time the input came
/// with, and the effects decided so far. The phases are its methods.
struct Step<'s> {
    state: &'s mut SessionState,
    now_ms: u64,
    fx: Effects,
}

/// The effects of one step, in order. A field of its own beside the state,
/// so a phase can add to it while it holds part of the state.
#[derive(Default)]
struct Effects(Vec<Effect>);

impl Effects {
    /// An event for the session's stream (`turn_id`: the turn it belongs to).
    fn emit(&mut self, turn_id: Option<InputId>, message: AgentMessage) {
        self.0.push(Effect::Emit { turn_id, message });
    }
}

impl std::ops::Deref for Effects {
    type Target = Vec<Effect>;
    fn deref(&self) -> &Vec<Effect> {
        &self.0
    }
}

impl std::ops::DerefMut for Effects {
    fn deref_mut(&mut self) -> &mut Vec<Effect> {
        &mut self.0
    }
}

/// The `retrying` event of a model call (a turn's, or a summarising one)
/// that its provider retries.
fn retrying_event(retrying: &Retrying) -> AgentMessage {
    let Retrying {
        attempt,
        delay_ms,
        reason,
    } = retrying;
    let message = format!("retrying: attempt {attempt} in {delay_ms} ms after {reason}");
    AgentMessage::System(SystemEvent::new(message, retrying))
}

/// A notice on the session's stream.
fn notice(message: impl Into<String>) -> AgentMessage {
    AgentMessage::System(SystemEvent::bare(SystemSubtype::Notice, message))
}

impl Step<'_> {
    /// Route the input to its phase, then start whatever the queue holds
    /// that can start now.
    fn apply(&mut self, input: Input) {
        match input {
            Input::Started { resumed } => {
                self.announce_start(resumed);
                self.session_start_hooks(resumed);
            }
            Input::HookDone {
                hook_id,
                answer,
                ran,
            } => self.on_hook_done(hook_id, answer, ran),
            Input::HooksRan { turn_id, ran } => {
                for ran in &ran {
                    self.fx.emit(turn_id, hooks::ran_event(ran));
                }
            }
            Input::Submit { input_id, input } => self.accept(input_id, input),
            Input::Interrupt => self.interrupt(),
            Input::Shutdown => {
                self.interrupt();
                self.shut_down_queue();
                return; // nothing else runs
            }
            Input::Model { request_id, event } => self.on_model_event(request_id, event),
            Input::ModelFailed {
                request_id,
                error,
                too_long,
            } => self.on_model_failed(request_id, error, too_long),
            Input::ToolFinished {
                batch_id,
                call_id,
                outcome,
                checkpoint,
            } => self.on_tool_finished(batch_id, &call_id, (outcome, checkpoint)),
            Input::CatalogChanged {
                tools,
                servers,
                first_start,
                prompts,
            } => {
                self.state.server_prompts = prompts;
                self.apply_catalog(tools, servers);
                if mcp_wait::observe(self.state, first_start) {
                    self.call_model();
                }
            }
            Input::ServersGiven { notices } => {
                mcp_wait::given(self.state);
                for text in notices {
                    self.fx.emit(None, notice(text));
                }
            }
            Input::McpWaitTimedOut { turn_id } => {
                if mcp_wait::timed_out(self.state, turn_id, &mut self.fx) {
                    self.call_model();
                }
            }
            Input::Approval {
                request_id,
                decision,
            } => self.on_settle(&request_id, Settle::Decided(decision)),
            Input::ApprovalTimedOut { request_id } => {
                let after_ms = self
                    .state
                    .config
                    .permissions
                    .approval_timeout_ms
                    .unwrap_or(0);
                self.on_settle(&request_id, Settle::TimedOut { after_ms })
            }
            Input::RuleSaved { rule, result } => {
                let text = match result {
                    Ok(path) => format!("Saved the allow rule `{rule}` to {path}."),
                    Err(why) => format!(
                        "Could not save the allow rule `{rule}` to .agentbus.toml ({why}); it still holds for this session."
                    ),
                };
                self.fx.emit(None, notice(text));
            }
            Input::Subagent { batch_id, update } => self.on_subagent(batch_id, update),
            Input::CommandDone { input_id, reply } => {
                if self.state.pending_command == Some(input_id) {
                    self.state.pending_command = None;
                    self.fx.emit(Some(input_id), AgentMessage::System(reply));
                }
            }
        }
        self.run_queue();
    }
}
