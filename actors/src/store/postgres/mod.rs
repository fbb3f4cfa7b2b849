//! The Postgres backend: the sessions of several agentbus processes (and,
//! next, several machines) in one database.
//!
//! [`PostgresStore`] implements [`SessionStore`] with hand-written SQL on a
//! pool of connections (tokio-postgres + deadpool): each operation takes a
//! connection and runs as one statement or one transaction, so operations
//! on different sessions run side by side. The rules are the SQLite
//! backend's, and the shared store tests run against both: a commit is
//! one transaction (events, seq reservation, waiting inputs), history is
//! never rewritten, `stream_event`s are never stored, what does not decode
//! is [`StoreError::Corrupt`]. Opened as a process of its own
//! ([`PostgresStore::open`]), leases are process leases ([`Owner`]);
//! opened as a node of a cluster ([`PostgresStore::open_node`]), sessions
//! are claimed by the node with an epoch that fences every write, and the
//! store is also a [`ClusterStore`] (node leases, sweeps). Either way,
//! nobody takes a session a live node drives.
//!
//! What differs from SQLite, because the store is across a network: a
//! server that cannot be reached is [`StoreError::Connect`] (at open it
//! stops agentbus with what to check), a connection that breaks mid-way is
//! [`StoreError::ConnectionLost`] (the pool makes a new one for the next
//! operation), and a commit sent again after its answer was lost is
//! recognised (see `log`). The URL's password is never shown: errors and
//! logs carry the URL without it. Connections are plain (no TLS yet).
//!
//! - `open`: the pool, the first connection, the migration.
//! - [`schema`]: tables and versioned migrations (`schema_version`).
//! - `sessions`: create, lease, release, delete, title, get, resolve.
//! - `visibility`: which sessions a token sees (the list of sessions,
//!   whole or one token's) and the viewers a session is given.
//! - `claims`: claims by nodes, the fence of every write, the sweeps;
//!   `ownership`: what this node holds (its id, its claims' epochs);
//!   `nodes`: node leases.
//! - `log`: commit, accepted inputs, replay.
//! - `copies`: fork, export, import (none copies checkpoints).
//! - `checkpoints`: blobs (file contents by hash, shared by every session)
//!   and checkpoints (what each tool call changed), what taking back a
//!   session's changes to its workspace needs.
//! - `statements`: the statements those share; `rows`: decoding rows.
//! - `failure`: a Postgres failure as a [`StoreError`].

mod checkpoints;
mod claims;
mod copies;
mod failure;
mod log;
mod nodes;
mod open;
mod ownership;
mod rows;
pub mod schema;
mod sessions;
mod statements;
mod visibility;

/// The statement of a page of the list (to check how the planner runs it).
#[cfg(test)]
pub(crate) use visibility::list_statement;

use super::checkpoint::{Checkpoint, CheckpointUsage, Collected};
use super::cluster::{ClusterStore, NodeId, NodeInfo, Renewal};
use super::location::PostgresUrl;
use super::{
    AcceptedInput, Commit, ListPage, NewSession, Owner, SessionDocument, SessionRecord,
    SessionStore, StoreError,
};
use crate::protocol::{EventEnvelope, SessionId};
use chrono::{DateTime, SubsecRound, Utc};
use deadpool_postgres::{Client, Pool};
use failure::Failures;
use ownership::Ownership;
use std::sync::Arc;
use std::time::Duration;

/// Connections of a node's own pool for its lease and sweeps.
const LEASE_CONNECTIONS: usize = 2;

/// The Postgres backend: cheap to clone, every clone shares one pool.
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    failures: Failures,
    /// Set when opened as a node of a cluster.
    ownership: Option<Arc<Ownership>>,
}

impl PostgresStore {
    /// Connect to `url`, and make or migrate its schema. Refuses, untouched,
    /// a database from a newer agentbus ([`StoreError::NewerSchema`]) and
    /// one holding another program's tables
    /// ([`StoreError::ForeignDatabase`]); a server that cannot be reached is
    /// [`StoreError::Connect`], saying what to check.
    pub async fn open(url: &PostgresUrl) -> Result<PostgresStore, StoreError> {
        let (pool, failures) = open::open(url).await?;
        Ok(PostgresStore {
            pool,
            failures,
            ownership: None,
        })
    }

