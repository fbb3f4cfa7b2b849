//! A topic: one session's events (or the lifecycle events) in `seq` order.
//!
//! A [`Topic`] is a thin layer over tokio's broadcast channel that adds what
//! the broadcast lacks: sequence numbers checked on publish, a replay ring of
//! recent events, and subscribe-with-replay ("everything after seq N") that
//! can neither miss nor duplicate an event — the ring snapshot and the live
//! receiver are taken under the same lock that publishing holds.
//!
//! The producer never blocks: a subscriber that falls behind the channel's
//! capacity gets [`RecvError::Lagged`] with the last seq it saw and rejoins
//! with [`Topic::subscribe`] (from the ring, or — when the ring no longer
//! reaches back — from the store). Never hold the lock across an await.
//!
//! A *mirror* ([`Topic::mirror`]) is the topic of a session another node
//! drives (`cluster/remote_session.rs`): its seqs only go up, with gaps —
//! deltas lost on the network, a new owner starting above the previous
//! one's seq reservation — but never a persisted event missing (the
//! follower fills those from the store before it publishes past them). So
//! a mirror takes any higher seq, and its subscribers take a jump as it
//! comes instead of reporting it as a lag.

use super::packed::{Packed, PackedDeltas};
use crate::protocol::EventEnvelope;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

/// Something with a place in a topic's sequence.
pub trait Sequenced: Send + Sync + Sized + 'static {
    fn seq(&self) -> u64;

    /// Replayed from the ring only until an event that
    /// [`starts_anew`](Self::starts_anew) (a streamed delta: its whole
    /// message carries its text).
    fn is_transient(&self) -> bool {
        false
    }

    /// The transient events before this one leave the ring.
    fn starts_anew(&self) -> bool {
        false
    }

    /// The transient events before this one are complete (their turn
    /// ended): from now on they are only ever replayed, so the ring keeps
    /// each run of them [packed](Self::pack).
    fn closes_transients(&self) -> bool {
        false
    }

    /// A run of consecutive transient events in a smaller form, unpacked
    /// only for a subscriber that reaches back into it; `None` keeps them
    /// as they are.
    fn pack(_run: &[Arc<Self>]) -> Option<Packed<Self>> {
        None
    }
}

/// A session's streamed deltas are replayed until the next turn's `user`
/// event: a client reconnecting in the middle of the latest reply, or cut
/// off for lagging while it ended, gets every delta it missed; one
/// replaying older turns gets their whole messages (as from the store). A
/// busy session's ring then holds one reply's deltas, not a thousand — and
/// once its turn's `result` is out, packed ([`PackedDeltas`]): they were 50
/// of the 68 events a session of the serve bench kept after its turns, a
/// sixth of its memory (README, "Per-session memory").
impl Sequenced for EventEnvelope {
    fn seq(&self) -> u64 {
        self.seq
    }

    fn is_transient(&self) -> bool {
        !self.message.is_persisted()
    }

    fn starts_anew(&self) -> bool {
        matches!(self.message, crate::protocol::AgentMessage::User(_))
    }

    fn closes_transients(&self) -> bool {
        matches!(self.message, crate::protocol::AgentMessage::Result(_))
    }

    fn pack(run: &[Arc<Self>]) -> Option<Packed<Self>> {
        PackedDeltas::pack(run)
    }
}

/// A session's event topic.
pub type SessionTopic = Topic<EventEnvelope>;

/// Default number of recent events kept for replay (older persisted events
/// come from the store).
pub const DEFAULT_RING_CAPACITY: usize = 1024;
/// Default number of events a live subscriber may fall behind before it lags
/// (and rejoins from the ring, which reaches back as far as before). The
/// channel's slots are allocated up front, 32 bytes each, so every watched
/// session pays for them (256 slots were 8.3 KiB of a busy session's
/// 194 KiB of heap: README, "Per-session memory"). A slot holds its event
/// only until every receiver has taken it.
pub const DEFAULT_CHANNEL_CAPACITY: usize = 64;

/// Why a subscription could not be made.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SubscribeError {
    /// The ring no longer holds every event after `after_seq`; read
    /// `after_seq + 1 ..= oldest - 1` from the store first.
    #[error("events after seq {after_seq} are no longer in memory (oldest kept is {oldest})")]
    NotInRing { after_seq: u64, oldest: u64 },
}

