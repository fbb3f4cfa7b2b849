//! What an AgentLoop has told the store, and what it still owes it.
//!
//! Exists so that the AgentLoop's promises about the store are kept
//! in one place: a seq is never handed out twice (each commit reserves seqs
//! ahead of what is published, since stream deltas get seqs but are never
//! stored), an accepted input stays stored until the commit that starts it,
//! and events a failed commit could not store go into the next one (so the
//! log is whole once a full disk has space again); and a store shared by a
//! cluster learns whether the session is busy (a turn open or inputs
//! waiting) with the events that change it. Plain bookkeeping: it
//! builds [`Commit`]s and is told how they went; it never calls the store.

use crate::protocol::{EventEnvelope, InputId};
use crate::store::Commit;
use std::sync::Arc;

/// How many seqs past the last one published a reservation covers: one
/// store write per this many stream deltas.
pub const SEQ_RESERVATION: u64 = 1024;

/// One session's account with the store.
#[derive(Debug)]
pub struct Journal {
    /// Seqs up to this one may be published: the store's reservation.
    reserved_seq: u64,
    /// The inputs the store holds as waiting (accepted, not started).
    stored_waiting: Vec<InputId>,
    /// Persisted events published while the store failed.
    unsaved: Vec<Arc<EventEnvelope>>,
    /// The last commit failed.
    failing: bool,
    /// Whether the store has the session as busy (`None`: not told yet).
    stored_busy: Option<bool>,
}

/// How a commit went, as the AgentLoop must tell it.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Stored; nothing to say.
    Saved,
    /// Stored, after failures: `late` events were saved late.
    Recovered { late: usize },
    /// Not stored, the first failure of an outage (because of `reason`):
    /// say so once.
    FirstFailure { reason: String },
    /// Not stored, again.
    StillFailing,
}

impl Journal {
    /// A session that continues after seq `last_seq` (its reservation
    /// included), with `waiting` inputs stored.
    pub fn new(last_seq: u64, waiting: Vec<InputId>) -> Self {
        Journal {
            reserved_seq: last_seq,
            stored_waiting: waiting,
            unsaved: Vec::new(),
            failing: false,
            stored_busy: None,
        }
    }

    /// Seqs up to this one may be published (the store has reserved them).
    pub fn reserved_seq(&self) -> u64 {
        self.reserved_seq
    }

    /// An input was stored as accepted.
    pub fn accepted(&mut self, input_id: InputId) {
        self.stored_waiting.push(input_id);
    }

    /// What the store must keep before `batch` is published: the events
    /// still owed and the batch's persisted ones, a new reservation when
    /// the batch goes past the stored one, the waiting inputs (`queued`,
    /// the core's queue) when they changed, and whether the session is
    /// `busy` after the step when that changed.
    pub fn commit_for(
        &self,
        batch: &[Arc<EventEnvelope>],
        queued: Vec<InputId>,
        busy: bool,
    ) -> Commit {
        let events = self
            .unsaved
            .iter()
            .chain(batch.iter().filter(|e| e.message.is_persisted()))
            .cloned()
            .collect();
        let highest = batch.last().map_or(0, |e| e.seq);
        Commit {
            events,
            reserve_seq: (highest > self.reserved_seq).then_some(highest + SEQ_RESERVATION),
            waiting: (queued != self.stored_waiting).then_some(queued),
            busy: (self.stored_busy != Some(busy)).then_some(busy),
        }
    }

    /// `commit` was stored.
    pub fn saved(&mut self, commit: Commit) -> Outcome {
        // Written only with something else (a commit of `busy` alone is
        // never made).
        if !commit.is_empty() && commit.busy.is_some() {
            self.stored_busy = commit.busy;
        }
        self.reserved_seq = commit.reserve_seq.unwrap_or(self.reserved_seq);
        if let Some(waiting) = commit.waiting {
            self.stored_waiting = waiting;
        }
        let late = std::mem::take(&mut self.unsaved).len();
        match std::mem::take(&mut self.failing) {
            true => Outcome::Recovered { late },
            false => Outcome::Saved,
        }
    }

