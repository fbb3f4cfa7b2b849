//! The live plane against a real `nats-server` (the test kit's
//! `NatsServer`: a free port of 127.0.0.1, killed when the test ends). Each
//! node is its own connection, as on separate machines. Tests wait for
//! events and states, never for time; the timeouts are hang guards only.

use super::error::{InputError, LiveError};
use super::follow::LiveEvent;
use super::inputs::{InputReply, RoutedInput};
use super::link::LinkState;
use super::live::{LiveOptions, LivePlane};
use super::nats_url::NatsUrl;
use super::owner::{EPOCH_HEADER, Epoch, NODE_HEADER, NodeId, Owner};
use super::subjects::{ClusterName, Subjects};
use crate::protocol::{
    AgentMessage, ErrorEvent, ErrorKind, EventEnvelope, LifecycleEvent, LifecycleKind, SessionId,
    SessionInput, StreamDelta, StreamEvent,
};
use agentbus_testkit::NatsServer;
use futures::StreamExt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The longest anything may take before the test counts as hung.
const GUARD: Duration = Duration::from_secs(30);

async fn guarded<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(GUARD, future).await {
        Ok(value) => value,
        Err(_) => panic!("hung: {what}"),
    }
}

/// A server, or `None` when the NATS tests are skipped (said on stderr).
async fn server() -> Option<NatsServer> {
    NatsServer::start().await.expect("starting nats-server")
}

fn subjects() -> Subjects {
    Subjects::new(&ClusterName::new("test").unwrap())
}

async fn node(server: &NatsServer) -> LivePlane {
    let url = NatsUrl::parse(&server.url()).unwrap();
    LivePlane::connect(&url, subjects(), LiveOptions::default())
        .await
        .expect("connecting to the test's nats-server")
}

