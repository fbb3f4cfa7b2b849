//! The owner's side of the live plane: a task that reads a session's local
//! topic and publishes every event — `stream_event` deltas included — on
//! the session's `.ev` subject, in seq order, with the owner's epoch and
//! node in the headers (docs/cluster.md, "Publishing").
//!
//! Exists so that other nodes can follow a session this node drives
//! without the AgentLoop knowing about NATS. It reads the topic, and the
//! AgentLoop commits before it publishes there, so everything persisted
//! the relay sends is durable already: a follower that refills a gap from
//! the store finds every persisted event below the message that showed it
//! the gap.
//!
//! Never blocks the session and never buffers without bound: it is one
//! more subscriber of a broadcast (one that does not count as a watcher,
//! so an idle session nobody watches still unloads). While NATS is
//! unreachable a publish is refused at once and the event is dropped and
//! counted; the newest dropped event alone is kept and sent again once the
//! connection is back, unless a later one went out meanwhile, so that a
//! follower learns of the gap even when the session has gone quiet. It
//! reads the topic with the bus's one reader, policy [`Gaps::Skip`]: when
//! it falls behind the topic, it subscribes again from where the ring
//! still reaches and leaves the gap to the followers' refill. Never reads or writes the store, never sends a seq twice except
//! that one re-send (followers drop repeats), and never publishes for an
//! owner other than the one it was started with: when the node loses the
//! session it is [stopped](Relay::stop).

use crate::bus::reader::{Gaps, TopicReader};
use crate::bus::source::EventSource;
use crate::bus::{SessionTopic, SubscribeError, Subscription};
use crate::cluster::error::LiveError;
use crate::cluster::link::{Link, LinkState};
use crate::cluster::live::LivePlane;
use crate::cluster::owner::Owner;
use crate::protocol::{EventEnvelope, SessionId};
use crate::session::SessionHandle;
use crate::store::StoreError;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// What a relay has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// Events published.
    pub published: u64,
    /// Events not published: the connection was lost (or the publish
    /// failed). Followers refill the persisted ones from the store.
    pub dropped: u64,
    /// Times the relay fell behind the topic and subscribed again.
    pub lagged: u64,
    /// Dropped events sent again once the connection was back.
    pub resent: u64,
}

impl RelayStats {
    /// `other`'s counts added to these.
    pub fn add(&mut self, other: RelayStats) {
        self.published += other.published;
        self.dropped += other.dropped;
        self.lagged += other.lagged;
        self.resent += other.resent;
    }
}

/// A relay's counters, readable after the relay moved to its task or
/// ended.
#[derive(Clone, Debug)]
pub struct RelayMeter(Arc<Counters>);

impl RelayMeter {
    pub fn stats(&self) -> RelayStats {
        self.0.stats()
    }
}

/// Why a relay ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayEnd {
    /// The session's topic closed: the session stopped on this node.
    TopicClosed,
    /// [`Relay::stop`]: the node no longer drives the session.
    Stopped,
    /// The NATS connection was closed for good.
    ConnectionClosed,
}

#[derive(Debug, Default)]
struct Counters {
    published: AtomicU64,
    dropped: AtomicU64,
    lagged: AtomicU64,
    resent: AtomicU64,
}

impl Counters {
    fn stats(&self) -> RelayStats {
        RelayStats {
            published: self.published.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            lagged: self.lagged.load(Ordering::Relaxed),
            resent: self.resent.load(Ordering::Relaxed),
        }
    }
}

/// A session's events being relayed to the live plane. Dropping it stops
/// the relay too (without waiting).
#[derive(Debug)]
pub struct Relay {
    session: SessionId,
    #[cfg_attr(not(test), expect(dead_code, reason = "read by tests only"))]
    owner: Owner,
    stop: CancellationToken,
    task: Option<JoinHandle<RelayEnd>>,
    counters: Arc<Counters>,
    #[cfg_attr(not(test), expect(dead_code, reason = "read by tests only"))]
    handled: watch::Receiver<u64>,
}

impl Relay {
    /// Relays the events of `session`, a session this node drives as
    /// `owner`, from the ones its load published on (after
    /// [`loaded_after`](SessionHandle::loaded_after)): the opening
    /// `owner_changed`, the closing of a turn a dead owner left.
    pub fn for_session(plane: &LivePlane, session: &SessionHandle, owner: Owner) -> Relay {
        Relay::start(
            plane,
            session.id().clone(),
            session.topic().clone(),
            owner,
            session.loaded_after(),
        )
    }

    /// Relays the events of `topic` (session `session`'s) after
    /// `after_seq`, as `owner`.
    pub fn start(
        plane: &LivePlane,
        session: SessionId,
        topic: Arc<SessionTopic>,
        owner: Owner,
        after_seq: u64,
    ) -> Relay {
        let stop = CancellationToken::new();
        let counters = Arc::new(Counters::default());
        let (handled_tx, handled) = watch::channel(after_seq);
        let run = Run {
            plane: plane.clone(),
            session: session.clone(),
            owner,
            stop: stop.clone(),
            counters: counters.clone(),
            handled: handled_tx,
        };
        let unwatched = Unwatched {
            session: session.clone(),
            topic,
        };
        let mut reader = TopicReader::new(unwatched, after_seq, Gaps::Skip);
        // Subscribed here, not on the task: every event published once this
        // returns is relayed.
        reader.subscribe_now();
        let task = tokio::spawn(run.relay(reader));
        Relay {
            session,
            owner,
            stop,
            task: Some(task),
            counters,
            handled,
        }
    }