/// Why a subscription ended.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecvError {
    /// The subscriber fell behind and was cut off; rejoin after `last_seq`.
    #[error("subscriber fell behind after seq {last_seq}")]
    Lagged { last_seq: u64 },
    /// The topic is gone (its session closed).
    #[error("the topic is closed")]
    Closed,
}

struct Inner<E> {
    ring: VecDeque<Kept<E>>,
    ring_capacity: usize,
    last_seq: u64,
    /// Made when the first subscriber comes: a session nobody watches does
    /// not pay for the channel's slots.
    sender: Option<broadcast::Sender<Arc<E>>>,
    channel_capacity: usize,
    /// Its publisher is gone: subscriptions end once they have everything.
    closed: bool,
    /// A mirror: seqs only go up, gaps hold no persisted event.
    gaps: bool,
    /// Subscriptions that do not count as watchers (see
    /// [`Topic::subscribe_unwatched`]), still open.
    unwatched: Arc<AtomicUsize>,
}

/// One place of a topic's ring: an event, or a packed run of them.
enum Kept<E> {
    One(Arc<E>),
    /// Boxed: a place of the ring stays two words.
    Packed(Box<Packed<E>>),
}

impl<E: Sequenced> Kept<E> {
    fn first_seq(&self) -> u64 {
        match self {
            Kept::One(event) => event.seq(),
            Kept::Packed(run) => run.first,
        }
    }

    fn last_seq(&self) -> u64 {
        match self {
            Kept::One(event) => event.seq(),
            Kept::Packed(run) => run.last,
        }
    }

    /// A packed run holds transient events only.
    fn is_transient(&self) -> bool {
        match self {
            Kept::One(event) => event.is_transient(),
            Kept::Packed(_) => true,
        }
    }

    /// Its events after `after_seq` onto the end of `into`.
    fn unpack_after(&self, after_seq: u64, into: &mut impl Extend<Arc<E>>) {
        match self {
            Kept::One(event) => into.extend((event.seq() > after_seq).then(|| event.clone())),
            Kept::Packed(run) => into.extend((run.unpack)(after_seq)),
        }
    }
}

impl<E: Sequenced> Inner<E> {
    /// Record `event` (its seq is next) in the ring and send it live.
    fn push(&mut self, event: Arc<E>) {
        self.last_seq = event.seq();
        if event.starts_anew() {
            self.ring.retain(|e| !e.is_transient());
        }
        if event.closes_transients() {
            self.pack_transients();
        }
        if self.ring.len() == self.ring_capacity {
            self.ring.pop_front();
        }
        self.ring.push_back(Kept::One(event.clone()));
        if let Some(sender) = &self.sender {
            // No receivers is fine: nobody is listening right now.
            let _ = sender.send(event);
        }
    }

    /// Each run of consecutive transient events in the ring, packed. The
    /// ring is made anew, as long as what it holds (its room grows again
    /// with the next turn's events).
    fn pack_transients(&mut self) {
        let mut ring = VecDeque::with_capacity(self.ring.len() + 1);
        let mut run = Vec::new();
        for kept in self.ring.drain(..) {
            match kept {
                Kept::One(event) if event.is_transient() => run.push(event),
                other => {
                    pack_run(&mut run, &mut ring);
                    ring.push_back(other);
                }
            }
        }
        pack_run(&mut run, &mut ring);
        self.ring = ring;
    }

    /// The events after `after_seq` that the ring holds, oldest first.
    fn kept_after(&self, after_seq: u64) -> VecDeque<Arc<E>> {
        let mut events = VecDeque::new();
        for kept in self.ring.iter().filter(|k| k.last_seq() > after_seq) {
            kept.unpack_after(after_seq, &mut events);
        }
        events
    }
}

/// `run` onto the end of `ring`, packed where its kind packs, and emptied.
fn pack_run<E: Sequenced>(run: &mut Vec<Arc<E>>, ring: &mut VecDeque<Kept<E>>) {
    if run.is_empty() {
        return;
    }
    match E::pack(run) {
        Some(packed) => {
            ring.push_back(Kept::Packed(Box::new(packed)));
            run.clear();
        }
        None => ring.extend(run.drain(..).map(Kept::One)),
    }
}

/// A seq-ordered broadcast with replay.
pub struct Topic<E: Sequenced> {
    inner: Mutex<Inner<E>>,
}

