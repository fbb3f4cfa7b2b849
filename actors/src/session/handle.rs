//! A handle on one live session: what a front end holds to talk to it.
//!
//! Cheap to clone. Inputs go to the session's AgentLoop; events come from
//! its topic — recent ones from the ring, older ones from the store — so a
//! subscriber can start after any seq (subscribe before submitting, and
//! nothing is missed).

use super::SessionError;
use super::actor::{
    AgentLoop, Announce, Feed, IdleFor, PendingApprovals, ServersGiven, Snapshot, Submit, UseFiles,
};
use super::core::{Input, SessionState};
use super::door::SessionDoor;
use crate::bus::source::EventSource;
use crate::bus::{SessionTopic, SubscribeError, Subscription};
use crate::protocol::{EventEnvelope, InputId, SessionId, SessionInput, UserInput};
use crate::store::{SessionStore, StoreError};
use kameo::actor::ActorRef;
use std::sync::Arc;

/// A live session.
#[derive(Clone)]
pub struct SessionHandle {
    id: SessionId,
    agent_loop: ActorRef<AgentLoop>,
    topic: Arc<SessionTopic>,
    store: Arc<dyn SessionStore>,
    /// The last seq stored before this load (0 for a new session).
    loaded_after: u64,
    /// The directory its tools work in.
    workspace: std::path::PathBuf,
    /// One count per clone: the SessionManager holds one, so more means a
    /// front end is using the session and it must stay loaded.
    users: Arc<()>,
}

impl SessionHandle {
    pub(crate) fn new(
        id: SessionId,
        agent_loop: ActorRef<AgentLoop>,
        topic: Arc<SessionTopic>,
        store: Arc<dyn SessionStore>,
        loaded_after: u64,
        workspace: std::path::PathBuf,
    ) -> Self {
        SessionHandle {
            id,
            agent_loop,
            topic,
            store,
            loaded_after,
            workspace,
            users: Arc::new(()),
        }
    }

    /// Whether anyone besides the SessionManager holds this session.
    pub(crate) fn in_use(&self) -> bool {
        Arc::strong_count(&self.users) > 1
    }

    /// A handle on the same session that does not count as a user (see
    /// `in_use`): for the session's own services — the cluster's input
    /// route — which must not keep an idle session loaded.
    pub(crate) fn detached(&self) -> SessionHandle {
        SessionHandle {
            users: Arc::new(()),
            ..self.clone()
        }
    }

    /// The session's topic (for the cluster's relay, which reads it without
    /// counting as a watcher).
    pub(crate) fn topic(&self) -> &Arc<SessionTopic> {
        &self.topic
    }

    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The directory the session's tools work in.
    pub(crate) fn workspace(&self) -> &std::path::Path {
        &self.workspace
    }

    /// The last seq stored before this load: subscribe after it to see
    /// everything this load did (the closing of a turn a dead process left,
    /// the `session_started` event, ...), or after 0 for the whole story.
    pub fn loaded_after(&self) -> u64 {
        self.loaded_after
    }

    /// Announce a load that was quiet so far (its `session_started`): the
    /// session is opened to be driven. Nothing when it was announced.
    pub async fn announce(&self) -> Result<(), SessionError> {
        self.agent_loop
            .ask(Announce)
            .await
            .map_err(|_| SessionError::Gone(self.id.clone()))
    }

    /// Queue an input — a prompt a model wrote for this child session
    /// included, which no door sends; returns its input id.
    pub(crate) async fn submit(&self, input: UserInput) -> Result<InputId, SessionError> {
        self.agent_loop
            .ask(Submit(input))
            .await
            .map_err(|e| match e {
                kameo::error::SendError::HandlerError(e) => e,
                _ => SessionError::Gone(self.id.clone()),
            })
    }

    /// Make the session's file tools (`read_file`, `write_file`,
    /// `edit_file`) read and write through `files`: a front end that holds
    /// the files (an editor), or the disk again. Paths are still checked
    /// against the roots on the disk first.
    pub async fn use_files(&self, files: crate::tools::Files) -> Result<(), SessionError> {
        self.agent_loop
            .ask(UseFiles(files))
            .await
            .map_err(|_| SessionError::Gone(self.id.clone()))
    }

