//! Publishing and following across nodes, against a real `nats-server`: a
//! session driven on the owner node by a scripted fake model, its relay,
//! and a follower on another node (another connection, the same store)
//! whose mirror must hand its subscribers what a local subscriber gets —
//! through a follower joining mid-turn, NATS dying mid-turn, and an owner
//! change with a stale owner still talking.

use super::follow::LiveEvent;
use super::link::LinkState;
use super::owner::Epoch;
use super::relay::{Relay, RelayEnd};
use super::remote_session::{FollowOptions, RemoteSession};
use super::test_nodes::{
    Behind, Events, GUARD, Nodes, connect, guarded, is_delta, owner_at, result_of, seqs, shape,
};
use crate::bus::SessionTopic;
use crate::bus::reader::{Gaps, TopicReader};
use crate::protocol::{
    AgentMessage, ErrorEvent, ErrorKind, EventEnvelope, SessionId, StopReason, StreamDelta,
    StreamEvent,
};
use crate::session::{SessionDoor, SessionHandle};
use crate::store::{NewSession, SessionStore, StoreLocation};
use agentbus_testkit::NatsServer;
use futures::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_on_another_node_sees_what_a_local_subscriber_sees_deltas_included() {
    let Some(nodes) = Nodes::start().await else {
        return;
    };
    std::fs::write(nodes.workspace().join("notes.txt"), "remember the milk\n").unwrap();
    let (session, _, relay, remote, mut local, mut mirrored) =
        relayed(&nodes, FollowOptions::default()).await;

    let input = session.submit_text("what do my notes say?").await.unwrap();
    let call = nodes.next_call().await;
    call.delta("Let me ");
    call.delta("look.");
    call.read_file("call_1", "notes.txt");
    let call = nodes.next_call().await;
    for word in ["They ", "say: ", "remember ", "the ", "milk."] {
        call.delta(word);
    }
    call.finish();

    let here = local.turn().await;
    let there = mirrored.turn().await;
    assert_eq!(shape(&there), shape(&here));
    assert_eq!(result_of(&there).stop_reason, StopReason::EndTurn);
    assert_eq!(result_of(&there).text, "They say: remember the milk.");
    assert!(here.iter().filter(|e| is_delta(&e.message)).count() >= 7);
    assert!(
        here.iter()
            .all(|e| e.turn_id.is_none() || e.turn_id == Some(input))
    );
    assert!(
        here.iter()
            .any(|e| matches!(e.message, AgentMessage::ToolResult(_)))
    );
    let stats = relay.stats();
    assert_eq!((stats.dropped, stats.lagged), (0, 0), "{stats:?}");
    assert_eq!(remote.stats().store_errors, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_joining_mid_turn_gets_the_stored_replay_then_live_events_once_each() {
    let Some(nodes) = Nodes::start().await else {
        return;
    };
    let session = nodes.session().await;
    let relay = Relay::for_session(&nodes.owner_plane, &session, owner_at(1));
    let mut local = Events(session.subscribe(session.loaded_after()).unwrap());
    session.submit_text("tell me a story").await.unwrap();
    let call = nodes.next_call().await;
    call.delta("Once ");
    call.delta("upon ");
    let before_join = local.until(|m| matches!(m, AgentMessage::StreamEvent(StreamEvent { event: StreamDelta::TextDelta { text, .. } }) if text == "upon ")).await;
    let user = before_join
        .iter()
        .find(|e| matches!(e.message, AgentMessage::User(_)))
        .expect("the query's user event")
        .seq;
    let last_before = before_join.last().unwrap().seq;
    // Both deltas are out on the live plane, before the follower subscribes.
    let mut handled = relay.handled();
    guarded(
        "the relay to publish the deltas",
        handled.wait_for(|seq| *seq >= last_before),
    )
    .await
    .unwrap();
    nodes.owner_plane.sync(GUARD).await.unwrap();

    // A client that saw everything before the query joins through the
    // other node.
    let joined_after = user - 1;
    let remote = nodes.follow(session.id(), joined_after).await;
    let mut mirrored = Events(remote.subscribe(joined_after).unwrap());
    call.delta("a time.");
    call.finish();
    let rest = local.turn().await;
    let there = mirrored.turn().await;

    // The stored events of what it missed (the deltas were never stored),
    // then everything live.
    let expected: Vec<_> = before_join
        .iter()
        .filter(|e| e.seq > joined_after && !is_delta(&e.message))
        .chain(rest.iter())
        .cloned()
        .collect();
    assert_eq!(shape(&there), shape(&expected));
    assert_eq!(result_of(&there).text, "Once upon a time.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_dying_mid_turn_loses_no_persisted_event_at_the_follower() {
    let Some(mut nodes) = Nodes::start().await else {
        return;
    };
    std::fs::write(nodes.workspace().join("a.txt"), "a\n").unwrap();
    let (session, after, relay, _remote, mut local, mut mirrored) =
        relayed(&nodes, FollowOptions::default()).await;

    session.submit_text("read a.txt").await.unwrap();
    let call = nodes.next_call().await;
    call.delta("Reading.");
    let mut there = mirrored.until(is_delta).await;

    nodes.nats.kill().await.unwrap();
    for plane in [&nodes.owner_plane, &nodes.follower_plane] {
        guarded(
            "the node to notice NATS died",
            plane
                .link()
                .wait_for(|s| matches!(s, LinkState::Disconnected { .. })),
        )
        .await;
    }
    // The turn goes on while NATS is gone: a delta, the tool call and its
    // result are committed and shown locally, and dropped by the relay.
    call.delta(" Now.");
    call.read_file("call_1", "a.txt");
    let call = nodes.next_call().await;
    let during = local
        .until(|m| matches!(m, AgentMessage::ToolResult(_)))
        .await;
    let mut handled = relay.handled();
    let last = during.last().unwrap().seq;
    guarded("the relay to drop", handled.wait_for(|seq| *seq >= last))
        .await
        .unwrap();
    assert!(relay.stats().dropped >= 3, "{:?}", relay.stats());

    nodes.nats.restart().await.unwrap();
    for plane in [&nodes.owner_plane, &nodes.follower_plane] {
        guarded(
            "the node to reconnect",
            plane.link().wait_for(|s| *s == LinkState::Connected),
        )
        .await;
    }
    call.answer("It says a.");
    let here = local.turn().await;
    there.extend(mirrored.turn().await);

    assert_persisted_exactly_once(&nodes.store(), session.id(), after, &there).await;
    assert_deltas_are_the_owners(&there, &[&during, &here]);
    assert_eq!(result_of(&there).text, "It says a.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_ends_while_nats_is_gone_still_ends_at_the_follower() {
    let Some(mut nodes) = Nodes::start().await else {
        return;
    };
    let (session, after, relay, _remote, mut local, mut mirrored) =
        relayed(&nodes, FollowOptions::default()).await;

    session.submit_text("hi").await.unwrap();
    let call = nodes.next_call().await;
    call.delta("Hel");
    let mut there = mirrored.until(is_delta).await;
    nodes.nats.kill().await.unwrap();
    for plane in [&nodes.owner_plane, &nodes.follower_plane] {
        guarded(
            "the node to notice NATS died",
            plane
                .link()
                .wait_for(|s| matches!(s, LinkState::Disconnected { .. })),
        )
        .await;
    }
    // The whole rest of the turn happens while NATS is gone, and nothing
    // comes after it to show the follower a gap.
    call.answer("lo.");
    let here = local.turn().await;
    let last = here.last().unwrap().seq;
    guarded(
        "the relay to drop",
        relay.handled().wait_for(|s| *s >= last),
    )
    .await
    .unwrap();
    nodes.nats.restart().await.unwrap();

    there.extend(mirrored.turn().await);
    assert_eq!(result_of(&there).text, "Hello.");
    assert_persisted_exactly_once(&nodes.store(), session.id(), after, &there).await;
}

/// A session of `nodes`' owner, relayed as its owner at epoch 1 and
/// followed from the other node under `options`, with a subscriber on
/// each side from its load on: the session, the seq it was loaded after,
/// the relay, the follower, the local events and the mirrored ones.
async fn relayed(
    nodes: &Nodes,
    options: FollowOptions,
) -> (SessionHandle, u64, Relay, RemoteSession, Events, Events) {
    let session = nodes.session().await;
    let after = session.loaded_after();
    let relay = Relay::for_session(&nodes.owner_plane, &session, owner_at(1));
    let remote = nodes.follow_with(session.id(), after, options).await;
    let local = Events(session.subscribe(after).unwrap());
    let mirrored = Events(remote.subscribe(after).unwrap());
    (session, after, relay, remote, local, mirrored)
}

/// Following options under which the watchdog never fires within a test:
/// what catches the follower up must be something else.
fn no_watchdog() -> FollowOptions {
    FollowOptions {
        quiet: GUARD * 10,
        ..FollowOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_cut_off_from_nats_as_its_turn_ends_sends_its_last_event_again_once_back() {
    let Some(nodes) = Nodes::start_with(Behind::Owner).await else {
        return;
    };
    let (session, after, relay, remote, mut local, mut mirrored) =
        relayed(&nodes, no_watchdog()).await;
    session.submit_text("hi").await.unwrap();
    let call = nodes.next_call().await;
    call.delta("Hel");
    let mut there = mirrored.until(is_delta).await;

    // Only the owner is cut off: the follower hears nothing amiss.
    nodes.cut(&nodes.owner_plane).await;
    call.answer("lo.");
    let here = local.turn().await;
    let last = here.last().unwrap().seq;
    guarded(
        "the relay to drop",
        relay.handled().wait_for(|s| *s >= last),
    )
    .await
    .unwrap();
    nodes.restore();

    there.extend(mirrored.turn().await);
    assert_eq!(result_of(&there).text, "Hello.");
    assert_persisted_exactly_once(&nodes.store(), session.id(), after, &there).await;
    assert_eq!(relay.stats().resent, 1, "{:?}", relay.stats());
    assert_eq!(remote.stats().refills, 1, "{:?}", remote.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_cut_off_from_nats_reads_the_store_once_it_is_back() {
    let Some(nodes) = Nodes::start_with(Behind::Follower).await else {
        return;
    };
    let (session, after, relay, remote, mut local, mut mirrored) =
        relayed(&nodes, no_watchdog()).await;
    session.submit_text("hi").await.unwrap();
    let call = nodes.next_call().await;
    call.delta("Hel");
    let mut there = mirrored.until(is_delta).await;

    // Only the follower is cut off: the owner publishes the end of the
    // turn to nobody.
    nodes.cut(&nodes.follower_plane).await;
    call.answer("lo.");
    let here = local.turn().await;
    let last = here.last().unwrap().seq;
    guarded(
        "the relay to publish",
        relay.handled().wait_for(|s| *s >= last),
    )
    .await
    .unwrap();
    assert_eq!(relay.stats().dropped, 0);
    nodes.restore();

    there.extend(mirrored.turn().await);
    assert_eq!(result_of(&there).text, "Hello.");
    assert_persisted_exactly_once(&nodes.store(), session.id(), after, &there).await;
    assert!(remote.stats().rechecks >= 1, "{:?}", remote.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_session_gone_quiet_is_read_from_the_store() {
    let Some(nats) = NatsServer::start().await.expect("starting nats-server") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    let id = new_session(&store).await;
    let (owner_plane, follower_plane) = (connect(&nats).await, connect(&nats).await);
    // A short quiet spell: the test waits for the events it brings, not
    // for the time.
    let options = FollowOptions {
        quiet: Duration::from_millis(50),
        ..FollowOptions::default()
    };
    let remote = RemoteSession::start(&follower_plane, store.clone(), id.clone(), 0, options)
        .await
        .unwrap();
    let mut mirrored = Events(remote.subscribe(0).unwrap());
    // A turn is running...
    owner_plane
        .publish_event(&delta_event(&id, 1), owner_at(1))
        .await
        .unwrap();
    assert_eq!(seqs(&mirrored.take(1).await), [1]);
    // ... and a new owner's first messages are lost.
    store
        .append(
            &id,
            vec![
                Arc::new(stored_event(&id, 4097)),
                Arc::new(stored_event(&id, 4098)),
            ],
        )
        .await
        .unwrap();
    assert_eq!(seqs(&mirrored.take(2).await), [4097, 4098]);
    assert!(remote.stats().rechecks >= 1, "{:?}", remote.stats());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_change_is_followed_across_the_seq_jump_and_the_stale_owner_is_ignored() {
    let Some(nats) = NatsServer::start().await.expect("starting nats-server") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    owner_change(&nats, sqlite_store(&dir).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_change_is_followed_on_postgres_too() {
    let Some(nats) = NatsServer::start().await.expect("starting nats-server") else {
        return;
    };
    let Some(database) = agentbus_testkit::postgres::fresh_database().await else {
        return;
    };
    let location: StoreLocation = database.url().parse().unwrap();
    let store = crate::store::open(&location, Duration::from_secs(5))
        .await
        .unwrap();
    owner_change(&nats, store).await;
}

/// A session whose events the test writes to `store` and publishes as
/// two owners would: the first (epoch 1) is replaced by a second (epoch
/// 2), which continues above the first one's seq reservation; the first
/// stores one more event it never gets to publish, then talks on.
async fn owner_change(nats: &NatsServer, store: Arc<dyn SessionStore>) {
    let (old_plane, new_plane, follower_plane) = (
        connect(nats).await,
        connect(nats).await,
        connect(nats).await,
    );
    let id = new_session(&store).await;
    let (old, new) = (owner_at(1), owner_at(2));
    let stored = |seq| stored_event(&id, seq);
    let delta = |seq| delta_event(&id, seq);
    store
        .append(&id, (1..=3).map(|s| Arc::new(stored(s))).collect())
        .await
        .unwrap();

    let remote = RemoteSession::start(
        &follower_plane,
        store.clone(),
        id.clone(),
        0,
        FollowOptions::default(),
    )
    .await
    .unwrap();
    let mut mirrored = Events(remote.subscribe(0).unwrap());
    assert_eq!(seqs(&mirrored.take(3).await), [1, 2, 3]);

    // The first owner: a delta, a stored event.
    old_plane.publish_event(&delta(4), old).await.unwrap();
    store.append(&id, vec![Arc::new(stored(5))]).await.unwrap();
    old_plane.publish_event(&stored(5), old).await.unwrap();
    assert_eq!(seqs(&mirrored.take(2).await), [4, 5]);

    // Its last commit, never published; then the new owner opens above
    // the reservation.
    store.append(&id, vec![Arc::new(stored(6))]).await.unwrap();
    store
        .append(&id, vec![Arc::new(stored(4101))])
        .await
        .unwrap();
    new_plane.publish_event(&stored(4101), new).await.unwrap();
    assert_eq!(seqs(&mirrored.take(2).await), [6, 4101]);
    assert_eq!(remote.stats().refills, 1);

    // The stale owner talks on; the new one goes on.
    old_plane.publish_event(&delta(7), old).await.unwrap();
    old_plane.publish_event(&stored(8), old).await.unwrap();
    old_plane.sync(GUARD).await.unwrap();
    new_plane.publish_event(&delta(4102), new).await.unwrap();
    store
        .append(&id, vec![Arc::new(stored(4103))])
        .await
        .unwrap();
    new_plane.publish_event(&stored(4103), new).await.unwrap();
    assert_eq!(seqs(&mirrored.take(2).await), [4102, 4103]);
    assert_eq!(remote.stats().stale, 2, "{:?}", remote.stats());

    // A client of the node (as SSE reads it) gets the same, from the start
    // or from inside the jump.
    let mut client = TopicReader::new(remote.clone(), 0, Gaps::CutOff);
    let mut read = Vec::new();
    for _ in 0..9 {
        read.push(
            guarded("a client's event", client.next())
                .await
                .unwrap()
                .seq,
        );
    }
    assert_eq!(read, [1, 2, 3, 4, 5, 6, 4101, 4102, 4103]);
    let mut resumed = TopicReader::new(remote.clone(), 6, Gaps::CutOff);
    let first = guarded("a resumed client's event", resumed.next()).await;
    assert_eq!(first.map(|e| e.seq), Some(4101));
    remote.stop().await;
}

/// On one thread, so that the burst is published before the relay runs.
#[tokio::test]
async fn a_relay_behind_its_topic_subscribes_again_and_publishes_every_event_in_order() {
    let Some(nats) = NatsServer::start().await.expect("starting nats-server") else {
        return;
    };
    let (owner_plane, follower_plane) = (connect(&nats).await, connect(&nats).await);
    let id = SessionId::new();
    // A live channel of 4: a burst of 200 leaves the relay behind.
    let topic = Arc::new(SessionTopic::with_capacity(0, 1024, 4));
    let mut heard = follower_plane.session_events(&id).await.unwrap();
    follower_plane.sync(GUARD).await.unwrap();
    let relay = Relay::start(&owner_plane, id.clone(), topic.clone(), owner_at(3), 0);
    for seq in 1..=200 {
        topic.publish(Arc::new(delta_event(&id, seq))).unwrap();
    }
    for seq in 1..=200 {
        let event: LiveEvent = guarded("a relayed event", heard.next()).await.unwrap();
        assert_eq!((event.seq(), event.owner.epoch), (seq, Epoch(3)));
    }
    assert!(relay.stats().lagged >= 1, "{:?}", relay.stats());
    assert_eq!(topic.subscriber_count(), 0, "the relay is no watcher");

    topic.close();
    let (end, stats) = guarded("the relay to end", relay.finished()).await;
    assert_eq!(end, RelayEnd::TopicClosed);
    assert_eq!(stats.published, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_relay_publishes_nothing_more() {
    let Some(nats) = NatsServer::start().await.expect("starting nats-server") else {
        return;
    };
    let (owner_plane, follower_plane) = (connect(&nats).await, connect(&nats).await);
    let id = SessionId::new();
    let topic = Arc::new(SessionTopic::new(0));
    let mut heard = follower_plane.session_events(&id).await.unwrap();
    follower_plane.sync(GUARD).await.unwrap();
    let owner = owner_at(1);
    let relay = Relay::start(&owner_plane, id.clone(), topic.clone(), owner, 0);
    assert_eq!((relay.session(), relay.owner()), (&id, owner));
    assert!(relay.is_running());
    topic.publish(Arc::new(delta_event(&id, 1))).unwrap();
    assert_eq!(guarded("event 1", heard.next()).await.unwrap().seq(), 1);
    let (end, _) = relay.stop().await;
    assert_eq!(end, RelayEnd::Stopped);
    topic.publish(Arc::new(delta_event(&id, 2))).unwrap();
    // A marker from elsewhere arrives; event 2 never did.
    owner_plane
        .publish_event(&delta_event(&id, 3), owner_at(1))
        .await
        .unwrap();
    assert_eq!(guarded("the marker", heard.next()).await.unwrap().seq(), 3);
}

/// Loopback latency of one delta from the fake model to a subscriber of
/// the owner's topic and to one of the follower's mirror, one delta at a
/// time; printed, not checked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_node_delta_latency_is_measured() {
    let Some(nodes) = Nodes::start().await else {
        return;
    };
    let (session, _, _relay, _remote, mut local, mut mirrored) =
        relayed(&nodes, FollowOptions::default()).await;
    session.submit_text("count").await.unwrap();
    let call = nodes.next_call().await;
    for events in [&mut local, &mut mirrored] {
        events.until(|m| matches!(m, AgentMessage::User(_))).await;
    }
    let (mut here, mut there) = (Vec::new(), Vec::new());
    for i in 0..500 {
        let sent = Instant::now();
        call.delta(&format!("{i} "));
        let ((a, local_after), (b, mirror_after)) =
            tokio::join!(async { (local.next().await, sent.elapsed()) }, async {
                (mirrored.next().await, sent.elapsed())
            },);
        assert!(is_delta(&a.message) && a.seq == b.seq, "{a:?} {b:?}");
        here.push(local_after);
        there.push(mirror_after);
    }
    call.finish();
    mirrored.turn().await;
    let summary = |mut all: Vec<Duration>| {
        all.sort();
        let at = |q: f64| all[((all.len() - 1) as f64 * q).round() as usize];
        format!("p50 {:?}, p99 {:?}, max {:?}", at(0.5), at(0.99), at(1.0))
    };
    eprintln!(
        "delta latency over {} deltas, from the model's stream: local subscriber {}; follower's mirror on another connection {}",
        here.len(),
        summary(here),
        summary(there)
    );
}

async fn sqlite_store(dir: &tempfile::TempDir) -> Arc<dyn SessionStore> {
    let location = StoreLocation::Sqlite(dir.path().join("sessions.db"));
    crate::store::open(&location, Duration::from_secs(5))
        .await
        .unwrap()
}

/// A session in `store` that no runtime drives: the test writes its log.
async fn new_session(store: &Arc<dyn SessionStore>) -> SessionId {
    let id = SessionId::new();
    let new = NewSession {
        id: id.clone(),
        model: "fake".into(),
        workspace: "/tmp".into(),
        parent: None,
        parent_call: None,
        created_by: None,
    };
    store
        .create(new, crate::store::Owner::current())
        .await
        .unwrap();
    id
}

fn stored_event(session: &SessionId, seq: u64) -> EventEnvelope {
    EventEnvelope {
        session_id: session.clone(),
        seq,
        turn_id: Some(1),
        at: chrono::Utc::now(),
        message: AgentMessage::Error(ErrorEvent {
            kind: ErrorKind::Provider,
            message: format!("stored {seq}"),
        }),
    }
}

fn delta_event(session: &SessionId, seq: u64) -> EventEnvelope {
    EventEnvelope {
        session_id: session.clone(),
        seq,
        turn_id: Some(1),
        at: chrono::Utc::now(),
        message: AgentMessage::StreamEvent(StreamEvent {
            event: StreamDelta::TextDelta {
                index: 0,
                text: format!("delta {seq}"),
            },
        }),
    }
}

/// The follower handed on every event the store holds after `after`,
/// exactly once and in order, and nothing out of order.
async fn assert_persisted_exactly_once(
    store: &Arc<dyn SessionStore>,
    id: &SessionId,
    after: u64,
    there: &[Arc<EventEnvelope>],
) {
    let all = seqs(there);
    assert!(
        all.windows(2).all(|w| w[0] < w[1]),
        "not increasing: {all:?}"
    );
    let stored: Vec<_> = store
        .load_events(id, after, Some(there.last().unwrap().seq))
        .await
        .unwrap()
        .into_iter()
        .map(Arc::new)
        .collect();
    let persisted: Vec<_> = there
        .iter()
        .filter(|e| !is_delta(&e.message))
        .cloned()
        .collect();
    assert_eq!(shape(&persisted), shape(&stored));
}

/// Every delta the follower handed on is one the owner published, as it
/// was.
fn assert_deltas_are_the_owners(there: &[Arc<EventEnvelope>], owner: &[&[Arc<EventEnvelope>]]) {
    let owners: Vec<_> = owner.iter().flat_map(|events| shape(events)).collect();
    for delta in shape(there).into_iter().filter(|(_, _, m)| is_delta(m)) {
        assert!(owners.contains(&delta), "{delta:?} is not the owner's");
    }
}