impl<E: Sequenced> Topic<E> {
    /// A topic whose next event will have seq `last_seq + 1`.
    pub fn new(last_seq: u64) -> Self {
        Self::with_capacity(last_seq, DEFAULT_RING_CAPACITY, DEFAULT_CHANNEL_CAPACITY)
    }

    pub fn with_capacity(last_seq: u64, ring_capacity: usize, channel_capacity: usize) -> Self {
        Topic {
            inner: Mutex::new(Inner {
                ring: VecDeque::new(),
                ring_capacity: ring_capacity.max(1),
                last_seq,
                sender: None,
                channel_capacity: channel_capacity.max(1),
                closed: false,
                gaps: false,
                unwatched: Arc::default(),
            }),
        }
    }

    /// A mirror of a session driven elsewhere, whose next event will have a
    /// seq above `last_seq`: it takes any higher seq ([`publish`](Self::publish)),
    /// and its subscribers take the jumps (see the module's doc). Only for a
    /// publisher that never skips a persisted event.
    pub fn mirror(last_seq: u64) -> Self {
        let topic = Self::new(last_seq);
        topic.lock().gaps = true;
        topic
    }

    fn lock(&self) -> MutexGuard<'_, Inner<E>> {
        // A panic while holding this lock cannot leave the ring inconsistent
        // (every mutation is a single push/pop), so a poisoned lock is usable.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The seq of the last published event (0 before any).
    pub fn last_seq(&self) -> u64 {
        self.lock().last_seq
    }

    /// Publish the next event. Its seq must be exactly `last_seq + 1` (on a
    /// [`mirror`](Self::mirror): above `last_seq`); an out-of-order event is
    /// refused (returned) so no subscriber sees a gap.
    pub fn publish(&self, event: Arc<E>) -> Result<(), Arc<E>> {
        let mut inner = self.lock();
        let next = if inner.gaps {
            event.seq() > inner.last_seq
        } else {
            event.seq() == inner.last_seq + 1
        };
        if !next {
            return Err(event);
        }
        inner.push(event);
        Ok(())
    }

    /// Publish an event made for the next seq (for topics with several
    /// publishers: the seq is taken under the lock).
    pub fn publish_next(&self, make: impl FnOnce(u64) -> E) {
        let mut inner = self.lock();
        let event = Arc::new(make(inner.last_seq + 1));
        inner.push(event);
    }

    /// Every event after `after_seq` (replayed from the ring), then live ones.
    pub fn subscribe(&self, after_seq: u64) -> Result<Subscription<E>, SubscribeError> {
        self.subscribe_counted(after_seq, false)
    }

    /// As [`subscribe`](Self::subscribe), but not counted in
    /// [`subscriber_count`](Self::subscriber_count): for a session's own
    /// services (the cluster's relay), which must not keep a session nobody
    /// watches from being unloaded.
    pub fn subscribe_unwatched(&self, after_seq: u64) -> Result<Subscription<E>, SubscribeError> {
        self.subscribe_counted(after_seq, true)
    }

    fn subscribe_counted(
        &self,
        after_seq: u64,
        unwatched: bool,
    ) -> Result<Subscription<E>, SubscribeError> {
        let mut inner = self.lock();
        let capacity = inner.channel_capacity;
        let receiver = if inner.closed {
            // Nothing live will come: a channel already without sender.
            broadcast::channel(1).1
        } else {
            inner
                .sender
                .get_or_insert_with(|| broadcast::channel(capacity).0)
                .subscribe()
        };
        let oldest = inner
            .ring
            .front()
            .map(|e| e.first_seq())
            .unwrap_or(inner.last_seq + 1);
        if after_seq + 1 < oldest && after_seq < inner.last_seq {
            return Err(SubscribeError::NotInRing { after_seq, oldest });
        }
        let backlog = inner.kept_after(after_seq);
        let unwatched = unwatched.then(|| Unwatched::new(&inner.unwatched));
        Ok(Subscription {
            backlog,
            receiver,
            last_seq: after_seq,
            gaps: inner.gaps,
            _unwatched: unwatched,
        })
    }

