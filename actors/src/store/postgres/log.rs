//! The operations on a session's log and its waiting inputs: commit a
//! step, keep an accepted input, read what waits, replay events.
//!
//! Exists to keep the log's rules where its writes are: a commit is one
//! transaction holding the session's row (`FOR UPDATE`), so nothing else
//! commits to that session meanwhile; it stores the step's persisted
//! events (never a `stream_event`), refuses one whose seq is not after the
//! stored log, raises the seq reservation (never lowers it) and forgets
//! the inputs no longer waiting — all or nothing.
//!
//! On a node of a cluster every commit and accepted input is also fenced
//! (`claims`): under the row lock, the session must still be this node's
//! at the epoch it claimed, or nothing is written
//! ([`StoreError::Fenced`]); a commit also keeps the session's `busy`.
//!
//! A networked store can lose the answer to a commit that did happen (the
//! connection breaks after `COMMIT` is sent); the AgentLoop then sends its
//! events again with the next commit. So a commit whose first events are
//! exactly (byte for byte) the last ones stored is recognised as that
//! repeat, and those events are not stored twice; an event at a stored seq
//! that differs is refused, as always. History is never rewritten.

use super::claims;
use super::failure::Failures;
use super::ownership::{Claim, Ownership};
use super::rows::{column, corrupt, count, encode_event, int, storable_id, text};
use super::statements;
use crate::protocol::{EventEnvelope, SessionId};
use crate::store::record::{is_query, title_of_events};
use crate::store::{AcceptedInput, Commit, StoreError};
use chrono::{DateTime, Utc};
use deadpool_postgres::{Client, GenericClient};
use std::collections::HashMap;

fn not_found(id: &SessionId) -> StoreError {
    StoreError::NotFound { id: id.0.clone() }
}

/// A node's claim a write must still hold (cluster mode).
pub type Fence<'a> = Option<(&'a Ownership, Claim)>;

