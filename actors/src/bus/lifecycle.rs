//! The runtime's topic of session lifecycle events: sessions created, busy,
//! idle, closed and deleted (and, on a node of a cluster, taken over), for
//! every front end that lists sessions.
//!
//! In memory only (not stored): a client that reconnects resumes from the
//! ring, and after a restart from the new run's first event.
//!
//! On a node of a cluster the topic tells its own events from the other
//! nodes': what this node [announces](LifecycleTopic::announce) names it
//! and also goes to an *outbox* the live plane reads to publish it;
//! what another node said is [merged](LifecycleTopic::merge) under that
//! node's name and never goes to the outbox (a merged event sent on again
//! would go round the cluster for ever). Seqs are this topic's alone.
//! Announcing never waits: a full outbox drops the event for the other
//! nodes (said in the log), never for this node's own clients.

use super::topic::{Sequenced, SubscribeError, Subscription, Topic};
use crate::protocol::{LifecycleEvent, LifecycleKind, SessionId};
use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, PoisonError};
use tokio::sync::mpsc;

/// How many of this node's events may wait in the outbox for the live
/// plane before more are dropped (for the other nodes only).
pub const OUTBOX_CAPACITY: usize = 1024;

impl Sequenced for LifecycleEvent {
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// The runtime's topic of session lifecycle events.
pub struct LifecycleTopic {
    topic: Topic<LifecycleEvent>,
    /// This node's name, on a node of a cluster.
    node: Option<String>,
    /// Where this node's own events go besides the topic (the live plane
    /// publishes them), once something reads them.
    outbox: Mutex<Option<mpsc::Sender<LifecycleEvent>>>,
    /// Sessions another node drives that it last said were busy: what
    /// this node's session list shows for the sessions it does not drive.
    busy_elsewhere: Mutex<HashSet<SessionId>>,
}

impl LifecycleTopic {
    /// A lifecycle topic whose seqs go on rising across restarts: the first
    /// is the start time in microseconds since the Unix epoch. A browser's
    /// `EventSource` resends the last id it saw after the daemon restarts;
    /// with seqs restarting at 1 it would be told to skip the new run's
    /// first events.
    pub fn starting_now() -> Self {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_micros() as u64);
        Self::new(micros, None)
    }

    /// [`starting_now`](Self::starting_now), on the node of a cluster
    /// named `node`: every event it announces names it.
    pub fn starting_now_on(node: impl Into<String>) -> Self {
        let mut topic = Self::starting_now();
        topic.node = Some(node.into());
        topic
    }

    /// A topic whose next event will have seq `last_seq + 1`.
    pub fn new(last_seq: u64, node: Option<String>) -> Self {
        LifecycleTopic {
            topic: Topic::new(last_seq),
            node,
            outbox: Mutex::new(None),
            busy_elsewhere: Mutex::new(HashSet::new()),
        }
    }

    /// The name of this node, on a node of a cluster.
    pub fn node(&self) -> Option<&str> {
        self.node.as_deref()
    }

    fn lock_outbox(&self) -> MutexGuard<'_, Option<mpsc::Sender<LifecycleEvent>>> {
        self.outbox.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Publish that `session_id` went through `kind` on this node; with an
    /// outbox, it goes there too (without waiting).
    pub fn announce(&self, session_id: &SessionId, kind: LifecycleKind) {
        self.announce_with(session_id, kind, None, None);
    }

    /// Publish (as `announce`) that `session_id` went through `kind`,
    /// done by the API token named `by` (`None`: without a token).
    pub fn announce_by(&self, session_id: &SessionId, kind: LifecycleKind, by: Option<String>) {
        self.announce_with(session_id, kind, None, by);
    }

    /// Publish (as `announce`) that `pending` tool calls of `session_id`
    /// wait for the user's approval now (`approvals`).
    pub fn announce_approvals(&self, session_id: &SessionId, pending: u32) {
        self.announce_with(session_id, LifecycleKind::Approvals, Some(pending), None);
    }

