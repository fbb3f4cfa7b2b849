//! Every SQL statement the [`SqliteStore`](super::SqliteStore) runs, as
//! plain synchronous functions on a [`Connection`].
//!
//! Exists to keep `mod.rs` a thin mapping from the store's operations to
//! closures run by its writer, and to keep
//! the rules of the data in one place: writes run in `IMMEDIATE`
//! transactions (so a second process waits out the busy timeout at `BEGIN`
//! instead of failing mid-way), an append touches only its new events and
//! one session row, stored events are never updated, and everything read
//! back is decoded without panicking — what does not decode is
//! [`StoreError::Corrupt`].
//!
//! Also the checkpoint tables (`store::checkpoint`): `blobs`, file contents
//! by hash shared by every session, and `checkpoints` with their
//! `checkpoint_files`, what each tool call changed. A blob is deleted only
//! when no checkpoint refers to it: by a collection once it is also unused
//! since the cutoff, or with the last session whose checkpoints referred
//! to it.
//!
//! Never reads the clock (`now` is an argument) and never decides policy
//! beyond the lease rule: whether a session may be taken is [`Owner`]'s
//! liveness, nothing else.

use crate::protocol::{EventEnvelope, SessionId};
use crate::store::checkpoint::{
    Checkpoint, CheckpointUsage, Collected, FileChange, stored_version,
};
use crate::store::copies;
use crate::store::document::SessionDocument;
use crate::store::lease::Owner;
use crate::store::record::{
    STATUS_ACTIVE, STATUS_IDLE, decode_event, is_query, title_of_events, viewer_set,
};
use crate::store::{AcceptedInput, Commit, NewSession, SessionRecord, StoreError};
use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, Transaction, TransactionBehavior};

/// How many candidates an [`StoreError::Ambiguous`] lists.
const MAX_CANDIDATES: usize = 5;

/// The `sessions` columns a new row is written with.
macro_rules! session_columns {
    () => {
        "id, title, created_at, updated_at, model, workspace, parent_id, fork_seq, status, \
         owner, last_seq, event_count, reserved_seq, parent_call_id, turns, created_by"
    };
}
const SESSION_COLUMNS: &str = session_columns!();

/// What every read of a session selects, in [`RawSession::from_row`]'s
/// order: its columns, then its viewers (a JSON array of names) from
/// `session_viewers`.
pub(super) const SELECT_SESSION: &str = concat!(
    session_columns!(),
    ", (SELECT json_group_array(name) FROM session_viewers \
        WHERE session_viewers.session_id = sessions.id)"
);

/// A timestamp as stored: RFC 3339, UTC, microseconds, fixed width.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A SQLite failure of `operation`, except values of the wrong type or
/// range, which are corrupt data.
pub(super) fn sqlite(
    operation: &'static str,
    id: Option<&SessionId>,
    source: rusqlite::Error,
) -> StoreError {
    use rusqlite::Error as E;
    match source {
        E::InvalidColumnType(..)
        | E::FromSqlConversionFailure(..)
        | E::IntegralValueOutOfRange(..) => StoreError::Corrupt {
            id: id.map(|id| id.0.clone()).unwrap_or_default(),
            seq: None,
            detail: format!("{operation}: {source}"),
        },
        source => StoreError::Sqlite {
            operation,
            id: id.map(|id| id.0.clone()),
            source,
        },
    }
}

fn is_constraint_violation(e: &rusqlite::Error) -> bool {
    e.sqlite_error_code() == Some(ErrorCode::ConstraintViolation)
}

fn corrupt(id: &str, seq: Option<u64>, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        id: id.to_string(),
        seq,
        detail: detail.into(),
    }
}

/// A `u64` as SQLite's `INTEGER` (values past `i64::MAX` saturate: seqs
/// and counts never get there).
pub(super) fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(super) fn write_tx<'c>(
    conn: &'c mut Connection,
    operation: &'static str,
    id: &SessionId,
) -> Result<Transaction<'c>, StoreError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| sqlite(operation, Some(id), e))
}

/// A `sessions` row as stored, before decoding.
pub(super) struct RawSession {
    id: String,
    title: Option<String>,
    created_at: String,
    updated_at: String,
    model: String,
    workspace: String,
    parent_id: Option<String>,
    fork_seq: Option<i64>,
    status: String,
    owner: Option<String>,
    last_seq: i64,
    event_count: i64,
    reserved_seq: i64,
    parent_call_id: Option<String>,
    turns: i64,
    created_by: Option<String>,
    /// A JSON array of names.
    viewers: String,
}

impl RawSession {
    /// A row selected as [`SELECT_SESSION`].
    pub(super) fn from_row(row: &Row<'_>) -> rusqlite::Result<RawSession> {
        Ok(RawSession {
            id: row.get(0)?,
            title: row.get(1)?,
            created_at: row.get(2)?,
            updated_at: row.get(3)?,
            model: row.get(4)?,
            workspace: row.get(5)?,
            parent_id: row.get(6)?,
            fork_seq: row.get(7)?,
            status: row.get(8)?,
            owner: row.get(9)?,
            last_seq: row.get(10)?,
            event_count: row.get(11)?,
            reserved_seq: row.get(12)?,
            parent_call_id: row.get(13)?,
            turns: row.get(14)?,
            created_by: row.get(15)?,
            viewers: row.get(16)?,
        })
    }