    /// `commit` failed (because of `reason`): its events are owed to the
    /// next one.
    pub fn failed(&mut self, commit: Commit, reason: String) -> Outcome {
        self.unsaved = commit.events;
        match std::mem::replace(&mut self.failing, true) {
            true => Outcome::StillFailing,
            false => Outcome::FirstFailure { reason },
        }
    }

    /// An event published after the commit (the AgentLoop's own notice of
    /// a failure or a recovery), owed to the next commit.
    pub fn owe(&mut self, event: Arc<EventEnvelope>) {
        self.unsaved.push(event);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn busy_goes_with_the_events_that_change_it_and_never_alone() {
        let mut journal = Journal::new(0, Vec::new());
        let start = journal.commit_for(&[event(1, true)], vec![1], true);
        assert_eq!(start.busy, Some(true), "told with the turn's first events");
        journal.saved(start);
        let same = journal.commit_for(&[event(2, true)], Vec::new(), true);
        assert_eq!(same.busy, None, "unchanged: not written again");
        journal.saved(same);
        let alone = journal.commit_for(&[event(3, false)], Vec::new(), false);
        assert!(alone.is_empty(), "busy alone makes no commit: {alone:?}");
        let end = journal.commit_for(&[event(4, true)], Vec::new(), false);
        assert_eq!(end.busy, Some(false));
    }

    use super::*;
    use crate::protocol::{AgentMessage, SessionId, UserEvent};

    fn event(seq: u64, persisted: bool) -> Arc<EventEnvelope> {
        let message = if persisted {
            AgentMessage::User(UserEvent::new("hi"))
        } else {
            AgentMessage::StreamEvent(crate::protocol::StreamEvent {
                event: crate::protocol::StreamDelta::BlockStop { index: 0 },
            })
        };
        Arc::new(EventEnvelope {
            session_id: SessionId::from("s"),
            seq,
            turn_id: Some(1),
            at: chrono::Utc::now(),
            message,
        })
    }

    #[test]
    fn deltas_reserve_seqs_once_per_reservation() {
        let mut journal = Journal::new(0, Vec::new());
        let commit = journal.commit_for(&[event(1, true)], Vec::new(), true);
        assert_eq!(commit.reserve_seq, Some(1 + SEQ_RESERVATION));
        assert_eq!(journal.saved(commit), Outcome::Saved);
        // Deltas inside the reservation need no write at all.
        let commit = journal.commit_for(&[event(2, false)], Vec::new(), true);
        assert!(commit.is_empty(), "{commit:?}");
        let past = 2 + SEQ_RESERVATION;
        let commit = journal.commit_for(&[event(past, false)], Vec::new(), true);
        assert!(commit.events.is_empty());
        assert_eq!(commit.reserve_seq, Some(past + SEQ_RESERVATION));
    }

    #[test]
    fn waiting_inputs_are_written_only_when_they_change() {
        let mut journal = Journal::new(10, vec![3]);
        journal.accepted(4);
        let commit = journal.commit_for(&[], vec![3, 4], true);
        assert!(commit.is_empty());
        let commit = journal.commit_for(&[event(11, true)], vec![4], true);
        assert_eq!(commit.waiting, Some(vec![4]));
        journal.saved(commit);
        assert!(journal.commit_for(&[], vec![4], true).is_empty());
    }

    #[test]
    fn a_failed_commit_is_owed_to_the_next_and_said_once() {
        let mut journal = Journal::new(0, Vec::new());
        let first = journal.commit_for(&[event(1, true), event(2, false)], Vec::new(), true);
        let full = || "disk full".to_string();
        assert_eq!(
            journal.failed(first, full()),
            Outcome::FirstFailure { reason: full() }
        );
        journal.owe(event(3, true)); // the error event
        let second = journal.commit_for(&[event(4, true)], Vec::new(), true);
        let seqs: Vec<u64> = second.events.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [1, 3, 4]);
        assert_eq!(journal.failed(second, full()), Outcome::StillFailing);
        let third = journal.commit_for(&[event(5, true)], Vec::new(), true);
        assert_eq!(third.events.len(), 4);
        assert_eq!(journal.saved(third), Outcome::Recovered { late: 3 });
        let fourth = journal.commit_for(&[event(6, true)], Vec::new(), true);
        assert_eq!(fourth.events.len(), 1);
    }
}
