//! Reading a session's topic in seq order: one reader, with a policy for
//! the events its subscription cannot give it.
//!
//! Every reader of a session's events — a front end's UiSink
//! ([`feed`](super::feed)), an SSE or WebSocket connection, the cluster's
//! relay — wants the same thing: every event after a seq, in order, with
//! no duplicate, without ever making the AgentLoop wait. A subscription
//! gives what the topic's ring still holds, then live events; a reader
//! that falls behind the live channel (`Lagged`) subscribes again after
//! its last seq. What differs is what a reader does about events the ring
//! no longer holds, its [`Gaps`] policy: read them from the store, be cut
//! off (a network client resumes from its last seq), or go on without
//! them (the relay: its followers refill from the store themselves).
//!
//! [`TopicReader::next`] waits for the next event; [`TopicReader::ready`]
//! takes one that is already here, so a connection writes a burst in one
//! go. Cancel-safe: dropping `next`'s future loses no event. Never
//! publishes, never sends inputs, and reads the store only as its policy
//! says.

use super::source::EventSource;
use super::{RecvError, SubscribeError, Subscription};
use crate::protocol::EventEnvelope;
use std::collections::VecDeque;
use std::sync::Arc;

/// What a reader does about events its subscription cannot give it (the
/// ring no longer holds them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gaps {
    /// Read them from the store, at the start and whenever the reader
    /// falls further behind than the ring reaches: nothing is skipped (a
    /// front end of this process, through the UiSink).
    Refill,
    /// Read them from the store at the start; a reader that later falls
    /// further behind than the ring reaches is cut off (its stream ends)
    /// and resumes from its last seq (a network client).
    CutOff,
    /// Never read the store: go on from the oldest event the ring holds
    /// (the cluster's relay; its followers refill from the store).
    Skip,
}

/// Events a [`Gaps::Refill`] reader could not replay: the store failed.
/// Those after `last_seq` and before `resumed_at` will not come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Missed {
    pub last_seq: u64,
    pub resumed_at: u64,
}

/// Where a reader's reading stands.
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
    /// The session closed, or the reader was cut off.
    Ended,
}

/// One reader's events of one session, in seq order with no duplicate
/// (and no gap but what its [`Gaps`] policy allows).
pub struct TopicReader<S: EventSource> {
    source: S,
    gaps: Gaps,
    last_seq: u64,
    phase: Phase,
    /// Times it fell behind the live channel and subscribed again.
    lagged: u64,
    missed: Option<Missed>,
}

impl<S: EventSource> TopicReader<S> {
    /// Events after `after_seq` (0: everything the ring holds).
    pub fn new(source: S, after_seq: u64, gaps: Gaps) -> Self {
        TopicReader {
            source,
            gaps,
            last_seq: after_seq,
            phase: Phase::Subscribe,
            lagged: 0,
            missed: None,
        }
    }

    /// Subscribe now rather than on the first [`next`](Self::next): every
    /// event published once this returns is read. (Where the ring no
    /// longer reaches back and the policy reads the store, that waits for
    /// `next`.)
    pub fn subscribe_now(&mut self) {
        // Twice at most: a [`Gaps::Skip`] reader's second try is from the
        // ring's oldest event.
        for _ in 0..2 {
            if !matches!(self.phase, Phase::Subscribe) || self.subscribe().is_some() {
                return;
            }
        }
    }

    /// The next event; `None` once the session closed or the reader was
    /// cut off (it resumes from its last seq). Cancel-safe.
    pub async fn next(&mut self) -> Option<Arc<EventEnvelope>> {
        loop {
            match &mut self.phase {
                Phase::Live(subscription) => match subscription.recv().await {
                    Ok(event) => {
                        self.last_seq = event.seq;
                        return Some(event);
                    }
                    Err(RecvError::Lagged { last_seq }) => {
                        tracing::debug!(last_seq, "a reader fell behind the live channel");
                        self.lagged += 1;
                        self.last_seq = last_seq;
                        self.phase = match self.gaps {
                            // From the ring, or not at all.
                            Gaps::CutOff => match self.source.subscribe(last_seq) {
                                Ok(again) => Phase::Live(again),
                                Err(SubscribeError::NotInRing { .. }) => {
                                    crate::metrics::get().stream_clients_cut_off.inc();
                                    Phase::Ended
                                }
                            },
                            // Subscribe again: what the ring lost is the
                            // policy's (from the store, or skipped).
                            Gaps::Refill | Gaps::Skip => Phase::Subscribe,
                        };
                    }
                    Err(RecvError::Closed) => self.phase = Phase::Ended,
                },
                Phase::Subscribe => {
                    if let Some(oldest) = self.subscribe() {
                        self.replay(oldest).await;
                    }
                }
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

    /// Times the reader fell behind the live channel and subscribed again.
    pub fn lagged(&self) -> u64 {
        self.lagged
    }

    /// The events a [`Gaps::Refill`] reader could not replay since this was
    /// last asked, if any (once: taken).
    pub fn take_missed(&mut self) -> Option<Missed> {
        self.missed.take()
    }

    /// Subscribe after the last seq. Returns the ring's oldest seq when it
    /// no longer reaches back and the store must fill in first; a
    /// [`Gaps::Skip`] reader goes on from there instead.
    fn subscribe(&mut self) -> Option<u64> {
        match self.source.subscribe(self.last_seq) {
            Ok(subscription) => {
                self.phase = Phase::Live(subscription);
                None
            }
            Err(SubscribeError::NotInRing { oldest, .. }) if self.gaps == Gaps::Skip => {
                tracing::debug!(
                    session = %self.source.session_id(),
                    after = self.last_seq,
                    oldest,
                    "events no longer in memory are skipped"
                );
                self.last_seq = oldest.saturating_sub(1);
                None
            }
            Err(SubscribeError::NotInRing { oldest, .. }) => Some(oldest),
        }
    }

    /// The stored events after the last seq and before `oldest`, the
    /// ring's oldest; if the store cannot give them, they are missed.
    async fn replay(&mut self, oldest: u64) {
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
                    "replay from the store failed, the reader misses events: {e}"
                );
                self.missed = Some(Missed {
                    last_seq: self.last_seq,
                    resumed_at: oldest,
                });
                self.last_seq = then_after;
            }
        }
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
        /// Reads of the store so far; when `store_fails`, each is refused.
        store_reads: Arc<std::sync::atomic::AtomicUsize>,
        store_fails: bool,
    }