    fn owner(&self) -> Result<Option<Owner>, StoreError> {
        self.owner
            .as_deref()
            .map(|owner| {
                owner
                    .parse::<Owner>()
                    .map_err(|e| corrupt(&self.id, None, e.to_string()))
            })
            .transpose()
    }

    pub(super) fn decode(self) -> Result<SessionRecord, StoreError> {
        let id = self.id.as_str();
        let time = |what: &str, text: &str| {
            DateTime::parse_from_rfc3339(text)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| corrupt(id, None, format!("{what} {text:?}: {e}")))
        };
        let count = |what: &str, n: i64| {
            u64::try_from(n).map_err(|_| corrupt(id, None, format!("{what} is negative ({n})")))
        };
        let parent = match (&self.parent_id, self.fork_seq) {
            (None, None) => None,
            (Some(parent), Some(seq)) => Some((SessionId(parent.clone()), count("fork_seq", seq)?)),
            _ => {
                return Err(corrupt(
                    id,
                    None,
                    "parent_id and fork_seq must be set together",
                ));
            }
        };
        let viewers: Vec<String> = serde_json::from_str(&self.viewers)
            .map_err(|e| corrupt(id, None, format!("viewers {:?}: {e}", self.viewers)))?;
        Ok(SessionRecord {
            owner: self.owner()?,
            created_by: self.created_by,
            viewers: viewer_set(viewers),
            created_at: time("created_at", &self.created_at)?,
            updated_at: time("updated_at", &self.updated_at)?,
            last_seq: count("last_seq", self.last_seq)?,
            event_count: count("event_count", self.event_count)?,
            reserved_seq: count("reserved_seq", self.reserved_seq)?,
            claim: None,
            turns: count("turns", self.turns)?,
            parent,
            parent_call: self.parent_call_id,
            id: SessionId(self.id),
            title: self.title,
            model: self.model,
            workspace: self.workspace,
            status: self.status,
        })
    }
}

fn get_raw(
    conn: &Connection,
    operation: &'static str,
    id: &SessionId,
) -> Result<Option<RawSession>, StoreError> {
    conn.prepare_cached(&format!(
        "SELECT {SELECT_SESSION} FROM sessions WHERE id = ?1"
    ))
    .and_then(|mut stmt| stmt.query_row([&id.0], RawSession::from_row).optional())
    .map_err(|e| sqlite(operation, Some(id), e))
}

fn require_raw(
    conn: &Connection,
    operation: &'static str,
    id: &SessionId,
) -> Result<RawSession, StoreError> {
    get_raw(conn, operation, id)?.ok_or_else(|| StoreError::NotFound { id: id.0.clone() })
}

/// `NotFound` unless session `id` exists (reading nothing else of it).
pub(super) fn require_exists(
    conn: &Connection,
    operation: &'static str,
    id: &SessionId,
) -> Result<(), StoreError> {
    conn.prepare_cached("SELECT 1 FROM sessions WHERE id = ?1")
        .and_then(|mut stmt| stmt.query_row([&id.0], |_| Ok(())).optional())
        .map_err(|e| sqlite(operation, Some(id), e))?
        .ok_or_else(|| StoreError::NotFound { id: id.0.clone() })
}

fn insert_session(tx: &Transaction<'_>, record: &SessionRecord) -> Result<(), StoreError> {
    let operation = "insert session";
    tx.prepare_cached(&format!(
        "INSERT INTO sessions ({SESSION_COLUMNS}) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
    ))
    .and_then(|mut stmt| {
        stmt.execute(rusqlite::params![
            record.id.0,
            record.title,
            timestamp(record.created_at),
            timestamp(record.updated_at),
            record.model,
            record.workspace,
            record.parent.as_ref().map(|(parent, _)| &parent.0),
            record.parent.as_ref().map(|(_, seq)| int(*seq)),
            record.status,
            record.owner.map(|owner| owner.to_string()),
            int(record.last_seq),
            int(record.event_count),
            int(record.reserved_seq),
            record.parent_call,
            int(record.turns),
            record.created_by,
        ])
    })
    .map_err(|e| {
        if is_constraint_violation(&e) {
            StoreError::Exists {
                id: record.id.clone(),
            }
        } else {
            sqlite(operation, Some(&record.id), e)
        }
    })?;
    Ok(())
}

/// Insert one event of session `id` (whose envelope must already say `id`).
fn insert_event(tx: &Connection, id: &SessionId, event: &EventEnvelope) -> Result<(), StoreError> {
    let body = serde_json::to_string(event).map_err(|source| StoreError::Encode {
        id: id.clone(),
        seq: event.seq,
        source,
    })?;
    tx.prepare_cached(
        "INSERT INTO events (session_id, seq, at, type, turn_id, body) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .and_then(|mut stmt| {
        stmt.execute(rusqlite::params![
            id.0,
            int(event.seq),
            timestamp(event.at),
            event.message.type_name(),
            event.turn_id.map(int),
            body,
        ])
    })
    .map_err(|e| {
        if is_constraint_violation(&e) {
            StoreError::SeqConflict {
                id: id.clone(),
                seq: event.seq,
                last_seq: event.seq,
            }
        } else {
            sqlite("insert event", Some(id), e)
        }
    })?;
    Ok(())
}

