//! The node lease task: renews this node's lease every heartbeat, and
//! fences the node when it cannot (docs/cluster.md, "Nodes and their leases").
//!
//! Exists so that a node cut off from Postgres, paused, or too slow to
//! renew stops driving its sessions before any other node may adopt
//! them: when the database answers that the lease had expired, or no
//! renewal has been confirmed for `TTL − margin` ([`LeaseClock`]), the
//! node fences itself — the store refuses its writes from then on, every
//! local session is stopped at once ([`FenceAll`]) — and then registers as
//! a new node (a fresh id), retrying until the database answers. A node
//! cut off from NATS for longer than TTL/2 fences itself the same way
//! (nobody can reach it for its sessions' inputs), and rejoins only once
//! connected again.
//!
//! A heartbeat that hangs never holds the decision up: the deadline is
//! raced against it. Never touches a session itself; never decides with
//! another node's clock (the database's `now()` renews, the local
//! monotonic clock decides when to stop trusting).

use super::lease_clock::LeaseClock;
use crate::cluster::{Link, LinkState};
use crate::sessions::manager::{FenceAll, SessionManager};
use crate::store::cluster::{ClusterStore, Renewal};
use kameo::actor::ActorRef;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{Instant, sleep, sleep_until};
use tokio_util::sync::CancellationToken;

/// What the lease task needs.
pub struct LeaseTask {
    pub cluster: Arc<dyn ClusterStore>,
    pub manager: ActorRef<SessionManager>,
    pub ttl: Duration,
    pub interval: Duration,
    /// When the node's registration was sent.
    pub registered: std::time::Instant,
    /// Ends the task (the node leaves).
    pub stop: CancellationToken,
    /// The node's connection to the live plane, if it has one: cut off for
    /// longer than TTL/2, the node releases its sessions as when its lease
    /// lapses, and rejoins once it is connected again (docs/cluster.md,
    /// "The connection").
    pub live: Option<Link>,
}

impl LeaseTask {
    /// Renew until stopped, fencing and rejoining whenever the lease is
    /// lost.
    pub async fn run(self) {
        let mut clock = LeaseClock::new(self.ttl, self.registered);
        let mut failures = 0u32;
        loop {
            if let Some(lost) = self.live_lost() {
                let reason = format!(
                    "its connection to NATS has been lost for {lost:?} (more than half its \
                     lease, {:?}): no other node can reach its sessions",
                    self.ttl
                );
                match self.fence_and_rejoin(&reason).await {
                    Some(new) => clock = new,
                    None => return,
                }
                continue;
            }
            if clock.lapsed(std::time::Instant::now()) {
                let reason = format!(
                    "no renewal of its lease was confirmed in time (a lease lasts {:?}; a node \
                     stops trusting it {:?} before)",
                    self.ttl,
                    super::lease_clock::margin(self.ttl)
                );
                match self.fence_and_rejoin(&reason).await {
                    Some(new) => clock = new,
                    None => return,
                }
                continue;
            }
            let deadline = Instant::from_std(clock.deadline());
            tokio::select! {
                biased;
                () = self.stop.cancelled() => return,
                // Fenced at the top of the loop.
                () = sleep_until(deadline) => continue,
                () = sleep(self.interval) => {}
            }
            let sent = std::time::Instant::now();
            let renewal = tokio::select! {
                biased;
                () = self.stop.cancelled() => return,
                () = sleep_until(deadline) => None,
                renewal = self.cluster.heartbeat() => Some(renewal),
            };
            match renewal {
                Some(Ok(Renewal::Renewed)) => {
                    crate::metrics::get().lease_renewal("renewed");
                    if failures > 0 {
                        tracing::info!(node = %self.cluster.node(), "the node's lease is renewed again");
                    }
                    failures = 0;
                    clock.renewed(sent);
                }
                Some(Ok(Renewal::Lapsed)) => {
                    crate::metrics::get().lease_renewal("lapsed");
                    let reason = "the database says its lease had expired";
                    match self.fence_and_rejoin(reason).await {
                        Some(new) => clock = new,
                        None => return,
                    }
                }
                Some(Err(e)) => {
                    crate::metrics::get().lease_renewal("failed");
                    failures += 1;
                    tracing::warn!(node = %self.cluster.node(), failures, "could not renew the node's lease: {e}");
                }
                // The deadline passed while the heartbeat hung: the next
                // round fences.
                None => {}
            }
        }
    }

    /// Fence this node (its sessions stop at once), then register again
    /// as a new node, retrying every interval. `None` when stopped meanwhile.
    /// How long the live plane has been lost, once that is more than
    /// TTL/2.
    fn live_lost(&self) -> Option<Duration> {
        let lost = self.live.as_ref()?.lost_for(Instant::now())?;
        (lost > self.ttl / 2).then_some(lost)
    }

    async fn fence_and_rejoin(&self, reason: &str) -> Option<LeaseClock> {
        let old = self.cluster.node();
        tracing::error!(node = %old, name = self.cluster.node_name(), "fencing this node: {reason}; stopping every session it drives");
        self.cluster.fence();
        let figures = crate::metrics::get();
        figures.cluster_fences.inc();
        figures.cluster_lease_held.set(0);
        match self.manager.ask(FenceAll).await {
            Ok(stopped) => {
                tracing::warn!(node = %old, stopped, "sessions stopped: the node is fenced")
            }
            Err(e) => tracing::error!(node = %old, "could not stop the sessions: {e}"),
        }
        if let Some(live) = &self.live {
            // A node nobody can reach takes no session: it rejoins once
            // connected again.
            let mut live = live.clone();
            tokio::select! {
                biased;
                () = self.stop.cancelled() => return None,
                _ = live.wait_for(|s| *s == LinkState::Connected) => {}
            }
        }
        loop {
            let sent = std::time::Instant::now();
            let rejoined = tokio::select! {
                biased;
                () = self.stop.cancelled() => return None,
                rejoined = self.cluster.rejoin() => rejoined,
            };
            match rejoined {
                Ok(node) => {
                    tracing::warn!(node = %node, old = %old, "rejoined the cluster as a new node");
                    crate::metrics::get().cluster_lease_held.set(1);
                    return Some(LeaseClock::new(self.ttl, sent));
                }
                Err(e) => {
                    tracing::warn!(old = %old, "could not rejoin the cluster yet: {e}");
                    tokio::select! {
                        () = self.stop.cancelled() => return None,
                        () = sleep(self.interval) => {}
                    }
                }
            }
        }
    }
}
