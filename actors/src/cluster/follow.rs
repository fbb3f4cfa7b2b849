//! Following a session another node drives: the store's replay and the
//! owner's live messages reconciled into one stream, as a pure state machine
//! (docs/cluster.md, "The follow protocol").
//!
//! Exists because the live plane (NATS core) is at-most-once and knows
//! nothing of owners: messages may be lost, repeated, or come from a stale
//! owner (a paused node whose session was adopted), and the follower must
//! still hand its clients every persisted event exactly once, in strictly
//! increasing seq, and nothing of a stale owner once a newer one spoke. The
//! store (the source of truth) fills every hole: the owner commits before it
//! publishes, so when a message with seq `n` arrives, every persisted event
//! below `n` is already in the store.
//!
//! The caller subscribes to the session's `.ev` subject *first*, then feeds
//! [`Follow`] what happens, in the order it happens, and does what each
//! [`Step`] says:
//!
//! - [`Follow::new`] asks for the replay: the store's events after the
//!   client's last seen seq. Live messages fed before the answer
//!   ([`Follow::live`]) are held, then reconciled after it.
//! - [`Follow::live`] decides each message ([`Follow::decide`]): deliver it
//!   (the next seq), drop it as a duplicate (`seq <= last delivered`), drop
//!   it as stale (its epoch is below the newest seen), or — on a gap or a
//!   newer owner — read the store over `(last delivered, seq)` first, then
//!   deliver it. `stream_event`s are never stored, so such a refill brings
//!   only persisted events: a delta lost in a gap stays lost, and the
//!   `assistant` event that follows supersedes it (as when a ring is lost).
//! - [`Follow::store_read`] is the answer to the one read outstanding
//!   ([`Follow::pending_read`]); messages fed meanwhile are held.
//! - [`Follow::watchdog`]: a busy session whose owner has been silent for a
//!   while may have a new owner whose first message was lost; it asks for a
//!   re-check (the caller also re-reads the session's owner and epoch).
//!
//! Never performs I/O, never awaits, never reads a clock (`now` is an
//! argument), never panics on what a peer sent.

use crate::cluster::owner::{Epoch, Owner};
use crate::protocol::EventEnvelope;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A message from the session's `.ev` subject, with the owner its headers name.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveEvent {
    pub envelope: EventEnvelope,
    pub owner: Owner,
}

impl LiveEvent {
    pub fn seq(&self) -> u64 {
        self.envelope.seq
    }
}

/// What to do with one live message, given what was delivered so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The next event: hand it on.
    Deliver,
    /// Delivered already (or skipped past: at or below `last_delivered`).
    Duplicate { last_delivered: u64 },
    /// From an owner older than the newest one seen: a stale node.
    Stale { current: Epoch },
    /// Events may be missing before it (a gap, or a newer owner): read the
    /// store's persisted events in `(after, before)`, deliver them, then it.
    Refill { after: u64, before: u64 },
}

/// Why the store must be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadReason {
    /// Following starts: everything after the client's last seen seq.
    Replay,
    /// A live message skipped seqs.
    Gap,
    /// A newer owner spoke: what the previous one stored before it left.
    NewOwner,
    /// The watchdog: a busy session went quiet.
    Recheck,
}

/// A read of the store the follower needs before it goes on: the persisted
/// events with `after < seq` (and `seq < before`, when bounded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreRead {
    pub after: u64,
    /// `None`: to the end of the log.
    pub before: Option<u64>,
    pub reason: ReadReason,
}

/// Why a live message was not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    Duplicate { last_delivered: u64 },
    Stale { current: Epoch },
}

/// A live message that was not delivered (for logs, metrics and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dropped {
    pub seq: u64,
    pub owner: Owner,
    pub reason: DropReason,
}

/// What one input to [`Follow`] asks of the caller.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Step {
    /// Hand these to the session's local followers, in this order.
    pub deliver: Vec<EventEnvelope>,
    /// Live messages dropped by this input.
    pub dropped: Vec<Dropped>,
    /// A store read to make now, answered with [`Follow::store_read`].
    /// Until then, live messages are held.
    pub read: Option<StoreRead>,
}

/// The read outstanding, and what waits on it.
#[derive(Clone, Debug, PartialEq)]
enum Reading {
    Replay,
    Recheck,
    /// Deliver `then` once the store filled `(last_delivered, before)`.
    Refill {
        before: u64,
        then: Box<LiveEvent>,
    },
}