    /// [`open`](Self::open) as a node of a cluster: registered as a new
    /// node named `name` whose lease lasts `ttl` (renewed by
    /// [`ClusterStore::heartbeat`]).
    pub async fn open_node(
        url: &PostgresUrl,
        name: String,
        ttl: Duration,
    ) -> Result<PostgresStore, StoreError> {
        let (pool, failures) = open::open(url).await?;
        let (lease_pool, _) = open::pool(url, LEASE_CONNECTIONS)?;
        let node = NodeId::new();
        let ownership = Ownership::new(node, name, ttl, lease_pool);
        let client = ownership.pool.get().await.map_err(|e| failures.pool(e))?;
        nodes::register(
            &client,
            &failures,
            node,
            ownership.name(),
            ownership.ttl_secs(),
        )
        .await?;
        tracing::info!(node = %node, name = ownership.name(), "joined the cluster");
        Ok(PostgresStore {
            pool,
            failures,
            ownership: Some(Arc::new(ownership)),
        })
    }

    /// The claim a write of session `id` must hold, on a node.
    fn fence(&self, id: &SessionId) -> Result<log::Fence<'_>, StoreError> {
        match &self.ownership {
            None => Ok(None),
            Some(ownership) => Ok(Some((ownership.as_ref(), ownership.claim(id)?))),
        }
    }

    /// A connection of the node's own pool.
    async fn lease_client(&self, ownership: &Ownership) -> Result<Client, StoreError> {
        ownership
            .pool
            .get()
            .await
            .map_err(|e| self.failures.pool(e))
    }

    /// The node's ownership state (a store opened as a node has one).
    fn node_state(&self) -> Result<&Ownership, StoreError> {
        self.ownership.as_deref().ok_or_else(|| StoreError::Closed {
            reason: "this store was not opened as a node of a cluster".to_string(),
        })
    }

    /// A connection from the pool.
    async fn client(&self) -> Result<Client, StoreError> {
        self.pool.get().await.map_err(|e| self.failures.pool(e))
    }
}

/// The clock, at the precision the store keeps.
fn now() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

#[async_trait::async_trait]
impl SessionStore for PostgresStore {
    async fn create(&self, new: NewSession, owner: Owner) -> Result<SessionRecord, StoreError> {
        let mut client = self.client().await?;
        let ownership = self.ownership.as_deref();
        sessions::create(&mut client, &self.failures, ownership, new, owner, now()).await
    }

    async fn acquire(
        &self,
        id: &SessionId,
        owner: Owner,
    ) -> Result<(SessionRecord, Vec<EventEnvelope>), StoreError> {
        let mut client = self.client().await?;
        let ownership = self.ownership.as_deref();
        sessions::acquire(&mut client, &self.failures, ownership, id, owner).await
    }

    async fn release(&self, id: &SessionId, owner: Owner) -> Result<(), StoreError> {
        let client = self.client().await?;
        let ownership = self.ownership.as_deref();
        sessions::release(&client, &self.failures, ownership, id, owner).await
    }

    async fn commit(&self, id: &SessionId, commit: Commit) -> Result<(), StoreError> {
        let fence = self.fence(id)?;
        let mut client = self.client().await?;
        log::commit(&mut client, &self.failures, id, &commit, now(), fence).await
    }

    async fn accept_input(&self, id: &SessionId, input: AcceptedInput) -> Result<(), StoreError> {
        let fence = self.fence(id)?;
        let mut client = self.client().await?;
        log::accept_input(&mut client, &self.failures, id, &input, now(), fence).await
    }

    async fn waiting_inputs(&self, id: &SessionId) -> Result<Vec<AcceptedInput>, StoreError> {
        let client = self.client().await?;
        log::waiting_inputs(&client, &self.failures, id).await
    }