/// The events of session `id` with `after < seq <= up_to`, in seq order.
fn load(
    conn: &Connection,
    id: &SessionId,
    after: u64,
    up_to: Option<u64>,
) -> Result<Vec<EventEnvelope>, StoreError> {
    let operation = "load events";
    let mut stmt = conn
        .prepare_cached(
            "SELECT seq, body FROM events \
             WHERE session_id = ?1 AND seq > ?2 AND seq <= ?3 ORDER BY seq",
        )
        .map_err(|e| sqlite(operation, Some(id), e))?;
    let rows = stmt
        .query_map(
            rusqlite::params![id.0, int(after), int(up_to.unwrap_or(u64::MAX))],
            |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)),
        )
        .map_err(|e| sqlite(operation, Some(id), e))?;
    decode_rows(rows, operation, id)
}

/// The events of `rows` (seq, body), each checked against its row.
fn decode_rows(
    rows: impl Iterator<Item = rusqlite::Result<(i64, String)>>,
    operation: &'static str,
    id: &SessionId,
) -> Result<Vec<EventEnvelope>, StoreError> {
    rows.map(|row| {
        let (seq, body) = row.map_err(|e| sqlite(operation, Some(id), e))?;
        let seq = u64::try_from(seq).map_err(|_| corrupt(&id.0, None, format!("seq {seq}")))?;
        decode_event(&body, id, seq)
    })
    .collect()
}

/// Insert a new session and its (already stamped, ordered) log at once.
fn insert_with_log(
    conn: &mut Connection,
    operation: &'static str,
    record: &SessionRecord,
    events: &[EventEnvelope],
) -> Result<(), StoreError> {
    let tx = write_tx(conn, operation, &record.id)?;
    insert_session(&tx, record)?;
    for event in events {
        insert_event(&tx, &record.id, event)?;
    }
    tx.commit()
        .map_err(|e| sqlite(operation, Some(&record.id), e))
}

pub fn create(
    conn: &mut Connection,
    new: NewSession,
    owner: Owner,
    now: DateTime<Utc>,
) -> Result<SessionRecord, StoreError> {
    let record = new.record(Some(owner), now);
    insert_with_log(conn, "create session", &record, &[])?;
    Ok(record)
}

pub fn acquire(
    conn: &mut Connection,
    id: &SessionId,
    owner: Owner,
) -> Result<(SessionRecord, Vec<EventEnvelope>), StoreError> {
    let operation = "acquire session";
    let tx = write_tx(conn, operation, id)?;
    let mut record = require_raw(&tx, operation, id)?.decode()?;
    if let Some(holder) = record.owner
        && holder != owner
    {
        if holder.is_alive() {
            return Err(StoreError::Busy {
                id: id.clone(),
                pid: holder.pid,
            });
        }
        tracing::info!(session = %id, pid = holder.pid, "taking over the lease of a process that is gone");
    }
    tx.execute(
        "UPDATE sessions SET status = ?1, owner = ?2 WHERE id = ?3",
        rusqlite::params![STATUS_ACTIVE, owner.to_string(), id.0],
    )
    .map_err(|e| sqlite(operation, Some(id), e))?;
    record.status = STATUS_ACTIVE.to_string();
    record.owner = Some(owner);
    let events = load(&tx, id, 0, None)?;
    tx.commit().map_err(|e| sqlite(operation, Some(id), e))?;
    Ok((record, events))
}

pub fn release(conn: &mut Connection, id: &SessionId, owner: Owner) -> Result<(), StoreError> {
    let operation = "release session";
    let tx = write_tx(conn, operation, id)?;
    let changed = tx
        .execute(
            "UPDATE sessions SET status = ?1, owner = NULL WHERE id = ?2 AND owner = ?3",
            rusqlite::params![STATUS_IDLE, id.0, owner.to_string()],
        )
        .map_err(|e| sqlite(operation, Some(id), e))?;
    if changed == 0 {
        // Not ours (any more): nothing to release, but the id must exist.
        require_raw(&tx, operation, id)?;
    }
    tx.commit().map_err(|e| sqlite(operation, Some(id), e))
}

pub fn set_title(conn: &mut Connection, id: &SessionId, title: &str) -> Result<(), StoreError> {
    let operation = "set session title";
    let tx = write_tx(conn, operation, id)?;
    let changed = tx
        .execute(
            "UPDATE sessions SET title = ?1 WHERE id = ?2",
            rusqlite::params![title, id.0],
        )
        .map_err(|e| sqlite(operation, Some(id), e))?;
    if changed == 0 {
        return Err(StoreError::NotFound { id: id.0.clone() });
    }
    tx.commit().map_err(|e| sqlite(operation, Some(id), e))
}

