//! The follower's side of the live plane: a session another node owns,
//! mirrored into a local topic (docs/cluster.md, "Following from
//! another node").
//!
//! Exists so that a front end attached to this node gets the same stream it
//! would get from the owner, through the code that follows a local session
//! (SSE, WebSocket, the chat's feeds): a [`RemoteSession`] is an
//! [`EventSource`] like a local [`SessionHandle`](crate::session::SessionHandle)
//! — `subscribe(after_seq)` on its mirror topic, `stored_events` from the
//! store — and it sends `submit`, `interrupt` and `decide` to the owner
//! through the `.in` subject (`route.rs`).
//!
//! Its task runs the follow protocol (`follow.rs`) with the I/O it asks
//! for: it subscribes to the session's `.ev` subject *first* (and waits
//! until the server has the subscription), then replays the store after
//! the seq it starts from, then hands on live messages — refilling from the
//! store on a gap or a newer owner, re-reading it when the connection comes
//! back (what was published meanwhile is lost), and when the session is
//! busy and its owner silent for a while (a new owner whose first messages
//! were lost). A store read that fails is tried again until it succeeds:
//! nothing is handed on past a hole. The mirror ([`SessionTopic::mirror`])
//! takes the seqs as they come, going up with gaps (lost deltas, a new
//! owner's jump above the previous reservation), none of them hiding a
//! persisted event.
//!
//! Never writes to the store, never claims the session, never publishes on
//! the live plane, and never hands a subscriber anything twice or out of
//! order. A session that should be driven here instead (no responders to
//! an input) is the caller's to claim.

use crate::bus::source::EventSource;
use crate::bus::{SessionTopic, SubscribeError, Subscription};
use crate::cluster::error::LiveError;
use crate::cluster::follow::{DropReason, Follow, ReadReason, Step, StoreRead};
use crate::cluster::link::{Link, LinkState};
use crate::cluster::live::{LivePlane, SessionEvents};
use crate::cluster::route::{InputSender, SendOptions};
use crate::protocol::{AgentMessage, EventEnvelope, InputId, SessionId, SessionInput};
use crate::session::{SessionDoor, SessionError};
use crate::store::{SessionStore, StoreError};
use futures::StreamExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How a session is followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FollowOptions {
    /// A busy session whose owner said nothing for this long is re-read
    /// from the store (the node TTL).
    pub quiet: Duration,
    /// The wait before a failed store read is tried again.
    pub retry: Duration,
    /// How long to wait for the server to confirm the subscription.
    pub sync_timeout: Duration,
    /// How inputs are sent to the owner.
    pub send: SendOptions,
}

impl Default for FollowOptions {
    fn default() -> Self {
        FollowOptions {
            quiet: Duration::from_secs(10),
            retry: Duration::from_millis(500),
            sync_timeout: Duration::from_secs(2),
            send: SendOptions::default(),
        }
    }
}

/// What a follower has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FollowStats {
    /// Events handed to the mirror (from the store or live).
    pub delivered: u64,
    /// Live messages dropped as repeats.
    pub duplicates: u64,
    /// Live messages dropped as a stale owner's.
    pub stale: u64,
    /// Store reads over a gap or at a newer owner.
    pub refills: u64,
    /// Store reads after the connection came back or a quiet busy spell.
    pub rechecks: u64,
    /// Store reads that failed (and were tried again).
    pub store_errors: u64,
}

impl FollowStats {
    /// `other`'s counts added to these.
    pub fn add(&mut self, other: FollowStats) {
        self.delivered += other.delivered;
        self.duplicates += other.duplicates;
        self.stale += other.stale;
        self.refills += other.refills;
        self.rechecks += other.rechecks;
        self.store_errors += other.store_errors;
    }
}

/// A follower's counters, readable after it stopped.
#[derive(Clone, Debug)]
pub struct FollowMeter(Arc<Counters>);

impl FollowMeter {
    pub fn stats(&self) -> FollowStats {
        self.0.stats()
    }
}

#[derive(Debug, Default)]
struct Counters {
    delivered: AtomicU64,
    duplicates: AtomicU64,
    stale: AtomicU64,
    refills: AtomicU64,
    rechecks: AtomicU64,
    store_errors: AtomicU64,
}

