//! Ownership of sessions across the nodes of a cluster (docs/cluster.md,
//! "Ownership and failover"): this process as one node, its lease, and the sweeps
//! that hand a gone node's sessions to the living.
//!
//! Exists so that the store's fencing (claims with an epoch, in
//! `store/postgres/claims.rs`) has the two tasks around it that make it a
//! cluster: the lease task ([`heartbeat`]) renews this node's lease and
//! fences the node when it cannot, and the sweeper ([`sweeper`]) releases
//! the idle sessions of gone nodes and adopts their busy ones. [`Node`]
//! starts both, stops the sweeps when the node drains, and leaves the
//! cluster (every session released, the lease row deleted) once the
//! sessions are stopped.
//!
//! - [`lease_clock`]: when a node must stop trusting its lease (pure).
//! - [`heartbeat`]: the lease task.
//! - [`sweeper`]: the sweeps.
//!
//! Only `agentbus serve` with `[cluster]` has a node. Never claims or
//! writes a session itself: claims are the store's, sessions the
//! SessionManager's.

pub mod heartbeat;
pub mod lease_clock;
pub mod sweeper;

use crate::sessions::manager::SessionManager;
use crate::settings::ClusterSettings;
use crate::store::StoreError;
use crate::store::cluster::{ClusterStore, NodeId, NodeInfo};
use heartbeat::LeaseTask;
use kameo::actor::ActorRef;
use std::sync::{Arc, Mutex, PoisonError};
use sweeper::Sweeper;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// This process as a node of a cluster.
pub struct Node {
    cluster: Arc<dyn ClusterStore>,
    /// Ends the sweeps (a drain starts with it).
    sweeping: CancellationToken,
    /// Ends the lease task.
    leasing: CancellationToken,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Node {
    /// Start the lease task and the sweeper of a node registered (its
    /// registration sent at `registered`) as `cluster` says.
    pub fn start(
        cluster: Arc<dyn ClusterStore>,
        manager: ActorRef<SessionManager>,
        settings: &ClusterSettings,
        registered: std::time::Instant,
        live: Option<crate::cluster::Link>,
    ) -> Node {
        let sweeping = CancellationToken::new();
        let leasing = CancellationToken::new();
        let lease = LeaseTask {
            cluster: cluster.clone(),
            manager: manager.clone(),
            ttl: settings.node_ttl(),
            interval: settings.heartbeat(),
            registered,
            stop: leasing.clone(),
            live,
        };
        let sweeper = Sweeper {
            cluster: cluster.clone(),
            manager,
            interval: settings.sweep(),
            stop: sweeping.clone(),
        };
        crate::metrics::get().cluster_lease_held.set(1);
        let tasks = vec![tokio::spawn(lease.run()), tokio::spawn(sweeper.run())];
        tracing::info!(
            node = %cluster.node(),
            name = cluster.node_name(),
            ttl = ?settings.node_ttl(),
            heartbeat = ?settings.heartbeat(),
            sweep = ?settings.sweep(),
            "running as a node of a cluster"
        );
        Node {
            cluster,
            sweeping,
            leasing,
            tasks: Mutex::new(tasks),
        }
    }

    /// This node's current id (a new one after it fenced itself).
    pub fn id(&self) -> NodeId {
        self.cluster.node()
    }

    /// This node's name.
    pub fn name(&self) -> &str {
        self.cluster.node_name()
    }

    /// The cluster's nodes, oldest first, with how many sessions each
    /// drives.
    pub async fn nodes(&self) -> Result<Vec<NodeInfo>, StoreError> {
        self.cluster.nodes().await
    }

    /// Stop adopting sessions (a drain: this node is about to stop its
    /// own and leave).
    pub fn stop_sweeping(&self) {
        self.sweeping.cancel();
    }

    /// Leave the cluster: the sweeps and the lease task end, every session
    /// this node still owns is released and its lease row deleted, so the
    /// other nodes take its busy sessions at their next sweep (or access)
    /// rather than after the TTL. Call once its sessions are stopped.
    pub async fn leave(&self) {
        self.sweeping.cancel();
        self.leasing.cancel();
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(PoisonError::into_inner));
        for task in tasks {
            let _ = task.await;
        }
        if let Err(e) = self.cluster.leave().await {
            tracing::warn!(node = %self.cluster.node(), "could not leave the cluster cleanly (its sessions are adopted once its lease expires): {e}");
        }
    }
}
