//! The statements several operations share: a session's row, a range of
//! its log, a new session's row, a batch of events.
//!
//! Exists so that each is written once — in particular a batch of events
//! is one `INSERT ... SELECT FROM unnest(...)` of arrays, whatever its
//! size, rather than a statement per event. Each runs on whatever it is
//! given (a pooled connection or a transaction) and maps its failure with
//! [`Failures`]; none opens or commits a transaction.

use super::failure::{Failures, is_unique_violation};
use super::rows::{
    SELECT_SESSION, SESSION_COLUMNS, decode_events, decode_session, encode_event, int, text,
};
use crate::protocol::{EventEnvelope, SessionId};
use crate::store::{SessionRecord, StoreError};
use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;

/// How a session's row is read.
#[derive(Clone, Copy)]
pub enum Lock {
    /// A plain read.
    None,
    /// `FOR SHARE`: no commit to the session until the transaction ends.
    Share,
    /// `FOR UPDATE`: the session is this transaction's until it ends.
    Update,
}

/// Session `id`'s row, if there is one.
pub async fn session(
    client: &impl GenericClient,
    failures: &Failures,
    operation: &'static str,
    id: &SessionId,
    lock: Lock,
) -> Result<Option<SessionRecord>, StoreError> {
    let sql = match lock {
        Lock::None => format!("SELECT {SELECT_SESSION} FROM sessions WHERE id = $1"),
        Lock::Share => format!("SELECT {SELECT_SESSION} FROM sessions WHERE id = $1 FOR SHARE"),
        Lock::Update => format!("SELECT {SELECT_SESSION} FROM sessions WHERE id = $1 FOR UPDATE"),
    };
    let fail = |e| failures.statement(operation, Some(id), e);
    let statement = client.prepare_cached(&sql).await.map_err(fail)?;
    let row = client
        .query_opt(&statement, &[&id.0])
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    row.as_ref().map(decode_session).transpose()
}

/// Session `id`'s row, or [`StoreError::NotFound`].
pub async fn existing_session(
    client: &impl GenericClient,
    failures: &Failures,
    operation: &'static str,
    id: &SessionId,
    lock: Lock,
) -> Result<SessionRecord, StoreError> {
    session(client, failures, operation, id, lock)
        .await?
        .ok_or_else(|| StoreError::NotFound { id: id.0.clone() })
}

/// The events of session `id` with `after < seq <= up_to`, in seq order.
pub async fn events(
    client: &impl GenericClient,
    failures: &Failures,
    operation: &'static str,
    id: &SessionId,
    after: u64,
    up_to: Option<u64>,
) -> Result<Vec<EventEnvelope>, StoreError> {
    let fail = |e| failures.statement(operation, Some(id), e);
    let statement = client
        .prepare_cached(
            "SELECT seq, body::text FROM events \
             WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq",
        )
        .await
        .map_err(fail)?;
    let rows = client
        .query(
            &statement,
            &[&id.0, &int(after), &int(up_to.unwrap_or(u64::MAX))],
        )
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    decode_events(&rows, id)
}

/// Insert `record` as a new session ([`StoreError::Exists`] if its id is
/// taken).
pub async fn insert_session(
    client: &impl GenericClient,
    failures: &Failures,
    record: &SessionRecord,
) -> Result<(), StoreError> {
    let operation = "insert session";
    let fail = |e| failures.statement(operation, Some(&record.id), e);
    let statement = client
        .prepare_cached(&format!(
            "INSERT INTO sessions ({SESSION_COLUMNS}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"
        ))
        .await
        .map_err(fail)?;
    let title = record.title.as_deref().map(text);
    let parent_id = record.parent.as_ref().map(|(parent, _)| parent.0.as_str());
    let fork_seq = record.parent.as_ref().map(|(_, seq)| int(*seq));
    let owner = record.owner.map(|owner| owner.to_string());
    let result = client
        .query(
            &statement,
            &[
                &record.id.0,
                &title.as_deref(),
                &record.created_at,
                &record.updated_at,
                &text(&record.model).as_ref(),
                &text(&record.workspace).as_ref(),
                &parent_id,
                &fork_seq,
                &record.parent_call.as_deref().map(text).as_deref(),
                &record.status,
                &owner,
                &int(record.last_seq),
                &int(record.reserved_seq),
                &int(record.event_count),
                &int(record.turns),
                &record.created_by.as_deref().map(text).as_deref(),
            ],
        )
        .await;
    match result {
        Ok(_) => Ok(()),
        Err(e) if is_unique_violation(&e) => Err(StoreError::Exists {
            id: record.id.clone(),
        }),
        Err(e) => Err(failures.statement(operation, Some(&record.id), e)),
    }
}

/// Insert `events` into session `id`'s log, stamped with the session's
/// `epoch`, in one statement. The caller has checked their seqs; a seq
/// that exists anyway is [`StoreError::SeqConflict`].
pub async fn insert_events<'e>(
    client: &impl GenericClient,
    failures: &Failures,
    id: &SessionId,
    epoch: i64,
    events: impl IntoIterator<Item = &'e EventEnvelope>,
) -> Result<(), StoreError> {
    let operation = "insert events";
    let mut seqs: Vec<i64> = Vec::new();
    let mut times: Vec<DateTime<Utc>> = Vec::new();
    let mut types: Vec<&'static str> = Vec::new();
    let mut turns: Vec<Option<i64>> = Vec::new();
    let mut bodies: Vec<String> = Vec::new();
    for event in events {
        seqs.push(int(event.seq));
        times.push(event.at);
        types.push(event.message.type_name());
        turns.push(event.turn_id.map(int));
        bodies.push(encode_event(id, event)?);
    }
    if seqs.is_empty() {
        return Ok(());
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    let statement = client
        .prepare_cached(
            "INSERT INTO events (session_id, seq, epoch, at, type, turn_id, body) \
             SELECT $1, e.seq, $2, e.at, e.type, e.turn_id, e.body::json \
             FROM unnest($3::bigint[], $4::timestamptz[], $5::text[], $6::bigint[], $7::text[]) \
                  AS e (seq, at, type, turn_id, body)",
        )
        .await
        .map_err(fail)?;
    let result = client
        .execute(
            &statement,
            &[&id.0, &epoch, &seqs, &times, &types, &turns, &bodies],
        )
        .await;
    match result {
        Ok(_) => Ok(()),
        Err(e) if is_unique_violation(&e) => {
            let first = seqs.first().copied().unwrap_or_default();
            let seq = u64::try_from(first).unwrap_or_default();
            Err(StoreError::SeqConflict {
                id: id.clone(),
                seq,
                last_seq: seq,
            })
        }
        Err(e) => Err(failures.statement(operation, Some(id), e)),
    }
}