fn text_delta(session: &SessionId, seq: u64) -> EventEnvelope {
    EventEnvelope {
        session_id: session.clone(),
        seq,
        turn_id: Some(1),
        at: chrono::Utc::now(),
        message: AgentMessage::StreamEvent(StreamEvent {
            event: StreamDelta::TextDelta {
                index: 0,
                text: format!("token {seq}"),
            },
        }),
    }
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

fn owner(epoch: u64) -> Owner {
    Owner {
        epoch: Epoch(epoch),
        node: NodeId::new(),
    }
}

async fn next(events: &mut (impl futures::Stream<Item = LiveEvent> + Unpin)) -> LiveEvent {
    guarded("the next live event", events.next())
        .await
        .expect("the subscription ended")
}

#[tokio::test]
async fn events_published_by_the_owner_reach_a_follower_with_their_owner() {
    let Some(server) = server().await else { return };
    let (owner_node, follower_node) = (node(&server).await, node(&server).await);
    let session = SessionId::new();
    let mut events = follower_node.session_events(&session).await.unwrap();
    follower_node.sync(GUARD).await.unwrap();

    let owner = owner(7);
    let sent = [stored_event(&session, 1), text_delta(&session, 2)];
    for event in &sent {
        owner_node.publish_event(event, owner).await.unwrap();
    }
    for event in &sent {
        let got = next(&mut events).await;
        assert_eq!(&got.envelope, event);
        assert_eq!(got.owner, owner);
    }
    assert!(events.subject().ends_with(".ev"), "{}", events.subject());
}

#[tokio::test]
async fn a_follower_sees_the_events_in_publish_order() {
    let Some(server) = server().await else { return };
    let (owner_node, a, b) = (
        node(&server).await,
        node(&server).await,
        node(&server).await,
    );
    let session = SessionId::new();
    let mut followers = [
        a.session_events(&session).await.unwrap(),
        b.session_events(&session).await.unwrap(),
    ];
    a.sync(GUARD).await.unwrap();
    b.sync(GUARD).await.unwrap();
    let owner = owner(1);
    for seq in 1..=500 {
        owner_node
            .publish_event(&text_delta(&session, seq), owner)
            .await
            .unwrap();
    }
    for events in &mut followers {
        for seq in 1..=500 {
            assert_eq!(next(events).await.envelope.seq, seq);
        }
    }
}

#[tokio::test]
async fn a_followers_subscription_is_one_sessions_alone() {
    let Some(server) = server().await else { return };
    let (owner_node, follower) = (node(&server).await, node(&server).await);
    let (watched, other) = (SessionId::new(), SessionId::new());
    let mut events = follower.session_events(&watched).await.unwrap();
    follower.sync(GUARD).await.unwrap();
    owner_node
        .publish_event(&text_delta(&other, 1), owner(1))
        .await
        .unwrap();
    owner_node
        .publish_event(&text_delta(&watched, 9), owner(1))
        .await
        .unwrap();
    assert_eq!(next(&mut events).await.envelope.seq, 9);
}

#[tokio::test]
async fn messages_that_are_not_session_events_are_skipped() {
    let Some(server) = server().await else { return };
    let follower = node(&server).await;
    let session = SessionId::new();
    let subject = follower.subjects().session_events(&session).unwrap();
    let mut events = follower.session_events(&session).await.unwrap();
    follower.sync(GUARD).await.unwrap();

    let raw = async_nats::connect(server.url()).await.unwrap();
    let headers = |epoch: &str, node: &str| {
        let mut h = async_nats::HeaderMap::new();
        h.insert(EPOCH_HEADER, epoch);
        h.insert(NODE_HEADER, node);
        h
    };
    let node_id = NodeId::new().to_string();
    let good = serde_json::to_vec(&text_delta(&session, 3)).unwrap();
    // No headers; bad headers; not JSON; another session's envelope.
    raw.publish(subject.clone(), good.clone().into())
        .await
        .unwrap();
    raw.publish_with_headers(subject.clone(), headers("x", &node_id), good.clone().into())
        .await
        .unwrap();
    raw.publish_with_headers(subject.clone(), headers("1", "node"), good.clone().into())
        .await
        .unwrap();
    raw.publish_with_headers(subject.clone(), headers("1", &node_id), "{not json".into())
        .await
        .unwrap();
    let stranger = serde_json::to_vec(&text_delta(&SessionId::new(), 4)).unwrap();
    raw.publish_with_headers(subject.clone(), headers("1", &node_id), stranger.into())
        .await
        .unwrap();
    raw.publish_with_headers(subject.clone(), headers("2", &node_id), good.into())
        .await
        .unwrap();
    raw.flush().await.unwrap();

    let got = next(&mut events).await;
    assert_eq!((got.envelope.seq, got.owner.epoch), (3, Epoch(2)));
}

#[tokio::test]
async fn an_input_for_a_session_nobody_holds_gets_no_responders_not_a_timeout() {
    let Some(server) = server().await else { return };
    let sender = node(&server).await;
    let session = SessionId::new();
    let input = RoutedInput {
        input_uuid: uuid::Uuid::new_v4(),
        input: SessionInput::Interrupt,
    };
    // A timeout longer than the guard: only the server's "no responders"
    // can end this request in time.
    let result = guarded(
        "a request nobody serves",
        sender.send_input(&session, &input, GUARD * 2),
    )
    .await;
    match result {
        Err(InputError::NoResponders {
            session: s,
            subject,
        }) => {
            assert_eq!(s, session);
            assert!(subject.ends_with(".in"), "{subject}");
        }
        other => panic!("expected no responders, got {other:?}"),
    }
}

#[tokio::test]
async fn inputs_reach_the_owner_in_order_and_its_replies_come_back() {
    let Some(server) = server().await else { return };
    let (owner_node, sender) = (node(&server).await, node(&server).await);
    let session = SessionId::new();
    let taken: Arc<Mutex<Vec<RoutedInput>>> = Arc::default();
    let log = taken.clone();
    let server_side = owner_node
        .serve_inputs(&session, move |input: RoutedInput| {
            let log = log.clone();
            async move {
                let mut log = log.lock().unwrap();
                log.push(input);
                InputReply::Accepted {
                    input_id: Some(log.len() as u64),
                }
            }
        })
        .await
        .unwrap();
    owner_node.sync(GUARD).await.unwrap();

    let inputs: Vec<RoutedInput> = (0..3)
        .map(|i| RoutedInput {
            input_uuid: uuid::Uuid::new_v4(),
            input: SessionInput::Query {
                text: format!("query {i}"),
                images: vec![],
                by: None,
            },
        })
        .collect();
    for (i, input) in inputs.iter().enumerate() {
        let reply = sender.send_input(&session, input, GUARD).await.unwrap();
        assert_eq!(
            reply,
            InputReply::Accepted {
                input_id: Some(i as u64 + 1)
            }
        );
    }
    assert_eq!(*taken.lock().unwrap(), inputs);
    assert!(server_side.subject().ends_with(".in"));
    server_side.stop(GUARD).await.unwrap();
}

#[tokio::test]
async fn a_stopped_input_server_leaves_no_responders() {
    let Some(server) = server().await else { return };
    let (owner_node, sender) = (node(&server).await, node(&server).await);
    let session = SessionId::new();
    let served = owner_node
        .serve_inputs(&session, |_| async {
            InputReply::Accepted { input_id: None }
        })
        .await
        .unwrap();
    owner_node.sync(GUARD).await.unwrap();
    let input = RoutedInput {
        input_uuid: uuid::Uuid::new_v4(),
        input: SessionInput::Interrupt,
    };
    let reply = sender.send_input(&session, &input, GUARD).await.unwrap();
    assert_eq!(reply, InputReply::Accepted { input_id: None });

    served.stop(GUARD).await.unwrap();
    let result = guarded(
        "a request after the owner stopped serving",
        sender.send_input(&session, &input, GUARD * 2),
    )
    .await;
    assert!(
        matches!(result, Err(InputError::NoResponders { .. })),
        "{result:?}"
    );
}

#[tokio::test]
async fn an_owner_that_does_not_answer_is_a_timeout() {
    let Some(server) = server().await else { return };
    let (silent, sender) = (node(&server).await, node(&server).await);
    let session = SessionId::new();
    // Somebody subscribes to the session's inputs and never answers.
    let subject = subjects().session_inputs(&session).unwrap();
    let _deaf = silent.client.subscribe(subject).await.unwrap();
    silent.sync(GUARD).await.unwrap();
    let input = RoutedInput {
        input_uuid: uuid::Uuid::new_v4(),
        input: SessionInput::Interrupt,
    };
    let timeout = Duration::from_millis(200);
    let result = guarded(
        "a request nobody answers",
        sender.send_input(&session, &input, timeout),
    )
    .await;
    match result {
        Err(InputError::TimedOut { timeout: t, .. }) => assert_eq!(t, timeout),
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unreadable_input_or_a_failing_handler_is_refused_saying_why() {
    let Some(server) = server().await else { return };
    let (owner_node, sender) = (node(&server).await, node(&server).await);
    let session = SessionId::new();
    let _served = owner_node
        .serve_inputs(&session, |input: RoutedInput| async move {
            if matches!(input.input, SessionInput::Interrupt) {
                panic!("a handler that fails");
            }
            InputReply::Accepted { input_id: Some(1) }
        })
        .await
        .unwrap();
    owner_node.sync(GUARD).await.unwrap();

    let subject = subjects().session_inputs(&session).unwrap();
    let reply = guarded(
        "a raw request",
        sender
            .client
            .request(subject, "{\"not\": \"an input\"}".into()),
    )
    .await
    .unwrap();
    let reply: InputReply = serde_json::from_slice(&reply.payload).unwrap();
    assert!(
        matches!(&reply, InputReply::Refused { message, .. } if message.contains("cannot be read")),
        "{reply:?}"
    );

    let input = RoutedInput {
        input_uuid: uuid::Uuid::new_v4(),
        input: SessionInput::Interrupt,
    };
    let reply = sender.send_input(&session, &input, GUARD).await.unwrap();
    assert!(matches!(reply, InputReply::Refused { .. }), "{reply:?}");
    // The server goes on after the panic.
    let query = RoutedInput {
        input_uuid: uuid::Uuid::new_v4(),
        input: SessionInput::Query {
            text: "hi".into(),
            images: vec![],
            by: None,
        },
    };
    let reply = sender.send_input(&session, &query, GUARD).await.unwrap();
    assert_eq!(reply, InputReply::Accepted { input_id: Some(1) });
}

#[tokio::test]
async fn lifecycle_events_reach_every_node_with_the_node_that_said_them() {
    let Some(server) = server().await else { return };
    let (a, b) = (node(&server).await, node(&server).await);
    let mut heard_by_a = a.lifecycle().await.unwrap();
    let mut heard_by_b = b.lifecycle().await.unwrap();
    a.sync(GUARD).await.unwrap();
    b.sync(GUARD).await.unwrap();
    let node_a = NodeId::new();
    // Every field travels, who did it among them.
    let event = LifecycleEvent {
        seq: 4,
        session_id: SessionId::new(),
        kind: LifecycleKind::Created,
        node: Some("node-a".into()),
        pending_approvals: None,
        by: Some("ci-bot".into()),
    };
    a.publish_lifecycle(&event, node_a).await.unwrap();
    for heard in [&mut heard_by_a, &mut heard_by_b] {
        let got = guarded("a lifecycle event", heard.next()).await.unwrap();
        assert_eq!(got.node, node_a);
        assert_eq!(got.event, event);
    }
}

#[tokio::test]
async fn a_killed_server_is_seen_on_the_link_and_following_resumes_after_it_returns() {
    let Some(mut server) = server().await else {
        return;
    };
    let (owner_node, follower) = (node(&server).await, node(&server).await);
    let session = SessionId::new();
    let mut events = follower.session_events(&session).await.unwrap();
    follower.sync(GUARD).await.unwrap();
    let owner = owner(1);
    owner_node
        .publish_event(&stored_event(&session, 1), owner)
        .await
        .unwrap();
    assert_eq!(next(&mut events).await.envelope.seq, 1);

    let mut link = follower.link();
    let mut owner_link = owner_node.link();
    assert_eq!(link.state(), LinkState::Connected);
    server.kill().await.unwrap();

    // Both nodes learn it: the state says since when.
    for link in [&mut link, &mut owner_link] {
        let state = guarded(
            "the link to notice the server died",
            link.wait_for(|s| matches!(s, LinkState::Disconnected { .. })),
        )
        .await;
        assert!(matches!(state, LinkState::Disconnected { .. }), "{state:?}");
        assert!(link.lost_for(tokio::time::Instant::now()).is_some());
    }
    // No round trip while cut off.
    let sync = follower.sync(Duration::from_millis(100)).await;
    assert!(matches!(sync, Err(LiveError::Sync { .. })), "{sync:?}");
    // Publishing while cut off fails at once instead of queueing.
    let refused = owner_node
        .publish_event(&stored_event(&session, 2), owner)
        .await;
    assert!(
        matches!(refused, Err(LiveError::NotConnected { .. })),
        "{refused:?}"
    );

    server.restart().await.unwrap();
    for link in [&mut link, &mut owner_link] {
        let state = guarded(
            "the link to reconnect",
            link.wait_for(|s| *s == LinkState::Connected),
        )
        .await;
        assert_eq!(state, LinkState::Connected);
    }
    // The follower's subscription was renewed on reconnecting: once the
    // server has seen it (a round trip), the next event arrives.
    follower.sync(GUARD).await.unwrap();
    owner_node
        .publish_event(&stored_event(&session, 3), owner)
        .await
        .unwrap();
    let got = next(&mut events).await;
    assert_eq!(got.envelope.seq, 3, "2 was refused, never sent");
}

#[tokio::test]
async fn a_closed_connection_ends_the_subscriptions_and_reads_closed() {
    let Some(server) = server().await else { return };
    let follower = node(&server).await;
    let mut events = follower.session_events(&SessionId::new()).await.unwrap();
    let mut link = follower.link();
    follower.clone().close().await;
    assert_eq!(
        guarded("the subscription to end", events.next()).await,
        None
    );
    let state = guarded(
        "the link to read closed",
        link.wait_for(|s| *s == LinkState::Closed),
    )
    .await;
    assert_eq!(state, LinkState::Closed);
}

#[tokio::test]
async fn credentials_in_the_url_reach_the_server_and_no_message() {
    let Some(server) = NatsServer::start_with_args(&["--user", "alice", "--pass", "s3cret"])
        .await
        .expect("starting nats-server")
    else {
        return;
    };
    let with = format!("nats://alice:s3cret@127.0.0.1:{}", server.port());
    let url = NatsUrl::parse(&with).unwrap();
    let plane = LivePlane::connect(&url, subjects(), LiveOptions::default())
        .await
        .expect("the right password connects");
    let shown = format!("{plane:?} {}", plane.url());
    assert!(
        !shown.contains("s3cret") && !shown.contains("alice"),
        "{shown}"
    );

    let wrong = format!("nats://alice:wrong-s3cret@127.0.0.1:{}", server.port());
    let err = LivePlane::connect(
        &NatsUrl::parse(&wrong).unwrap(),
        subjects(),
        LiveOptions::default(),
    )
    .await
    .expect_err("a wrong password is refused");
    let text = err.to_string();
    assert!(
        text.contains(&format!("nats://***@127.0.0.1:{}", server.port())),
        "{text}"
    );
    assert!(!text.contains("s3cret"), "{text}");
}

#[tokio::test]
async fn connecting_where_no_server_listens_names_the_address_without_credentials() {
    // Needs no nats-server: nothing listens on the port.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = NatsUrl::parse(&format!("nats://alice:s3cret@127.0.0.1:{port}")).unwrap();
    let err = guarded(
        "connecting to nothing",
        LivePlane::connect(&url, subjects(), LiveOptions::default()),
    )
    .await
    .expect_err("nothing listens there");
    let text = err.to_string();
    assert!(
        text.starts_with(&format!(
            "cannot connect to NATS at nats://***@127.0.0.1:{port}"
        )),
        "{text}"
    );
    assert!(
        !text.contains("s3cret") && !text.contains("alice"),
        "{text}"
    );
    assert!(!format!("{err:?}").contains("s3cret"), "{err:?}");
}
