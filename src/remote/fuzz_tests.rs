//! Property tests of the remote client's reading of a session's SSE
//! stream: bytes → frames (the real `sse-stream` parser, in random chunks)
//! → [`read_frame`]. Whatever arrives, nothing panics; an event is passed
//! on exactly when it is newer than the last one seen; data that is not an
//! event is reported with a reason quoting it. Valid events, served in any
//! chunking, come back as they were sent.

use super::events::{Frame, read_frame};
use agentbus_engine::protocol::{AgentMessage, EventEnvelope, SessionId, UserEvent};
use futures::StreamExt;
use proptest::prelude::*;
use serde_json::Value;

/// Every frame `bytes` holds, read after `last_seq` as the client does
/// (each event passed on raises `last_seq`).
fn read_all(bytes: &[u8], chunk: usize, mut last_seq: u64) -> Vec<Frame> {
    let chunks: Vec<Result<bytes::Bytes, std::io::Error>> = bytes
        .chunks(chunk.max(1))
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let mut frames = sse_stream::SseStream::from_bytes_stream(futures::stream::iter(chunks));
    let mut out = Vec::new();
    futures::executor::block_on(async {
        // A stream error ends the connection; the client reconnects.
        while let Some(Ok(frame)) = frames.next().await {
            let read = read_frame(frame.data.as_deref(), last_seq);
            if let Frame::Event(event) = &read {
                assert!(event.seq > last_seq, "an old event was passed on");
                last_seq = event.seq;
            }
            out.push(read);
        }
    });
    out
}

fn check(frames: &[Frame]) -> Result<(), TestCaseError> {
    for frame in frames {
        if let Frame::Unreadable(reason) = frame {
            prop_assert!(
                reason.contains(" in `"),
                "the reason quotes the data: {reason}"
            );
            prop_assert!(
                !reason.starts_with(" in `"),
                "and says what was wrong: {reason}"
            );
        }
    }
    Ok(())
}

fn envelope() -> impl Strategy<Value = EventEnvelope> {
    (
        "[a-z0-9-]{1,12}",
        1u64..1_000_000,
        proptest::option::of(any::<u64>()),
        0i64..4_000_000_000,
        "\\PC{0,40}",
    )
        .prop_map(|(id, seq, turn_id, secs, text)| EventEnvelope {
            session_id: SessionId(id),
            seq,
            turn_id,
            at: chrono::DateTime::from_timestamp(secs, 0).unwrap_or_default(),
            message: AgentMessage::User(UserEvent::new(text)),
        })
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|e| format!("id: {}\ndata: {e}\n\n", e["seq"]))
        .collect()
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        "[ -~]{0,10}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,8}", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn random_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..512),
        chunk in 1usize..64,
        last_seq in any::<u64>(),
    ) {
        check(&read_all(&bytes, chunk, last_seq))?;
    }

    #[test]
    fn events_come_back_as_sent_in_any_chunking(
        events in proptest::collection::vec(envelope(), 0..6),
        chunk in 1usize..64,
    ) {
        let json: Vec<Value> = events
            .iter()
            .map(|e| serde_json::to_value(e).unwrap_or_default())
            .collect();
        let frames = read_all(sse(&json).as_bytes(), chunk, 0);
        let mut last = 0;
        let expected: Vec<&EventEnvelope> = events
            .iter()
            .filter(|e| {
                let newer = e.seq > last;
                if newer {
                    last = e.seq;
                }
                newer
            })
            .collect();
        let got: Vec<&EventEnvelope> = frames
            .iter()
            .filter_map(|f| match f {
                Frame::Event(e) => Some(e.as_ref()),
                _ => None,
            })
            .collect();
        prop_assert_eq!(got, expected);
        prop_assert!(frames.iter().all(|f| !matches!(f, Frame::Unreadable(_))));
    }

    #[test]
    fn an_event_with_one_field_changed_is_read_or_reported(
        event in envelope(),
        field in prop_oneof![
            Just("session_id"), Just("seq"), Just("turn_id"), Just("at"), Just("type"), Just("text")
        ],
        replacement in json_value(),
        chunk in 1usize..64,
    ) {
        let mut json = serde_json::to_value(&event).unwrap_or_default();
        json[field] = replacement;
        check(&read_all(sse(&[json]).as_bytes(), chunk, 0))?;
    }
}

/// What the property checks, on the cases a reader would ask about.
#[test]
fn keep_alives_old_events_and_garbage_are_not_passed_on() {
    assert_eq!(read_frame(None, 3), Frame::Nothing);
    let event = EventEnvelope {
        session_id: SessionId("s".into()),
        seq: 3,
        turn_id: None,
        at: chrono::DateTime::from_timestamp(0, 0).unwrap_or_default(),
        message: AgentMessage::User(UserEvent::new("hi")),
    };
    let data = serde_json::to_string(&event).unwrap_or_default();
    assert_eq!(read_frame(Some(&data), 3), Frame::Nothing);
    assert_eq!(read_frame(Some(&data), 2), Frame::Event(Box::new(event)));
    let Frame::Unreadable(reason) = read_frame(Some("{\"seq\": \"x\"}"), 0) else {
        panic!("garbage read as an event");
    };
    assert!(reason.contains("in `{\"seq\": \"x\"}`"), "{reason}");
}