impl Counters {
    fn stats(&self) -> FollowStats {
        FollowStats {
            delivered: self.delivered.load(Ordering::Relaxed),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            stale: self.stale.load(Ordering::Relaxed),
            refills: self.refills.load(Ordering::Relaxed),
            rechecks: self.rechecks.load(Ordering::Relaxed),
            store_errors: self.store_errors.load(Ordering::Relaxed),
        }
    }

    fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
}

/// A session another node drives, followed from this one. Cheap to clone;
/// following stops when the last clone is dropped, or at
/// [`stop`](Self::stop).
#[derive(Clone)]
pub struct RemoteSession {
    inner: Arc<Inner>,
}

/// A followed session that does not keep it followed: the node's table of
/// what it follows holds these, so the last client leaving ends the
/// subscription.
#[derive(Clone)]
pub(crate) struct WeakRemoteSession(std::sync::Weak<Inner>);

impl WeakRemoteSession {
    /// The session, while some client still follows it and its follower
    /// runs.
    pub(crate) fn upgrade(&self) -> Option<RemoteSession> {
        let session = RemoteSession {
            inner: self.0.upgrade()?,
        };
        session.is_following().then_some(session)
    }
}

struct Inner {
    id: SessionId,
    topic: Arc<SessionTopic>,
    store: Arc<dyn SessionStore>,
    sender: InputSender,
    started_after: u64,
    stop: CancellationToken,
    task: Mutex<Option<JoinHandle<()>>>,
    counters: Arc<Counters>,
    /// The highest input id the owner gave an input sent from here.
    expected_turn: Arc<AtomicU64>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl std::fmt::Debug for RemoteSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSession")
            .field("id", &self.inner.id)
            .field("started_after", &self.inner.started_after)
            .finish()
    }
}

impl RemoteSession {
    /// Follows session `id` from after `after_seq` (its store's last seq,
    /// as for a session loaded here, or a client's last seen seq). Returns
    /// once subscribed to the owner's events; the replay from `store`
    /// follows on the session's own task.
    pub async fn start(
        plane: &LivePlane,
        store: Arc<dyn SessionStore>,
        id: SessionId,
        after_seq: u64,
        options: FollowOptions,
    ) -> Result<RemoteSession, LiveError> {
        let events = plane.session_events(&id).await?;
        // The replay must not start before the server has the subscription,
        // or an event published in between would be neither read nor heard.
        if let Err(e) = plane.sync(options.sync_timeout).await {
            // The link says it is lost: coming back re-reads the store.
            tracing::warn!(session = %id, error = %e, "following a session while the connection to NATS is lost");
        }
        let topic = Arc::new(SessionTopic::mirror(after_seq));
        let stop = CancellationToken::new();
        let counters = Arc::new(Counters::default());
        let expected_turn = Arc::new(AtomicU64::new(0));
        let follower = Follower {
            id: id.clone(),
            plane: plane.clone(),
            link: plane.link(),
            events,
            topic: topic.clone(),
            store: store.clone(),
            options,
            stop: stop.clone(),
            counters: counters.clone(),
            expected_turn: expected_turn.clone(),
            turns: Turns::default(),
        };
        let task = tokio::spawn(follower.run(after_seq));
        Ok(RemoteSession {
            inner: Arc::new(Inner {
                id: id.clone(),
                topic,
                store,
                sender: InputSender::new(plane.clone(), id, options.send),
                started_after: after_seq,
                stop,
                task: Mutex::new(Some(task)),
                counters,
                expected_turn,
            }),
        })
    }

    /// A reference that does not keep the session followed.
    pub(crate) fn downgrade(&self) -> WeakRemoteSession {
        WeakRemoteSession(Arc::downgrade(&self.inner))
    }

    /// Notes that the owner took input `input_id` for this session (sent
    /// by anyone on this node): until an event of that turn comes, a quiet
    /// owner is a reason to read the store.
    pub(crate) fn expect_turn(&self, input_id: InputId) {
        self.inner
            .expected_turn
            .fetch_max(input_id, Ordering::Relaxed);
    }

