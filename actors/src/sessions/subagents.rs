//! Sub-agents: the `task` calls of one parent session, each run as a named
//! agent in a child session — created by the SessionManager, stored with
//! the parent's id and call id, streaming its events on its own topic like
//! any session — followed to the end of its turn, whose final text is the
//! call's result.
//!
//! At most `max_concurrent_subagents` children of one parent run at once
//! (the rest wait for a place). The parent's interrupt cancels the call,
//! which interrupts the child. A child's approval requests are re-told on
//! the parent's stream, tagged with the child, and a decision sent to the
//! parent is passed to the child. Children get no `task` tool themselves.
//! Never blocks the SessionManager: everything here runs on the call's
//! task.

use super::options::{ChildOf, SessionOptions};
use crate::model::{ToolCall, ToolOutcome};
use crate::protocol::{
    AgentMessage, PermissionMode, SessionId, StopReason, SubagentFinished, SubagentStarted, Usage,
    UserInput,
};
use crate::session::SessionHandle;
use crate::session::actor::{SubagentParent, SubagentReport, Subagents};
use crate::session::core::SubagentUpdate;
use crate::session::{SessionDoor, SessionError};
use futures::future::BoxFuture;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// Where child sessions are created and found (the SessionManager).
pub trait ChildSessions: Send + Sync + 'static {
    fn create(
        &self,
        options: SessionOptions,
    ) -> BoxFuture<'static, Result<SessionHandle, SessionError>>;
    /// A loaded session by id.
    fn loaded(&self, id: SessionId) -> BoxFuture<'static, Option<SessionHandle>>;
}

/// The child sessions of one parent.
pub struct SubagentRunner {
    manager: Arc<dyn ChildSessions>,
    places: Arc<Semaphore>,
}

impl SubagentRunner {
    pub fn new(manager: Arc<dyn ChildSessions>, max_concurrent: usize) -> Self {
        SubagentRunner {
            manager,
            places: Arc::new(Semaphore::new(max_concurrent.max(1))),
        }
    }
}

/// A `task` call's arguments.
#[derive(serde::Deserialize)]
struct TaskArguments {
    description: String,
    prompt: String,
    agent: String,
}

/// How a child's turn ended.
struct ChildEnd {
    stop_reason: StopReason,
    text: String,
    usage: Usage,
    error: Option<String>,
}

impl Subagents for SubagentRunner {
    fn run(
        &self,
        call: ToolCall,
        parent: SubagentParent,
        report: SubagentReport,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ToolOutcome> {
        let manager = self.manager.clone();
        let places = self.places.clone();
        Box::pin(async move {
            let arguments: TaskArguments = match serde_json::from_value(call.input.clone()) {
                Ok(arguments) => arguments,
                Err(e) => {
                    return ToolOutcome::error(format!(
                        "task needs {{\"description\": text, \"prompt\": text, \"agent\": name}}: {e}. Call it again with those arguments."
                    ));
                }
            };
            let _place = tokio::select! {
                biased;
                _ = cancel.cancelled() => return cancelled(),
                place = places.acquire_owned() => match place {
                    Ok(place) => place,
                    Err(_) => return ToolOutcome::error("agentbus is shutting down"),
                },
            };
            match run_child(&manager, &call, &arguments, &parent, &report, &cancel).await {
                Ok(end) => outcome(end),
                Err(e) => {
                    ToolOutcome::error(format!("the {} agent could not run: {e}", arguments.agent))
                }
            }
        })
    }

    fn decide(
        &self,
        child: SessionId,
        request_id: String,
        decision: crate::protocol::ApprovalDecision,
    ) -> BoxFuture<'static, Result<(), SessionError>> {
        let manager = self.manager.clone();
        Box::pin(async move {
            let handle = manager
                .loaded(child.clone())
                .await
                .ok_or(SessionError::Gone(child))?;
            handle.decide(&request_id, decision).await
        })
    }
}

