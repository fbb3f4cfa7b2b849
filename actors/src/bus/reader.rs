//! A session's events for a network client, read on the client's own task.
//!
//! An SSE or WebSocket connection already has a task of its own (the
//! server's, which writes to the socket); [`ClientEvents`] lets that task
//! read the session's topic directly — no UiSink actor, no task and no
//! channel in between — and take every event that is already there at once
//! ([`ClientEvents::ready`]), so a connection writes a burst of events in
//! one go. Replay is the UiSink's: after `after_seq` from the ring, or from
//! the store when the ring no longer reaches back. A client that falls
//! behind the topic's live channel rejoins from the ring; one that falls
//! further behind than the ring reaches is cut off (its stream ends) and
//! resumes from its last seq, from the store. The AgentLoop never waits for
//! a client.

use super::feed::EventSource;
use super::{RecvError, SubscribeError, Subscription};
use crate::protocol::EventEnvelope;
use std::collections::VecDeque;
use std::sync::Arc;

/// Where a client's reading stands.
enum Phase {
    /// Subscribe after the last seq handed out (or replay from the store
    /// first).
    Subscribe,
    /// Stored events being handed out; then subscribe after `then_after`.
    Stored {
        events: VecDeque<EventEnvelope>,
        then_after: u64,
    },
    Live(Subscription<EventEnvelope>),
    /// The session closed, or the client fell out of the ring's reach.
    Ended,
}

/// One network client's events of one session, in seq order with no gap
/// and no duplicate.
pub struct ClientEvents<S: EventSource> {
    source: S,
    last_seq: u64,
    phase: Phase,
}

impl<S: EventSource> ClientEvents<S> {
    /// Events after `after_seq` (0: everything the ring holds).
    pub fn new(source: S, after_seq: u64) -> Self {
        ClientEvents {
            source,
            last_seq: after_seq,
            phase: Phase::Subscribe,
        }
    }

    /// The next event; `None` once the session closed or the client fell
    /// further behind than the ring reaches (it resumes from its last
    /// seq). Cancel-safe: dropping the future loses no event.
    pub async fn next(&mut self) -> Option<Arc<EventEnvelope>> {
        loop {
            match &mut self.phase {
                Phase::Live(subscription) => match subscription.recv().await {
                    Ok(event) => {
                        self.last_seq = event.seq;
                        return Some(event);
                    }
                    Err(RecvError::Lagged { last_seq }) => {
                        tracing::debug!(last_seq, "client fell behind the live channel");
                        self.last_seq = last_seq;
                        self.phase = match self.source.subscribe(last_seq) {
                            Ok(again) => Phase::Live(again),
                            // Out of the ring's reach: cut off.
                            Err(SubscribeError::NotInRing { .. }) => {
                                crate::metrics::get().stream_clients_cut_off.inc();
                                Phase::Ended
                            }
                        };
                    }
                    Err(RecvError::Closed) => self.phase = Phase::Ended,
                },
                Phase::Subscribe => match self.source.subscribe(self.last_seq) {
                    Ok(subscription) => self.phase = Phase::Live(subscription),
                    Err(SubscribeError::NotInRing { oldest, .. }) => {
                        let then_after = oldest - 1;
                        match self
                            .source
                            .stored_events(self.last_seq, Some(then_after))
                            .await
                        {
                            Ok(stored) => {
                                self.phase = Phase::Stored {
                                    events: stored.into(),
                                    then_after,
                                }
                            }
                            Err(e) => {
                                tracing::warn!(
                                    session = %self.source.session_id(),
                                    last_seq = self.last_seq,
                                    resumed_at = oldest,
                                    "replay from the store failed, the client misses events: {e}"
                                );
                                self.last_seq = then_after;
                            }
                        }
                    }
                },
                Phase::Stored { events, then_after } => match events.pop_front() {
                    Some(event) => {
                        self.last_seq = event.seq;
                        return Some(Arc::new(event));
                    }
                    None => {
                        self.last_seq = *then_after;
                        self.phase = Phase::Subscribe;
                    }
                },
                Phase::Ended => return None,
            }
        }
    }

    /// The next event if it is already here (never waits): a connection
    /// takes these after [`next`](Self::next) to write a burst at once.
    /// `None` says nothing more is ready (or the stream ends: the next
    /// [`next`](Self::next) says so).
    pub fn ready(&mut self) -> Option<Arc<EventEnvelope>> {
        match &mut self.phase {
            Phase::Live(subscription) => {
                let event = subscription.try_recv()?;
                self.last_seq = event.seq;
                Some(event)
            }
            Phase::Stored { events, .. } => {
                let event = events.pop_front()?;
                self.last_seq = event.seq;
                Some(Arc::new(event))
            }
            Phase::Subscribe | Phase::Ended => None,
        }
    }

    /// The seq of the last event handed out.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bus::SessionTopic;
    use crate::protocol::{AgentMessage, ErrorEvent, ErrorKind, SessionId};
    use crate::store::StoreError;

    /// A session's topic, and the events "stored" (every event published,
    /// as the store would hold the persisted ones).
    #[derive(Clone)]
    struct Source {
        id: SessionId,
        topic: Arc<SessionTopic>,
        stored: Arc<std::sync::Mutex<Vec<EventEnvelope>>>,
    }

