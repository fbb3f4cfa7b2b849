//! A session as a front end reaches it on this process: driven here, or —
//! on a node of a cluster with a live plane — followed from the node that
//! drives it, its inputs sent there.
//!
//! Exists so that the HTTP server serves any session from any node with
//! one code path: [`ReachedSession`] is an [`EventSource`] (SSE, WebSocket)
//! and takes inputs, whichever node drives the session. Which one it is
//! was decided by the store's claim when it was reached: a session nobody
//! drives is claimed here, one another live node drives is followed.

use crate::bus::source::EventSource;
use crate::bus::{SubscribeError, Subscription};
use crate::cluster::{RemoteSession, RouteError};
use crate::protocol::{ApprovalDecision, EventEnvelope, InputId, SessionId, UserInput};
use crate::session::{SessionError, SessionHandle};
use crate::store::StoreError;

/// A session reached from this process.
#[derive(Clone)]
pub struct ReachedSession(Reached);

#[derive(Clone)]
enum Reached {
    Local(SessionHandle),
    Remote(RemoteSession),
}

impl ReachedSession {
    pub(super) fn local(handle: SessionHandle) -> ReachedSession {
        ReachedSession(Reached::Local(handle))
    }

    pub(super) fn remote(session: RemoteSession) -> ReachedSession {
        ReachedSession(Reached::Remote(session))
    }

    pub fn id(&self) -> &SessionId {
        match &self.0 {
            Reached::Local(handle) => handle.id(),
            Reached::Remote(session) => session.id(),
        }
    }

    /// The session's handle when this process drives it.
    pub fn local_handle(&self) -> Option<&SessionHandle> {
        match &self.0 {
            Reached::Local(handle) => Some(handle),
            Reached::Remote(_) => None,
        }
    }

    /// Queues a query or control command; its input id.
    pub async fn submit(&self, input: UserInput) -> Result<InputId, SessionError> {
        match &self.0 {
            Reached::Local(handle) => handle.submit(input).await,
            Reached::Remote(session) => session.submit(input).await.map_err(remote_error),
        }
    }

    /// Cancels the running turn now.
    pub async fn interrupt(&self) -> Result<(), SessionError> {
        match &self.0 {
            Reached::Local(handle) => handle.interrupt().await,
            Reached::Remote(session) => session.interrupt().await.map_err(remote_error),
        }
    }

    /// Answers approval request `request_id`.
    pub async fn decide(
        &self,
        request_id: impl Into<String>,
        decision: ApprovalDecision,
    ) -> Result<(), SessionError> {
        match &self.0 {
            Reached::Local(handle) => handle.decide(request_id, decision).await,
            Reached::Remote(session) => session
                .decide(request_id, decision)
                .await
                .map_err(remote_error),
        }
    }
}

#[async_trait::async_trait]
impl EventSource for ReachedSession {
    fn session_id(&self) -> &SessionId {
        self.id()
    }

    fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError> {
        match &self.0 {
            Reached::Local(handle) => handle.subscribe(after_seq),
            Reached::Remote(session) => session.subscribe(after_seq),
        }
    }

    async fn stored_events(
        &self,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        match &self.0 {
            Reached::Local(handle) => EventSource::stored_events(handle, after_seq, up_to).await,
            Reached::Remote(session) => session.stored_events(after_seq, up_to).await,
        }
    }
}

/// What the owner (or the way to it) said, as a session's error.
pub(super) fn remote_error(e: RouteError) -> SessionError {
    SessionError::Remote {
        failure: e.failure(),
        message: e.to_string(),
    }
}

/// Whether `e` says another node drives the session.
pub(super) fn held_elsewhere(e: &SessionError) -> bool {
    matches!(e, SessionError::Store(StoreError::HeldByNode { .. }))
}
