//! A session's topic mirrored from elsewhere, for a follower outside this
//! crate: a front end attached to an `agentbus serve` daemon publishes what
//! it reads from the daemon's event stream, and readers subscribe to it as
//! to any session's topic.
//!
//! Exists so that a session another process drives is a
//! [`SessionDoor`](crate::session::SessionDoor) like one driven here:
//! subscriptions come only from topics, and only this crate makes them.
//! The follower must keep a mirror topic's one rule (`Topic::mirror`): seqs
//! only go up, and no persisted event is skipped (a stream resumed after
//! its last seq keeps it). Never blocks the follower: a reader that falls
//! behind rejoins like any subscriber.

use super::{SessionTopic, SubscribeError, Subscription};
use crate::protocol::EventEnvelope;
use std::sync::Arc;

/// A mirror of one session's events; clones share it.
#[derive(Clone)]
pub struct Mirror(Arc<SessionTopic>);

impl Mirror {
    /// A mirror whose first event will have a seq above `after_seq`.
    pub fn new(after_seq: u64) -> Mirror {
        Mirror(Arc::new(SessionTopic::mirror(after_seq)))
    }

    /// Hand `event` to every reader. `false` (and nothing published) when
    /// its seq is not above the last one's: a repeat.
    pub fn publish(&self, event: Arc<EventEnvelope>) -> bool {
        self.0.publish(event).is_ok()
    }

    /// Events after `after_seq` that the mirror's ring holds, then live
    /// ones.
    pub fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError> {
        self.0.subscribe(after_seq)
    }

    /// No more events: every reader's stream ends after what it has.
    pub fn close(&self) {
        self.0.close();
    }
}