/// One session followed from another node. See the module's doc.
#[derive(Clone, Debug)]
pub struct Follow {
    /// The seq of the last event handed on (or the client's last seen seq).
    last_delivered: u64,
    /// The newest owner's epoch seen, from the store or a live message.
    epoch: Option<Epoch>,
    /// The store read outstanding, if any.
    reading: Option<Reading>,
    /// Live messages that arrived while a read was outstanding.
    held: VecDeque<LiveEvent>,
    /// When the last live message not from a stale owner arrived (or the
    /// watchdog last asked for a re-check).
    heard_at: Instant,
}

impl Follow {
    /// Start following after `after` (the client's last seen seq; 0: from
    /// the start). The caller must have subscribed to the session's events
    /// already; the returned read is the replay to make now.
    pub fn new(after: u64, now: Instant) -> (Follow, StoreRead) {
        let follow = Follow {
            last_delivered: after,
            epoch: None,
            reading: Some(Reading::Replay),
            held: VecDeque::new(),
            heard_at: now,
        };
        let read = StoreRead {
            after,
            before: None,
            reason: ReadReason::Replay,
        };
        (follow, read)
    }

    /// The seq of the last event delivered.
    #[cfg(test)]
    pub fn last_delivered(&self) -> u64 {
        self.last_delivered
    }

    /// The newest owner epoch known.
    #[cfg(test)]
    pub fn epoch(&self) -> Option<Epoch> {
        self.epoch
    }

    /// The store read outstanding (to make again after it failed).
    #[cfg(test)]
    pub fn pending_read(&self) -> Option<StoreRead> {
        let read = match self.reading.as_ref()? {
            Reading::Replay => StoreRead {
                after: self.last_delivered,
                before: None,
                reason: ReadReason::Replay,
            },
            Reading::Recheck => StoreRead {
                after: self.last_delivered,
                before: None,
                reason: ReadReason::Recheck,
            },
            Reading::Refill { before, then } => StoreRead {
                after: self.last_delivered,
                before: Some(*before),
                reason: self.refill_reason(then.owner.epoch),
            },
        };
        Some(read)
    }

    /// What `event` deserves now. Stale first: a stale owner's message is
    /// dropped whatever its seq. A newer owner's message right after the
    /// last delivered seq has nothing before it to refill: delivered.
    pub fn decide(&self, event: &LiveEvent) -> Decision {
        if let Some(current) = self.epoch
            && event.owner.epoch < current
        {
            return Decision::Stale { current };
        }
        let seq = event.seq();
        if seq <= self.last_delivered {
            Decision::Duplicate {
                last_delivered: self.last_delivered,
            }
        } else if seq == self.last_delivered + 1 {
            Decision::Deliver
        } else {
            Decision::Refill {
                after: self.last_delivered,
                before: seq,
            }
        }
    }

    /// A live message arrived at `now`.
    pub fn live(&mut self, event: LiveEvent, now: Instant) -> Step {
        let stale = self
            .epoch
            .is_some_and(|current| event.owner.epoch < current);
        if !stale {
            self.heard_at = now;
        }
        let mut step = Step::default();
        if self.reading.is_some() {
            self.held.push_back(event);
        } else {
            self.reconcile(event, &mut step);
        }
        step
    }

