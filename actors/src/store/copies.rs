//! What a fork, an import and an export make of a session: the new record
//! and its log, or the export document — the same for every backend.
//!
//! Exists so that the SQLite and Postgres backends only read and write
//! rows, and cannot disagree on what a copy holds (its title, its parent,
//! its counts). Pure: never touches a database.

use crate::protocol::{EventEnvelope, SessionId};
use crate::store::document::{DocumentSession, SessionDocument};
use crate::store::lease::Owner;
use crate::store::record::{STATUS_ACTIVE, STATUS_IDLE, queries_in, restamp, title_of_events};
use crate::store::{SessionRecord, StoreError};
use chrono::{DateTime, SubsecRound, Utc};

/// The seq a fork of `parent` copies the log through: `at_seq`, or all of
/// it; past its end is refused.
pub fn fork_point(parent: &SessionRecord, at_seq: Option<u64>) -> Result<u64, StoreError> {
    let at = at_seq.unwrap_or(parent.last_seq);
    if at > parent.last_seq {
        return Err(StoreError::SeqOutOfRange {
            id: parent.id.clone(),
            at_seq: at,
            last_seq: parent.last_seq,
        });
    }
    Ok(at)
}

/// The fork `new_id` of `parent` at seq `at`, with `events` (the parent's
/// through `at`), held by `owner`: its record and its log. It belongs to
/// whoever forked it (`created_by`); the parent's viewers are not copied.
pub fn forked(
    parent: SessionRecord,
    at: u64,
    events: Vec<EventEnvelope>,
    new_id: SessionId,
    owner: Option<Owner>,
    created_by: Option<String>,
    now: DateTime<Utc>,
) -> (SessionRecord, Vec<EventEnvelope>) {
    let events = restamp(events, &new_id);
    let origin = Origin {
        title: parent.title.map(|title| format!("{title} (fork)")),
        created_at: now,
        model: parent.model,
        workspace: parent.workspace,
        parent: Some((parent.id, at)),
        created_by,
    };
    (copy_of(origin, &events, new_id, owner, now), events)
}

/// Session `new_id` made from an export `document`, held by `owner`: its
/// record and its log; a document that does not hold together is refused.
pub fn imported(
    document: SessionDocument,
    new_id: SessionId,
    owner: Option<Owner>,
    now: DateTime<Utc>,
) -> Result<(SessionRecord, Vec<EventEnvelope>), StoreError> {
    document.validate()?;
    let session = document.session;
    let events = restamp(document.events, &new_id);
    let origin = Origin {
        title: session.title.or_else(|| title_of_events(&events)),
        created_at: session.created_at.trunc_subsecs(6),
        model: session.model,
        workspace: session.workspace,
        // `validate` made sure parent and fork_seq come together.
        parent: session.parent.zip(session.fork_seq),
        // A document names no token: an import belongs to none.
        created_by: None,
    };
    Ok((copy_of(origin, &events, new_id, owner, now), events))
}

/// The export document of `record` with its log `events`.
pub fn exported(
    record: SessionRecord,
    events: Vec<EventEnvelope>,
    now: DateTime<Utc>,
) -> SessionDocument {
    let (parent, fork_seq) = record.parent.unzip();
    SessionDocument::new(
        DocumentSession {
            id: record.id,
            title: record.title,
            created_at: record.created_at,
            model: record.model,
            workspace: record.workspace,
            parent,
            fork_seq,
        },
        events,
        now,
    )
}

/// What a copy takes from where it came from.
struct Origin {
    title: Option<String>,
    created_at: DateTime<Utc>,
    model: String,
    workspace: String,
    parent: Option<(SessionId, u64)>,
    created_by: Option<String>,
}

/// A copy's record: from `origin`, and as its log `events` and `owner`
/// make it.
fn copy_of(
    origin: Origin,
    events: &[EventEnvelope],
    id: SessionId,
    owner: Option<Owner>,
    now: DateTime<Utc>,
) -> SessionRecord {
    let status = if owner.is_some() {
        STATUS_ACTIVE
    } else {
        STATUS_IDLE
    };
    SessionRecord {
        id,
        title: origin.title,
        created_at: origin.created_at,
        updated_at: now,
        model: origin.model,
        workspace: origin.workspace,
        parent: origin.parent,
        parent_call: None,
        status: status.to_string(),
        owner,
        created_by: origin.created_by,
        viewers: Vec::new(),
        last_seq: events.last().map_or(0, |event| event.seq),
        event_count: events.len() as u64,
        reserved_seq: 0,
        claim: None,
        turns: queries_in(events),
    }
}
