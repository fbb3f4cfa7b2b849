//! Fencing: a session taken from this node, on a node of a cluster.
//!
//! It happens in two ways: a commit or an accepted input refused as
//! [`StoreError::Fenced`] (another node claimed the session, or this
//! node's lease lapsed), or the node fencing itself (its lease task
//! cancels the node's `fence` token: `cluster/ownership/heartbeat.rs`).
//! The AgentLoop then stops the session here at once: the refused events
//! are never published, model calls and tools are cancelled (their tokens
//! are children of the fence token), nothing more is committed, and
//! watchers get one unstored `error` event (kind `store`, [`last_word`]) —
//! only when its seq lies inside this owner's stored reservation, so it
//! can never collide with the new owner's seqs — before the stream ends
//! (docs/cluster.md, "Claims and fencing").
//!
//! The pieces of that the actor calls; it keeps its own state (`fenced`,
//! asked before it acts) and stops itself.

use crate::protocol::{AgentMessage, ErrorEvent, ErrorKind, EventEnvelope, SessionId};
use crate::store::{Commit, SessionStore, StoreError};
use std::future::Future;
use tokio_util::sync::CancellationToken;

/// Why a session stops when its node fenced itself.
pub const NODE_FENCED: &str = "this node fenced itself: it could not renew its lease in time";

/// The node fencing itself stops a session even while it waits for
/// nothing (running calls stop with their tokens at once): a task that
/// runs `fenced` once `fence` is cancelled, unless `stopped` (the session
/// ended) comes first.
pub fn watch<F>(
    fence: CancellationToken,
    stopped: CancellationToken,
    fenced: impl FnOnce() -> F + Send + 'static,
) where
    F: Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        tokio::select! {
            () = fence.cancelled() => fenced().await,
            () = stopped.cancelled() => {}
        }
    });
}

/// `commit` stored, unless the node fences itself first.
pub async fn commit_unless_fenced(
    fence: &CancellationToken,
    store: &dyn SessionStore,
    id: &SessionId,
    commit: Commit,
) -> Result<(), StoreError> {
    tokio::select! {
        biased;
        () = fence.cancelled() => Err(StoreError::Fenced {
            id: id.clone(),
            reason: NODE_FENCED.into(),
        }),
        committed = store.commit(id, commit) => committed,
    }
}

/// What the session's watchers are told last, as event `seq`: only when
/// `seq` is inside this owner's stored reservation (`reserved`), so the
/// next owner, who starts above it, never gives the same seq again.
pub fn last_word(id: &SessionId, seq: u64, reserved: u64, reason: &str) -> Option<EventEnvelope> {
    (seq <= reserved).then(|| EventEnvelope {
        session_id: id.clone(),
        seq,
        turn_id: None,
        at: chrono::Utc::now(),
        message: AgentMessage::Error(ErrorEvent {
            kind: ErrorKind::Store,
            message: format!(
                "this node stopped driving the session ({reason}); nothing after the last \
                 stored event was kept here — reconnect to follow it where it runs now"
            ),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_word_is_said_only_inside_the_owners_reservation() {
        let id = SessionId("s".into());
        let inside = last_word(&id, 7, 7, "lease lapsed").expect("inside the reservation");
        assert_eq!(inside.seq, 7);
        let AgentMessage::Error(error) = &inside.message else {
            panic!("an error event: {inside:?}");
        };
        assert_eq!(error.kind, ErrorKind::Store);
        assert!(
            error.message.contains("(lease lapsed)"),
            "{}",
            error.message
        );
        assert!(
            last_word(&id, 8, 7, "lease lapsed").is_none(),
            "past it: the next owner's"
        );
    }
}
