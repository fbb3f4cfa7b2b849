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
//! Never reads the clock (`now` is an argument) and never decides policy
//! beyond the lease rule: whether a session may be taken is [`Owner`]'s
//! liveness, nothing else.

use crate::protocol::{EventEnvelope, SessionId};
use crate::store::copies;
use crate::store::document::SessionDocument;
use crate::store::lease::Owner;
use crate::store::record::{STATUS_ACTIVE, STATUS_IDLE, is_query, title_of_events};
use crate::store::{AcceptedInput, Commit, NewSession, SessionRecord, StoreError};
use chrono::{DateTime, SecondsFormat, Utc};
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, Transaction, TransactionBehavior};

/// How many candidates an [`StoreError::Ambiguous`] lists.
const MAX_CANDIDATES: usize = 5;

const SESSION_COLUMNS: &str = "id, title, created_at, updated_at, model, workspace, parent_id, \
                               fork_seq, status, owner, last_seq, event_count, reserved_seq, \
                               parent_call_id, turns";

/// A timestamp as stored: RFC 3339, UTC, microseconds, fixed width.
pub fn timestamp(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// A SQLite failure of `operation`, except values of the wrong type or
/// range, which are corrupt data.
fn sqlite(operation: &'static str, id: Option<&SessionId>, source: rusqlite::Error) -> StoreError {
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
fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn write_tx<'c>(
    conn: &'c mut Connection,
    operation: &'static str,
    id: &SessionId,
) -> Result<Transaction<'c>, StoreError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| sqlite(operation, Some(id), e))
}

/// A `sessions` row as stored, before decoding.
struct RawSession {
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
}

impl RawSession {
    fn from_row(row: &Row<'_>) -> rusqlite::Result<RawSession> {
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

    fn decode(self) -> Result<SessionRecord, StoreError> {
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
        Ok(SessionRecord {
            owner: self.owner()?,
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
        "SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"
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

fn insert_session(tx: &Transaction<'_>, record: &SessionRecord) -> Result<(), StoreError> {
    let operation = "insert session";
    tx.prepare_cached(&format!(
        "INSERT INTO sessions ({SESSION_COLUMNS}) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"
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
    let mut events = Vec::new();
    for row in rows {
        let (seq, body) = row.map_err(|e| sqlite(operation, Some(id), e))?;
        let seq = u64::try_from(seq).map_err(|_| corrupt(&id.0, None, format!("seq {seq}")))?;
        let event: EventEnvelope = serde_json::from_str(&body)
            .map_err(|e| corrupt(&id.0, Some(seq), format!("the event does not parse: {e}")))?;
        if event.seq != seq || event.session_id != *id {
            return Err(corrupt(
                &id.0,
                Some(seq),
                format!(
                    "the stored body is event seq {} of session {}",
                    event.seq, event.session_id
                ),
            ));
        }
        events.push(event);
    }
    Ok(events)
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

pub fn get(conn: &Connection, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
    get_raw(conn, "get session", id)?
        .map(RawSession::decode)
        .transpose()
}

pub fn list(
    conn: &Connection,
    limit: Option<usize>,
    after: Option<&crate::store::ListCursor>,
) -> Result<Vec<SessionRecord>, StoreError> {
    let operation = "list sessions";
    let limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
    let after_time = after.map(|c| timestamp(c.updated_at));
    let after_id = after.map(|c| c.id.0.as_str());
    let mut stmt = conn
        .prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions \
             WHERE ?2 IS NULL OR (updated_at, id) < (?2, ?3) \
             ORDER BY updated_at DESC, id DESC LIMIT ?1"
        ))
        .map_err(|e| sqlite(operation, None, e))?;
    let rows = stmt
        .query_map(
            rusqlite::params![limit, after_time, after_id],
            RawSession::from_row,
        )
        .map_err(|e| sqlite(operation, None, e))?;
    rows.map(|row| row.map_err(|e| sqlite(operation, None, e))?.decode())
        .collect()
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
    now: DateTime<Utc>,
) -> Result<SessionRecord, StoreError> {
    let operation = "fork session";
    let tx = write_tx(conn, operation, id)?;
    let parent = require_raw(&tx, operation, id)?.decode()?;
    let at = copies::fork_point(&parent, at_seq)?;
    let events = load(&tx, id, 0, Some(at))?;
    let (record, events) = copies::forked(parent, at, events, new_id, owner, now);
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
    tx.execute("DELETE FROM sessions WHERE id = ?1", [&id.0])
        .map_err(|e| sqlite(operation, Some(id), e))?;
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
