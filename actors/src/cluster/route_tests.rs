//! Inputs across nodes, against a real `nats-server`: a front end on
//! another node drives a session the owner node runs (a scripted fake
//! model) — a query whose answer streams back through the follower, an
//! interrupt that cancels the owner's turn, an input sent twice that runs
//! once, a refusal that keeps its kind, and *no responders* when nobody
//! serves the session.

use super::inputs::{InputReply, RoutedInput};
use super::relay::Relay;
use super::route::{InputRoute, RouteError};
use super::test_nodes::{Events, GUARD, Nodes, guarded, is_delta, owner_at, result_of};
use crate::bus::source::EventSource;
use crate::protocol::{ApprovalChoice, ApprovalDecision, Message, SessionInput, StopReason};
use crate::session::{Failure, SessionDoor, SessionError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_sent_from_another_node_runs_on_the_owner_and_streams_back() {
    let Some(nodes) = Nodes::start().await else {
        return;
    };
    let session = nodes.session().await;
    let after = session.loaded_after();
    let _relay = Relay::for_session(&nodes.owner_plane, &session, owner_at(1));
    let route = InputRoute::serve(&nodes.owner_plane, &session)
        .await
        .unwrap();
    assert!(route.subject().ends_with(".in"), "{}", route.subject());
    nodes.owner_plane.sync(GUARD).await.unwrap();
    let remote = nodes.follow(session.id(), after).await;
    assert_eq!(
        (remote.session_id(), remote.loaded_after()),
        (session.id(), after)
    );
    let mut mirrored = Events(remote.subscribe(after).unwrap());
    assert_eq!(remote.watchers(), 1);

    let input_id = remote.submit_text("hello from node B").await.unwrap();
    let call = nodes.next_call().await;
    assert_eq!(
        call.request.messages.last(),
        Some(&Message::user("hello from node B"))
    );
    call.delta("Hello ");
    call.answer("back.");
    let turn = mirrored.turn().await;
    let result = result_of(&turn);
    assert_eq!(result.text, "Hello back.");
    assert_eq!(turn.last().unwrap().turn_id, Some(input_id));
    assert!(turn.iter().any(|e| is_delta(&e.message)));
    route.stop(GUARD).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_from_another_node_cancels_the_owners_turn() {
    let Some(nodes) = Nodes::start().await else {
        return;
    };
    let session = nodes.session().await;
    let after = session.loaded_after();
    let _relay = Relay::for_session(&nodes.owner_plane, &session, owner_at(1));
    let _route = InputRoute::serve(&nodes.owner_plane, &session)
        .await
        .unwrap();
    nodes.owner_plane.sync(GUARD).await.unwrap();
    let remote = nodes.follow(session.id(), after).await;
    let mut mirrored = Events(remote.subscribe(after).unwrap());

    remote.submit_text("tell me everything").await.unwrap();
    let call = nodes.next_call().await;
    call.delta("Everything began");
    mirrored.until(is_delta).await;
    remote.interrupt().await.unwrap();
    let result = result_of(&mirrored.turn().await);
    assert_eq!(result.stop_reason, StopReason::Cancelled);
    assert_eq!(result.text, "Everything began");
    guarded("the owner's model stream to be dropped", call.dropped)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_sent_again_with_its_uuid_runs_once() {
    let Some(nodes) = Nodes::start().await else {
        return;
    };
    let session = nodes.session().await;
    let mut local = Events(session.subscribe(session.loaded_after()).unwrap());
    let _route = InputRoute::serve(&nodes.owner_plane, &session)
        .await
        .unwrap();
    nodes.owner_plane.sync(GUARD).await.unwrap();

    let first = RoutedInput {
        input_uuid: uuid::Uuid::now_v7(),
        input: SessionInput::Query {
            text: "first".into(),
            images: vec![],
            by: None,
        },
    };
    // A sender that timed out sends it again, with the same uuid.
    let plane = &nodes.follower_plane;
    let replies = [
        plane.send_input(session.id(), &first, GUARD).await.unwrap(),
        plane.send_input(session.id(), &first, GUARD).await.unwrap(),
    ];
    let InputReply::Accepted {
        input_id: Some(first_id),
    } = replies[0]
    else {
        panic!("{replies:?}");
    };
    assert_eq!(replies[0], replies[1], "answered as the first time");
    let call = nodes.next_call().await;
    call.answer("one");
    local.turn().await;

    let second = RoutedInput {
        input_uuid: uuid::Uuid::now_v7(),
        input: SessionInput::Query {
            text: "second".into(),
            images: vec![],
            by: None,
        },
    };
    let reply = plane
        .send_input(session.id(), &second, GUARD)
        .await
        .unwrap();
    assert_eq!(
        reply,
        InputReply::Accepted {
            input_id: Some(first_id + 1)
        }
    );
    // The queue is a FIFO: had the repeat been queued, its turn would run
    // before this one.
    let call = nodes.next_call().await;
    let asked: Vec<_> = call
        .request
        .messages
        .iter()
        .filter(|m| **m == Message::user("first") || **m == Message::user("second"))
        .collect();
    assert_eq!(
        asked,
        [&Message::user("first"), &Message::user("second")],
        "{:?}",
        call.request.messages
    );
    call.answer("two");
    let turn = local.turn().await;
    assert_eq!(turn.last().unwrap().turn_id, Some(first_id + 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_keeps_its_kind_across_nodes() {
    let Some(nodes) = Nodes::start().await else {
        return;
    };
    let session = nodes.session().await;
    let _route = InputRoute::serve(&nodes.owner_plane, &session)
        .await
        .unwrap();
    nodes.owner_plane.sync(GUARD).await.unwrap();
    let remote = nodes.follow(session.id(), session.loaded_after()).await;
    let err = remote
        .decide(
            "no-such-request",
            ApprovalDecision::new(ApprovalChoice::AllowOnce),
        )
        .await
        .unwrap_err();
    match &err {
        SessionError::Remote { message, failure } => {
            assert_eq!(*failure, Failure::NotFound);
            assert!(message.contains("no-such-request"), "{message}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(err.failure(), Failure::NotFound);
    // The route says it was refused by an owner, not that there is none.
    let approval = SessionInput::Approval {
        request_id: "no-such-request".into(),
        decision: ApprovalDecision::new(ApprovalChoice::AllowOnce),
    };
    let err = remote.sender().input(approval).await.unwrap_err();
    assert!(matches!(err, RouteError::Refused { .. }), "{err:?}");
    assert!(!err.is_no_owner());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_responders_says_nobody_drives_the_session() {
    let Some(nodes) = Nodes::start().await else {
        return;
    };
    let session = nodes.session().await;
    // Followed, but nobody serves its inputs yet.
    let remote = nodes.follow(session.id(), session.loaded_after()).await;
    let err = guarded("a query nobody takes", remote.submit_text("anyone?"))
        .await
        .unwrap_err();
    assert_eq!(err.failure(), Failure::Unavailable, "{err:?}");
    let query = || SessionInput::Query {
        text: "anyone?".into(),
        images: Vec::new(),
        by: None,
    };
    let err = guarded("a query nobody takes", remote.sender().input(query()))
        .await
        .unwrap_err();
    assert!(err.is_no_owner(), "{err:?}");
    let interrupt = remote.sender().input(SessionInput::Interrupt);
    let err = guarded("an interrupt nobody takes", interrupt)
        .await
        .unwrap_err();
    assert!(err.is_no_owner(), "{err:?}");

    // Served, then no longer: no responders again.
    let route = InputRoute::serve(&nodes.owner_plane, &session)
        .await
        .unwrap();
    nodes.owner_plane.sync(GUARD).await.unwrap();
    remote.interrupt().await.unwrap();
    route.stop(GUARD).await.unwrap();
    let err = guarded(
        "a query after the owner let go",
        remote.sender().input(query()),
    )
    .await
    .unwrap_err();
    assert!(err.is_no_owner(), "{err:?}");
    // The way a caller retrying one input itself reaches the owner.
    let retried = RoutedInput {
        input_uuid: uuid::Uuid::now_v7(),
        input: SessionInput::Interrupt,
    };
    let err = remote.sender().send(&retried).await.unwrap_err();
    assert!(err.is_no_owner(), "{err:?}");
    assert!(remote.is_following());
    remote.stop().await;
    assert!(!remote.is_following());
}
