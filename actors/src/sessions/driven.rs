//! What the SessionManager tells about the sessions this process drives:
//! one started (created, loaded, adopted), one stopped (released,
//! unloaded, deleted, fenced, drained).
//!
//! Exists so that a node of a cluster can serve the sessions it drives to
//! the other nodes (the live plane's relay and input route, in
//! `cluster/driven.rs`) without the SessionManager knowing about NATS.
//! Without `[cluster]` nobody listens.

use crate::protocol::SessionId;
use crate::session::SessionHandle;

/// Told about each session this process starts and stops driving.
#[async_trait::async_trait]
pub trait DrivenSessions: Send + Sync + 'static {
    /// Session `handle` now runs here. Called in the SessionManager's
    /// handler: must not wait (start what needs waiting on a task).
    fn started(&self, handle: &SessionHandle);

    /// Session `id` no longer runs here: returns once what
    /// [`started`](Self::started) began for it has stopped.
    async fn stopped(&self, id: &SessionId);
}