/// Append `commit` to session `id`. Runs inside the write transaction the
/// writer opened for it, alone or with other writes (a group commit):
/// what it changed counts only once that transaction commits.
pub fn commit(
    tx: &Connection,
    id: &SessionId,
    commit: &Commit,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let operation = "append events";
    let (last_seq, has_title): (i64, bool) = tx
        .prepare_cached("SELECT last_seq, title IS NOT NULL FROM sessions WHERE id = ?1")
        .and_then(|mut stmt| {
            stmt.query_row([&id.0], |row| Ok((row.get(0)?, row.get(1)?)))
                .optional()
        })
        .map_err(|e| sqlite(operation, Some(id), e))?
        .ok_or_else(|| StoreError::NotFound { id: id.0.clone() })?;
    let mut last = u64::try_from(last_seq)
        .map_err(|_| corrupt(&id.0, None, format!("last_seq is negative ({last_seq})")))?;

    let mut stored: u64 = 0;
    let mut queries: u64 = 0;
    let mut title = None;
    for event in &commit.events {
        if !event.message.is_persisted() {
            continue;
        }
        if event.session_id != *id {
            return Err(StoreError::ForeignEvent {
                id: id.clone(),
                seq: event.seq,
                event_session: event.session_id.clone(),
            });
        }
        if event.seq <= last {
            return Err(StoreError::SeqConflict {
                id: id.clone(),
                seq: event.seq,
                last_seq: last,
            });
        }
        insert_event(tx, id, event)?;
        if !has_title && title.is_none() {
            title = title_of_events([event.as_ref()]);
        }
        last = event.seq;
        stored += 1;
        queries += u64::from(is_query(event));
    }
    if stored > 0 {
        tx.prepare_cached(
            "UPDATE sessions SET updated_at = ?1, last_seq = ?2, event_count = event_count + ?3, \
             title = COALESCE(title, ?4), turns = turns + ?5 WHERE id = ?6",
        )
        .and_then(|mut stmt| {
            stmt.execute(rusqlite::params![
                timestamp(now),
                int(last),
                int(stored),
                title,
                int(queries),
                id.0
            ])
        })
        .map_err(|e| sqlite(operation, Some(id), e))?;
    }
    if let Some(reserve) = commit.reserve_seq {
        tx.prepare_cached("UPDATE sessions SET reserved_seq = MAX(reserved_seq, ?1) WHERE id = ?2")
            .and_then(|mut stmt| stmt.execute(rusqlite::params![int(reserve), id.0]))
            .map_err(|e| sqlite("reserve seqs", Some(id), e))?;
    }
    if let Some(waiting) = &commit.waiting {
        let ids: Vec<String> = waiting.iter().map(u64::to_string).collect();
        let waiting = format!("[{}]", ids.join(","));
        tx.prepare_cached(
            "DELETE FROM inputs WHERE session_id = ?1 \
             AND input_id NOT IN (SELECT value FROM json_each(?2))",
        )
        .and_then(|mut stmt| stmt.execute(rusqlite::params![id.0, waiting]))
        .map_err(|e| sqlite("forget started inputs", Some(id), e))?;
    }
    Ok(())
}

/// Keep `input` as waiting in session `id`. Like [`commit`], inside the
/// writer's write transaction.
pub fn accept_input(
    tx: &Connection,
    id: &SessionId,
    input: &AcceptedInput,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let operation = "store an accepted input";
    let body = serde_json::to_string(&input.input).map_err(|source| StoreError::EncodeInput {
        id: id.clone(),
        input_id: input.input_id,
        source,
    })?;
    require_raw(tx, operation, id)?;
    tx.prepare_cached(
        "INSERT INTO inputs (session_id, input_id, accepted_at, body) VALUES (?1, ?2, ?3, ?4)",
    )
    .and_then(|mut stmt| {
        stmt.execute(rusqlite::params![
            id.0,
            int(input.input_id),
            timestamp(now),
            body
        ])
    })
    .map_err(|e| sqlite(operation, Some(id), e))?;
    Ok(())
}

