//! Lifecycle events across nodes, against a real `nats-server`: two nodes,
//! each a connection of its own with its own lifecycle topic and bridge.
//! Tests wait for events and for the bridges' counts, never for time.

use super::lifecycle::{CurrentNode, LifecycleBridge, LifecycleStats};
use super::link::LinkState;
use super::live::LivePlane;
use super::owner::NodeId;
use super::test_nodes::{GUARD, connect, guarded};
use crate::bus::{LifecycleTopic, Subscription};
use crate::protocol::{LifecycleEvent, LifecycleKind, SessionId};
use agentbus_testkit::NatsServer;
use std::sync::{Arc, Mutex, PoisonError};

/// One node: its connection, its lifecycle topic (as the runtime has it)
/// and its bridge, with a client of its `GET /v1/events` from the start.
struct Node {
    plane: LivePlane,
    topic: Arc<LifecycleTopic>,
    bridge: LifecycleBridge,
    id: Arc<Mutex<NodeId>>,
    events: Subscription<LifecycleEvent>,
}

impl Node {
    async fn start(server: &NatsServer, name: &str) -> Node {
        let plane = connect(server).await;
        let topic = Arc::new(LifecycleTopic::new(1000, Some(name.to_string())));
        let id = Arc::new(Mutex::new(NodeId::new()));
        let current = id.clone();
        let node: CurrentNode =
            Arc::new(move || *current.lock().unwrap_or_else(PoisonError::into_inner));
        let bridge = LifecycleBridge::start(&plane, topic.clone(), node)
            .await
            .expect("the bridge starts");
        let events = topic.subscribe(topic.last_seq()).unwrap();
        Node {
            plane,
            topic,
            bridge,
            id,
            events,
        }
    }

    /// Rejoins under a new node id (as after fencing itself).
    fn rejoin(&self) {
        *self.id.lock().unwrap() = NodeId::new();
    }

    /// Waits until its bridge's counts satisfy `done`.
    async fn until(&self, what: &str, done: impl Fn(&LifecycleStats) -> bool) -> LifecycleStats {
        let mut stats = self.bridge.stats();
        let stats = guarded(what, stats.wait_for(|s| done(s))).await;
        *stats.expect("the bridge runs")
    }

    /// What its client has received so far, and nothing more: each as
    /// (kind, node).
    fn received(&mut self) -> Vec<(SessionId, LifecycleKind, String)> {
        std::iter::from_fn(|| self.events.try_recv())
            .map(|e| {
                (
                    e.session_id.clone(),
                    e.kind,
                    e.node.clone().unwrap_or_default(),
                )
            })
            .collect()
    }

    async fn next(&mut self) -> Arc<LifecycleEvent> {
        guarded("a lifecycle event", self.events.recv())
            .await
            .expect("the topic is open")
    }
}

async fn server() -> Option<NatsServer> {
    NatsServer::start().await.expect("starting nats-server")
}

fn said(
    session: &SessionId,
    node: &str,
    kinds: &[LifecycleKind],
) -> Vec<(SessionId, LifecycleKind, String)> {
    kinds
        .iter()
        .map(|kind| (session.clone(), *kind, node.to_string()))
        .collect()
}

#[tokio::test]
async fn each_nodes_events_reach_the_other_once_naming_it_and_are_never_sent_round() {
    let Some(server) = server().await else { return };
    let mut a = Node::start(&server, "node-a").await;
    let mut b = Node::start(&server, "node-b").await;
    let (session, other) = (SessionId::new(), SessionId::new());
    use LifecycleKind::{Busy, Created, Idle, OwnerChanged};

    for kind in [Created, Busy, Idle] {
        a.topic.announce(&session, kind);
    }
    // B hears A's three; then A hears B's.
    b.until("B merges A's events", |s| s.merged == 3).await;
    b.topic.announce(&other, OwnerChanged);
    let stats_a = a
        .until("A hears its own three back and merges B's", |s| {
            s.own == 3 && s.merged == 1
        })
        .await;
    let stats_b = b.until("B hears its own back", |s| s.own == 1).await;

    let from_a = said(&session, "node-a", &[Created, Busy, Idle]);
    let from_b = said(&other, "node-b", &[OwnerChanged]);
    let expected: Vec<_> = from_a.iter().chain(&from_b).cloned().collect();
    assert_eq!(a.received(), expected, "A's client: its own once, then B's");
    assert_eq!(b.received(), expected, "B's client: A's once, then its own");
    // Each published its own alone: nothing merged went out again.
    assert_eq!(
        stats_a,
        LifecycleStats {
            published: 3,
            unsent: 0,
            merged: 1,
            own: 3
        }
    );
    assert_eq!(
        stats_b,
        LifecycleStats {
            published: 1,
            unsent: 0,
            merged: 3,
            own: 1
        }
    );
    // Seqs are each node's own, gap-free.
    assert_eq!(a.topic.last_seq(), 1004);
    assert_eq!(b.topic.last_seq(), 1004);
}

