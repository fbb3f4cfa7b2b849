//! The bus: one topic per session, carrying its events in `seq` order, and
//! the feeds that hand a topic's events to front ends.
//!
//! - [`topic`]: [`Topic`], a seq-checked broadcast with a replay ring;
//!   subscribe "after seq N" with no gap and no duplicate.
//! - [`packed`]: what the ring keeps of a finished reply's deltas, in a
//!   fraction of their memory.
//! - [`lifecycle`]: the runtime's topic of session lifecycle events (on a
//!   node of a cluster, the other nodes' too, and an outbox of its own).
//! - [`feed`]: the UiSink actor, which pumps a session's events into a
//!   front end, replaying from the store when the ring no longer reaches
//!   back, and cutting off a front end that falls behind.
//! - [`client`]: a network client's events, read on its connection's own
//!   task (no actor in between), a burst at a time.

pub mod client;
pub mod feed;
pub mod lifecycle;
pub mod packed;
pub mod topic;

pub use lifecycle::LifecycleTopic;
pub use topic::{RecvError, SessionTopic, SubscribeError, Subscription};
