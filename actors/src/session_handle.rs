//! A handle on one live session: what a front end holds to talk to it.
//!
//! Cheap to clone. Inputs go to the session's AgentLoop; events come from
//! its topic (subscribe before submitting, and nothing is missed).

use crate::agent_loop::{AgentLoop, Interrupt, Snapshot, Submit};
use crate::bus::{SessionTopic, SubscribeError, Subscription};
use crate::protocol::{EventEnvelope, InputId, SessionId, UserInput};
use crate::session::SessionState;
use kameo::actor::ActorRef;
use std::sync::Arc;

/// Why a session could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("unknown model profile `{name}`; configured profiles: {available}")]
    UnknownProfile { name: String, available: String },
    #[error("session {0} is not running")]
    Gone(SessionId),
    #[error("internal error: {0}")]
    Internal(String),
}

/// A live session.
#[derive(Clone)]
pub struct SessionHandle {
    id: SessionId,
    agent_loop: ActorRef<AgentLoop>,
    topic: Arc<SessionTopic>,
}

impl SessionHandle {
    pub(crate) fn new(
        id: SessionId,
        agent_loop: ActorRef<AgentLoop>,
        topic: Arc<SessionTopic>,
    ) -> Self {
        SessionHandle {
            id,
            agent_loop,
            topic,
        }
    }

    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// Queue a query or control command; returns its input id.
    pub async fn submit(&self, input: UserInput) -> Result<InputId, SessionError> {
        self.agent_loop
            .ask(Submit(input))
            .await
            .map_err(|_| SessionError::Gone(self.id.clone()))
    }

    /// Queue text typed by a user (slash commands are parsed by the session).
    pub async fn submit_text(&self, text: impl Into<String>) -> Result<InputId, SessionError> {
        self.submit(UserInput::Query { text: text.into() }).await
    }

    /// Cancel the running turn now.
    pub async fn interrupt(&self) -> Result<(), SessionError> {
        self.agent_loop
            .ask(Interrupt)
            .await
            .map_err(|_| SessionError::Gone(self.id.clone()))
    }

    /// Events after `after_seq`, then live ones.
    pub fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError> {
        self.topic.subscribe(after_seq)
    }

    pub fn topic(&self) -> &Arc<SessionTopic> {
        &self.topic
    }

    /// A copy of the session state.
    pub async fn snapshot(&self) -> Result<SessionState, SessionError> {
        self.agent_loop
            .ask(Snapshot)
            .await
            .ok()
            .flatten()
            .ok_or_else(|| SessionError::Gone(self.id.clone()))
    }

    /// Stop the session's AgentLoop (running work is cancelled).
    pub async fn stop(&self) {
        let _ = self.agent_loop.stop_gracefully().await;
        self.agent_loop.wait_for_shutdown().await;
    }
}
