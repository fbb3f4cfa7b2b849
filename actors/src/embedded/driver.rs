//! The library's driver of the pure core: the AgentLoop's job without the
//! actor, the topic or the store.
//!
//! It submits one input, then loops: feed an input to
//! [`step`], perform the effects — `Emit` stamps the event with the next
//! seq and queues it for the caller, `CallModel` opens the provider's
//! stream, `RunTools` starts every call of the batch at once (each on a
//! task of its own, with the executor's rules), cancellations drop what
//! they name, a session command needing the daemon's store is answered
//! with a notice, a wait for MCP servers ends at once (an agent has none)
//! — and wait for whichever of the model stream and the tool
//! calls reports next, which becomes the next input. It stops when the
//! core is idle again.

use super::state::AgentState;
use super::tools::ToolBox;
use crate::model::ToolOutcome;
use crate::protocol::{
    AgentMessage, ApprovalDecision, EventEnvelope, InputId, ResultEvent, UserInput,
};
use crate::provider::{ModelClient, ModelStream};
use crate::session::core::{Effect, Input, SessionCommand, commands, step};
use crate::session::model_input::model_input;
pub(super) use crate::session::now_ms;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use std::collections::VecDeque;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The tool calls of one batch, running.
struct Batch {
    id: u64,
    cancel: CancellationToken,
    running: FuturesUnordered<BoxFuture<'static, (String, ToolOutcome)>>,
}

/// One input driven through the core to its end.
pub(super) struct Driver {
    state: AgentState,
    model: Arc<dyn ModelClient>,
    tools: Arc<ToolBox>,
    /// The model call streaming now (a turn's or a compaction's).
    call: Option<(u64, ModelStream)>,
    batch: Option<Batch>,
    /// Events stamped and not yet handed out.
    ready: VecDeque<EventEnvelope>,
    /// Inputs to feed before waiting for anything.
    inbox: VecDeque<Input>,
    /// The input this driver submitted.
    input_id: InputId,
    /// Its `result`, once emitted.
    result: Option<ResultEvent>,
}

impl Driver {
    /// Submit `input` to the conversation `state`; the first events (the
    /// `user` event, ...) are ready at once and the model call is opened.
    pub(super) fn submit(
        state: AgentState,
        model: Arc<dyn ModelClient>,
        tools: Arc<ToolBox>,
        input: UserInput,
    ) -> Driver {
        let input_id = state.session.next_input_id();
        let mut driver = Driver {
            state,
            model,
            tools,
            call: None,
            batch: None,
            ready: VecDeque::new(),
            inbox: VecDeque::new(),
            input_id,
            result: None,
        };
        driver.apply(Input::Submit { input_id, input });
        driver
    }