    /// The answer to the outstanding read: the store's persisted events in
    /// the range asked (in any order; others are ignored), and the session's
    /// epoch as the store had it (`None`: not known). With no read
    /// outstanding, the events are taken as a re-check's.
    ///
    /// Every persisted event below the answer's reach (the refill's bound,
    /// else its highest seq) is in it, so the held messages below that
    /// reach are deltas or repeats: the deltas take their places among the
    /// stored events, the repeats are dropped. Held messages beyond it are
    /// reconciled after, in their order of arrival.
    pub fn store_read(&mut self, events: Vec<EventEnvelope>, epoch: Option<Epoch>) -> Step {
        let mut step = Step::default();
        if let Some(epoch) = epoch {
            self.adopt(epoch);
        }
        let (before, then) = match self.reading.take() {
            Some(Reading::Refill { before, then }) => (Some(before), Some(then)),
            None | Some(Reading::Replay) | Some(Reading::Recheck) => (None, None),
        };
        let mut merged: Vec<EventEnvelope> = events
            .into_iter()
            .filter(|e| e.seq > self.last_delivered && before.is_none_or(|b| e.seq < b))
            .collect();
        merged.sort_by_key(|e| e.seq);
        merged.dedup_by_key(|e| e.seq);
        let reach = before.or(merged.last().map(|e| e.seq)).unwrap_or(0);
        let mut repeats = Vec::new();
        for event in std::mem::take(&mut self.held) {
            if event.seq() >= reach {
                self.held.push_back(event);
            } else if let Some(current) = self.epoch
                && event.owner.epoch < current
            {
                drop_event(&event, DropReason::Stale { current }, &mut step);
            } else if event.seq() <= self.last_delivered
                || merged.binary_search_by_key(&event.seq(), |e| e.seq).is_ok()
            {
                self.adopt(event.owner.epoch);
                repeats.push(event);
            } else {
                self.adopt(event.owner.epoch);
                let at = merged.partition_point(|e| e.seq < event.seq());
                merged.insert(at, event.envelope);
            }
        }
        if let Some(last) = merged.last() {
            self.last_delivered = last.seq;
        }
        step.deliver.extend(merged);
        for event in repeats {
            let reason = DropReason::Duplicate {
                last_delivered: self.last_delivered,
            };
            drop_event(&event, reason, &mut step);
        }
        if let Some(then) = then {
            // The hole below `then` is filled: deliver it unless it became
            // stale meanwhile (the store knows a newer owner).
            match self.decide(&then) {
                Decision::Deliver | Decision::Refill { .. } => self.deliver(*then, &mut step),
                Decision::Duplicate { last_delivered } => {
                    drop_event(&then, DropReason::Duplicate { last_delivered }, &mut step)
                }
                Decision::Stale { current } => {
                    drop_event(&then, DropReason::Stale { current }, &mut step)
                }
            }
        }
        while self.reading.is_none()
            && let Some(event) = self.held.pop_front()
        {
            self.reconcile(event, &mut step);
        }
        step
    }

    /// Called now and then: when the session is `busy` and nothing came from
    /// its owner for `quiet`, a re-check — read the store after the last
    /// delivered seq (and the session's owner and epoch), answered with
    /// [`store_read`](Self::store_read). Asks again only after another
    /// `quiet`; never while a read is outstanding.
    pub fn watchdog(&mut self, now: Instant, busy: bool, quiet: Duration) -> Option<StoreRead> {
        if !busy || self.reading.is_some() {
            return None;
        }
        if now.saturating_duration_since(self.heard_at) < quiet {
            return None;
        }
        self.heard_at = now;
        self.reading = Some(Reading::Recheck);
        Some(StoreRead {
            after: self.last_delivered,
            before: None,
            reason: ReadReason::Recheck,
        })
    }

    /// One live message, no read outstanding.
    fn reconcile(&mut self, event: LiveEvent, step: &mut Step) {
        match self.decide(&event) {
            Decision::Deliver => self.deliver(event, step),
            Decision::Duplicate { last_delivered } => {
                // A duplicate from a newer owner still says it exists.
                self.adopt(event.owner.epoch);
                drop_event(&event, DropReason::Duplicate { last_delivered }, step);
            }
            Decision::Stale { current } => {
                drop_event(&event, DropReason::Stale { current }, step);
            }
            Decision::Refill { after, before } => {
                let reason = self.refill_reason(event.owner.epoch);
                step.read = Some(StoreRead {
                    after,
                    before: Some(before),
                    reason,
                });
                self.reading = Some(Reading::Refill {
                    before,
                    then: Box::new(event),
                });
            }
        }
    }

    fn refill_reason(&self, epoch: Epoch) -> ReadReason {
        match self.epoch {
            Some(current) if epoch <= current => ReadReason::Gap,
            _ => ReadReason::NewOwner,
        }
    }

    fn deliver(&mut self, event: LiveEvent, step: &mut Step) {
        self.adopt(event.owner.epoch);
        self.last_delivered = event.seq();
        step.deliver.push(event.envelope);
    }

    fn adopt(&mut self, epoch: Epoch) {
        self.epoch = Some(self.epoch.map_or(epoch, |current| current.max(epoch)));
    }
}

fn drop_event(event: &LiveEvent, reason: DropReason, step: &mut Step) {
    step.dropped.push(Dropped {
        seq: event.seq(),
        owner: event.owner,
        reason,
    });
}