#[tokio::test]
async fn who_did_it_reaches_the_other_node_with_the_event() {
    let Some(server) = server().await else { return };
    let a = Node::start(&server, "node-a").await;
    let mut b = Node::start(&server, "node-b").await;
    let session = SessionId::new();
    a.topic
        .announce_by(&session, LifecycleKind::Created, Some("ci-bot".into()));
    a.topic.announce(&session, LifecycleKind::Busy);
    b.until("B merges A's two", |s| s.merged == 2).await;
    let created = b.next().await;
    assert_eq!(
        (created.kind, created.node.as_deref(), created.by.as_deref()),
        (LifecycleKind::Created, Some("node-a"), Some("ci-bot"))
    );
    let busy = b.next().await;
    assert_eq!((busy.kind, busy.by.as_deref()), (LifecycleKind::Busy, None));
}

#[tokio::test]
async fn a_node_that_rejoined_under_a_new_id_still_knows_its_own_events() {
    let Some(server) = server().await else { return };
    let mut a = Node::start(&server, "node-a").await;
    let mut b = Node::start(&server, "node-b").await;
    let session = SessionId::new();

    a.topic.announce(&session, LifecycleKind::Busy);
    a.rejoin();
    a.topic.announce(&session, LifecycleKind::Idle);
    a.until("A hears both back", |s| s.own == 2).await;
    b.until("B merges both", |s| s.merged == 2).await;
    let both = said(
        &session,
        "node-a",
        &[LifecycleKind::Busy, LifecycleKind::Idle],
    );
    assert_eq!(a.received(), both);
    assert_eq!(b.received(), both);
}

#[tokio::test]
async fn what_a_cut_off_node_says_stays_its_own_and_merging_goes_on_once_it_is_back() {
    let Some(mut server) = server().await else {
        return;
    };
    let mut a = Node::start(&server, "node-a").await;
    let mut b = Node::start(&server, "node-b").await;
    let session = SessionId::new();

    server.kill().await.unwrap();
    for node in [&a, &b] {
        guarded(
            "the node to notice the server died",
            node.plane
                .link()
                .wait_for(|s| matches!(s, LinkState::Disconnected { .. })),
        )
        .await;
    }
    // Said while cut off: this node's client has it at once, the other
    // nodes never will.
    a.topic.announce(&session, LifecycleKind::Busy);
    let busy = a.next().await;
    assert_eq!(busy.kind, LifecycleKind::Busy);
    a.until("the publish to fail", |s| s.unsent == 1).await;

    server.restart().await.unwrap();
    for node in [&a, &b] {
        guarded(
            "the node to reconnect",
            node.plane.link().wait_for(|s| *s == LinkState::Connected),
        )
        .await;
        // Its lifecycle subscription is renewed once the server has seen
        // what it sent on reconnecting.
        node.plane.sync(GUARD).await.unwrap();
    }
    a.topic.announce(&session, LifecycleKind::Idle);
    b.until("B merges A's idle", |s| s.merged == 1).await;
    assert_eq!(
        b.received(),
        [(session.clone(), LifecycleKind::Idle, "node-a".to_string())],
        "B's client gets A's idle; the busy A said while cut off never comes"
    );
    b.topic.announce(&session, LifecycleKind::Closed);
    a.until("A merges B's", |s| s.merged == 1).await;
    assert_eq!(
        a.received(),
        [
            (session.clone(), LifecycleKind::Idle, "node-a".to_string()),
            (session.clone(), LifecycleKind::Closed, "node-b".to_string()),
        ]
    );
}