pub async fn commit(
    client: &mut Client,
    failures: &Failures,
    id: &SessionId,
    commit: &Commit,
    now: DateTime<Utc>,
    fence: Fence<'_>,
) -> Result<(), StoreError> {
    let operation = "append events";
    if !storable_id(&id.0) {
        return Err(not_found(id));
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    let tx = client.transaction().await.map_err(fail)?;
    let statement = tx
        .prepare_cached(
            "SELECT last_seq, title IS NOT NULL, epoch FROM sessions WHERE id = $1 FOR UPDATE",
        )
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    let row = tx
        .query_opt(&statement, &[&id.0])
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?
        .ok_or_else(|| not_found(id))?;
    let stored_last = count(&id.0, "last_seq", column(&row, 0, &id.0)?)?;
    let has_title: bool = column(&row, 1, &id.0)?;
    let epoch: i64 = column(&row, 2, &id.0)?;
    // The row is locked: a claim by another node waits for this
    // transaction, so the fence holds until it commits.
    if let Some((ownership, claim)) = fence {
        claims::check_fence(&tx, failures, ownership, id, &claim, operation).await?;
    }
    // Only a node keeps `busy` (it tells the sweeps what to adopt).
    let busy = fence.and(commit.busy);

    let persisted: Vec<&EventEnvelope> = commit
        .events
        .iter()
        .map(AsRef::as_ref)
        .filter(|event| event.message.is_persisted())
        .collect();
    for event in &persisted {
        if event.session_id != *id {
            return Err(StoreError::ForeignEvent {
                id: id.clone(),
                seq: event.seq,
                event_session: event.session_id.clone(),
            });
        }
    }
    let repeated = persisted
        .iter()
        .take_while(|event| event.seq <= stored_last)
        .count();
    if repeated > 0 {
        check_repeat(&tx, failures, id, &persisted[..repeated], stored_last).await?;
    }
    let new = &persisted[repeated..];
    let mut last = stored_last;
    for event in new {
        if event.seq <= last {
            return Err(StoreError::SeqConflict {
                id: id.clone(),
                seq: event.seq,
                last_seq: last,
            });
        }
        last = event.seq;
    }

    // The writes are sent together (pipelined on the connection) and run
    // in order; the first that fails fails the transaction.
    let insert = async {
        if new.is_empty() {
            return Ok(());
        }
        statements::insert_events(&tx, failures, id, epoch, new.iter().copied()).await
    };
    let update = async {
        if new.is_empty() && commit.reserve_seq.is_none() && busy.is_none() {
            return Ok(());
        }
        let title = if has_title {
            None
        } else {
            title_of_events(new.iter().copied()).map(|title| text(&title).into_owned())
        };
        let queries = new.iter().filter(|event| is_query(event)).count() as u64;
        let reserve = commit.reserve_seq.map(int);
        let statement = tx
            .prepare_cached(
                "UPDATE sessions SET \
                     updated_at = CASE WHEN $3::bigint > 0 THEN $2::timestamptz ELSE updated_at END, \
                     last_seq = $4::bigint, event_count = event_count + $3::bigint, \
                     title = COALESCE(title, $5::text), turns = turns + $6::bigint, \
                     seq_reserved = GREATEST(seq_reserved, COALESCE($7::bigint, 0)), \
                     busy = COALESCE($8::boolean, busy) \
                 WHERE id = $1",
            )
            .await
            .map_err(|e| failures.statement(operation, Some(id), e))?;
        tx.execute(
            &statement,
            &[
                &id.0,
                &now,
                &int(new.len() as u64),
                &int(last),
                &title,
                &int(queries),
                &reserve,
                &busy,
            ],
        )
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))
        .map(drop)
    };
    let forget = async {
        let Some(waiting) = &commit.waiting else {
            return Ok(());
        };
        let waiting: Vec<i64> = waiting.iter().copied().map(int).collect();
        let statement = tx
            .prepare_cached(
                "DELETE FROM inputs WHERE session_id = $1 AND NOT (input_id = ANY($2::bigint[]))",
            )
            .await
            .map_err(|e| failures.statement("forget started inputs", Some(id), e))?;
        tx.execute(&statement, &[&id.0, &waiting])
            .await
            .map_err(|e| failures.statement("forget started inputs", Some(id), e))
            .map(drop)
    };
    futures::try_join!(insert, update, forget)?;
    tx.commit()
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))
}

/// `events` (all at or below `stored_last`) are a commit sent again: each
/// must be stored already, byte for byte; otherwise the first that is not
/// is [`StoreError::SeqConflict`].
async fn check_repeat(
    tx: &deadpool_postgres::Transaction<'_>,
    failures: &Failures,
    id: &SessionId,
    events: &[&EventEnvelope],
    stored_last: u64,
) -> Result<(), StoreError> {
    let seqs: Vec<i64> = events.iter().map(|event| int(event.seq)).collect();
    let rows = tx
        .query(
            "SELECT seq, body::text FROM events WHERE session_id = $1 AND seq = ANY($2::bigint[])",
            &[&id.0, &seqs],
        )
        .await
        .map_err(|e| failures.statement("append events", Some(id), e))?;
    let mut stored: HashMap<i64, String> = HashMap::with_capacity(rows.len());
    for row in &rows {
        stored.insert(column(row, 0, &id.0)?, column(row, 1, &id.0)?);
    }
    for event in events {
        let same = stored
            .get(&int(event.seq))
            .is_some_and(|body| encode_event(id, event).is_ok_and(|sent| sent == *body));
        if !same {
            return Err(StoreError::SeqConflict {
                id: id.clone(),
                seq: event.seq,
                last_seq: stored_last,
            });
        }
    }
    tracing::info!(
        session = %id,
        events = events.len(),
        "a commit was sent again after its answer was lost; its stored events are kept as they are"
    );
    Ok(())
}

