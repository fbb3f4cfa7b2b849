//! The bus: one topic per session, carrying its events in `seq` order, and
//! the feeds that hand a topic's events to front ends.
//!
//! - [`topic`]: [`Topic`], a seq-checked broadcast with a replay ring;
//!   subscribe "after seq N" with no gap and no duplicate.
//! - [`packed`]: what the ring keeps of a finished reply's deltas, in a
//!   fraction of their memory.
//! - [`mirror`]: a session's topic mirrored by a follower outside this
//!   crate (a front end attached to a daemon).
//! - [`lifecycle`]: the runtime's topic of session lifecycle events (on a
//!   node of a cluster, the other nodes' too, and an outbox of its own).
//! - [`reader`]: the one way to read a topic in seq order, with a policy
//!   for what the ring no longer holds (from the store, cut off, or
//!   skipped); a network client reads with it on its connection's own task
//!   (no actor in between), a burst at a time, and so does the cluster's
//!   relay.
//! - [`source`]: [`EventSource`](source::EventSource), where a reader's
//!   events come from: a topic, then a store (a session here, or one
//!   mirrored from another node).
//! - [`feed`]: the UiSink actor, which pumps a session's events into a
//!   front end through a reader that refills from the store.

pub mod feed;
pub mod lifecycle;
pub mod mirror;
pub mod packed;
pub mod reader;
pub mod source;
pub mod topic;

pub use lifecycle::LifecycleTopic;
pub use topic::{RecvError, SessionTopic, SubscribeError, Subscription};
