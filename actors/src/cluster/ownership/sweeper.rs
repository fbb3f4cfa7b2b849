//! The sweeper: every node, about every second (with jitter), hands the
//! sessions of gone nodes to the living (docs/cluster.md, "Failover: the sweeps").
//!
//! Exists so that a node's death costs its sessions no more than its
//! lease's TTL and a sweep: idle sessions of gone nodes are released in
//! bulk (nothing to load: the next access claims them), busy ones — a
//! turn open, or inputs waiting — are adopted a few at a time (the store
//! skips rows another node is adopting, so the survivors share them out)
//! and loaded here through the SessionManager, as any session is: the log
//! folded, the interrupted turn closed as after a crash, an
//! `owner_changed` event first, then the inputs that were waiting.
//!
//! A session this node adopted but could not load is tried again at the
//! next sweeps, then given up (released and marked idle) so that it does
//! not go round the cluster forever. Never claims a session otherwise and
//! never runs a conversation itself.

use crate::protocol::SessionId;
use crate::sessions::manager::{OpenSession, SessionManager};
use crate::store::cluster::ClusterStore;
use kameo::actor::ActorRef;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How many busy sessions one sweep adopts: a few, so that the nodes
/// sweeping at once share them out.
pub const ADOPT_BATCH: u32 = 8;

/// How many sweeps try to load a session this node adopted before it is
/// given up.
const LOAD_ATTEMPTS: u32 = 3;

/// What the sweeper needs.
pub struct Sweeper {
    pub cluster: Arc<dyn ClusterStore>,
    pub manager: ActorRef<SessionManager>,
    pub interval: Duration,
    /// Ends the sweeps (the node drains or leaves).
    pub stop: CancellationToken,
}

impl Sweeper {
    /// Sweep until stopped.
    pub async fn run(self) {
        // Adopted sessions whose load failed, with the attempts made.
        let mut retry: HashMap<SessionId, u32> = HashMap::new();
        loop {
            tokio::select! {
                biased;
                () = self.stop.cancelled() => return,
                () = tokio::time::sleep(jittered(self.interval)) => {}
            }
            match self.cluster.release_idle_orphans().await {
                Ok(0) => {}
                Ok(released) => {
                    tracing::info!(released, "released idle sessions of gone nodes");
                }
                Err(e) => tracing::debug!("could not release idle sessions of gone nodes: {e}"),
            }
            let adopted = match self.cluster.adopt_orphans(ADOPT_BATCH).await {
                Ok(adopted) => adopted,
                Err(e) => {
                    tracing::debug!("could not look for busy sessions of gone nodes: {e}");
                    Vec::new()
                }
            };
            crate::metrics::get()
                .cluster_adoptions
                .inc_by(adopted.len() as u64);
            for id in adopted {
                tracing::info!(session = %id, node = %self.cluster.node(), "adopting a busy session of a gone node");
                retry.entry(id).or_insert(0);
            }
            if self.stop.is_cancelled() {
                return;
            }
            let loading: Vec<SessionId> = retry.keys().cloned().collect();
            let loads = loading.iter().map(|id| {
                let open = OpenSession {
                    id: id.clone(),
                    mcp_servers: None,
                };
                let manager = &self.manager;
                async move { manager.ask(open).await }
            });
            let results = futures::future::join_all(loads).await;
            for (id, loaded) in loading.into_iter().zip(results) {
                match loaded {
                    Ok(_) => {
                        tracing::info!(session = %id, "adopted session running on this node");
                        retry.remove(&id);
                    }
                    Err(e) => {
                        let attempts = retry.entry(id.clone()).or_insert(0);
                        *attempts += 1;
                        if *attempts < LOAD_ATTEMPTS {
                            tracing::warn!(session = %id, attempts = *attempts, "could not load an adopted session (trying again): {e}");
                            continue;
                        }
                        tracing::error!(session = %id, "giving up an adopted session that cannot be loaded: {e}");
                        retry.remove(&id);
                        if let Err(e) = self.cluster.abandon(&id).await {
                            tracing::warn!(session = %id, "could not give the session up: {e}");
                        }
                    }
                }
            }
        }
    }
}

/// `interval`, give or take a quarter, so that nodes started together do
/// not sweep in step.
fn jittered(interval: Duration) -> Duration {
    interval.mul_f64(0.75 + fastrand::f64() / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_are_spread_around_the_interval() {
        let interval = Duration::from_secs(1);
        for _ in 0..1000 {
            let d = jittered(interval);
            assert!(
                d >= Duration::from_millis(750) && d <= Duration::from_millis(1250),
                "{d:?}"
            );
        }
    }
}