    /// No more events will be published (the session stopped): every
    /// subscription ends after the events published so far, instead of
    /// waiting for ones that will never come.
    pub fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        inner.sender = None;
    }

    /// How many subscribers are listening now (those of
    /// [`subscribe_unwatched`](Self::subscribe_unwatched) left out).
    pub fn subscriber_count(&self) -> usize {
        let inner = self.lock();
        let all = inner.sender.as_ref().map_or(0, |s| s.receiver_count());
        all.saturating_sub(inner.unwatched.load(Ordering::SeqCst))
    }

    /// Events after `after_seq` that the ring still holds (oldest first).
    #[cfg(test)]
    pub fn recent(&self, after_seq: u64) -> Vec<Arc<E>> {
        self.lock().kept_after(after_seq).into()
    }

    /// How many places of the ring are taken (a packed run takes one).
    #[cfg(test)]
    fn ring_len(&self) -> usize {
        self.lock().ring.len()
    }
}

/// A subscriber's view of a topic: the replayed backlog, then live events.
pub struct Subscription<E> {
    backlog: VecDeque<Arc<E>>,
    receiver: broadcast::Receiver<Arc<E>>,
    last_seq: u64,
    /// Of a mirror: a jump is not a lag.
    gaps: bool,
    _unwatched: Option<Unwatched>,
}

/// One open subscription left out of a topic's watchers, until dropped.
struct Unwatched(Arc<AtomicUsize>);

impl Unwatched {
    fn new(count: &Arc<AtomicUsize>) -> Unwatched {
        count.fetch_add(1, Ordering::SeqCst);
        Unwatched(count.clone())
    }
}

impl Drop for Unwatched {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl<E: Sequenced> Subscription<E> {
    /// The next event, in seq order with no gap and no duplicate.
    pub async fn recv(&mut self) -> Result<Arc<E>, RecvError> {
        if let Some(event) = self.backlog.pop_front() {
            self.last_seq = event.seq();
            return Ok(event);
        }
        loop {
            match self.receiver.recv().await {
                Ok(event) if event.seq() <= self.last_seq => continue, // already replayed
                Ok(event) => {
                    if event.seq() != self.last_seq + 1 && !self.gaps {
                        return Err(RecvError::Lagged {
                            last_seq: self.last_seq,
                        });
                    }
                    self.last_seq = event.seq();
                    return Ok(event);
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    return Err(RecvError::Lagged {
                        last_seq: self.last_seq,
                    });
                }
                Err(broadcast::error::RecvError::Closed) => return Err(RecvError::Closed),
            }
        }
    }

