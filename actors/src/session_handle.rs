//! A handle on one live session: what a front end holds to talk to it.
//!
//! Cheap to clone. Inputs go to the session's AgentLoop; events come from
//! its topic — recent ones from the ring, older ones from the store — so a
//! subscriber can start after any seq (subscribe before submitting, and
//! nothing is missed).

use crate::agent_loop::{AgentLoop, Interrupt, Snapshot, Submit};
use crate::bus::{SessionTopic, SubscribeError, Subscription};
use crate::protocol::{EventEnvelope, InputId, SessionId, UserInput};
use crate::session::SessionState;
use crate::store::{LoadEvents, Store, StoreError};
use kameo::actor::ActorRef;
use std::sync::Arc;

/// Why a session could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("unknown model profile `{name}`; configured profiles: {available}")]
    UnknownProfile { name: String, available: String },
    #[error("session {0} is not running")]
    Gone(SessionId),
    #[error("agentbus is shutting down: no session can be started or loaded")]
    ShuttingDown,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("internal error: {0}")]
    Internal(String),
}

/// A store request that failed: the store's own error, or the store actor
/// not running.
impl<M> From<kameo::error::SendError<M, StoreError>> for SessionError {
    fn from(e: kameo::error::SendError<M, StoreError>) -> Self {
        match e {
            kameo::error::SendError::HandlerError(e) => SessionError::Store(e),
            other => SessionError::Internal(format!("the store is not running: {other}")),
        }
    }
}

/// A request to a session actor that failed: its own error, or the actor
/// not running.
impl<M> From<kameo::error::SendError<M, SessionError>> for SessionError {
    fn from(e: kameo::error::SendError<M, SessionError>) -> Self {
        match e {
            kameo::error::SendError::HandlerError(e) => e,
            other => SessionError::Internal(other.to_string()),
        }
    }
}

/// A live session.
#[derive(Clone)]
pub struct SessionHandle {
    id: SessionId,
    agent_loop: ActorRef<AgentLoop>,
    topic: Arc<SessionTopic>,
    store: ActorRef<Store>,
    /// The last seq stored before this load (0 for a new session).
    loaded_after: u64,
    /// One count per clone: the SessionManager holds one, so more means a
    /// front end is using the session and it must stay loaded.
    users: Arc<()>,
}

impl SessionHandle {
    pub(crate) fn new(
        id: SessionId,
        agent_loop: ActorRef<AgentLoop>,
        topic: Arc<SessionTopic>,
        store: ActorRef<Store>,
        loaded_after: u64,
    ) -> Self {
        SessionHandle {
            id,
            agent_loop,
            topic,
            store,
            loaded_after,
            users: Arc::new(()),
        }
    }

    /// Whether anyone besides the SessionManager holds this session.
    pub(crate) fn in_use(&self) -> bool {
        Arc::strong_count(&self.users) > 1
    }

    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The last seq stored before this load: subscribe after it to see
    /// everything this load did (the closing of a turn a dead process left,
    /// the `session_started` event, ...), or after 0 for the whole story.
    pub fn loaded_after(&self) -> u64 {
        self.loaded_after
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

    /// Events after `after_seq` that the in-memory ring holds, then live
    /// ones; see [`stored_events`](Self::stored_events) for older ones.
    pub fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError> {
        self.topic.subscribe(after_seq)
    }

    /// Stored events with `after_seq < seq <= up_to` (the persisted ones).
    pub async fn stored_events(
        &self,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, SessionError> {
        self.store
            .ask(LoadEvents {
                id: self.id.clone(),
                after_seq,
                up_to,
            })
            .await
            .map_err(SessionError::from)
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

    pub(crate) fn agent_loop(&self) -> &ActorRef<AgentLoop> {
        &self.agent_loop
    }

    /// Nothing running and nothing queued.
    pub async fn is_idle(&self) -> bool {
        matches!(
            self.agent_loop.ask(crate::agent_loop::IdleFor).await,
            Ok(Some(_))
        )
    }

    /// Whether the session's AgentLoop still runs.
    pub fn is_alive(&self) -> bool {
        self.agent_loop.is_alive()
    }

    /// Stop the session's AgentLoop (running work is cancelled).
    pub async fn stop(&self) {
        let _ = self.agent_loop.stop_gracefully().await;
        self.agent_loop.wait_for_shutdown().await;
    }
}