pub fn waiting_inputs(conn: &Connection, id: &SessionId) -> Result<Vec<AcceptedInput>, StoreError> {
    let operation = "load waiting inputs";
    let mut stmt = conn
        .prepare_cached("SELECT input_id, body FROM inputs WHERE session_id = ?1 ORDER BY input_id")
        .map_err(|e| sqlite(operation, Some(id), e))?;
    let rows = stmt
        .query_map([&id.0], |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(|e| sqlite(operation, Some(id), e))?;
    let mut inputs = Vec::new();
    for row in rows {
        let (input_id, body) = row.map_err(|e| sqlite(operation, Some(id), e))?;
        let input_id = u64::try_from(input_id)
            .map_err(|_| corrupt(&id.0, None, format!("input id {input_id}")))?;
        let input = serde_json::from_str(&body).map_err(|e| {
            corrupt(
                &id.0,
                None,
                format!("waiting input {input_id} does not parse: {e}"),
            )
        })?;
        inputs.push(AcceptedInput { input_id, input });
    }
    Ok(inputs)
}

pub fn sessions_with_waiting_inputs(conn: &Connection) -> Result<Vec<SessionId>, StoreError> {
    let operation = "list sessions with waiting inputs";
    let mut stmt = conn
        .prepare_cached("SELECT DISTINCT session_id FROM inputs ORDER BY session_id")
        .map_err(|e| sqlite(operation, None, e))?;
    let ids = stmt
        .query_map([], |row| row.get::<_, String>(0))
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(|e| sqlite(operation, None, e))?;
    Ok(ids.into_iter().map(SessionId).collect())
}

pub fn load_events(
    conn: &mut Connection,
    id: &SessionId,
    after_seq: u64,
    up_to: Option<u64>,
) -> Result<Vec<EventEnvelope>, StoreError> {
    let operation = "load events";
    // One read transaction: the existence check and the log agree.
    let tx = conn
        .transaction()
        .map_err(|e| sqlite(operation, Some(id), e))?;
    require_raw(&tx, operation, id)?;
    load(&tx, id, after_seq, up_to)
}

/// The events with `seq < before` of the `types` given (the `type`
/// column), in seq order.
pub fn load_events_of_types(
    conn: &mut Connection,
    id: &SessionId,
    before: u64,
    types: &[&str],
) -> Result<Vec<EventEnvelope>, StoreError> {
    let operation = "load events";
    let tx = conn
        .transaction()
        .map_err(|e| sqlite(operation, Some(id), e))?;
    require_raw(&tx, operation, id)?;
    let marks = vec!["?"; types.len()].join(", ");
    let mut stmt = tx
        .prepare_cached(&format!(
            "SELECT seq, body FROM events \
             WHERE session_id = ?1 AND seq < ?2 AND type IN ({marks}) ORDER BY seq"
        ))
        .map_err(|e| sqlite(operation, Some(id), e))?;
    let mut params: Vec<&dyn rusqlite::ToSql> = Vec::with_capacity(types.len() + 2);
    let before = int(before);
    params.push(&id.0);
    params.push(&before);
    for kind in types {
        params.push(kind);
    }
    let rows = stmt
        .query_map(params.as_slice(), |row| {
            Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(|e| sqlite(operation, Some(id), e))?;
    decode_rows(rows, operation, id)
}

pub fn get(conn: &Connection, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
    get_raw(conn, "get session", id)?
        .map(RawSession::decode)
        .transpose()
}

pub fn resolve(conn: &Connection, prefix: &str) -> Result<SessionId, StoreError> {
    let operation = "resolve session id";
    let not_found = || StoreError::NotFound {
        id: prefix.to_string(),
    };
    if prefix.is_empty() {
        return Err(not_found());
    }
    // Ids that start with `prefix` sort together, right from `prefix` on.
    let mut stmt = conn
        .prepare_cached("SELECT id FROM sessions WHERE id >= ?1 ORDER BY id LIMIT ?2")
        .map_err(|e| sqlite(operation, None, e))?;
    let ids = stmt
        .query_map(
            rusqlite::params![prefix, int(MAX_CANDIDATES as u64 + 1)],
            |row| row.get::<_, String>(0),
        )
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(|e| sqlite(operation, None, e))?;
    let matches: Vec<String> = ids
        .into_iter()
        .take_while(|id| id.starts_with(prefix))
        .collect();
    match matches.as_slice() {
        [] => Err(not_found()),
        [only] => Ok(SessionId(only.clone())),
        [first, ..] if first == prefix => Ok(SessionId(first.clone())),
        _ => Err(StoreError::Ambiguous {
            prefix: prefix.to_string(),
            candidates: matches.into_iter().take(MAX_CANDIDATES).collect(),
        }),
    }
}

pub fn fork(
    conn: &mut Connection,
    id: &SessionId,
    at_seq: Option<u64>,
    new_id: SessionId,
    owner: Option<Owner>,
    created_by: Option<String>,
    now: DateTime<Utc>,
) -> Result<SessionRecord, StoreError> {
    let operation = "fork session";
    let tx = write_tx(conn, operation, id)?;
    let parent = require_raw(&tx, operation, id)?.decode()?;
    let at = copies::fork_point(&parent, at_seq)?;
    let events = load(&tx, id, 0, Some(at))?;
    let (record, events) = copies::forked(parent, at, events, new_id, owner, created_by, now);
    insert_session(&tx, &record)?;
    for event in &events {
        insert_event(&tx, &record.id, event)?;
    }
    tx.commit()
        .map_err(|e| sqlite(operation, Some(&record.id), e))?;
    Ok(record)
}

pub fn delete(conn: &mut Connection, id: &SessionId, owner: Owner) -> Result<(), StoreError> {
    let operation = "delete session";
    let tx = write_tx(conn, operation, id)?;
    // Only the lease is read: deleting is the way out of a corrupt session,
    // so nothing else in the row may stand in the way, and a lease that
    // does not parse protects nothing.
    let lease: rusqlite::types::Value = tx
        .query_row("SELECT owner FROM sessions WHERE id = ?1", [&id.0], |row| {
            row.get(0)
        })
        .optional()
        .map_err(|e| sqlite(operation, Some(id), e))?
        .ok_or_else(|| StoreError::NotFound { id: id.0.clone() })?;
    let holder = match lease {
        rusqlite::types::Value::Text(text) => text.parse::<Owner>().ok(),
        _ => None,
    };
    if let Some(holder) = holder
        && holder != owner
        && holder.is_alive()
    {
        return Err(StoreError::Busy {
            id: id.clone(),
            pid: holder.pid,
        });
    }
    // Its checkpoints go with it (cascade), and then the blobs only they
    // referred to.
    let hashes = hashes_of_session(&tx, operation, id)?;
    tx.execute("DELETE FROM sessions WHERE id = ?1", [&id.0])
        .map_err(|e| sqlite(operation, Some(id), e))?;
    delete_unreferenced_blobs(&tx, operation, id, &hashes)?;
    tx.commit().map_err(|e| sqlite(operation, Some(id), e))
}

pub fn export(
    conn: &mut Connection,
    id: &SessionId,
    now: DateTime<Utc>,
) -> Result<SessionDocument, StoreError> {
    let operation = "export session";
    let tx = conn
        .transaction()
        .map_err(|e| sqlite(operation, Some(id), e))?;
    let record = require_raw(&tx, operation, id)?.decode()?;
    let events = load(&tx, id, 0, None)?;
    Ok(copies::exported(record, events, now))
}

pub fn import(
    conn: &mut Connection,
    document: SessionDocument,
    new_id: SessionId,
    owner: Option<Owner>,
    now: DateTime<Utc>,
) -> Result<SessionRecord, StoreError> {
    let (record, events) = copies::imported(document, new_id, owner, now)?;
    insert_with_log(conn, "import session", &record, &events)?;
    Ok(record)
}

// ---------------------------------------------------------- checkpoints

/// A write transaction of an operation on no one session (blobs).
fn store_tx<'c>(
    conn: &'c mut Connection,
    operation: &'static str,
) -> Result<Transaction<'c>, StoreError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| sqlite(operation, None, e))
}

/// Hashes asked about in one statement (SQLite takes up to 32,766
/// parameters; a group's statement is cached, so groups are of one size
/// but the last).
const LOOKUP_GROUP: usize = 500;

pub fn missing_blobs(
    conn: &mut Connection,
    hashes: Vec<String>,
    now: DateTime<Utc>,
) -> Result<Vec<String>, StoreError> {
    let operation = "look up blobs";
    let fail = |e| sqlite(operation, None, e);
    let tx = store_tx(conn, operation)?;
    let used_at = timestamp(now);
    // A mark newer than this stays: no write for a blob used lately.
    let stale = timestamp(now - crate::store::checkpoint::MARK_AFTER);
    let mut seen = std::collections::HashSet::with_capacity(hashes.len());
    let unique: Vec<String> = hashes
        .into_iter()
        .filter(|h| seen.insert(h.clone()))
        .collect();
    // Held, and whether the mark is stale: asked in groups (one statement
    // per group of hashes, not one per hash).
    let mut held: std::collections::HashMap<String, bool> =
        std::collections::HashMap::with_capacity(unique.len());
    for group in unique.chunks(LOOKUP_GROUP) {
        let marks = vec!["?"; group.len()].join(",");
        let mut find = tx
            .prepare_cached(&format!(
                "SELECT hash, used_at < ?1 FROM blobs WHERE hash IN ({marks})"
            ))
            .map_err(fail)?;
        let params: Vec<&dyn rusqlite::ToSql> = std::iter::once(&stale as &dyn rusqlite::ToSql)
            .chain(group.iter().map(|h| h as &dyn rusqlite::ToSql))
            .collect();
        let rows = find
            .query_map(params.as_slice(), |row| {
                Ok((row.get::<_, String>(0)?, row.get::<_, bool>(1)?))
            })
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(fail)?;
        held.extend(rows);
    }
    let mut missing = Vec::new();
    {
        let mut mark = tx
            .prepare_cached("UPDATE blobs SET used_at = ?1 WHERE hash = ?2")
            .map_err(fail)?;
        for hash in unique {
            match held.get(&hash) {
                None => missing.push(hash),
                Some(true) => {
                    mark.execute(rusqlite::params![used_at, hash])
                        .map_err(fail)?;
                }
                Some(false) => {}
            }
        }
    }
    tx.commit().map_err(fail)?;
    Ok(missing)
}

pub fn put_blobs(
    conn: &mut Connection,
    blobs: Vec<(String, Vec<u8>)>,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let operation = "store blobs";
    let fail = |e| sqlite(operation, None, e);
    let tx = store_tx(conn, operation)?;
    let used_at = timestamp(now);
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO blobs (hash, size, used_at, data) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (hash) DO UPDATE SET used_at = excluded.used_at",
            )
            .map_err(fail)?;
        for (hash, data) in &blobs {
            insert
                .execute(rusqlite::params![
                    hash,
                    int(data.len() as u64),
                    used_at,
                    data
                ])
                .map_err(fail)?;
        }
    }
    tx.commit().map_err(fail)
}

