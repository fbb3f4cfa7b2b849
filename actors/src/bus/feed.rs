//! UiSink actor: one per attached front end.
//!
//! Reads a session's events through an [`EventSource`] with the bus's one
//! reader ([`TopicReader`], policy [`Gaps::Refill`]) and hands each, in
//! `seq` order, to a [`FrontEnd`]. The hand-off runs on the sink's own
//! task, so a slow front end only slows itself: when it falls behind the
//! topic's channel it rejoins from its last seq — replayed from the ring,
//! or from the store when the ring no longer reaches back (the store holds
//! the persisted events, so the numbers of old `stream_event`s are
//! skipped). If even the store cannot answer, the front end is told to
//! resync.
//!
//! Never blocks the AgentLoop and never sends inputs: front ends submit
//! through the session's handle.

use super::reader::{Gaps, TopicReader};
use super::source::EventSource;
use crate::protocol::EventEnvelope;
use kameo::Actor;
use kameo::actor::{ActorRef, WeakActorRef};
use kameo::error::{ActorStopReason, Infallible};
use std::future::Future;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A front end that shows a session's events.
pub trait FrontEnd: Send + 'static {
    /// Show one event. Return `false` to detach.
    fn deliver(&mut self, event: Arc<EventEnvelope>) -> impl Future<Output = bool> + Send;

    /// Events after `last_seq` up to `resumed_at - 1` could not be replayed;
    /// the front end should reload its view of the session.
    fn resync(&mut self, last_seq: u64, resumed_at: u64) -> impl Future<Output = ()> + Send {
        async move {
            tracing::warn!(
                last_seq,
                resumed_at,
                "front end missed events that are no longer in memory"
            );
        }
    }
}

/// What a sink starts from: its reader, subscribed already (every event
/// published once the sink is attached reaches the front end, whenever the
/// sink's task first runs), and the front end.
pub struct UiSinkArgs<S: EventSource, F> {
    reader: TopicReader<S>,
    front_end: F,
}

impl<S: EventSource, F> UiSinkArgs<S, F> {
    /// Events of `source` after `after_seq` (0: everything the ring holds)
    /// for `front_end`, subscribed now.
    pub fn new(source: S, after_seq: u64, front_end: F) -> Self {
        let mut reader = TopicReader::new(source, after_seq, Gaps::Refill);
        reader.subscribe_now();
        UiSinkArgs { reader, front_end }
    }
}

/// The actor.
pub struct UiSink<S: EventSource, F: FrontEnd> {
    pump: JoinHandle<()>,
    _kind: std::marker::PhantomData<fn() -> (S, F)>,
}

impl<S: EventSource, F: FrontEnd> Actor for UiSink<S, F> {
    type Args = UiSinkArgs<S, F>;
    type Error = Infallible;

    async fn on_start(args: Self::Args, me: ActorRef<Self>) -> Result<Self, Self::Error> {
        let weak = me.downgrade();
        let pump = tokio::spawn(async move {
            pump(args.reader, args.front_end).await;
            if let Some(me) = weak.upgrade() {
                me.kill();
            }
        });
        Ok(UiSink {
            pump,
            _kind: std::marker::PhantomData,
        })
    }

    async fn on_stop(
        &mut self,
        _: WeakActorRef<Self>,
        _: ActorStopReason,
    ) -> Result<(), Self::Error> {
        self.pump.abort();
        Ok(())
    }
}

/// Hands the session's events to the front end until either ends: every
/// event, from the store where the ring no longer reaches back
/// ([`Gaps::Refill`]); what even the store cannot give, the front end is
/// told to resync.
async fn pump<S: EventSource, F: FrontEnd>(mut reader: TopicReader<S>, mut front_end: F) {
    while let Some(event) = reader.next().await {
        if let Some(missed) = reader.take_missed() {
            front_end.resync(missed.last_seq, missed.resumed_at).await;
        }
        if !front_end.deliver(event).await {
            return;
        }
    }
}

/// A front end that forwards events into a channel, for front ends that
/// run their own loop (the terminal chat, one-shot runs).
pub struct ChannelFrontEnd(pub mpsc::Sender<Arc<EventEnvelope>>);

impl FrontEnd for ChannelFrontEnd {
    async fn deliver(&mut self, event: Arc<EventEnvelope>) -> bool {
        self.0.send(event).await.is_ok()
    }
}

/// Attach a channel front end: events after `after_seq` arrive on the
/// returned receiver until it is dropped or the session closes.
pub fn attach_channel<S: EventSource + Clone>(
    source: &S,
    after_seq: u64,
) -> (
    ActorRef<UiSink<S, ChannelFrontEnd>>,
    mpsc::Receiver<Arc<EventEnvelope>>,
) {
    use kameo::actor::Spawn;
    let (tx, rx) = mpsc::channel(256);
    let sink = UiSink::spawn(UiSinkArgs::new(
        source.clone(),
        after_seq,
        ChannelFrontEnd(tx),
    ));
    (sink, rx)
}

/// A front end with a bounded buffer: it detaches when the buffer is full
/// instead of waiting, so a consumer too slow to keep up is cut off and
/// resumes from its last seq (its events stay in the ring and store).
/// (The server's network clients read their topic directly instead, with
/// a [`TopicReader`] of their own.)
pub struct DropWhenFull(pub mpsc::Sender<Arc<EventEnvelope>>);

impl FrontEnd for DropWhenFull {
    async fn deliver(&mut self, event: Arc<EventEnvelope>) -> bool {
        self.0.try_send(event).is_ok()
    }
}

/// Attach a [`DropWhenFull`] front end with room for `capacity` events.
pub fn attach_until_full<S: EventSource + Clone>(
    source: &S,
    after_seq: u64,
    capacity: usize,
) -> (
    ActorRef<UiSink<S, DropWhenFull>>,
    mpsc::Receiver<Arc<EventEnvelope>>,
) {
    use kameo::actor::Spawn;
    let (tx, rx) = mpsc::channel(capacity.max(1));
    let sink = UiSink::spawn(UiSinkArgs::new(source.clone(), after_seq, DropWhenFull(tx)));
    (sink, rx)
}
