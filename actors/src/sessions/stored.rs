//! Stored sessions as a service: create, find, list, fork, export, import
//! and delete sessions in the store, each announced on the lifecycle topic.
//!
//! The one implementation behind the slash commands (`/new`, `/sessions`,
//! `/resume`, `/fork`, `/save`, `/load`), the HTTP API and the `sessions`
//! command line. Works on the store alone: it never loads a session (that
//! is the SessionManager's job) and never touches a live one's state.
//! Sessions it creates are leased by this process's [`Owner`] (the one
//! source of it); forks and imports are left free for whoever loads them.
//!
//! Keeps who made a session and who may follow it (the record's
//! `created_by` and `viewers`: names of API tokens) and says who did what
//! in the lifecycle events (`by`); it never decides who may do something —
//! the HTTP layer does, from the record.

use crate::bus::LifecycleTopic;
use crate::protocol::{EventEnvelope, LifecycleKind, SessionId};
use crate::session::SessionError;
use crate::settings::Settings;
use crate::store::{
    self, ClusterStore, ListPage, NewSession, Owner, SessionDocument, SessionRecord, SessionStore,
};
use std::sync::Arc;
use std::time::Duration;

/// The stored sessions of one store, as seen by this process.
#[derive(Clone)]
pub struct StoredSessions {
    store: Arc<dyn SessionStore>,
    lifecycle: Arc<LifecycleTopic>,
    owner: Owner,
}

impl StoredSessions {
    /// The configured store, with a lifecycle topic of its own, for this
    /// process (its leases are this process's `Owner`). A runtime opens
    /// it once; commands that only read or copy stored sessions open it
    /// alone (no model, no MCP server).
    pub async fn open(settings: &Settings) -> Result<StoredSessions, SessionError> {
        let store = store::open(
            &settings.store_location(),
            Duration::from_millis(settings.sessions.busy_timeout_ms),
        )
        .await?;
        Ok(StoredSessions {
            store,
            lifecycle: Arc::new(LifecycleTopic::starting_now()),
            owner: Owner::current(),
        })
    }

    /// The cluster's database, opened as a node of it (a new node row,
    /// its lease running): the stored sessions as this node sees them
    /// (claimed by the node, every write fenced), and the cluster's side of
    /// the same store.
    pub(crate) async fn open_node(
        cluster: &crate::settings::ClusterSettings,
    ) -> Result<(StoredSessions, Arc<dyn ClusterStore>), SessionError> {
        let (store, node) = store::open_node(
            &cluster.postgres_url,
            cluster.node_name(),
            cluster.node_ttl(),
        )
        .await?;
        // Each event says which node said it, as operators know it.
        let lifecycle = LifecycleTopic::starting_now_on(node.node_name());
        Ok((
            StoredSessions {
                store,
                lifecycle: Arc::new(lifecycle),
                owner: Owner::current(),
            },
            node,
        ))
    }

    /// Close the store (what [`open`](Self::open) opened).
    pub async fn close(&self) {
        self.store.close().await;
    }

    pub(crate) fn store(&self) -> &Arc<dyn SessionStore> {
        &self.store
    }

    /// Where sessions created, busy, idle, closed and deleted are
    /// announced (the runtime's lifecycle topic; on a node of a cluster,
    /// each event names the node).
    pub(crate) fn lifecycle(&self) -> &Arc<LifecycleTopic> {
        &self.lifecycle
    }

    /// Who holds the leases of sessions made or loaded here.
    pub(crate) fn owner(&self) -> Owner {
        self.owner
    }

    /// A new, empty session leased by this process, named `title` if one is
    /// given (otherwise its first query names it). Announced as `created`
    /// by its creator (`new.created_by`).
    pub async fn create(
        &self,
        new: NewSession,
        title: Option<String>,
    ) -> Result<SessionRecord, SessionError> {
        let id = new.id.clone();
        let by = new.created_by.clone();
        let mut record = self.store.create(new, self.owner).await?;
        if let Some(title) = title.filter(|t| !t.trim().is_empty()) {
            self.store.set_title(&id, &title).await?;
            record.title = Some(title);
        }
        self.lifecycle.announce_by(&id, LifecycleKind::Created, by);
        Ok(record)
    }