pub fn blob(conn: &Connection, hash: &str) -> Result<Option<Vec<u8>>, StoreError> {
    let operation = "read a blob";
    conn.prepare_cached("SELECT data FROM blobs WHERE hash = ?1")
        .and_then(|mut stmt| stmt.query_row([hash], |row| row.get(0)).optional())
        .map_err(|e| sqlite(operation, None, e))
}

pub fn add_checkpoint(conn: &mut Connection, checkpoint: &Checkpoint) -> Result<(), StoreError> {
    let operation = "store a checkpoint";
    let id = &checkpoint.session_id;
    let fail = |e| sqlite(operation, Some(id), e);
    let tx = write_tx(conn, operation, id)?;
    require_exists(&tx, operation, id)?;
    tx.prepare_cached(
        "INSERT INTO checkpoints (id, session_id, turn_seq, call_id, tool, created_at, undone) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )
    .and_then(|mut stmt| {
        stmt.execute(rusqlite::params![
            checkpoint.id,
            id.0,
            int(checkpoint.turn_seq),
            checkpoint.call_id,
            checkpoint.tool,
            timestamp(checkpoint.created_at),
            checkpoint.undone,
        ])
    })
    .map_err(fail)?;
    {
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO checkpoint_files (checkpoint_id, path, before_hash, before_kind, \
                 before_size, after_hash, after_kind, after_size) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )
            .map_err(fail)?;
        for change in &checkpoint.changes {
            let (before, after) = (change.before.as_ref(), change.after.as_ref());
            insert
                .execute(rusqlite::params![
                    checkpoint.id,
                    change.path,
                    before.map(|v| &v.hash),
                    before.map(|v| v.kind.as_str()),
                    before.map(|v| int(v.size)),
                    after.map(|v| &v.hash),
                    after.map(|v| v.kind.as_str()),
                    after.map(|v| int(v.size)),
                ])
                .map_err(fail)?;
        }
    }
    tx.commit().map_err(fail)
}

