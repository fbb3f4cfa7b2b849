//! The state of a node's connection to NATS, to watch.
//!
//! Exists because losing NATS is a lease problem (docs/cluster.md, "The connection"):
//! a node that cannot be reached for its sessions' inputs, and cannot
//! publish their events, must release them once it has been cut off for
//! longer than TTL/2. The client reconnects by itself and its subscriptions
//! simply go quiet meanwhile, so a subscriber cannot tell an idle session
//! from a lost connection; [`Link`] can. Fed by the client's connection
//! events (`live.rs`); never decides anything about sessions itself.

use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// Where the connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkState {
    /// Connected to a server: publishing and subscriptions work.
    Connected,
    /// Lost at `since`; the client is reconnecting, and the subscriptions
    /// resume when it succeeds (what was published meanwhile is lost).
    Disconnected { since: Instant },
    /// Closed for good (drained, or the client is gone): nothing more will
    /// arrive.
    Closed,
}

/// A watch on one connection's [`LinkState`]; cheap to clone.
#[derive(Clone, Debug)]
pub struct Link {
    state: watch::Receiver<LinkState>,
}

impl Link {
    /// The connection's state now.
    pub fn state(&self) -> LinkState {
        *self.state.borrow()
    }

    /// How long the connection has been lost at `now` (`None`: connected;
    /// a closed connection counts as lost for ever).
    pub fn lost_for(&self, now: Instant) -> Option<Duration> {
        match self.state() {
            LinkState::Connected => None,
            LinkState::Disconnected { since } => Some(now.saturating_duration_since(since)),
            LinkState::Closed => Some(Duration::MAX),
        }
    }

    /// Waits until the state is one `wanted` accepts (at once if it is now),
    /// and returns it. A connection whose client is gone reads as closed.
    pub async fn wait_for(&mut self, wanted: impl Fn(&LinkState) -> bool) -> LinkState {
        match self.state.wait_for(|s| wanted(s)).await {
            Ok(state) => *state,
            Err(_) => LinkState::Closed,
        }
    }

    /// Waits for the next change of state and returns the new one (closed
    /// when the client is gone).
    pub async fn changed(&mut self) -> LinkState {
        match self.state.changed().await {
            Ok(()) => *self.state.borrow_and_update(),
            Err(_) => LinkState::Closed,
        }
    }
}

/// The writing side, held by the client's event callback.
#[derive(Clone, Debug)]
pub(super) struct LinkWriter {
    state: std::sync::Arc<watch::Sender<LinkState>>,
}

impl LinkWriter {
    /// A connection that has just been made.
    pub(super) fn connected() -> (LinkWriter, Link) {
        let (tx, rx) = watch::channel(LinkState::Connected);
        (
            LinkWriter {
                state: std::sync::Arc::new(tx),
            },
            Link { state: rx },
        )
    }

    pub(super) fn set_connected(&self) {
        self.state.send_if_modified(|s| {
            let changed = *s != LinkState::Connected && *s != LinkState::Closed;
            if changed {
                *s = LinkState::Connected;
            }
            changed
        });
    }

    /// Lost now; a connection already lost keeps the instant it was lost.
    pub(super) fn set_disconnected(&self, now: Instant) {
        self.state.send_if_modified(|s| {
            let changed = *s == LinkState::Connected;
            if changed {
                *s = LinkState::Disconnected { since: now };
            }
            changed
        });
    }

    pub(super) fn set_closed(&self) {
        self.state.send_if_modified(|s| {
            let changed = *s != LinkState::Closed;
            *s = LinkState::Closed;
            changed
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_connection_keeps_the_instant_it_was_lost() {
        let (writer, link) = LinkWriter::connected();
        assert_eq!(link.state(), LinkState::Connected);
        assert_eq!(link.lost_for(Instant::now()), None);
        let t0 = Instant::now();
        writer.set_disconnected(t0);
        writer.set_disconnected(t0 + Duration::from_secs(1));
        assert_eq!(link.state(), LinkState::Disconnected { since: t0 });
        assert_eq!(
            link.lost_for(t0 + Duration::from_secs(5)),
            Some(Duration::from_secs(5))
        );
        writer.set_connected();
        assert_eq!(link.lost_for(t0 + Duration::from_secs(6)), None);
    }

    #[tokio::test]
    async fn a_closed_connection_stays_closed_and_counts_as_lost_for_ever() {
        let (writer, mut link) = LinkWriter::connected();
        writer.set_closed();
        writer.set_connected();
        writer.set_disconnected(Instant::now());
        assert_eq!(link.state(), LinkState::Closed);
        assert_eq!(link.lost_for(Instant::now()), Some(Duration::MAX));
        assert_eq!(link.changed().await, LinkState::Closed);
    }

    #[tokio::test]
    async fn watchers_see_each_change_and_a_gone_client_as_closed() {
        let (writer, mut link) = LinkWriter::connected();
        let mut other = link.clone();
        writer.set_disconnected(Instant::now());
        assert!(matches!(
            link.changed().await,
            LinkState::Disconnected { .. }
        ));
        writer.set_connected();
        assert_eq!(link.changed().await, LinkState::Connected);
        assert_eq!(
            other.wait_for(|s| *s == LinkState::Connected).await,
            LinkState::Connected
        );
        drop(writer);
        assert_eq!(link.changed().await, LinkState::Closed);
        assert_eq!(
            other.wait_for(|s| *s == LinkState::Closed).await,
            LinkState::Closed
        );
    }
}