    /// The next event if one is here already (never waits): the backlog's,
    /// then the live channel's. `None` when none is, and also when the
    /// subscription lagged or ended: the next [`recv`](Self::recv) says
    /// which (an event skipped here shows there as a gap).
    pub fn try_recv(&mut self) -> Option<Arc<E>> {
        if let Some(event) = self.backlog.pop_front() {
            self.last_seq = event.seq();
            return Some(event);
        }
        loop {
            match self.receiver.try_recv() {
                Ok(event) if event.seq() <= self.last_seq => continue, // already replayed
                Ok(event) if event.seq() == self.last_seq + 1 || self.gaps => {
                    self.last_seq = event.seq();
                    return Some(event);
                }
                // A gap (lagged), nothing yet, or the end: for recv to report.
                _ => return None,
            }
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

    #[derive(Debug, PartialEq)]
    struct Ev(u64);
    impl Sequenced for Ev {
        fn seq(&self) -> u64 {
            self.0
        }
    }

    fn publish_range(t: &Topic<Ev>, range: std::ops::RangeInclusive<u64>) {
        for s in range {
            t.publish(Arc::new(Ev(s))).unwrap();
        }
    }

    async fn take<E: Sequenced>(sub: &mut Subscription<E>, n: usize) -> Vec<u64> {
        let mut out = Vec::new();
        for _ in 0..n {
            out.push(sub.recv().await.unwrap().seq());
        }
        out
    }

    #[tokio::test]
    async fn late_subscriber_replays_then_follows_live_without_gap() {
        let t = Topic::new(0);
        publish_range(&t, 1..=5);
        let mut sub = t.subscribe(2).unwrap();
        publish_range(&t, 6..=7);
        assert_eq!(take(&mut sub, 5).await, [3, 4, 5, 6, 7]);
    }

    #[tokio::test]
    async fn try_recv_takes_what_is_there_and_leaves_a_gap_to_recv() {
        let t = Topic::with_capacity(0, 100, 4);
        publish_range(&t, 1..=2);
        let mut sub = t.subscribe(1).unwrap();
        assert_eq!(sub.try_recv().map(|e| e.0), Some(2), "the backlog");
        assert!(sub.try_recv().is_none(), "nothing live yet");
        publish_range(&t, 3..=4);
        assert_eq!(sub.try_recv().map(|e| e.0), Some(3));
        assert_eq!(sub.try_recv().map(|e| e.0), Some(4));
        publish_range(&t, 5..=20); // more than the channel holds
        assert!(sub.try_recv().is_none(), "lagged: nothing handed out");
        assert_eq!(
            sub.recv().await.unwrap_err(),
            RecvError::Lagged { last_seq: 4 },
            "recv reports the lag"
        );
    }

    #[tokio::test]
    async fn out_of_order_publish_is_refused() {
        let t = Topic::new(0);
        publish_range(&t, 1..=2);
        assert!(t.publish(Arc::new(Ev(4))).is_err());
        assert!(t.publish(Arc::new(Ev(2))).is_err());
        assert_eq!(t.last_seq(), 2);
    }

    #[tokio::test]
    async fn lagging_subscriber_is_cut_off_and_rejoins_from_its_last_seq() {
        let t = Topic::with_capacity(0, 100, 4);
        let mut sub = t.subscribe(0).unwrap();
        publish_range(&t, 1..=2);
        assert_eq!(take(&mut sub, 1).await, [1]);
        publish_range(&t, 3..=20); // far more than the channel holds
        let err = sub.recv().await.unwrap_err();
        assert_eq!(err, RecvError::Lagged { last_seq: 1 });
        let mut again = t.subscribe(1).unwrap();
        assert_eq!(take(&mut again, 19).await, (2..=20).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn replay_reaching_past_the_ring_says_so() {
        let t = Topic::with_capacity(0, 3, 8);
        publish_range(&t, 1..=10);
        assert_eq!(
            t.subscribe(2).err(),
            Some(SubscribeError::NotInRing {
                after_seq: 2,
                oldest: 8
            })
        );
        assert!(t.subscribe(7).is_ok());
        assert!(t.subscribe(10).is_ok());
    }

    #[tokio::test]
    async fn topic_resumed_at_a_seq_accepts_the_next_one() {
        let t = Topic::new(41);
        assert!(t.subscribe(41).is_ok());
        publish_range(&t, 42..=42);
        assert_eq!(t.recent(0).len(), 1);
    }

    /// A session's events: `u` a user event, `d` a streamed delta, `e` the
    /// turn's end (its `result`), `r` any other (persisted) event.
    fn session_events(topic: &SessionTopic, kinds: &str) {
        use crate::protocol::{
            AgentMessage, ErrorEvent, ErrorKind, ResultEvent, SessionId, StopReason, StreamDelta,
            StreamEvent, Usage, UserEvent,
        };
        let session_id = SessionId::new();
        for kind in kinds.chars() {
            let message = match kind {
                'u' => AgentMessage::User(UserEvent::new("q")),
                'd' => AgentMessage::StreamEvent(StreamEvent {
                    event: StreamDelta::TextDelta {
                        index: 0,
                        text: "t".into(),
                    },
                }),
                'e' => AgentMessage::Result(ResultEvent {
                    stop_reason: StopReason::EndTurn,
                    text: "tt".into(),
                    usage: Usage::default(),
                    steps: 1,
                    duration_ms: 1,
                    error: None,
                    context: None,
                }),
                _ => AgentMessage::Error(ErrorEvent {
                    kind: ErrorKind::Internal,
                    message: "r".into(),
                }),
            };
            topic.publish_next(|seq| EventEnvelope {
                session_id: session_id.clone(),
                seq,
                turn_id: None,
                at: chrono::Utc::now(),
                message,
            });
        }
    }

    #[tokio::test]
    async fn the_ring_keeps_the_latest_replys_deltas_packed_once_its_turn_ended() {
        let t = SessionTopic::new(0);
        let seqs = |t: &SessionTopic| t.recent(0).iter().map(|e| e.seq).collect::<Vec<_>>();
        session_events(&t, "udd"); // 1..=3: a reply under way
        let streamed = t.recent(0);
        // A client cut off in its middle, rejoining after the turn ended.
        let mut cut_off = t.subscribe(2).unwrap();
        session_events(&t, "re"); // 4..=5: its whole message, the result
        assert_eq!(seqs(&t), [1, 2, 3, 4, 5], "the latest reply replays whole");
        assert_eq!(t.ring_len(), 4, "its two deltas take one place, packed");
        assert_eq!(t.recent(0)[..3], streamed[..], "equal to what was sent");
        assert_eq!(take(&mut cut_off, 3).await, [3, 4, 5]);
        let mut rejoined = t.subscribe(2).unwrap();
        assert_eq!(take(&mut rejoined, 3).await, [3, 4, 5]);

        session_events(&t, "udre"); // 6..=9: the next turn
        assert_eq!(
            seqs(&t),
            [1, 4, 5, 6, 7, 8, 9],
            "the older reply's deltas left"
        );
        // A reconnect from the middle of the older reply gets its persisted
        // events, then the new turn's, with nothing twice.
        let mut sub = t.subscribe(2).unwrap();
        assert_eq!(take(&mut sub, 6).await, [4, 5, 6, 7, 8, 9]);
    }

    #[tokio::test]
    async fn a_closed_topic_ends_subscriptions_after_what_was_published() {
        let t = Topic::<Ev>::new(0);
        let mut live = t.subscribe(0).unwrap();
        publish_range(&t, 1..=3);
        t.close();
        for seq in 1..=3 {
            assert_eq!(live.recv().await.unwrap().seq(), seq);
        }
        assert_eq!(live.recv().await.unwrap_err(), RecvError::Closed);
        // A subscriber coming later gets the ring, then the end.
        let mut late = t.subscribe(1).unwrap();
        assert_eq!(late.recv().await.unwrap().seq(), 2);
        assert_eq!(late.recv().await.unwrap().seq(), 3);
        assert_eq!(late.recv().await.unwrap_err(), RecvError::Closed);
    }

    #[tokio::test]
    async fn a_mirror_takes_higher_seqs_and_its_subscribers_take_the_jumps() {
        let t = Topic::mirror(10);
        let mut early = t.subscribe(10).unwrap();
        for seq in [11, 12, 4100, 4101] {
            t.publish(Arc::new(Ev(seq))).unwrap();
        }
        assert!(t.publish(Arc::new(Ev(4101))).is_err(), "not above the last");
        assert!(t.publish(Arc::new(Ev(50))).is_err(), "never back");
        assert_eq!(take(&mut early, 4).await, [11, 12, 4100, 4101]);
        // A subscriber from within the ring replays across the jump.
        let mut late = t.subscribe(12).unwrap();
        assert_eq!(late.try_recv().map(|e| e.0), Some(4100));
        t.publish(Arc::new(Ev(9000))).unwrap();
        assert_eq!(late.try_recv().map(|e| e.0), Some(4101));
        assert_eq!(
            late.try_recv().map(|e| e.0),
            Some(9000),
            "live, across a jump"
        );
        // One from before the ring is sent to the store, as on any topic.
        assert_eq!(
            t.subscribe(3).err(),
            Some(SubscribeError::NotInRing {
                after_seq: 3,
                oldest: 11
            })
        );
    }

    #[tokio::test]
    async fn a_mirror_still_reports_a_subscriber_falling_behind_the_channel() {
        let t = Topic::with_capacity(0, 100, 4);
        t.lock().gaps = true;
        let mut sub = t.subscribe(0).unwrap();
        for seq in (1..=40).step_by(2) {
            t.publish(Arc::new(Ev(seq))).unwrap();
        }
        assert_eq!(
            sub.recv().await.unwrap_err(),
            RecvError::Lagged { last_seq: 0 }
        );
    }

    #[tokio::test]
    async fn unwatched_subscriptions_are_not_counted_as_watchers() {
        let t = Topic::<Ev>::new(0);
        let service = t.subscribe_unwatched(0).unwrap();
        assert_eq!(t.subscriber_count(), 0);
        let watcher = t.subscribe(0).unwrap();
        assert_eq!(t.subscriber_count(), 1);
        drop(watcher);
        assert_eq!(t.subscriber_count(), 0);
        drop(service);
        assert_eq!(t.subscriber_count(), 0);
        let _watcher = t.subscribe(0).unwrap();
        assert_eq!(t.subscriber_count(), 1);
    }

    #[tokio::test]
    async fn closed_topic_ends_subscriptions() {
        let t = Topic::<Ev>::new(0);
        let mut sub = t.subscribe(0).unwrap();
        drop(t);
        assert_eq!(sub.recv().await.unwrap_err(), RecvError::Closed);
    }
}