    /// The next event, or `None` once the core is idle (or nothing is left
    /// that could move it on).
    pub(super) async fn next(&mut self) -> Option<EventEnvelope> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(event);
            }
            if let Some(input) = self.inbox.pop_front() {
                self.apply(input);
                continue;
            }
            if self.state.session.is_idle() {
                self.call = None;
                self.stop_batch();
                return None;
            }
            let tools_running = self.batch.as_ref().is_some_and(|b| !b.running.is_empty());
            if self.call.is_none() && !tools_running {
                return None; // stalled: `finish` reports it
            }
            let input = self.wait().await;
            self.apply(input);
        }
    }

    /// The conversation as it is now.
    pub(super) fn state(&self) -> &AgentState {
        &self.state
    }

    /// The conversation, and the `result` of the submitted input if it
    /// ended.
    pub(super) fn into_parts(self) -> (AgentState, Option<ResultEvent>) {
        (self.state, self.result)
    }

    /// Whichever of the model call and the tool calls reports first.
    async fn wait(&mut self) -> Input {
        let Driver { call, batch, .. } = self;
        tokio::select! {
            input = next_model_input(call) => input,
            input = next_tool_input(batch) => input,
        }
    }

    fn apply(&mut self, input: Input) {
        let effects = step(&mut self.state.session, input, now_ms());
        for effect in effects {
            self.perform(effect);
        }
    }

    fn perform(&mut self, effect: Effect) {
        match effect {
            Effect::Emit { turn_id, message } => {
                if let AgentMessage::Result(result) = &message
                    && turn_id == Some(self.input_id)
                {
                    self.result = Some(result.clone());
                }
                if let AgentMessage::ApprovalRequest(request) = &message {
                    // Nobody can answer inside the library: say how to allow it.
                    self.inbox.push_back(Input::Approval {
                        request_id: request.request_id.clone(),
                        decision: ApprovalDecision::reject(format!(
                            "an embedded agent cannot ask anyone to approve `{}` ({}); the application must allow it with a rule or a permission mode",
                            request.name, request.reason
                        )),
                    });
                }
                let event = self.state.record(turn_id, message);
                self.ready.push_back(event);
            }
            Effect::CallModel {
                request_id,
                request,
            } => self.call = Some((request_id, self.model.stream(request))),
            Effect::CancelModel { request_id } => {
                if self.call.as_ref().is_some_and(|(id, _)| *id == request_id) {
                    self.call = None;
                }
            }
            Effect::RunTools { batch_id, calls } => {
                // A call allowed later joins its batch; a new batch replaces the old.
                if self.batch.as_ref().is_none_or(|b| b.id != batch_id) {
                    self.stop_batch();
                    self.batch = Some(Batch {
                        id: batch_id,
                        cancel: CancellationToken::new(),
                        running: FuturesUnordered::new(),
                    });
                }
                if let Some(batch) = self.batch.as_mut() {
                    for call in calls {
                        let call_id = call.call.id.clone();
                        let run = self.tools.run(call, batch.cancel.clone());
                        let done: BoxFuture<'static, (String, ToolOutcome)> =
                            Box::pin(async move { (call_id, run.await) });
                        batch.running.push(done);
                    }
                }
            }
            // Requests are answered at once (above): no timer is needed.
            Effect::ApprovalTimer { .. } => {}
            // No MCP server can come up here (the library has none, and no
            // catalog to follow): waiting would only delay the call.
            Effect::McpWaitTimer { turn_id, .. } => {
                self.inbox.push_back(Input::McpWaitTimedOut { turn_id })
            }
            Effect::SaveRule { rule } => self.inbox.push_back(Input::RuleSaved {
                rule,
                result: Err("an embedded agent writes no configuration files".into()),
            }),
            Effect::CancelTools { batch_id } => {
                if self.batch.as_ref().is_some_and(|b| b.id == batch_id) {
                    self.stop_batch();
                }
            }
            // A library agent has no hook files: its hook set is empty, so
            // this is never asked; were it asked, no hook runs.
            Effect::RunHook { hook_id, .. } => self.inbox.push_back(Input::HookDone {
                hook_id,
                answer: Default::default(),
                ran: Vec::new(),
            }),
            Effect::SessionCommand { input_id, command } => {
                let reply = commands::failed(
                    command_name(&command),
                    "the library keeps no stored sessions (that needs the agentbus daemon); save an AgentState with `save_to_file` instead",
                );
                self.inbox.push_back(Input::CommandDone { input_id, reply });
            }
        }
    }

    /// Cancel the running tool calls, if any, and forget them.
    fn stop_batch(&mut self) {
        self.batch = None;
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        // The calls run on tasks of their own: a batch dropped (cancelled,
        // or its run dropped) stops them.
        self.cancel.cancel();
    }
}

/// The next input from the model call; pending forever without one.
async fn next_model_input(call: &mut Option<(u64, ModelStream)>) -> Input {
    let Some((request_id, stream)) = call.as_mut() else {
        return std::future::pending().await;
    };
    let request_id = *request_id;
    let (input, last) = model_input(request_id, stream.next().await);
    if last {
        *call = None;
    }
    input
}

/// The next finished tool call; pending forever when none runs.
async fn next_tool_input(batch: &mut Option<Batch>) -> Input {
    let Some(batch) = batch.as_mut() else {
        return std::future::pending().await;
    };
    match batch.running.next().await {
        Some((call_id, outcome)) => Input::ToolFinished {
            checkpoint: None,
            batch_id: batch.id,
            call_id,
            outcome,
        },
        None => std::future::pending().await,
    }
}

/// The slash command a session command came from.
fn command_name(command: &SessionCommand) -> &'static str {
    command.name()
}