pub async fn accept_input(
    client: &mut Client,
    failures: &Failures,
    id: &SessionId,
    input: &AcceptedInput,
    now: DateTime<Utc>,
    fence: Fence<'_>,
) -> Result<(), StoreError> {
    let operation = "store an accepted input";
    if !storable_id(&id.0) {
        return Err(not_found(id));
    }
    let body = serde_json::to_string(&input.input).map_err(|source| StoreError::EncodeInput {
        id: id.clone(),
        input_id: input.input_id,
        source,
    })?;
    let fail = |e| failures.statement(operation, Some(id), e);
    let Some((ownership, claim)) = fence else {
        return insert_input(&*client, failures, id, input.input_id, &body, now).await;
    };
    // A node keeps an input only while it owns the session (the new owner
    // would never run it), and marks the session busy with it: a node
    // that dies now leaves it to be adopted.
    let tx = client.transaction().await.map_err(fail)?;
    tx.query_opt("SELECT 1 FROM sessions WHERE id = $1 FOR UPDATE", &[&id.0])
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?
        .ok_or_else(|| not_found(id))?;
    claims::check_fence(&tx, failures, ownership, id, &claim, operation).await?;
    tx.execute("UPDATE sessions SET busy = true WHERE id = $1", &[&id.0])
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    insert_input(&tx, failures, id, input.input_id, &body, now).await?;
    tx.commit()
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))
}

/// Insert input `input_id` (its JSON `body`) as waiting.
async fn insert_input(
    client: &impl GenericClient,
    failures: &Failures,
    id: &SessionId,
    input_id: u64,
    body: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let operation = "store an accepted input";
    let fail = |e| failures.statement(operation, Some(id), e);
    let statement = client
        .prepare_cached(
            "INSERT INTO inputs (session_id, input_id, accepted_at, body) \
             VALUES ($1, $2, $3, $4::text::json)",
        )
        .await
        .map_err(fail)?;
    match client
        .execute(&statement, &[&id.0, &int(input_id), &now, &body])
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code() == Some(&tokio_postgres::error::SqlState::FOREIGN_KEY_VIOLATION) => {
            Err(not_found(id))
        }
        Err(e) => Err(failures.statement(operation, Some(id), e)),
    }
}

pub async fn waiting_inputs(
    client: &Client,
    failures: &Failures,
    id: &SessionId,
) -> Result<Vec<AcceptedInput>, StoreError> {
    let operation = "load waiting inputs";
    if !storable_id(&id.0) {
        return Ok(Vec::new());
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    let statement = client
        .prepare_cached(
            "SELECT input_id, body::text FROM inputs WHERE session_id = $1 ORDER BY input_id",
        )
        .await
        .map_err(fail)?;
    let rows = client
        .query(&statement, &[&id.0])
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    rows.iter()
        .map(|row| {
            let input_id: i64 = column(row, 0, &id.0)?;
            let input_id = u64::try_from(input_id)
                .map_err(|_| corrupt(&id.0, None, format!("input id {input_id}")))?;
            let body: String = column(row, 1, &id.0)?;
            let input = serde_json::from_str(&body).map_err(|e| {
                corrupt(
                    &id.0,
                    None,
                    format!("waiting input {input_id} does not parse: {e}"),
                )
            })?;
            Ok(AcceptedInput { input_id, input })
        })
        .collect()
}

pub async fn sessions_with_waiting_inputs(
    client: &Client,
    failures: &Failures,
) -> Result<Vec<SessionId>, StoreError> {
    let operation = "list sessions with waiting inputs";
    let rows = client
        .query(
            "SELECT DISTINCT session_id FROM inputs ORDER BY session_id",
            &[],
        )
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    rows.iter()
        .map(|row| column::<String>(row, 0, "").map(SessionId))
        .collect()
}

pub async fn load_events(
    client: &Client,
    failures: &Failures,
    id: &SessionId,
    after_seq: u64,
    up_to: Option<u64>,
) -> Result<Vec<EventEnvelope>, StoreError> {
    let operation = "load events";
    if !storable_id(&id.0) {
        return Err(not_found(id));
    }
    let events = statements::events(client, failures, operation, id, after_seq, up_to).await?;
    // Events exist only while their session does; none may mean no session.
    if events.is_empty() {
        let exists = client
            .query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&id.0])
            .await
            .map_err(|e| failures.statement(operation, Some(id), e))?;
        if exists.is_none() {
            return Err(not_found(id));
        }
    }
    Ok(events)
}