    /// The seq following started after: subscribe after it for everything
    /// the mirror hands on, or after an older seq (the store answers first).
    #[cfg(test)]
    pub fn loaded_after(&self) -> u64 {
        self.inner.started_after
    }

    /// Events after `after_seq` that the mirror's ring holds, then live
    /// ones; see [`stored_events`](Self::stored_events) for older ones.
    pub fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError> {
        self.inner.topic.subscribe(after_seq)
    }

    /// Stored events with `after_seq < seq <= up_to` (the persisted ones).
    pub async fn stored_events(
        &self,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        self.inner
            .store
            .load_events(&self.inner.id, after_seq, up_to)
            .await
    }

    /// The way to the owner, for a caller that retries one input itself.
    #[cfg(test)]
    pub fn sender(&self) -> &InputSender {
        &self.inner.sender
    }

    /// How many subscribers watch the mirror now.
    #[cfg(test)]
    pub fn watchers(&self) -> usize {
        self.inner.topic.subscriber_count()
    }

    #[cfg(test)]
    pub fn stats(&self) -> FollowStats {
        self.inner.counters.stats()
    }

    /// Its counters, to read after it stopped too.
    pub fn meter(&self) -> FollowMeter {
        FollowMeter(self.inner.counters.clone())
    }

    /// Whether the session is still followed.
    pub fn is_following(&self) -> bool {
        self.task_slot()
            .as_ref()
            .is_some_and(|task| !task.is_finished())
    }

    /// Stops following (the session is now driven here, or nobody needs
    /// it): the mirror's subscriptions end after what was handed on.
    #[cfg(test)]
    pub async fn stop(&self) {
        self.inner.stop.cancel();
        let task = self.task_slot().take();
        if let Some(task) = task
            && let Err(e) = task.await
        {
            tracing::warn!(session = %self.inner.id, error = %e, "the follower's task failed");
        }
    }

    fn task_slot(&self) -> std::sync::MutexGuard<'_, Option<JoinHandle<()>>> {
        self.inner
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The door of a session another node drives: every input goes to the
/// owner through the live plane; a queued one's turn is expected here, so
/// that a quiet owner makes the follower read the store.
#[async_trait::async_trait]
impl SessionDoor for RemoteSession {
    async fn send(&self, input: SessionInput) -> Result<Option<InputId>, SessionError> {
        let input_id = self.inner.sender.input(input).await?;
        if let Some(input_id) = input_id {
            self.expect_turn(input_id);
        }
        Ok(input_id)
    }
}

/// A followed session is the source of its events as a local one is: the
/// mirror for recent and live ones, the store for older ones.
#[async_trait::async_trait]
impl EventSource for RemoteSession {
    fn session_id(&self) -> &SessionId {
        &self.inner.id
    }

    fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError> {
        RemoteSession::subscribe(self, after_seq)
    }

