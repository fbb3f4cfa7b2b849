//! Rows as the Postgres backend reads and writes them: a session's columns
//! decoded into a [`SessionRecord`], events decoded from their bodies, and
//! Rust values made fit for Postgres columns.
//!
//! Exists so that every operation decodes the same way and nothing read
//! panics: a column of an unexpected type, a negative counter, a lease
//! that does not parse, a body that is not the event its row says — each
//! is [`StoreError::Corrupt`] naming the session (and seq).
//!
//! Never runs a statement: the operation files do, and hand rows here.

use crate::protocol::{EventEnvelope, SessionId};
use crate::store::lease::Owner;
use crate::store::record::{decode_event, viewer_set};
use crate::store::{SessionRecord, StoreError};
use chrono::{DateTime, Utc};
use tokio_postgres::Row;
use tokio_postgres::types::FromSql;

/// The `sessions` columns a new row is written with.
macro_rules! session_columns {
    () => {
        "id, title, created_at, updated_at, model, workspace, parent_id, fork_seq, \
         parent_call_id, status, owner, last_seq, seq_reserved, event_count, turns, created_by"
    };
}
pub const SESSION_COLUMNS: &str = session_columns!();

/// What every read of a session selects, in [`decode_session`]'s order: its
/// columns, then its viewers (sorted) from `session_viewers`.
pub const SELECT_SESSION: &str = concat!(
    session_columns!(),
    ", ARRAY(SELECT name FROM session_viewers \
        WHERE session_viewers.session_id = sessions.id ORDER BY name)"
);

/// How many candidates an [`StoreError::Ambiguous`] lists.
pub const MAX_CANDIDATES: usize = 5;

pub fn corrupt(id: &str, seq: Option<u64>, detail: impl Into<String>) -> StoreError {
    StoreError::Corrupt {
        id: id.to_string(),
        seq,
        detail: detail.into(),
    }
}

/// Column `index` of `row`, or [`StoreError::Corrupt`] when it does not
/// read as a `T`.
pub fn column<'a, T: FromSql<'a>>(row: &'a Row, index: usize, id: &str) -> Result<T, StoreError> {
    row.try_get(index).map_err(|e| {
        let name = row.columns().get(index).map_or("?", |column| column.name());
        corrupt(id, None, format!("column {name}: {e}"))
    })
}

/// A stored count or seq, refusing a negative one.
pub fn count(id: &str, what: &str, n: i64) -> Result<u64, StoreError> {
    u64::try_from(n).map_err(|_| corrupt(id, None, format!("{what} is negative ({n})")))
}

/// A `u64` as a `bigint` (values past `i64::MAX` saturate: seqs and
/// counts never get there).
pub fn int(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Text for a Postgres `text` column, which cannot hold NUL characters:
/// each becomes U+FFFD (titles, models and workspaces are shown, never
/// parsed).
pub fn text(value: &str) -> std::borrow::Cow<'_, str> {
    if value.contains('\0') {
        std::borrow::Cow::Owned(value.replace('\0', "\u{FFFD}"))
    } else {
        std::borrow::Cow::Borrowed(value)
    }
}

/// Whether `id` can be a stored session id at all: Postgres text holds no
/// NUL, so an id with one names no session (rather than failing the
/// statement).
pub fn storable_id(id: &str) -> bool {
    !id.contains('\0')
}

/// A `sessions` row, selected as [`SELECT_SESSION`].
pub fn decode_session(row: &Row) -> Result<SessionRecord, StoreError> {
    let id: String = row
        .try_get(0)
        .map_err(|e| corrupt("", None, format!("a session id: {e}")))?;
    let id_ref = id.as_str();
    let parent_id: Option<String> = column(row, 6, id_ref)?;
    let fork_seq: Option<i64> = column(row, 7, id_ref)?;
    let parent = match (parent_id, fork_seq) {
        (None, None) => None,
        (Some(parent), Some(seq)) => Some((SessionId(parent), count(id_ref, "fork_seq", seq)?)),
        _ => {
            return Err(corrupt(
                id_ref,
                None,
                "parent_id and fork_seq must be set together",
            ));
        }
    };
    let owner: Option<String> = column(row, 10, id_ref)?;
    let owner = owner
        .map(|owner| {
            owner
                .parse::<Owner>()
                .map_err(|e| corrupt(id_ref, None, e.to_string()))
        })
        .transpose()?;
    Ok(SessionRecord {
        title: column(row, 1, id_ref)?,
        created_at: column::<DateTime<Utc>>(row, 2, id_ref)?,
        updated_at: column::<DateTime<Utc>>(row, 3, id_ref)?,
        model: column(row, 4, id_ref)?,
        workspace: column(row, 5, id_ref)?,
        parent,
        parent_call: column(row, 8, id_ref)?,
        status: column(row, 9, id_ref)?,
        owner,
        last_seq: count(id_ref, "last_seq", column(row, 11, id_ref)?)?,
        reserved_seq: count(id_ref, "seq_reserved", column(row, 12, id_ref)?)?,
        claim: None,
        event_count: count(id_ref, "event_count", column(row, 13, id_ref)?)?,
        turns: count(id_ref, "turns", column(row, 14, id_ref)?)?,
        created_by: column(row, 15, id_ref)?,
        viewers: viewer_set(column::<Vec<String>>(row, 16, id_ref)?),
        id: SessionId(id),
    })
}

/// Event rows selected as `seq, body::text` of session `id`, decoded and
/// checked (the body must be the event its row says).
pub fn decode_events(rows: &[Row], id: &SessionId) -> Result<Vec<EventEnvelope>, StoreError> {
    rows.iter()
        .map(|row| {
            let seq: i64 = column(row, 0, &id.0)?;
            let seq = u64::try_from(seq).map_err(|_| corrupt(&id.0, None, format!("seq {seq}")))?;
            let body: String = column(row, 1, &id.0)?;
            decode_event(&body, id, seq)
        })
        .collect()
}

/// An event's body as stored: its JSON.
pub fn encode_event(id: &SessionId, event: &EventEnvelope) -> Result<String, StoreError> {
    serde_json::to_string(event).map_err(|source| StoreError::Encode {
        id: id.clone(),
        seq: event.seq,
        source,
    })
}
