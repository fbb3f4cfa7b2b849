//! When a node must stop trusting its own lease: the self-fence decision
//! (docs/cluster.md, "Nodes and their leases"), as a pure function of instants.
//!
//! Exists because the database renews a lease for a TTL from *its* now,
//! which comes after the node sent the heartbeat: so the lease surely
//! lasts until `sent + TTL` on the node's own monotonic clock, and no
//! longer can be assumed. A node that has had no renewal confirmed for
//! `TTL − margin` since the send of the last confirmed one fences itself:
//! it stops its sessions before any other node can adopt them (they wait
//! for the row to expire, then for a sweep). The margin covers the time
//! the stop takes and clocks running at slightly different rates.
//!
//! Pure: instants in, a decision out; never reads a clock itself.

use std::time::{Duration, Instant};

/// The lease as this node can vouch for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseClock {
    ttl: Duration,
    margin: Duration,
    /// When the send of the last heartbeat (or registration) the database
    /// confirmed started.
    confirmed_send: Instant,
}

impl LeaseClock {
    /// A lease of `ttl` whose registration was sent at `sent` (before the
    /// statement left: never later than the database's now).
    pub fn new(ttl: Duration, sent: Instant) -> Self {
        LeaseClock {
            ttl,
            margin: margin(ttl),
            confirmed_send: sent,
        }
    }

    /// The database renewed the lease in answer to a heartbeat sent at
    /// `sent`.
    pub fn renewed(&mut self, sent: Instant) {
        self.confirmed_send = self.confirmed_send.max(sent);
    }

    /// From this instant on the node must consider its lease lost.
    pub fn deadline(&self) -> Instant {
        self.confirmed_send + self.ttl.saturating_sub(self.margin)
    }

    /// Whether, at `now`, the node must fence itself.
    pub fn lapsed(&self, now: Instant) -> bool {
        now >= self.deadline()
    }
}

/// The part of the TTL kept in hand: a fifth of it, at least 200 ms (and
/// at most half of it).
pub fn margin(ttl: Duration) -> Duration {
    (ttl / 5).max(Duration::from_millis(200)).min(ttl / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TTL: Duration = Duration::from_secs(10);

    #[test]
    fn the_lease_is_trusted_until_ttl_minus_margin_after_the_last_confirmed_send() {
        let t0 = Instant::now();
        let clock = LeaseClock::new(TTL, t0);
        assert!(!clock.lapsed(t0));
        assert!(!clock.lapsed(t0 + Duration::from_millis(7999)));
        assert!(
            clock.lapsed(t0 + Duration::from_secs(8)),
            "10 s − 2 s margin"
        );
        assert!(clock.lapsed(t0 + Duration::from_secs(60)));
    }

    #[test]
    fn a_renewal_counts_from_when_its_heartbeat_was_sent_not_answered() {
        let t0 = Instant::now();
        let mut clock = LeaseClock::new(TTL, t0);
        let sent = t0 + Duration::from_secs(3);
        // The answer came 4 s later: the lease counts from the send.
        clock.renewed(sent);
        assert_eq!(clock.deadline(), sent + Duration::from_secs(8));
        assert!(clock.lapsed(sent + Duration::from_secs(8)));
        assert!(!clock.lapsed(sent + Duration::from_millis(7999)));
    }

    #[test]
    fn a_late_answer_to_an_older_heartbeat_never_moves_the_deadline_back() {
        let t0 = Instant::now();
        let mut clock = LeaseClock::new(TTL, t0);
        clock.renewed(t0 + Duration::from_secs(6));
        clock.renewed(t0 + Duration::from_secs(3));
        assert_eq!(clock.deadline(), t0 + Duration::from_secs(14));
    }

    #[test]
    fn the_margin_is_a_fifth_of_the_ttl_within_bounds() {
        assert_eq!(margin(Duration::from_secs(10)), Duration::from_secs(2));
        assert_eq!(margin(Duration::from_secs(3)), Duration::from_millis(600));
        assert_eq!(
            margin(Duration::from_millis(500)),
            Duration::from_millis(200)
        );
        assert_eq!(
            margin(Duration::from_millis(300)),
            Duration::from_millis(150)
        );
    }
}
