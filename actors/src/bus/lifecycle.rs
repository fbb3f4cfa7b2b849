//! The runtime's topic of session lifecycle events: sessions created, busy,
//! idle, closed and deleted, for every front end that lists sessions.
//!
//! In memory only (not stored): a client that reconnects resumes from the
//! ring, and after a restart from the new run's first event.

use super::topic::{Sequenced, Topic};
use crate::protocol::{LifecycleEvent, LifecycleKind};

impl Sequenced for LifecycleEvent {
    fn seq(&self) -> u64 {
        self.seq
    }
}

/// The runtime's topic of session lifecycle events.
pub type LifecycleTopic = Topic<LifecycleEvent>;

impl Topic<LifecycleEvent> {
    /// A lifecycle topic whose seqs go on rising across restarts: the first
    /// is the start time in microseconds since the Unix epoch. A browser's
    /// `EventSource` resends the last id it saw after the daemon restarts;
    /// with seqs restarting at 1 it would be told to skip the new run's
    /// first events.
    pub fn starting_now() -> Self {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_micros() as u64);
        Self::new(micros)
    }

    /// Publish that `session_id` went through `kind`.
    pub fn announce(&self, session_id: &crate::protocol::SessionId, kind: LifecycleKind) {
        let session_id = session_id.clone();
        self.publish_next(|seq| LifecycleEvent {
            seq,
            session_id,
            kind,
        });
    }
}