    async fn sessions_with_waiting_inputs(&self) -> Result<Vec<SessionId>, StoreError> {
        let client = self.client().await?;
        log::sessions_with_waiting_inputs(&client, &self.failures).await
    }

    async fn load_events(
        &self,
        id: &SessionId,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        let client = self.client().await?;
        log::load_events(&client, &self.failures, id, after_seq, up_to).await
    }

    async fn list(&self, query: ListPage) -> Result<Vec<SessionRecord>, StoreError> {
        let client = self.client().await?;
        let ListPage {
            limit,
            after,
            visible_to,
        } = query;
        let (after, visible_to) = (after.as_ref(), visible_to.as_deref());
        visibility::list(&client, &self.failures, limit, after, visible_to).await
    }

    async fn get(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        let client = self.client().await?;
        sessions::get(&client, &self.failures, id).await
    }

    async fn resolve(&self, prefix: &str) -> Result<SessionId, StoreError> {
        let client = self.client().await?;
        sessions::resolve(&client, &self.failures, prefix).await
    }

    async fn fork(
        &self,
        id: &SessionId,
        at_seq: Option<u64>,
        new_id: SessionId,
        owner: Option<Owner>,
        created_by: Option<String>,
    ) -> Result<SessionRecord, StoreError> {
        let mut client = self.client().await?;
        copies::fork(
            &mut client,
            &self.failures,
            id,
            at_seq,
            new_id,
            owner,
            created_by,
            now(),
        )
        .await
    }

    async fn delete(&self, id: &SessionId, owner: Owner) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        let ownership = self.ownership.as_deref();
        sessions::delete(&mut client, &self.failures, ownership, id, owner).await
    }

    async fn set_title(&self, id: &SessionId, title: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        sessions::set_title(&client, &self.failures, id, title).await
    }

    async fn set_viewers(&self, id: &SessionId, viewers: &[String]) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        visibility::set_viewers(&mut client, &self.failures, id, viewers).await
    }

    async fn export(&self, id: &SessionId) -> Result<SessionDocument, StoreError> {
        let mut client = self.client().await?;
        copies::export(&mut client, &self.failures, id, now()).await
    }

    async fn import(
        &self,
        document: SessionDocument,
        new_id: SessionId,
        owner: Option<Owner>,
    ) -> Result<SessionRecord, StoreError> {
        let mut client = self.client().await?;
        copies::import(&mut client, &self.failures, document, new_id, owner, now()).await
    }

    async fn missing_blobs(&self, hashes: Vec<String>) -> Result<Vec<String>, StoreError> {
        let client = self.client().await?;
        checkpoints::missing_blobs(&client, &self.failures, hashes, now()).await
    }

    async fn put_blobs(&self, blobs: Vec<(String, Vec<u8>)>) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        checkpoints::put_blobs(&mut client, &self.failures, blobs, now()).await
    }

    async fn blob(&self, hash: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let client = self.client().await?;
        checkpoints::blob(&client, &self.failures, hash).await
    }

    async fn add_checkpoint(&self, checkpoint: Checkpoint) -> Result<(), StoreError> {
        let mut client = self.client().await?;
        checkpoints::add_checkpoint(&mut client, &self.failures, &checkpoint).await
    }

    async fn checkpoints(&self, id: &SessionId) -> Result<Vec<Checkpoint>, StoreError> {
        let mut client = self.client().await?;
        checkpoints::checkpoints(&mut client, &self.failures, id).await
    }

    async fn mark_undone(&self, id: &SessionId, ids: Vec<String>) -> Result<(), StoreError> {
        let client = self.client().await?;
        checkpoints::mark_undone(&client, &self.failures, id, &ids).await
    }

    async fn drop_checkpoints(&self, id: &SessionId, ids: Vec<String>) -> Result<(), StoreError> {
        let client = self.client().await?;
        checkpoints::drop_checkpoints(&client, &self.failures, id, &ids).await
    }

    async fn checkpoint_usage(&self) -> Result<CheckpointUsage, StoreError> {
        let client = self.client().await?;
        checkpoints::checkpoint_usage(&client, &self.failures).await
    }

    async fn collect_blobs(&self, unused_since: DateTime<Utc>) -> Result<Collected, StoreError> {
        let client = self.client().await?;
        checkpoints::collect_blobs(&client, &self.failures, unused_since).await
    }

    async fn close(&self) {
        if let Some(ownership) = &self.ownership {
            ownership.fence();
            ownership.pool.close();
        }
        self.pool.close();
    }
}