    impl Source {
        fn new(ring: usize, channel: usize) -> Source {
            Source {
                id: SessionId::new(),
                topic: Arc::new(SessionTopic::with_capacity(0, ring, channel)),
                stored: Arc::default(),
            }
        }

        fn publish(&self, count: usize) {
            for _ in 0..count {
                let seq = self.topic.last_seq() + 1;
                let event = EventEnvelope {
                    session_id: self.id.clone(),
                    seq,
                    turn_id: None,
                    at: chrono::Utc::now(),
                    message: AgentMessage::Error(ErrorEvent {
                        kind: ErrorKind::Internal,
                        message: format!("event {seq}"),
                    }),
                };
                self.stored.lock().unwrap().push(event.clone());
                self.topic.publish(Arc::new(event)).unwrap();
            }
        }
    }

    #[async_trait::async_trait]
    impl EventSource for Source {
        fn session_id(&self) -> &SessionId {
            &self.id
        }

        fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError> {
            self.topic.subscribe(after_seq)
        }

        async fn stored_events(
            &self,
            after_seq: u64,
            up_to: Option<u64>,
        ) -> Result<Vec<EventEnvelope>, StoreError> {
            Ok(self
                .stored
                .lock()
                .unwrap()
                .iter()
                .filter(|e| e.seq > after_seq && up_to.is_none_or(|up_to| e.seq <= up_to))
                .cloned()
                .collect())
        }
    }

    async fn take(events: &mut ClientEvents<Source>, n: usize) -> Vec<u64> {
        let mut seqs = Vec::new();
        for _ in 0..n {
            seqs.push(events.next().await.expect("an event").seq);
        }
        seqs
    }

    fn ready(events: &mut ClientEvents<Source>) -> Vec<u64> {
        std::iter::from_fn(|| events.ready())
            .map(|e| e.seq)
            .collect()
    }

    #[tokio::test]
    async fn a_client_replays_then_follows_live_taking_a_burst_at_once() {
        let source = Source::new(100, 16);
        source.publish(3);
        let mut events = ClientEvents::new(source.clone(), 1);
        assert_eq!(take(&mut events, 1).await, [2]);
        assert_eq!(ready(&mut events), [3], "the rest of the replay is ready");
        source.publish(4);
        assert_eq!(take(&mut events, 1).await, [4]);
        assert_eq!(ready(&mut events), [5, 6, 7], "the burst, without waiting");
        assert_eq!(events.last_seq(), 7);
    }

    #[tokio::test]
    async fn a_client_from_before_the_ring_gets_the_stored_events_first() {
        let source = Source::new(3, 16);
        source.publish(10); // the ring keeps 8..=10
        let mut events = ClientEvents::new(source.clone(), 2);
        assert_eq!(take(&mut events, 8).await, (3..=10).collect::<Vec<_>>());
        source.publish(1);
        assert_eq!(take(&mut events, 1).await, [11]);
    }

    #[tokio::test]
    async fn a_lagging_client_rejoins_from_the_ring_and_is_cut_off_beyond_it() {
        let source = Source::new(8, 2);
        let mut events = ClientEvents::new(source.clone(), 0);
        source.publish(1);
        assert_eq!(take(&mut events, 1).await, [1]);
        source.publish(5); // past the channel, within the ring
        assert_eq!(
            take(&mut events, 5).await,
            [2, 3, 4, 5, 6],
            "rejoined, nothing lost"
        );
        source.publish(20); // past the ring too
        assert!(events.next().await.is_none(), "cut off");
        assert_eq!(events.last_seq(), 6, "it resumes after its last seq");
        assert!(events.next().await.is_none(), "and stays ended");
    }

    #[tokio::test]
    async fn a_client_of_a_mirror_reads_across_a_new_owners_jump() {
        let source = Source::new(8, 8);
        let source = Source {
            topic: Arc::new(SessionTopic::mirror(0)),
            ..source
        };
        source.publish(2);
        let mut events = ClientEvents::new(source.clone(), 0);
        assert_eq!(take(&mut events, 2).await, [1, 2]);
        // A new owner continues above its predecessor's reservation.
        let jumped = EventEnvelope {
            seq: 4098,
            ..(*source.topic.recent(1)[0]).clone()
        };
        source.stored.lock().unwrap().push(jumped.clone());
        source.topic.publish(Arc::new(jumped)).unwrap();
        source.publish(1);
        assert_eq!(take(&mut events, 2).await, [4098, 4099], "not cut off");
        // A client resuming from before the jump replays across it.
        let mut resumed = ClientEvents::new(source.clone(), 1);
        assert_eq!(take(&mut resumed, 3).await, [2, 4098, 4099]);
    }

    #[tokio::test]
    async fn a_client_ends_when_the_session_closes() {
        let source = Source::new(8, 8);
        let mut events = ClientEvents::new(source.clone(), 0);
        source.publish(2);
        source.topic.close();
        assert_eq!(take(&mut events, 2).await, [1, 2]);
        assert!(events.next().await.is_none());
    }
}
