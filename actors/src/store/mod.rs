//! The session store: sessions and their append-only event logs, behind
//! one trait, [`SessionStore`].
//!
//! Exists so that sessions outlive the process: every persisted event (all
//! but `stream_event`) is appended as it is published, and a session can be
//! listed, resumed (its log folded back into a state), forked, deleted,
//! exported and imported. The trait is the seam a backend plugs into; the
//! embedded one is SQLite ([`sqlite`]). Everything above this folder holds
//! an `Arc<dyn SessionStore>` and never sees a backend.
//!
//! Rules every backend keeps:
//! - never rewrites history: an appended event is never updated or replaced
//!   (a seq that is not after the stored log is refused), and forks and
//!   imports create new sessions;
//! - never stores a `stream_event` and never anything secret (events hold
//!   none);
//! - never panics on what it reads: undecodable data is
//!   [`StoreError::Corrupt`];
//! - leases ([`lease`]) make sure only one process drives a given session.
//!
//! - [`record`]: what is kept about a session besides its log, and paging.
//! - [`lease`]: which process owns a session ([`Owner`]).
//! - [`document`]: the export format ([`SessionDocument`]), pure.
//! - [`error`]: the one error type, [`StoreError`].

pub mod document;
pub mod error;
pub mod lease;
pub mod record;
pub mod sqlite;

#[cfg(test)]
mod tests;

pub use document::SessionDocument;
pub use error::StoreError;
pub use lease::Owner;
pub use record::{ListCursor, ListPage, NewSession, SessionRecord};

use crate::protocol::{EventEnvelope, SessionId};
use std::sync::Arc;

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
    /// after the stored log; `stream_event`s are skipped.
    async fn append(
        &self,
        id: &SessionId,
        events: Vec<Arc<EventEnvelope>>,
    ) -> Result<(), StoreError>;

    /// The events with `after_seq < seq <= up_to`, in seq order (replay).
    async fn load_events(
        &self,
        id: &SessionId,
        after_seq: u64,
        up_to: Option<u64>,
    ) -> Result<Vec<EventEnvelope>, StoreError>;

    /// Sessions, most recently updated first (a page of them, as `query`
    /// says).
    async fn list(&self, query: ListPage) -> Result<Vec<SessionRecord>, StoreError>;

    /// One session's record, if it exists.
    async fn get(&self, id: &SessionId) -> Result<Option<SessionRecord>, StoreError>;

    /// An exact id, or the one id a prefix starts (like git).
    async fn resolve(&self, prefix: &str) -> Result<SessionId, StoreError>;

    /// Copy a session's log up to `at_seq` (default: its last seq) into a
    /// new session `new_id`, leased by `owner` if given. The parent is
    /// untouched.
    async fn fork(
        &self,
        id: &SessionId,
        at_seq: Option<u64>,
        new_id: SessionId,
        owner: Option<Owner>,
    ) -> Result<SessionRecord, StoreError>;

    /// Delete a session and its log, unless a live process other than
    /// `owner` holds it.
    async fn delete(&self, id: &SessionId, owner: Owner) -> Result<(), StoreError>;

    /// Name a session (a title given when it is created; otherwise the first
    /// query names it).
    async fn set_title(&self, id: &SessionId, title: &str) -> Result<(), StoreError>;

    /// A session as an export document.
    async fn export(&self, id: &SessionId) -> Result<SessionDocument, StoreError>;

    /// An export document as a new session `new_id` (events re-stamped with
    /// it, seqs kept), leased by `owner` if given.
    async fn import(
        &self,
        document: SessionDocument,
        new_id: SessionId,
        owner: Option<Owner>,
    ) -> Result<SessionRecord, StoreError>;

    /// Finish what is pending and close the backend; later calls fail.
    async fn close(&self);
}