    async fn stored_events(
        &self,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        RemoteSession::stored_events(self, after_seq, up_to).await
    }
}

/// Whether a turn is open, as the events handed on tell it.
#[derive(Debug, Default)]
struct Turns {
    /// A turn started (or was seen running) and has not ended.
    open: bool,
    /// The highest input id an event carried.
    seen_turn: u64,
}

impl Turns {
    fn note(&mut self, event: &EventEnvelope) {
        if let Some(turn) = event.turn_id {
            self.seen_turn = self.seen_turn.max(turn);
        }
        match event.message {
            AgentMessage::User(_)
            | AgentMessage::StreamEvent(_)
            | AgentMessage::Assistant(_)
            | AgentMessage::ToolResult(_)
            | AgentMessage::ApprovalRequest(_) => self.open = true,
            AgentMessage::Result(_) => self.open = false,
            AgentMessage::System(_) | AgentMessage::Error(_) => {}
        }
    }
}

/// The follower's task.
struct Follower {
    id: SessionId,
    plane: LivePlane,
    link: Link,
    events: SessionEvents,
    topic: Arc<SessionTopic>,
    store: Arc<dyn SessionStore>,
    options: FollowOptions,
    stop: CancellationToken,
    counters: Arc<Counters>,
    expected_turn: Arc<AtomicU64>,
    turns: Turns,
}

impl Follower {
    async fn run(mut self, after: u64) {
        let (mut follow, replay) = Follow::new(after, Instant::now());
        let mut read = Some(replay);
        let period = (self.options.quiet / 2).max(Duration::from_millis(10));
        let mut watchdog = tokio::time::interval(period);
        watchdog.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        'following: loop {
            while let Some(asked) = read.take() {
                let Some(events) = self.read_store(asked).await else {
                    break 'following;
                };
                let step = follow.store_read(events, None);
                read = self.apply(step);
            }
            tokio::select! {
                biased;
                _ = self.stop.cancelled() => break,
                state = self.link.changed() => match state {
                    LinkState::Closed => break,
                    LinkState::Disconnected { .. } => {}
                    LinkState::Connected => {
                        // What was published while the connection was lost
                        // is lost: once the server has the subscription
                        // again, read the store.
                        if let Err(e) = self.plane.sync(self.options.sync_timeout).await {
                            tracing::debug!(session = %self.id, error = %e, "no round trip after reconnecting");
                        }
                        read = follow.watchdog(Instant::now(), true, Duration::ZERO);
                    }
                },
                message = self.events.next() => match message {
                    Some(event) => {
                        let step = follow.live(event, Instant::now());
                        read = self.apply(step);
                    }
                    None => break,
                },
                _ = watchdog.tick() => {
                    let expected = self.expected_turn.load(Ordering::Relaxed);
                    let busy = self.turns.open || expected > self.turns.seen_turn;
                    read = follow.watchdog(Instant::now(), busy, self.options.quiet);
                    if read.is_some() {
                        tracing::debug!(session = %self.id, "a busy session went quiet: reading the store");
                    }
                }
            }
        }
        // Subscribers get what was handed on, then the end.
        self.topic.close();
    }

    /// The events `asked` for, tried until the store answers (`None`: told
    /// to stop meanwhile).
    async fn read_store(&self, asked: StoreRead) -> Option<Vec<EventEnvelope>> {
        match asked.reason {
            ReadReason::Replay => {}
            ReadReason::Gap | ReadReason::NewOwner => Counters::add(&self.counters.refills, 1),
            ReadReason::Recheck => Counters::add(&self.counters.rechecks, 1),
        }
        let up_to = asked.before.map(|before| before.saturating_sub(1));
        loop {
            let loaded = tokio::select! {
                biased;
                _ = self.stop.cancelled() => return None,
                loaded = self.store.load_events(&self.id, asked.after, up_to) => loaded,
            };
            match loaded {
                Ok(events) => return Some(events),
                Err(e) => {
                    Counters::add(&self.counters.store_errors, 1);
                    tracing::warn!(
                        session = %self.id,
                        after = asked.after,
                        ?up_to,
                        reason = ?asked.reason,
                        error = %e,
                        "cannot read the followed session's events from the store; trying again"
                    );
                    tokio::select! {
                        _ = self.stop.cancelled() => return None,
                        _ = tokio::time::sleep(self.options.retry) => {}
                    }
                }
            }
        }
    }

    /// Hands on what `step` delivers; the store read it asks for, if any.
    fn apply(&mut self, step: Step) -> Option<StoreRead> {
        for dropped in &step.dropped {
            let counter = match dropped.reason {
                DropReason::Duplicate { .. } => &self.counters.duplicates,
                DropReason::Stale { .. } => &self.counters.stale,
            };
            Counters::add(counter, 1);
            tracing::trace!(session = %self.id, seq = dropped.seq, reason = ?dropped.reason, "a live message dropped");
        }
        for event in step.deliver {
            self.turns.note(&event);
            let seq = event.seq;
            if self.topic.publish(Arc::new(event)).is_err() {
                // The protocol delivers seqs strictly increasing: a bug.
                tracing::warn!(session = %self.id, seq, last = self.topic.last_seq(), "an event out of order was not handed on");
                continue;
            }
            Counters::add(&self.counters.delivered, 1);
        }
        step.read
    }
}
