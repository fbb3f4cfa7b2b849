//! Transient events kept for replay in less memory: what a topic's ring
//! holds of a finished reply's streamed deltas.
//!
//! Every delta a session streams stays replayable until the next turn, so a
//! client cut off for lagging misses none. As events, one reply's 50 deltas
//! took 21 KiB a session: an `Arc<EventEnvelope>` of 288 bytes, its text
//! and its own copy of the session id, each. Once the turn's `result` is out
//! they are only ever replayed, so the ring keeps each run of them as a
//! [`PackedDeltas`]: their seqs, turns and times side by side, their deltas
//! as one string of JSON, the session id once. A subscriber reaching back
//! into the run gets the events made again, equal to those published.
//!
//! This must never change what a subscriber receives, only what the ring
//! holds while nobody asks.

use crate::protocol::{AgentMessage, EventEnvelope, SessionId, StreamDelta, StreamEvent};
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// A run of consecutive transient events in the form its kind chose
/// (`Sequenced::pack`).
pub struct Packed<E> {
    pub(super) first: u64,
    pub(super) last: u64,
    /// The run's events after the given seq, made again.
    pub(super) unpack: Box<dyn Fn(u64) -> Vec<Arc<E>> + Send + Sync>,
}

impl<E> Packed<E> {
    /// A run from seq `first` to `last`, which `unpack` makes again (those
    /// after the seq it is given).
    pub fn new(
        first: u64,
        last: u64,
        unpack: impl Fn(u64) -> Vec<Arc<E>> + Send + Sync + 'static,
    ) -> Self {
        Packed {
            first,
            last,
            unpack: Box::new(unpack),
        }
    }
}

/// A session's streamed deltas, packed (see the module's doc).
pub struct PackedDeltas {
    session_id: SessionId,
    deltas: Box<[PackedDelta]>,
    /// Each delta's JSON, one after the other.
    json: Box<str>,
}

/// One delta of a [`PackedDeltas`] but its JSON.
struct PackedDelta {
    seq: u64,
    turn_id: Option<u64>,
    at: DateTime<Utc>,
    /// Where its JSON ends in the run's.
    end: u32,
}

impl PackedDeltas {
    /// `run` packed, when it is all `stream_event`s of one session (what a
    /// session's ring holds between two persisted events).
    pub fn pack(run: &[Arc<EventEnvelope>]) -> Option<Packed<EventEnvelope>> {
        let first = run.first()?;
        let mut json = Vec::new();
        let mut deltas = Vec::with_capacity(run.len());
        for event in run {
            let AgentMessage::StreamEvent(stream) = &event.message else {
                return None;
            };
            if event.session_id != first.session_id {
                return None;
            }
            serde_json::to_writer(&mut json, &stream.event).ok()?;
            deltas.push(PackedDelta {
                seq: event.seq,
                turn_id: event.turn_id,
                at: event.at,
                end: u32::try_from(json.len()).ok()?,
            });
        }
        let packed = PackedDeltas {
            session_id: first.session_id.clone(),
            deltas: deltas.into(),
            json: String::from_utf8(json).ok()?.into(),
        };
        let last = run.last().map_or(first.seq, |e| e.seq);
        Some(Packed::new(first.seq, last, move |after_seq| {
            packed.unpack(after_seq)
        }))
    }

    /// The deltas after `after_seq`, as the events they were.
    fn unpack(&self, after_seq: u64) -> Vec<Arc<EventEnvelope>> {
        let mut start = 0;
        let mut events = Vec::new();
        for delta in self.deltas.iter() {
            let end = delta.end as usize;
            let text = self.json.get(start..end).unwrap_or_default();
            start = end;
            if delta.seq <= after_seq {
                continue;
            }
            match serde_json::from_str::<StreamDelta>(text) {
                Ok(event) => events.push(Arc::new(EventEnvelope {
                    session_id: self.session_id.clone(),
                    seq: delta.seq,
                    turn_id: delta.turn_id,
                    at: delta.at,
                    message: AgentMessage::StreamEvent(StreamEvent { event }),
                })),
                // Cannot happen (the JSON is serde_json's own, of this
                // type); the subscriber sees a gap, as a delta not stored.
                Err(e) => tracing::error!(
                    session = %self.session_id,
                    seq = delta.seq,
                    "a packed delta did not read back: {e}"
                ),
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::BlockKind;

    fn delta(seq: u64, event: StreamDelta) -> Arc<EventEnvelope> {
        Arc::new(EventEnvelope {
            session_id: SessionId("s-1".into()),
            seq,
            turn_id: Some(7),
            at: DateTime::from_timestamp_micros(1_765_000_000_123_456 + seq as i64)
                .unwrap_or_default(),
            message: AgentMessage::StreamEvent(StreamEvent { event }),
        })
    }

    /// Every kind of delta, with text JSON must escape.
    fn every_kind() -> Vec<Arc<EventEnvelope>> {
        let deltas = [
            StreamDelta::BlockStart {
                index: 0,
                block: BlockKind::Thinking,
            },
            StreamDelta::ThinkingDelta {
                index: 0,
                text: "hmm \"quoted\"\n".into(),
            },
            StreamDelta::BlockStop { index: 0 },
            StreamDelta::BlockStart {
                index: 1,
                block: BlockKind::ToolUse {
                    id: "call_1".into(),
                    name: "read_file".into(),
                },
            },
            StreamDelta::ToolInputDelta {
                index: 1,
                partial_json: "{\"path\": \"a".into(),
            },
            StreamDelta::Discard {
                reason: "retrying".into(),
            },
            StreamDelta::TextDelta {
                index: 0,
                text: "héllo ✓ \u{1F600}".into(),
            },
        ];
        deltas
            .into_iter()
            .zip(10..)
            .map(|(event, seq)| delta(seq, event))
            .collect()
    }

    #[test]
    fn a_packed_run_unpacks_to_the_events_it_was_made_of() {
        let run = every_kind();
        let packed = PackedDeltas::pack(&run).expect("stream events of one session pack");
        assert_eq!((packed.first, packed.last), (10, 16));
        let all: Vec<EventEnvelope> = (packed.unpack)(0).iter().map(|e| (**e).clone()).collect();
        let expected: Vec<EventEnvelope> = run.iter().map(|e| (**e).clone()).collect();
        assert_eq!(all, expected);
        let tail: Vec<u64> = (packed.unpack)(13).iter().map(|e| e.seq).collect();
        assert_eq!(tail, [14, 15, 16], "only those after the seq asked for");
        assert!((packed.unpack)(16).is_empty());
    }

    #[test]
    fn a_run_with_anything_but_deltas_is_kept_as_it_is() {
        let mut run = every_kind();
        let mut other = (*run[2]).clone();
        other.message = AgentMessage::Error(crate::protocol::ErrorEvent {
            kind: crate::protocol::ErrorKind::Internal,
            message: "not a delta".into(),
        });
        run[2] = Arc::new(other);
        assert!(PackedDeltas::pack(&run).is_none());
        assert!(PackedDeltas::pack(&[]).is_none());
    }
}