async fn run_child(
    manager: &Arc<dyn ChildSessions>,
    call: &ToolCall,
    arguments: &TaskArguments,
    parent: &SubagentParent,
    report: &SubagentReport,
    cancel: &CancellationToken,
) -> Result<ChildEnd, SessionError> {
    let options = SessionOptions {
        workspace: Some(parent.workspace.clone()),
        title: Some(format!("{} ({})", arguments.description, arguments.agent)),
        agent: Some(arguments.agent.clone()),
        permission_mode: (parent.permission_mode == PermissionMode::Plan)
            .then_some(PermissionMode::Plan),
        parent: Some(ChildOf {
            session: parent.session_id.clone(),
            at_seq: parent.at_seq,
            call_id: call.id.clone(),
        }),
        inherit_model: Some(parent.model.clone()),
        ..SessionOptions::default()
    };
    let child = manager.create(options).await?;
    let child_id = child.id().clone();
    let agent = arguments.agent.clone();
    report(SubagentUpdate::Started(SubagentStarted {
        child: child_id.clone(),
        call_id: call.id.clone(),
        agent: agent.clone(),
        description: arguments.description.clone(),
    }))
    .await;
    let mut events = child
        .subscribe(0)
        .map_err(|e| SessionError::Internal(format!("following the child session: {e}")))?;
    // The model wrote the prompt: a leading `/` is text, not a command.
    let input_id = child
        .submit(UserInput::Prompt {
            text: arguments.prompt.clone(),
        })
        .await?;
    let mut interrupted = false;
    let end = loop {
        let event = tokio::select! {
            biased;
            _ = cancel.cancelled(), if !interrupted => {
                interrupted = true;
                let _ = child.interrupt().await;
                continue;
            }
            event = events.recv() => event,
        };
        let event = match event {
            Ok(event) => event,
            Err(crate::bus::RecvError::Lagged { last_seq }) => {
                events = child.subscribe(last_seq).map_err(|e| {
                    SessionError::Internal(format!("following the child session: {e}"))
                })?;
                continue;
            }
            Err(crate::bus::RecvError::Closed) => {
                break ChildEnd {
                    stop_reason: StopReason::Error,
                    text: String::new(),
                    usage: Usage::default(),
                    error: Some("the child session stopped before its turn ended".into()),
                };
            }
        };
        match &event.message {
            AgentMessage::ApprovalRequest(request) => {
                report(SubagentUpdate::Approval {
                    child: child_id.clone(),
                    agent: agent.clone(),
                    request: request.clone(),
                })
                .await;
            }
            AgentMessage::System(system)
                if system.subtype == crate::protocol::SystemSubtype::ApprovalResolved =>
            {
                report(SubagentUpdate::Resolved {
                    child: child_id.clone(),
                    event: system.clone(),
                })
                .await;
            }
            AgentMessage::Result(result) if event.turn_id == Some(input_id) => {
                break ChildEnd {
                    stop_reason: result.stop_reason,
                    text: result.text.clone(),
                    usage: result.usage,
                    error: result.error.clone(),
                };
            }
            _ => {}
        }
    };
    report(SubagentUpdate::Finished(SubagentFinished {
        child: child_id.clone(),
        call_id: call.id.clone(),
        agent,
        stop_reason: end.stop_reason,
        usage: end.usage,
    }))
    .await;
    // The child stays stored (and is unloaded when idle, like any session).
    Ok(end)
}

fn cancelled() -> ToolOutcome {
    ToolOutcome::error(format!(
        "{} before the agent started",
        crate::model::INTERRUPTED
    ))
}

fn outcome(end: ChildEnd) -> ToolOutcome {
    match end.stop_reason {
        StopReason::EndTurn | StopReason::MaxSteps if !end.text.trim().is_empty() => {
            answer(end.text)
        }
        StopReason::EndTurn | StopReason::MaxSteps => {
            answer("(the agent finished without a final message)".into())
        }
        StopReason::Cancelled => ToolOutcome::error(format!(
            "{} before the agent finished",
            crate::model::INTERRUPTED
        )),
        _ => ToolOutcome::error(format!(
            "the agent's turn failed: {}",
            end.error.unwrap_or_else(|| "no reason given".into())
        )),
    }
}

fn answer(text: String) -> ToolOutcome {
    ToolOutcome {
        output: text,
        is_error: false,
        duration_ms: 0,
    }
}