    #[cfg(test)]
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// The owner it publishes as.
    #[cfg(test)]
    pub fn owner(&self) -> Owner {
        self.owner
    }

    #[cfg(test)]
    pub fn stats(&self) -> RelayStats {
        self.counters.stats()
    }

    /// Its counters, to read while it runs on elsewhere.
    pub fn meter(&self) -> RelayMeter {
        RelayMeter(self.counters.clone())
    }

    /// A watch on the seq of the last event handed to the connection (sent
    /// or not: dropped events count as handled).
    #[cfg(test)]
    pub fn handled(&self) -> watch::Receiver<u64> {
        self.handled.clone()
    }

    /// Whether the relay still runs.
    #[cfg(test)]
    pub fn is_running(&self) -> bool {
        self.task.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stops relaying (the node lost the session, or releases it) and
    /// waits for the task: once this returns, nothing more is published as
    /// this owner.
    pub async fn stop(mut self) -> (RelayEnd, RelayStats) {
        self.stop.cancel();
        let end = self.join().await;
        (end, self.counters.stats())
    }

    /// Waits until the relay ends by itself (its topic closed, or the
    /// connection), and says why.
    pub async fn finished(mut self) -> (RelayEnd, RelayStats) {
        let end = self.join().await;
        (end, self.counters.stats())
    }

    async fn join(&mut self) -> RelayEnd {
        let Some(task) = self.task.take() else {
            return RelayEnd::Stopped;
        };
        match task.await {
            Ok(end) => end,
            Err(e) => {
                tracing::warn!(session = %self.session, error = %e, "the relay's task failed");
                RelayEnd::Stopped
            }
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// The session's topic as the relay reads it: not counted as a watcher (an
/// idle session nobody watches still unloads), and no store behind it.
struct Unwatched {
    session: SessionId,
    topic: Arc<SessionTopic>,
}

#[async_trait::async_trait]
impl EventSource for Unwatched {
    fn session_id(&self) -> &SessionId {
        &self.session
    }

    fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError> {
        self.topic.subscribe_unwatched(after_seq)
    }

    /// Never asked: the relay's reader skips what the ring no longer holds
    /// ([`Gaps::Skip`]), and the relay never reads the store.
    async fn stored_events(
        &self,
        _after_seq: u64,
        _up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        Ok(Vec::new())
    }
}

/// The relay's task.
struct Run {
    plane: LivePlane,
    session: SessionId,
    owner: Owner,
    stop: CancellationToken,
    counters: Arc<Counters>,
    handled: watch::Sender<u64>,
}

/// What one publish came to.
enum Sent {
    Yes,
    /// The connection is lost: worth sending again once it is back.
    Lost,
    /// Failed otherwise: counted, not retried.
    Failed,
}

impl Run {
    async fn relay(self, mut reader: TopicReader<Unwatched>) -> RelayEnd {
        let mut link = self.plane.link();
        // The newest event the lost connection refused, while no later one
        // went out.
        let mut unsent: Option<Arc<EventEnvelope>> = None;
        loop {
            tokio::select! {
                biased;
                _ = self.stop.cancelled() => return RelayEnd::Stopped,
                // Before the next event, so that the order holds.
                connected = reconnected(&mut link), if unsent.is_some() => {
                    if !connected {
                        return RelayEnd::ConnectionClosed;
                    }
                    if let Some(event) = unsent.take() {
                        match self.publish(&event).await {
                            Sent::Yes => {
                                self.counters.resent.fetch_add(1, Ordering::Relaxed);
                            }
                            Sent::Lost => unsent = Some(event),
                            Sent::Failed => {}
                        }
                    }
                }
                received = reader.next() => {
                    let Some(event) = received else {
                        return RelayEnd::TopicClosed;
                    };
                    self.counters.lagged.store(reader.lagged(), Ordering::Relaxed);
                    let seq = event.seq;
                    match self.publish(&event).await {
                        Sent::Yes => {
                            self.counters.published.fetch_add(1, Ordering::Relaxed);
                            unsent = None;
                        }
                        Sent::Lost => {
                            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                            unsent = Some(event);
                        }
                        Sent::Failed => {
                            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    self.handled.send_replace(seq);
                }
            }
        }
    }

    async fn publish(&self, event: &EventEnvelope) -> Sent {
        match self.plane.publish_event(event, self.owner).await {
            Ok(()) => Sent::Yes,
            Err(e) => {
                tracing::debug!(
                    session = %self.session,
                    seq = event.seq,
                    error = %e,
                    "an event was not published"
                );
                if matches!(e, LiveError::NotConnected { .. }) {
                    Sent::Lost
                } else {
                    Sent::Failed
                }
            }
        }
    }
}

/// Waits until the connection is not lost: `true` once connected, `false`
/// when closed for good.
async fn reconnected(link: &mut Link) -> bool {
    let state = link
        .wait_for(|s| !matches!(s, LinkState::Disconnected { .. }))
        .await;
    state == LinkState::Connected
}