/// A `checkpoints` row as stored, before decoding.
struct RawCheckpoint {
    id: String,
    turn_seq: i64,
    call_id: Option<String>,
    tool: String,
    created_at: String,
    undone: bool,
}

/// A `checkpoint_files` row as stored, before decoding.
struct RawChange {
    checkpoint_id: String,
    path: String,
    before: (Option<String>, Option<String>, Option<i64>),
    after: (Option<String>, Option<String>, Option<i64>),
}

pub fn checkpoints(conn: &mut Connection, id: &SessionId) -> Result<Vec<Checkpoint>, StoreError> {
    let operation = "load checkpoints";
    let fail = |e| sqlite(operation, Some(id), e);
    // One read transaction: the checkpoints and their files agree.
    let tx = conn.transaction().map_err(fail)?;
    let raw = tx
        .prepare_cached(
            "SELECT id, turn_seq, call_id, tool, created_at, undone FROM checkpoints \
             WHERE session_id = ?1 ORDER BY id",
        )
        .and_then(|mut stmt| {
            stmt.query_map([&id.0], |row| {
                Ok(RawCheckpoint {
                    id: row.get(0)?,
                    turn_seq: row.get(1)?,
                    call_id: row.get(2)?,
                    tool: row.get(3)?,
                    created_at: row.get(4)?,
                    undone: row.get(5)?,
                })
            })?
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(fail)?;
    let changes = tx
        .prepare_cached(
            "SELECT f.checkpoint_id, f.path, f.before_hash, f.before_kind, f.before_size, \
                    f.after_hash, f.after_kind, f.after_size \
             FROM checkpoint_files f JOIN checkpoints c ON c.id = f.checkpoint_id \
             WHERE c.session_id = ?1 ORDER BY f.checkpoint_id, f.path",
        )
        .and_then(|mut stmt| {
            stmt.query_map([&id.0], |row| {
                Ok(RawChange {
                    checkpoint_id: row.get(0)?,
                    path: row.get(1)?,
                    before: (row.get(2)?, row.get(3)?, row.get(4)?),
                    after: (row.get(5)?, row.get(6)?, row.get(7)?),
                })
            })?
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(fail)?;

    let mut checkpoints = Vec::with_capacity(raw.len());
    let mut at = std::collections::HashMap::with_capacity(raw.len());
    for row in raw {
        let place =
            |detail: String| corrupt(&id.0, None, format!("checkpoint {}: {detail}", row.id));
        let turn_seq = u64::try_from(row.turn_seq)
            .map_err(|_| place(format!("turn_seq is negative ({})", row.turn_seq)))?;
        let created_at = DateTime::parse_from_rfc3339(&row.created_at)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| place(format!("created_at {:?}: {e}", row.created_at)))?;
        at.insert(row.id.clone(), checkpoints.len());
        checkpoints.push(Checkpoint {
            id: row.id,
            session_id: id.clone(),
            turn_seq,
            call_id: row.call_id,
            tool: row.tool,
            created_at,
            changes: Vec::new(),
            undone: row.undone,
        });
    }
    for change in changes {
        let place = |detail: String| {
            corrupt(
                &id.0,
                None,
                format!(
                    "checkpoint {}, {:?}: {detail}",
                    change.checkpoint_id, change.path
                ),
            )
        };
        let (hash, kind, size) = change.before;
        let before = stored_version("before", hash, kind, size).map_err(place)?;
        let (hash, kind, size) = change.after;
        let after = stored_version("after", hash, kind, size).map_err(place)?;
        // Every file row is of a checkpoint read above (one transaction).
        if let Some(checkpoint) = at
            .get(&change.checkpoint_id)
            .and_then(|&index| checkpoints.get_mut(index))
        {
            checkpoint.changes.push(FileChange {
                path: change.path,
                before,
                after,
            });
        }
    }
    Ok(checkpoints)
}

/// Run `sql` (`?1` a checkpoint id, `?2` the session) for each of `ids`,
/// in one transaction.
fn each_checkpoint(
    conn: &mut Connection,
    operation: &'static str,
    id: &SessionId,
    ids: &[String],
    sql: &str,
) -> Result<(), StoreError> {
    let fail = |e| sqlite(operation, Some(id), e);
    let tx = write_tx(conn, operation, id)?;
    {
        let mut stmt = tx.prepare_cached(sql).map_err(fail)?;
        for checkpoint in ids {
            stmt.execute(rusqlite::params![checkpoint, id.0])
                .map_err(fail)?;
        }
    }
    tx.commit().map_err(fail)
}

pub fn mark_undone(
    conn: &mut Connection,
    id: &SessionId,
    ids: &[String],
) -> Result<(), StoreError> {
    each_checkpoint(
        conn,
        "mark checkpoints undone",
        id,
        ids,
        "UPDATE checkpoints SET undone = 1 WHERE id = ?1 AND session_id = ?2",
    )
}

pub fn drop_checkpoints(
    conn: &mut Connection,
    id: &SessionId,
    ids: &[String],
) -> Result<(), StoreError> {
    each_checkpoint(
        conn,
        "drop checkpoints",
        id,
        ids,
        "DELETE FROM checkpoints WHERE id = ?1 AND session_id = ?2",
    )
}

pub fn checkpoint_usage(conn: &Connection) -> Result<CheckpointUsage, StoreError> {
    let operation = "count checkpoints and blobs";
    let (checkpoints, blobs, blob_bytes): (i64, i64, i64) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM checkpoints), count(*), COALESCE(sum(size), 0) \
             FROM blobs",
            [],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
        .map_err(|e| sqlite(operation, None, e))?;
    let count = |what: &str, n: i64| {
        u64::try_from(n).map_err(|_| corrupt("", None, format!("{what} is negative ({n})")))
    };
    Ok(CheckpointUsage {
        checkpoints: count("the number of checkpoints", checkpoints)?,
        blobs: count("the number of blobs", blobs)?,
        blob_bytes: count("the blobs' total size", blob_bytes)?,
    })
}

pub fn collect_blobs(
    conn: &mut Connection,
    unused_since: DateTime<Utc>,
) -> Result<Collected, StoreError> {
    let operation = "collect unused blobs";
    let fail = |e| sqlite(operation, None, e);
    let tx = store_tx(conn, operation)?;
    let sizes = tx
        .prepare_cached(
            "DELETE FROM blobs WHERE used_at < ?1 \
             AND NOT EXISTS (SELECT 1 FROM checkpoint_files WHERE before_hash = blobs.hash) \
             AND NOT EXISTS (SELECT 1 FROM checkpoint_files WHERE after_hash = blobs.hash) \
             RETURNING size",
        )
        .and_then(|mut stmt| {
            stmt.query_map([timestamp(unused_since)], |row| row.get::<_, i64>(0))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(fail)?;
    tx.commit().map_err(fail)?;
    Ok(Collected {
        blobs: sizes.len() as u64,
        // A negative size (corrupt) counts as nothing: the blob is gone.
        bytes: sizes
            .iter()
            .map(|&size| u64::try_from(size).unwrap_or_default())
            .sum(),
    })
}

/// The hashes session `id`'s checkpoints refer to, as stored (whatever
/// their type: deleting is the way out of a corrupt session).
fn hashes_of_session(
    tx: &Transaction<'_>,
    operation: &'static str,
    id: &SessionId,
) -> Result<Vec<rusqlite::types::Value>, StoreError> {
    tx.prepare_cached(
        "SELECT f.before_hash FROM checkpoint_files f JOIN checkpoints c ON c.id = f.checkpoint_id \
         WHERE c.session_id = ?1 AND f.before_hash IS NOT NULL \
         UNION \
         SELECT f.after_hash FROM checkpoint_files f JOIN checkpoints c ON c.id = f.checkpoint_id \
         WHERE c.session_id = ?1 AND f.after_hash IS NOT NULL",
    )
    .and_then(|mut stmt| {
        stmt.query_map([&id.0], |row| row.get(0))?
            .collect::<Result<Vec<_>, _>>()
    })
    .map_err(|e| sqlite(operation, Some(id), e))
}

/// Delete those of `hashes` no checkpoint refers to any more and not
/// marked used within [`BLOB_GRACE`](crate::store::checkpoint::BLOB_GRACE).
fn delete_unreferenced_blobs(
    tx: &Transaction<'_>,
    operation: &'static str,
    id: &SessionId,
    hashes: &[rusqlite::types::Value],
) -> Result<(), StoreError> {
    let fail = |e| sqlite(operation, Some(id), e);
    let mut stmt = tx
        .prepare_cached(
            "DELETE FROM blobs WHERE hash = ?1 AND used_at < ?2 \
             AND NOT EXISTS (SELECT 1 FROM checkpoint_files WHERE before_hash = ?1) \
             AND NOT EXISTS (SELECT 1 FROM checkpoint_files WHERE after_hash = ?1)",
        )
        .map_err(fail)?;
    let cutoff =
        rusqlite::types::Value::Text(timestamp(Utc::now() - crate::store::checkpoint::BLOB_GRACE));
    for hash in hashes {
        stmt.execute([hash, &cutoff]).map_err(fail)?;
    }
    Ok(())
}
