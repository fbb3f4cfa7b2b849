//! Where a session's events come from, for the bus's reader: the ones
//! still in memory (and live ones) from a topic subscription, older
//! persisted ones from a store.
//!
//! The [`EventSource`] is the seam for sessions that live elsewhere: a
//! session of this process is its own source (its handle: the topic, then
//! the store); a session driven by another node is followed through a
//! source inside this crate that mirrors its events into a local topic
//! (subscriptions come from topics, which only this crate makes).

use super::{SubscribeError, Subscription};
use crate::protocol::{EventEnvelope, SessionId};
use crate::store::StoreError;

/// Where a session's events come from: the ones still in memory (and live
/// ones) from a topic subscription, older persisted ones from a store.
#[async_trait::async_trait]
pub trait EventSource: Send + Sync + 'static {
    /// The session whose events these are.
    fn session_id(&self) -> &SessionId;

    /// Events after `after_seq` that the topic's ring holds, then live ones.
    fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError>;

    /// Stored events with `after_seq < seq <= up_to`.
    async fn stored_events(
        &self,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError>;
}

/// A shared source is a source (a door held as `Arc<dyn SessionDoor>`).
#[async_trait::async_trait]
impl<T: EventSource + ?Sized> EventSource for std::sync::Arc<T> {
    fn session_id(&self) -> &SessionId {
        (**self).session_id()
    }

    fn subscribe(&self, after_seq: u64) -> Result<Subscription<EventEnvelope>, SubscribeError> {
        (**self).subscribe(after_seq)
    }

    async fn stored_events(
        &self,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        (**self).stored_events(after_seq, up_to).await
    }
}