    impl Source {
        fn new(ring: usize, channel: usize) -> Source {
            Source {
                id: SessionId::new(),
                topic: Arc::new(SessionTopic::with_capacity(0, ring, channel)),
                stored: Arc::default(),
                store_reads: Arc::default(),
                store_fails: false,
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
            self.store_reads
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if self.store_fails {
                return Err(StoreError::Read {
                    path: "sessions.db".into(),
                    source: std::io::Error::other("the disk is gone"),
                });
            }
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

    async fn take(events: &mut TopicReader<Source>, n: usize) -> Vec<u64> {
        let mut seqs = Vec::new();
        for _ in 0..n {
            seqs.push(events.next().await.expect("an event").seq);
        }
        seqs
    }

    fn ready(events: &mut TopicReader<Source>) -> Vec<u64> {
        std::iter::from_fn(|| events.ready())
            .map(|e| e.seq)
            .collect()
    }

    #[tokio::test]
    async fn a_client_replays_then_follows_live_taking_a_burst_at_once() {
        let source = Source::new(100, 16);
        source.publish(3);
        let mut events = TopicReader::new(source.clone(), 1, Gaps::CutOff);
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
        let mut events = TopicReader::new(source.clone(), 2, Gaps::CutOff);
        assert_eq!(take(&mut events, 8).await, (3..=10).collect::<Vec<_>>());
        source.publish(1);
        assert_eq!(take(&mut events, 1).await, [11]);
    }

    #[tokio::test]
    async fn a_lagging_client_rejoins_from_the_ring_and_is_cut_off_beyond_it() {
        let source = Source::new(8, 2);
        let mut events = TopicReader::new(source.clone(), 0, Gaps::CutOff);
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
        let mut events = TopicReader::new(source.clone(), 0, Gaps::CutOff);
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
        let mut resumed = TopicReader::new(source.clone(), 1, Gaps::CutOff);
        assert_eq!(take(&mut resumed, 3).await, [2, 4098, 4099]);
    }

    #[tokio::test]
    async fn a_client_ends_when_the_session_closes() {
        let source = Source::new(8, 8);
        let mut events = TopicReader::new(source.clone(), 0, Gaps::CutOff);
        source.publish(2);
        source.topic.close();
        assert_eq!(take(&mut events, 2).await, [1, 2]);
        assert!(events.next().await.is_none());
    }

    #[tokio::test]
    async fn a_refilling_reader_behind_the_ring_reads_the_store_and_misses_nothing() {
        let source = Source::new(4, 2);
        let mut events = TopicReader::new(source.clone(), 0, Gaps::Refill);
        source.publish(1);
        assert_eq!(take(&mut events, 1).await, [1]);
        source.publish(20); // past the channel and the ring
        assert_eq!(take(&mut events, 20).await, (2..=21).collect::<Vec<_>>());
        assert_eq!(events.lagged(), 1);
        assert!(events.take_missed().is_none());
    }

    #[tokio::test]
    async fn a_skipping_reader_goes_on_from_the_ring_and_never_reads_the_store() {
        let source = Source::new(4, 2);
        let mut events = TopicReader::new(source.clone(), 0, Gaps::Skip);
        events.subscribe_now();
        source.publish(1);
        assert_eq!(take(&mut events, 1).await, [1]);
        source.publish(20); // the ring keeps 18..=21
        assert_eq!(take(&mut events, 4).await, [18, 19, 20, 21]);
        assert_eq!(events.lagged(), 1);
        // From before the ring at the start, too.
        let mut late = TopicReader::new(source.clone(), 2, Gaps::Skip);
        late.subscribe_now();
        source.publish(1);
        assert_eq!(take(&mut late, 5).await, [18, 19, 20, 21, 22]);
        let reads = source
            .store_reads
            .load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(reads, 0, "the store is never read");
    }

    #[tokio::test]
    async fn a_refilling_reader_whose_store_fails_is_told_what_it_missed() {
        let source = Source {
            store_fails: true,
            ..Source::new(3, 16)
        };
        source.publish(10); // the ring keeps 8..=10
        let mut events = TopicReader::new(source.clone(), 2, Gaps::Refill);
        assert_eq!(take(&mut events, 1).await, [8]);
        assert_eq!(
            events.take_missed(),
            Some(Missed {
                last_seq: 2,
                resumed_at: 8
            })
        );
        assert_eq!(events.take_missed(), None, "said once");
        assert_eq!(take(&mut events, 2).await, [9, 10]);
    }
}
