//! What a store shared by the nodes of a cluster does besides
//! [`SessionStore`](super::SessionStore): node leases, claims of sessions
//! by nodes with a fencing epoch, and the sweeps that hand a gone node's
//! sessions to the living (docs/cluster.md, "Nodes and their leases", "Claims and
//! fencing").
//!
//! Exists as a trait of its own so that the session store's seam stays
//! what it was — SQLite has no nodes, and nothing above the store sees an
//! epoch: a backend in cluster mode claims a session when it is created or
//! acquired, keeps the claim's epoch itself, and fences every commit with
//! it (a commit of a node that no longer owns the session is
//! [`StoreError::Fenced`](super::StoreError::Fenced)). The node lease task
//! and the sweeper (`cluster/ownership/`) drive this trait; only the Postgres
//! backend implements it.
//!
//! Every time here is the database's clock: nodes never compare their own
//! clocks with each other's.

use super::StoreError;
use crate::protocol::SessionId;
use chrono::{DateTime, Utc};
use std::fmt;

/// One incarnation of a node: a fresh id at every start, and again after
/// the node fenced itself (`nodes.node_id`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub uuid::Uuid);

impl NodeId {
    /// A fresh node id (time-ordered).
    pub fn new() -> Self {
        NodeId(uuid::Uuid::now_v7())
    }
}

impl Default for NodeId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for NodeId {
    /// Hyphenated and lower-case (also one NATS subject token).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0.hyphenated())
    }
}

/// A node as the `nodes` table has it, with how many sessions it drives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub node_id: NodeId,
    pub name: String,
    pub started_at: DateTime<Utc>,
    /// Its lease: it counts as gone from then on.
    pub expires_at: DateTime<Utc>,
    /// Its lease had not expired when the list was read.
    pub alive: bool,
    /// Sessions whose owner it is (`sessions.owner_node`).
    pub sessions: u64,
}

/// What a heartbeat found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// The lease runs for another TTL from the database's now.
    Renewed,
    /// The lease had expired (or the row is gone): this node must fence
    /// itself — another may already drive its sessions.
    Lapsed,
}

/// The cluster's side of a shared store.
#[async_trait::async_trait]
pub trait ClusterStore: Send + Sync + 'static {
    /// This node's current id.
    fn node(&self) -> NodeId;

    /// This node's name.
    fn node_name(&self) -> &str;

    /// Renew this node's lease for another TTL, if it has not expired.
    async fn heartbeat(&self) -> Result<Renewal, StoreError>;

    /// Stop at once, locally: every commit, claim and creation of this
    /// node is refused from now on without asking the database, and every
    /// claim is forgotten. (The database refuses the old claims anyway
    /// once another node takes the sessions.)
    fn fence(&self);

    /// Register as a new incarnation (a fresh id, a new lease row), and
    /// lift the fence. The old row is marked expired when the database can
    /// be reached, so other nodes adopt its sessions at once.
    async fn rejoin(&self) -> Result<NodeId, StoreError>;

    /// Leave the cluster (a drain): release every session this node owns
    /// and delete its lease row. Fenced afterwards.
    async fn leave(&self) -> Result<(), StoreError>;

    /// Release, in bulk, the idle sessions of gone nodes (nobody needs to
    /// load them: the next access claims them). Also forgets lease rows
    /// long expired that own nothing. Returns how many were released.
    async fn release_idle_orphans(&self) -> Result<u64, StoreError>;

    /// Claim up to `limit` busy sessions nobody live drives (their node's
    /// lease expired, or they were released while a turn was open or
    /// inputs waited), skipping rows another node is claiming right now.
    /// The next [`acquire`](super::SessionStore::acquire) of each takes
    /// this claim as it is.
    async fn adopt_orphans(&self, limit: u32) -> Result<Vec<SessionId>, StoreError>;

    /// Give up session `id`, adopted by this node but impossible to load
    /// (its log does not fold, ...): released and marked idle, so that no
    /// node adopts it again and again; the next access tries again and
    /// says why it fails.
    async fn abandon(&self, id: &SessionId) -> Result<(), StoreError>;

    /// The nodes of the cluster, oldest first.
    async fn nodes(&self) -> Result<Vec<NodeInfo>, StoreError>;

    /// The epoch of this node's current claim of session `id`, if it holds
    /// one (what its live events carry as their owner).
    fn claim_epoch(&self, id: &SessionId) -> Option<u64>;
}