    /// Give a stored session a new title (a later query does not change
    /// it), announced on the lifecycle topic (`renamed`, by the API token
    /// named `by`; `None`: without a token).
    pub async fn rename(
        &self,
        id: &SessionId,
        title: &str,
        by: Option<String>,
    ) -> Result<(), SessionError> {
        self.store.set_title(id, title).await?;
        self.lifecycle.announce_by(id, LifecycleKind::Renamed, by);
        Ok(())
    }

    /// Give a stored session exactly these viewers: the names of the API
    /// tokens that may follow it besides its creator (duplicates count
    /// once). Replaces the ones it had; announces nothing.
    pub async fn set_viewers(
        &self,
        id: &SessionId,
        viewers: Vec<String>,
    ) -> Result<(), SessionError> {
        Ok(self.store.set_viewers(id, &viewers).await?)
    }

    /// The name of the API token that created session `id` (`None`: made
    /// without one), for what is made from it on its creator's behalf.
    pub(crate) async fn creator_of(&self, id: &SessionId) -> Result<Option<String>, SessionError> {
        let record = self.store.get(id).await?;
        Ok(record.and_then(|record| record.created_by))
    }

    /// A session id from an id or a unique prefix of one.
    pub async fn resolve(&self, prefix: &str) -> Result<SessionId, SessionError> {
        Ok(self.store.resolve(prefix).await?)
    }

    /// A stored session's record.
    pub async fn get(&self, id: &SessionId) -> Result<Option<SessionRecord>, SessionError> {
        Ok(self.store.get(id).await?)
    }

    /// Stored sessions, most recently updated first (a page of them, as
    /// `query` says).
    pub async fn list(&self, query: ListPage) -> Result<Vec<SessionRecord>, SessionError> {
        Ok(self.store.list(query).await?)
    }

    /// Stored events with `after_seq < seq <= up_to`.
    pub async fn events(
        &self,
        id: &SessionId,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, SessionError> {
        Ok(self.store.load_events(id, after_seq, up_to).await?)
    }

    /// Stored events with `seq < before` of these types (`"system"`,
    /// `"result"`, ...).
    pub async fn events_of_types(
        &self,
        id: &SessionId,
        before: u64,
        types: &'static [&'static str],
    ) -> Result<Vec<EventEnvelope>, SessionError> {
        Ok(self.store.load_events_of_types(id, before, types).await?)
    }

    /// Copy session `id` (up to `at_seq`; `None`: every stored event) into
    /// a new session, which belongs to whoever forked it: the API token
    /// named `by` (`None`: without a token). The parent's viewers are not
    /// copied. Announced as `created` by `by`.
    pub async fn fork(
        &self,
        id: &SessionId,
        at_seq: Option<u64>,
        by: Option<String>,
    ) -> Result<SessionRecord, SessionError> {
        let record = self
            .store
            .fork(id, at_seq, SessionId::new(), None, by.clone())
            .await?;
        self.lifecycle
            .announce_by(&record.id, LifecycleKind::Created, by);
        Ok(record)
    }

    /// A session as a versioned export document.
    pub async fn export(&self, id: &SessionId) -> Result<SessionDocument, SessionError> {
        Ok(self.store.export(id).await?)
    }

    /// An export document as a new session.
    pub async fn import(&self, document: SessionDocument) -> Result<SessionRecord, SessionError> {
        let record = self.store.import(document, SessionId::new(), None).await?;
        self.lifecycle.announce(&record.id, LifecycleKind::Created);
        Ok(record)
    }

    /// Delete a session and its log, unless another live process holds it;
    /// announced as `deleted` by the API token named `by` (`None`: without
    /// a token). (A session loaded here must be unloaded first: the
    /// SessionManager does that.)
    pub async fn delete(&self, id: &SessionId, by: Option<String>) -> Result<(), SessionError> {
        self.store.delete(id, self.owner).await?;
        self.lifecycle.announce_by(id, LifecycleKind::Deleted, by);
        Ok(())
    }

    /// Give up this process's lease of a session it no longer drives.
    pub(crate) async fn release(&self, id: &SessionId) {
        if let Err(e) = self.store.release(id, self.owner).await {
            tracing::warn!(session = %id, "could not release the session: {e}");
        }
    }
}
