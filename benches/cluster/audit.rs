//! Events lost, duplicated or made up: what one client received of a
//! session, compared with the session's `events` table, which is the
//! truth. Every event but the `stream_event`s is persisted, so a client
//! that followed a session from its start must have received each row of
//! the table exactly once, identical, and nothing else — but for the one
//! unstored `error` a node that stops driving a session tells its own
//! clients.
//!
//! Pure: it compares what it is given and never reads the database.

use crate::client::Seen;
use crate::harness::Stored;
use serde_json::Value;
use std::collections::BTreeMap;

/// What went wrong with one client's events (seqs), if anything.
#[derive(Debug, Default)]
pub struct Finding {
    /// In the table, never received.
    pub lost: Vec<u64>,
    /// Received more than once (each extra copy once).
    pub duplicated: Vec<u64>,
    /// Received as a persisted event, not in the table.
    pub not_stored: Vec<u64>,
    /// Received, but not as the table holds it.
    pub differing: Vec<u64>,
    /// Unstored `error` events of a node that stopped driving the session.
    pub told_by_a_fenced_node: usize,
}

impl Finding {
    pub fn is_clean(&self) -> bool {
        self.lost.is_empty()
            && self.duplicated.is_empty()
            && self.not_stored.is_empty()
            && self.differing.is_empty()
    }
}

/// Totals over many clients.
#[derive(Clone, Copy, Debug, Default)]
pub struct Audit {
    pub clients: usize,
    /// Clients whose stream ended and who reconnected (to another node
    /// when theirs died).
    pub reconnected_clients: usize,
    pub reconnects: u64,
    /// Rows of the tables the clients were checked against.
    pub events_checked: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub not_stored: u64,
    pub differing: u64,
    /// Events whose seq was not above the client's last one.
    pub out_of_order: u64,
    pub told_by_a_fenced_node: u64,
    /// Sessions whose log breaks an invariant (see [`log_problems`]).
    pub inconsistent_logs: u64,
}

impl Audit {
    /// Counts one client's `finding` against a table of `rows` rows.
    pub fn count(&mut self, seen: &Seen, rows: usize, finding: &Finding) {
        self.clients += 1;
        if seen.reconnects > 0 {
            self.reconnected_clients += 1;
        }
        self.reconnects += u64::from(seen.reconnects);
        self.events_checked += rows as u64;
        self.lost += finding.lost.len() as u64;
        self.duplicated += finding.duplicated.len() as u64;
        self.not_stored += finding.not_stored.len() as u64;
        self.differing += finding.differing.len() as u64;
        self.out_of_order += u64::from(seen.out_of_order);
        self.told_by_a_fenced_node += finding.told_by_a_fenced_node as u64;
    }

    pub fn add(&mut self, other: &Audit) {
        self.clients += other.clients;
        self.reconnected_clients += other.reconnected_clients;
        self.reconnects += other.reconnects;
        self.events_checked += other.events_checked;
        self.lost += other.lost;
        self.duplicated += other.duplicated;
        self.not_stored += other.not_stored;
        self.differing += other.differing;
        self.out_of_order += other.out_of_order;
        self.told_by_a_fenced_node += other.told_by_a_fenced_node;
        self.inconsistent_logs += other.inconsistent_logs;
    }

    /// Nothing lost, duplicated, made up, changed or out of order.
    pub fn is_clean(&self) -> bool {
        self.lost == 0
            && self.duplicated == 0
            && self.not_stored == 0
            && self.differing == 0
            && self.out_of_order == 0
            && self.inconsistent_logs == 0
    }
}

/// Compares what a client that followed the session from its first event
/// received with the session's `table`.
pub fn check_client(table: &[Stored], seen: &Seen) -> Finding {
    let mut finding = Finding::default();
    let mut received: BTreeMap<u64, Value> = BTreeMap::new();
    for (seq, data) in &seen.persisted {
        let event: Value = serde_json::from_str(data).unwrap_or(Value::Null);
        if told_by_a_fenced_node(&event) {
            finding.told_by_a_fenced_node += 1;
            continue;
        }
        if received.insert(*seq, event).is_some() {
            finding.duplicated.push(*seq);
        }
    }
    for row in table {
        match received.get(&row.seq) {
            None => finding.lost.push(row.seq),
            Some(event) if *event != row.body => finding.differing.push(row.seq),
            Some(_) => {}
        }
    }
    let stored: std::collections::BTreeSet<u64> = table.iter().map(|row| row.seq).collect();
    finding.not_stored = received
        .keys()
        .filter(|seq| !stored.contains(seq))
        .copied()
        .collect();
    finding
}

/// The `error` a node that lost a session tells its own clients: never
/// stored (its seq is inside that node's reservation).
fn told_by_a_fenced_node(event: &Value) -> bool {
    event["type"] == "error"
        && event["message"]
            .as_str()
            .is_some_and(|m| m.contains("stopped driving the session"))
}

/// The log's invariants across owners, as the cluster tests check them
/// (`assert_log_consistent`), but said rather than asserted: seqs
/// increase, the epoch never goes back, and each later epoch opens with
/// `owner_changed`.
pub fn log_problems(log: &[Stored]) -> Vec<String> {
    let mut problems = Vec::new();
    for pair in log.windows(2) {
        if pair[0].seq >= pair[1].seq {
            problems.push(format!("seq {} after seq {}", pair[1].seq, pair[0].seq));
        }
        if pair[0].epoch > pair[1].epoch {
            problems.push(format!(
                "epoch goes back: seq {} epoch {} then seq {} epoch {}",
                pair[0].seq, pair[0].epoch, pair[1].seq, pair[1].epoch
            ));
        }
        if pair[1].epoch > pair[0].epoch && pair[1].epoch > 1 && !pair[1].is_owner_changed() {
            problems.push(format!(
                "epoch {} opens with a {} event (seq {}), not owner_changed",
                pair[1].epoch, pair[1].kind, pair[1].seq
            ));
        }
    }
    problems
}