/// How long an expired lease row that owns nothing is kept (it tells
/// operators a node was there).
fn keep_expired_nodes(ttl_secs: f64) -> f64 {
    (ttl_secs * 10.0).max(60.0)
}

#[async_trait::async_trait]
impl ClusterStore for PostgresStore {
    fn node(&self) -> NodeId {
        self.ownership
            .as_deref()
            .map(Ownership::node)
            .unwrap_or_default()
    }

    fn node_name(&self) -> &str {
        self.ownership.as_deref().map_or("", Ownership::name)
    }

    async fn heartbeat(&self) -> Result<Renewal, StoreError> {
        let ownership = self.node_state()?;
        let node = ownership.node();
        let client = self.lease_client(ownership).await?;
        nodes::heartbeat(&client, &self.failures, node, ownership.ttl_secs()).await
    }

    fn fence(&self) {
        if let Some(ownership) = &self.ownership {
            ownership.fence();
        }
    }

    async fn rejoin(&self) -> Result<NodeId, StoreError> {
        let ownership = self.node_state()?;
        let client = self.lease_client(ownership).await?;
        let old = ownership.node();
        let node = NodeId::new();
        nodes::register(
            &client,
            &self.failures,
            node,
            ownership.name(),
            ownership.ttl_secs(),
        )
        .await?;
        // Whatever the old incarnation still owned is up for adoption now.
        if let Err(e) = nodes::expire(&client, &self.failures, old).await {
            tracing::debug!(node = %old, "could not mark the old lease expired: {e}");
        }
        ownership.become_node(node);
        tracing::info!(node = %node, old = %old, name = ownership.name(), "joined the cluster again as a new node");
        Ok(node)
    }

    async fn leave(&self) -> Result<(), StoreError> {
        let ownership = self.node_state()?;
        let node = ownership.node();
        ownership.fence();
        let mut client = self.lease_client(ownership).await?;
        let released = nodes::leave(&mut client, &self.failures, node).await?;
        tracing::info!(node = %node, released, "left the cluster");
        Ok(())
    }

    async fn release_idle_orphans(&self) -> Result<u64, StoreError> {
        let ownership = self.node_state()?;
        let client = self.lease_client(ownership).await?;
        let released = claims::release_idle_orphans(&client, &self.failures).await?;
        let keep = keep_expired_nodes(ownership.ttl_secs());
        nodes::forget_old(&client, &self.failures, keep).await?;
        Ok(released)
    }

    async fn adopt_orphans(&self, limit: u32) -> Result<Vec<SessionId>, StoreError> {
        let ownership = self.node_state()?;
        let me = ownership.claimant(&SessionId::from(""))?;
        let client = self.lease_client(ownership).await?;
        let adopted = claims::adopt_orphans(&client, &self.failures, me, limit).await?;
        Ok(adopted
            .into_iter()
            .map(|(id, claim)| {
                ownership.record(&id, claim);
                id
            })
            .collect())
    }

    async fn abandon(&self, id: &SessionId) -> Result<(), StoreError> {
        let ownership = self.node_state()?;
        let Some(claim) = ownership.forget(id) else {
            return Ok(());
        };
        let client = self.lease_client(ownership).await?;
        claims::abandon(&client, &self.failures, id, &claim).await
    }

    async fn nodes(&self) -> Result<Vec<NodeInfo>, StoreError> {
        let ownership = self.node_state()?;
        let client = self.lease_client(ownership).await?;
        nodes::list(&client, &self.failures).await
    }

    fn claim_epoch(&self, id: &SessionId) -> Option<u64> {
        let claim = self.ownership.as_deref()?.current(id)?;
        u64::try_from(claim.epoch).ok()
    }
}