    fn announce_with(
        &self,
        session_id: &SessionId,
        kind: LifecycleKind,
        pending_approvals: Option<u32>,
        by: Option<String>,
    ) {
        // This node drives it now: its handle says whether it is busy. (A
        // rename is a change of the stored record only: it says nothing
        // about who drives the session.)
        if kind != LifecycleKind::Renamed {
            self.lock_busy().remove(session_id);
        }
        // Held while publishing: the outbox gets this node's events in
        // their seq order.
        let mut outbox = self.lock_outbox();
        let mut said = None;
        self.topic.publish_next(|seq| {
            let event = LifecycleEvent {
                seq,
                session_id: session_id.clone(),
                kind,
                node: self.node.clone(),
                pending_approvals,
                by,
            };
            if outbox.is_some() {
                said = Some(event.clone());
            }
            event
        });
        let (Some(sender), Some(event)) = (outbox.as_ref(), said) else {
            return;
        };
        match sender.try_send(event) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(event)) => tracing::warn!(
                session = %event.session_id,
                kind = ?event.kind,
                "a lifecycle event is not sent to the other nodes: {OUTBOX_CAPACITY} wait already"
            ),
            // Nobody reads it any more.
            Err(mpsc::error::TrySendError::Closed(_)) => *outbox = None,
        }
    }

    /// Publish `heard`, an event node `node` (another node of the cluster)
    /// announced, as this topic's next seq, naming that node; all else
    /// it says is kept. Never goes to the outbox.
    pub fn merge(&self, heard: LifecycleEvent, node: String) {
        {
            let mut busy = self.lock_busy();
            match heard.kind {
                LifecycleKind::Busy => {
                    busy.insert(heard.session_id.clone());
                }
                // Asked or answered within a turn: still busy. A rename says
                // nothing about it.
                LifecycleKind::Approvals | LifecycleKind::Renamed => {}
                _ => {
                    busy.remove(&heard.session_id);
                }
            }
        }
        self.topic.publish_next(|seq| LifecycleEvent {
            seq,
            node: Some(node),
            ..heard
        });
    }

    /// This node's events from now on, in seq order, as they are
    /// announced (not those merged from other nodes). One reader: a new
    /// outbox replaces the previous one.
    pub fn outbox(&self) -> mpsc::Receiver<LifecycleEvent> {
        let (sender, receiver) = mpsc::channel(OUTBOX_CAPACITY);
        *self.lock_outbox() = Some(sender);
        receiver
    }

    /// Whether another node of the cluster said last that it runs a turn
    /// or command of `session_id` (as far as this node has heard since it
    /// started).
    pub fn busy_elsewhere(&self, session_id: &SessionId) -> bool {
        self.lock_busy().contains(session_id)
    }

    fn lock_busy(&self) -> MutexGuard<'_, HashSet<SessionId>> {
        self.busy_elsewhere
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The seq of the last event (the start's before any).
    pub fn last_seq(&self) -> u64 {
        self.topic.last_seq()
    }

    /// The events after `after_seq` still in the ring, then live ones.
    pub fn subscribe(
        &self,
        after_seq: u64,
    ) -> Result<Subscription<LifecycleEvent>, SubscribeError> {
        self.topic.subscribe(after_seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(events: &[std::sync::Arc<LifecycleEvent>]) -> Vec<(LifecycleKind, Option<&str>)> {
        events.iter().map(|e| (e.kind, e.node.as_deref())).collect()
    }

    #[tokio::test]
    async fn own_events_go_to_the_outbox_merged_ones_do_not() {
        let topic = LifecycleTopic::new(10, Some("node-a".into()));
        let session = SessionId::new();
        topic.announce(&session, LifecycleKind::Created);
        let mut outbox = topic.outbox();
        topic.announce(&session, LifecycleKind::Busy);
        let heard = LifecycleEvent {
            seq: 3,
            session_id: session.clone(),
            kind: LifecycleKind::Idle,
            node: Some("node-b".into()),
            pending_approvals: None,
            by: None,
        };
        topic.merge(heard, "node-b".into());
        topic.announce(&session, LifecycleKind::Idle);

        let mut all = topic.subscribe(10).unwrap();
        let mut seen = Vec::new();
        while let Some(event) = all.try_recv() {
            seen.push(event);
        }
        assert_eq!(
            seen.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [11, 12, 13, 14]
        );
        assert_eq!(
            kinds(&seen),
            [
                (LifecycleKind::Created, Some("node-a")),
                (LifecycleKind::Busy, Some("node-a")),
                (LifecycleKind::Idle, Some("node-b")),
                (LifecycleKind::Idle, Some("node-a")),
            ]
        );
        // Only what was announced once the outbox existed, this node's own.
        let sent: Vec<(u64, LifecycleKind)> = std::iter::from_fn(|| outbox.try_recv().ok())
            .map(|e| (e.seq, e.kind))
            .collect();
        assert_eq!(sent, [(12, LifecycleKind::Busy), (14, LifecycleKind::Idle)]);
    }

    #[test]
    fn without_a_cluster_nothing_names_a_node_and_nothing_waits() {
        let topic = LifecycleTopic::new(0, None);
        let session = SessionId::new();
        let outbox = topic.outbox();
        drop(outbox);
        // Nobody reads the outbox: announcing goes on all the same.
        topic.announce(&session, LifecycleKind::Created);
        topic.announce(&session, LifecycleKind::Deleted);
        let mut all = topic.subscribe(0).unwrap();
        let first = all.try_recv().unwrap();
        assert_eq!((first.seq, first.node.as_deref()), (1, None));
        assert_eq!(all.try_recv().unwrap().kind, LifecycleKind::Deleted);
    }

    #[test]
    fn a_full_outbox_drops_for_the_other_nodes_only() {
        let topic = LifecycleTopic::new(0, Some("node-a".into()));
        let session = SessionId::new();
        let mut outbox = topic.outbox();
        for _ in 0..OUTBOX_CAPACITY + 5 {
            topic.announce(&session, LifecycleKind::Busy);
        }
        // Every one on this node's topic, the first ones in the outbox.
        assert_eq!(topic.last_seq(), OUTBOX_CAPACITY as u64 + 5);
        let waiting: Vec<u64> = std::iter::from_fn(|| outbox.try_recv().ok())
            .map(|e| e.seq)
            .collect();
        assert_eq!(waiting, (1..=OUTBOX_CAPACITY as u64).collect::<Vec<_>>());
        // Read again, it takes the next ones.
        topic.announce(&session, LifecycleKind::Idle);
        assert_eq!(
            outbox.try_recv().map(|e| e.seq).ok(),
            Some(topic.last_seq())
        );
    }
}
