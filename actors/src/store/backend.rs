//! [`SessionStore`]: the operations every store backend offers, and the
//! rules (in the store's module doc) every backend keeps.

use super::checkpoint::{Checkpoint, CheckpointUsage, Collected};
use super::{
    AcceptedInput, Commit, ListPage, NewSession, Owner, SessionDocument, SessionRecord, StoreError,
};
use crate::protocol::{EventEnvelope, SessionId};

/// The operations every store backend offers. Each is one durable step: it
/// has happened (and is visible to every later call) when it returns `Ok`.
#[async_trait::async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Insert a new session, leased by `owner` (status active).
    async fn create(&self, new: NewSession, owner: Owner) -> Result<SessionRecord, StoreError>;

    /// Take a session's lease — free, already `owner`'s, or held by a
    /// process that is gone — and get its record and whole log in seq
    /// order. `StoreError::Busy` if a live process holds it.
    async fn acquire(
        &self,
        id: &SessionId,
        owner: Owner,
    ) -> Result<(SessionRecord, Vec<EventEnvelope>), StoreError>;

    /// Give up the lease, if `owner` holds it (status idle).
    async fn release(&self, id: &SessionId, owner: Owner) -> Result<(), StoreError>;

    /// Append a batch of events in one transaction. Every seq must come
    /// after the stored log; `stream_event`s are skipped. (A running
    /// session uses [`commit`](Self::commit).)
    #[cfg(test)]
    async fn append(
        &self,
        id: &SessionId,
        events: Vec<std::sync::Arc<EventEnvelope>>,
    ) -> Result<(), StoreError> {
        let commit = Commit {
            events,
            ..Commit::default()
        };
        self.commit(id, commit).await
    }

    /// Write one step of a running session in one transaction: its events
    /// (as [`append`](Self::append)), its seq reservation (never lowered)
    /// and its waiting inputs.
    async fn commit(&self, id: &SessionId, commit: Commit) -> Result<(), StoreError>;

    /// Keep an input session `id` accepted, before it is acknowledged: it
    /// waits until a commit no longer lists it.
    async fn accept_input(&self, id: &SessionId, input: AcceptedInput) -> Result<(), StoreError>;

    /// The inputs session `id` accepted and has not started, in input id
    /// order (what a crash left).
    async fn waiting_inputs(&self, id: &SessionId) -> Result<Vec<AcceptedInput>, StoreError>;

    /// The sessions with inputs waiting.
    async fn sessions_with_waiting_inputs(&self) -> Result<Vec<SessionId>, StoreError>;

    /// The events with `after_seq < seq <= up_to`, in seq order (replay).
    async fn load_events(
        &self,
        id: &SessionId,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError>;

    /// The events with `seq < before` whose type (`"system"`, `"result"`,
    /// ...) is one of `types`, in seq order: what a client's state comes
    /// from, without the rest of a long log. (A backend that can select
    /// by type does; this one reads them all.)
    async fn load_events_of_types(
        &self,
        id: &SessionId,
        before: u64,
        types: &'static [&'static str],
    ) -> Result<Vec<EventEnvelope>, StoreError> {
        let mut events = self
            .load_events(id, 0, Some(before.saturating_sub(1)))
            .await?;
        events.retain(|event| types.contains(&event.message.type_name()));
        Ok(events)
    }

    /// Sessions, most recently updated first (a page of them, as `query`
    /// says; only those `query.visible_to` may see, when it names a
    /// token).
    async fn list(&self, query: ListPage) -> Result<Vec<SessionRecord>, StoreError>;

    /// One session's record, if it exists.
    async fn get(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError>;

    /// An exact id, or the one id a prefix starts (like git).
    async fn resolve(&self, prefix: &str) -> Result<SessionId, StoreError>;

    /// Copy a session's log up to `at_seq` (default: its last seq) into a
    /// new session `new_id`, leased by `owner` if given, created by
    /// `created_by` (whoever forked it; the parent's viewers are not
    /// copied). The parent is untouched. Checkpoints are not copied.
    async fn fork(
        &self,
        id: &SessionId,
        at_seq: Option<u64>,
        new_id: SessionId,
        owner: Option<Owner>,
        created_by: Option<String>,
    ) -> Result<SessionRecord, StoreError>;

    /// Delete a session and its log, unless a live process other than
    /// `owner` holds it. Its checkpoints go with it, and so do the blobs
    /// only they referred to (whenever they were used).
    async fn delete(&self, id: &SessionId, owner: Owner) -> Result<(), StoreError>;

    /// Name a session (a title given when it is created; otherwise the first
    /// query names it).
    async fn set_title(&self, id: &SessionId, title: &str) -> Result<(), StoreError>;

    /// Give a session exactly these viewers (token names that may follow
    /// it; duplicates count once), replacing the ones it had.
    /// [`StoreError::NotFound`] when there is no such session.
    async fn set_viewers(&self, id: &SessionId, viewers: &[String]) -> Result<(), StoreError>;

    /// A session as an export document.
    async fn export(&self, id: &SessionId) -> Result<SessionDocument, StoreError>;

    /// An export document as a new session `new_id` (events re-stamped with
    /// it, seqs kept), leased by `owner` if given; created by no token.
    async fn import(
        &self,
        document: SessionDocument,
        new_id: SessionId,
        owner: Option<Owner>,
    ) -> Result<SessionRecord, StoreError>;

    /// Of these blob hashes, those the store does not hold. The ones it
    /// holds are marked used now (unless marked within
    /// [`MARK_AFTER`](super::checkpoint::MARK_AFTER)), so a collection
    /// within the grace period keeps them.
    async fn missing_blobs(&self, hashes: Vec<String>) -> Result<Vec<String>, StoreError>;

    /// Keep these blobs (hash, bytes); one already held is only marked used
    /// now. The caller computed each hash (SHA-256, lower-case hex).
    async fn put_blobs(&self, blobs: Vec<(String, Vec<u8>)>) -> Result<(), StoreError>;

    /// A blob's bytes, if held.
    async fn blob(&self, hash: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Keep a checkpoint (its blobs were put first).
    async fn add_checkpoint(&self, checkpoint: Checkpoint) -> Result<(), StoreError>;

    /// A session's checkpoints, oldest first.
    async fn checkpoints(&self, id: &SessionId) -> Result<Vec<Checkpoint>, StoreError>;

    /// Mark these checkpoints of session `id` undone.
    async fn mark_undone(&self, id: &SessionId, ids: Vec<String>) -> Result<(), StoreError>;

    /// Forget these checkpoints of session `id` (the oldest, over the
    /// session's limit). Their blobs stay until collected.
    async fn drop_checkpoints(&self, id: &SessionId, ids: Vec<String>) -> Result<(), StoreError>;

    /// What the checkpoint tables hold.
    async fn checkpoint_usage(&self) -> Result<CheckpointUsage, StoreError>;

    /// Delete every blob no checkpoint refers to and not marked used since
    /// `unused_since`.
    async fn collect_blobs(
        &self,
        unused_since: chrono::DateTime<chrono::Utc>,
    ) -> Result<Collected, StoreError>;

    /// Finish what is pending and close the backend; later calls fail.
    async fn close(&self);
}
