//! What happens to sessions as a whole, on the runtime's lifecycle topic
//! (`GET /v1/events`): one event per change, with its own gap-free `seq`.

use super::SessionId;
use serde::{Deserialize, Serialize};

/// One change of one session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LifecycleEvent {
    pub seq: u64,
    pub session_id: SessionId,
    pub kind: LifecycleKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleKind {
    /// A new session exists.
    Created,
    /// A turn or command started running.
    Busy,
    /// Nothing runs and nothing is queued any more.
    Idle,
    /// Unloaded from memory (it stays stored).
    Closed,
    /// Deleted from the store.
    Deleted,
}
