//! What one durable step of a running session writes: its new events, how
//! far its seqs may have gone, and which accepted inputs still wait.
//!
//! Exists so that "accepted means durable" and "a seq is never handed out
//! twice" are kept by the same transaction that stores the events: an
//! input leaves the waiting list exactly when the first events of its turn
//! are stored, and a reload starts above every seq a client may have seen.
//! Plain data, the same for every backend.

use crate::protocol::{EventEnvelope, InputId, UserInput};
use std::sync::Arc;

/// One commit of a running session.
#[derive(Clone, Debug, Default)]
pub struct Commit {
    /// New events, in seq order (`stream_event`s are skipped).
    pub events: Vec<Arc<EventEnvelope>>,
    /// Seqs up to this one may be shown to clients before they are stored
    /// (stream deltas are never stored): a session loaded again continues
    /// above it. `None` keeps the stored reservation.
    pub reserve_seq: Option<u64>,
    /// The inputs accepted and not yet started, after this step: every
    /// other accepted input of the session is forgotten. `None` leaves the
    /// list as it is.
    pub waiting: Option<Vec<InputId>>,
    /// Whether the session is busy after this step (a turn open, or inputs
    /// waiting): a node that dies leaves its busy sessions to be adopted
    /// and its idle ones to be released. Kept only by a store shared by a
    /// cluster; never makes a commit of its own (see [`is_empty`](Self::is_empty)).
    pub busy: Option<bool>,
}

impl Commit {
    /// Nothing to write (`busy` alone is not worth a write: it changes
    /// with events).
    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.reserve_seq.is_none() && self.waiting.is_none()
    }
}

/// An input accepted by a session and not yet started.
#[derive(Clone, Debug, PartialEq)]
pub struct AcceptedInput {
    pub input_id: InputId,
    pub input: UserInput,
}