    /// The session was given MCP servers: it reads the catalog now (its next
    /// model call offers them) and shows `notices`.
    pub(crate) async fn servers_given(&self, notices: Vec<String>) -> Result<(), SessionError> {
        self.agent_loop
            .ask(ServersGiven(notices))
            .await
            .map_err(|_| SessionError::Gone(self.id.clone()))
    }

    /// The process is stopping: the running turn ends with a stored
    /// `cancelled` result and queued inputs are answered without running
    /// (all of it committed when this returns).
    pub(crate) async fn shut_down(&self) -> Result<(), SessionError> {
        self.feed(Input::Shutdown).await
    }

    async fn feed(&self, input: Input) -> Result<(), SessionError> {
        self.agent_loop
            .ask(Feed(input))
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
        Ok(EventSource::stored_events(self, after_seq, up_to).await?)
    }

    /// How many subscribers watch the session now.
    pub(crate) fn watchers(&self) -> usize {
        self.topic.subscriber_count()
    }

    /// A copy of the session state.
    pub async fn snapshot(&self) -> Result<SessionState, SessionError> {
        self.agent_loop
            .ask(Snapshot)
            .await
            .map_err(|_| SessionError::Gone(self.id.clone()))
    }

    /// How many tool calls wait for the user's approval (0 when gone).
    pub async fn pending_approvals(&self) -> u32 {
        self.agent_loop.ask(PendingApprovals).await.unwrap_or(0)
    }

    /// Nothing running and nothing queued.
    pub async fn is_idle(&self) -> bool {
        self.idle_for().await.is_some()
    }

    /// How long the session has had nothing running and nothing queued;
    /// `None` while it is busy (or gone).
    pub(crate) async fn idle_for(&self) -> Option<std::time::Duration> {
        self.agent_loop.ask(IdleFor).await.ok().flatten()
    }

    /// Whether the session's AgentLoop still runs.
    pub(crate) fn is_alive(&self) -> bool {
        self.agent_loop.is_alive()
    }

    /// Wait until the session's AgentLoop has stopped (of its own accord).
    pub(crate) async fn wait_stopped(&self) {
        self.agent_loop.wait_for_shutdown().await;
    }

    /// Stop the session's AgentLoop now, even mid-handler (a fenced node:
    /// nothing it does may count any more).
    pub(crate) fn kill(&self) {
        self.agent_loop.kill();
    }

    /// Stop the session's AgentLoop (running work is cancelled).
    pub(crate) async fn stop(&self) {
        let _ = self.agent_loop.stop_gracefully().await;
        self.agent_loop.wait_for_shutdown().await;
    }
}

/// Two handles are equal when they reach the same AgentLoop: the same load
/// of the same session.
impl PartialEq for SessionHandle {
    fn eq(&self, other: &Self) -> bool {
        self.agent_loop.id() == other.agent_loop.id()
    }
}

impl Eq for SessionHandle {}

/// A live session is the source of its own events: the topic for recent and
/// live ones, the store for older ones.
/// The door of a session this process drives: queued inputs go through
/// the AgentLoop's `Submit` (stored before their id is answered), an
/// interrupt straight to its core, a decision to its waiting call.
#[async_trait::async_trait]
impl SessionDoor for SessionHandle {
    async fn send(&self, input: SessionInput) -> Result<Option<InputId>, SessionError> {
        match input {
            SessionInput::Query { text, images, by } => self
                .submit(UserInput::Query { text, images, by })
                .await
                .map(Some),
            SessionInput::Control { command, by } => self
                .submit(UserInput::Control { command, by })
                .await
                .map(Some),
            SessionInput::Interrupt => self.feed(Input::Interrupt).await.map(|()| None),
            SessionInput::Approval {
                request_id,
                decision,
            } => {
                let decide = super::actor::Decide {
                    request_id,
                    decision,
                };
                self.agent_loop
                    .ask(decide)
                    .await
                    .map(|()| None)
                    .map_err(|e| match e {
                        kameo::error::SendError::HandlerError(e) => e,
                        _ => SessionError::Gone(self.id.clone()),
                    })
            }
        }
    }
}

#[async_trait::async_trait]
impl EventSource for SessionHandle {
    fn session_id(&self) -> &SessionId {
        &self.id
    }

    fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError> {
        SessionHandle::subscribe(self, after_seq)
    }

    async fn stored_events(
        &self,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        self.store.load_events(&self.id, after_seq, up_to).await
    }
}
