//! Lifecycle events across the nodes of a cluster (docs/cluster.md,
//! "Lifecycle events across nodes"; `ab.<cluster>.lifecycle`): every node publishes its own, every node
//! merges the others' into its local lifecycle topic, so `GET /v1/events`
//! on any node shows the sessions of the whole cluster, each event naming
//! the node that said it.
//!
//! Exists so that the runtime's lifecycle topic never knows about NATS: it
//! hands this node's events to an outbox ([`LifecycleTopic::outbox`]),
//! which the bridge publishes — after they are announced locally, without
//! the announcer ever waiting (a publish that fails is counted and
//! logged) — and the bridge merges what other nodes publish
//! ([`LifecycleTopic::merge`]).
//!
//! Must never merge this node's own events again (NATS sends a
//! subscriber's own messages back: they are told apart by the `Ab-Node`
//! header, which names each node id this process has published under — a
//! new one after it fenced itself and rejoined), and never publish a
//! merged event (they never reach the outbox): no duplicates, no loops.
//! Seqs are per node: a merged event takes this node's next seq.
//! Lifecycle events are not stored anywhere: what a node publishes while
//! it is cut off from NATS, or while another node is, is lost for the
//! other nodes (each node's own stream has it); the subscription comes
//! back by itself when the connection does (async-nats subscribes again).

use crate::bus::LifecycleTopic;
use crate::cluster::error::LiveError;
use crate::cluster::live::{LifecycleEvents, LivePlane, NodeLifecycleEvent};
use crate::cluster::owner::NodeId;
use crate::protocol::LifecycleEvent;
use futures::StreamExt;
use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

/// How long starting waits for the server to confirm the subscription
/// (a node that says it is up hears the others from then on).
const SUBSCRIBED: Duration = Duration::from_secs(5);

/// Which node this process is now: its id changes when it fences itself
/// and rejoins.
pub type CurrentNode = Arc<dyn Fn() -> NodeId + Send + Sync>;

/// What the bridge did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LifecycleStats {
    /// This node's events published.
    pub published: u64,
    /// This node's events that could not be published (NATS unreachable):
    /// lost for the other nodes.
    pub unsent: u64,
    /// Other nodes' events merged into this node's topic.
    pub merged: u64,
    /// This node's own events heard back, skipped.
    pub own: u64,
}

/// This node's side of the lifecycle across the cluster; stops when
/// dropped.
pub struct LifecycleBridge {
    stop: CancellationToken,
    stats: watch::Receiver<LifecycleStats>,
}

impl LifecycleBridge {
    /// Subscribes to every node's lifecycle events on `plane` (and waits
    /// until the server has the subscription), then publishes `topic`'s own
    /// events and merges the others' into it, until dropped or the
    /// connection is closed. `node` tells this node's current id.
    pub async fn start(
        plane: &LivePlane,
        topic: Arc<LifecycleTopic>,
        node: CurrentNode,
    ) -> Result<LifecycleBridge, LiveError> {
        let heard = plane.lifecycle().await?;
        if let Err(e) = plane.sync(SUBSCRIBED).await {
            tracing::warn!(error = %e, "the other nodes' lifecycle events may be missed for a while");
        }
        let outbox = topic.outbox();
        let ours = Arc::new(Mutex::new(HashSet::new()));
        let stop = CancellationToken::new();
        let (stats_tx, stats) = watch::channel(LifecycleStats::default());
        tokio::spawn(publish(
            plane.clone(),
            outbox,
            node,
            ours.clone(),
            stats_tx.clone(),
            stop.clone(),
        ));
        tokio::spawn(merge(heard, topic, ours, stats_tx, stop.clone()));
        Ok(LifecycleBridge { stop, stats })
    }

    /// What it did so far, to watch.
    pub fn stats(&self) -> watch::Receiver<LifecycleStats> {
        self.stats.clone()
    }
}

impl Drop for LifecycleBridge {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The node ids this process has published under.
type Ours = Arc<Mutex<HashSet<NodeId>>>;

/// Publishes this node's events, in their order, as they come.
async fn publish(
    plane: LivePlane,
    mut outbox: mpsc::Receiver<LifecycleEvent>,
    node: CurrentNode,
    ours: Ours,
    stats: watch::Sender<LifecycleStats>,
    stop: CancellationToken,
) {
    let mut failing = false;
    loop {
        let event = tokio::select! {
            biased;
            () = stop.cancelled() => return,
            event = outbox.recv() => match event {
                Some(event) => event,
                None => return,
            },
        };
        let id = node();
        // Before it is sent: its echo is recognised as ours.
        ours.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id);
        match plane.publish_lifecycle(&event, id).await {
            Ok(()) => {
                failing = false;
                stats.send_modify(|s| s.published += 1);
            }
            Err(e) => {
                // Said once per outage; each event lost after that at debug.
                if failing {
                    tracing::debug!(session = %event.session_id, kind = ?event.kind, error = %e, "a lifecycle event is not sent to the other nodes");
                } else {
                    tracing::warn!(session = %event.session_id, kind = ?event.kind, error = %e, "lifecycle events are not sent to the other nodes (lost for them) until NATS is back");
                }
                failing = true;
                stats.send_modify(|s| s.unsent += 1);
            }
        }
    }
}

/// Merges the other nodes' events into `topic`, skipping this node's own.
async fn merge(
    mut heard: LifecycleEvents,
    topic: Arc<LifecycleTopic>,
    ours: Ours,
    stats: watch::Sender<LifecycleStats>,
    stop: CancellationToken,
) {
    loop {
        let NodeLifecycleEvent { node, event } = tokio::select! {
            biased;
            () = stop.cancelled() => return,
            heard = heard.next() => match heard {
                Some(heard) => heard,
                // The connection was closed.
                None => return,
            },
        };
        let own = ours
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(&node);
        if own {
            stats.send_modify(|s| s.own += 1);
            continue;
        }
        // A peer that does not name itself is shown by its id.
        let name = event.node.clone().unwrap_or_else(|| node.to_string());
        topic.merge(event, name);
        stats.send_modify(|s| s.merged += 1);
    }
}
