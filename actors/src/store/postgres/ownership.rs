//! What this node knows of its own place in a cluster: its current id
//! and name, whether it has fenced itself, and the epoch of every session
//! it has claimed.
//!
//! Exists so that the store's seam need not carry epochs: a claim (create,
//! acquire, adoption) records its epoch here, and every later write of
//! that session (commit, accepted input, release) is checked against the
//! database with it. A fenced node refuses everything here, before any
//! statement is sent, so a node cut off from Postgres stops writing the
//! moment its lease may have lapsed — the database's own check (the
//! epoch) still protects the log from a node that did not notice.
//!
//! Plain shared state behind a mutex held for no await; never runs a
//! statement.

use crate::protocol::SessionId;
use crate::store::StoreError;
use crate::store::cluster::NodeId;
use deadpool_postgres::Pool;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How many seqs past the stored ones a claim reserves for the new owner
/// (docs/cluster.md, "Claims and fencing"): the old owner may have shown clients deltas
/// up to its own reservation; the new one starts above it.
pub const CLAIM_RESERVATION: i64 = 1024;

/// This node's claim of one session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Claim {
    pub node: NodeId,
    /// The session's epoch when it was claimed (its fencing token).
    pub epoch: i64,
    /// Claimed by a sweep and not loaded yet: the seq the session
    /// continues after (the stored maximum before the claim raised it).
    pub adopted: Option<u64>,
}

/// A node's ownership state (one per store opened as a node).
pub struct Ownership {
    name: String,
    ttl: Duration,
    /// A small pool of its own for the lease and the sweeps, so that busy
    /// sessions never hold up a heartbeat.
    pub(super) pool: Pool,
    state: Mutex<NodeState>,
}

struct NodeState {
    node: NodeId,
    fenced: bool,
    claims: HashMap<SessionId, Claim>,
}

impl Ownership {
    /// Node `node` (registered already), named `name`, whose lease lasts
    /// `ttl`.
    pub fn new(node: NodeId, name: String, ttl: Duration, pool: Pool) -> Self {
        Ownership {
            name,
            ttl,
            pool,
            state: Mutex::new(NodeState {
                node,
                fenced: false,
                claims: HashMap::new(),
            }),
        }
    }

    fn state(&self) -> MutexGuard<'_, NodeState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The lease's length, in seconds, as the statements take it.
    pub fn ttl_secs(&self) -> f64 {
        self.ttl.as_secs_f64()
    }

    /// The current node id, fenced or not.
    pub fn node(&self) -> NodeId {
        self.state().node
    }

    /// The node id to claim session `id` with, or [`StoreError::Fenced`]
    /// while this node is fenced.
    pub fn claimant(&self, id: &SessionId) -> Result<NodeId, StoreError> {
        let state = self.state();
        match state.fenced {
            true => Err(fenced_node(id)),
            false => Ok(state.node),
        }
    }

    /// The claim to write session `id` with, or [`StoreError::Fenced`]:
    /// this node is fenced, or holds no claim of it (another node took it,
    /// or it was released).
    pub fn claim(&self, id: &SessionId) -> Result<Claim, StoreError> {
        let state = self.state();
        if state.fenced {
            return Err(fenced_node(id));
        }
        state
            .claims
            .get(id)
            .copied()
            .ok_or_else(|| StoreError::Fenced {
                id: id.clone(),
                reason: "this node holds no claim of it: it was released or taken over".to_string(),
            })
    }

    /// The claim of session `id`, if any (fenced or not).
    pub fn current(&self, id: &SessionId) -> Option<Claim> {
        self.state().claims.get(id).copied()
    }

    /// Session `id` is claimed with `claim` — unless the node was fenced or
    /// rejoined meanwhile (the claim then belongs to no current
    /// incarnation and is not kept).
    pub fn record(&self, id: &SessionId, claim: Claim) {
        let mut state = self.state();
        if !state.fenced && state.node == claim.node {
            state.claims.insert(id.clone(), claim);
        }
    }

    /// Forget the claim of session `id` (released, or refused).
    pub fn forget(&self, id: &SessionId) -> Option<Claim> {
        self.state().claims.remove(id)
    }

    /// Forget session `id`'s claim if it is still `claim` (a refused write
    /// must not forget a newer claim of the same session).
    pub fn forget_if(&self, id: &SessionId, claim: Claim) {
        let mut state = self.state();
        if state.claims.get(id) == Some(&claim) {
            state.claims.remove(id);
        }
    }

    /// Refuse everything from now on and forget every claim.
    pub fn fence(&self) {
        let mut state = self.state();
        state.fenced = true;
        state.claims.clear();
    }

    /// Become node `node` (registered already), unfenced, with no claims.
    /// Returns the previous id.
    pub fn become_node(&self, node: NodeId) -> NodeId {
        let mut state = self.state();
        state.claims.clear();
        state.fenced = false;
        std::mem::replace(&mut state.node, node)
    }
}

fn fenced_node(id: &SessionId) -> StoreError {
    StoreError::Fenced {
        id: id.clone(),
        reason: "this node fenced itself: it could not renew its lease in time".to_string(),
    }
}
