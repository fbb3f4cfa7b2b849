//! The operations that copy a session: fork it, export it as a document,
//! import a document as a new session.
//!
//! Exists so that a copy is always a new session made in one transaction
//! (its row and its whole log, or nothing) and the original is only read:
//! a fork holds its parent's row `FOR SHARE` while it copies, an export
//! reads in one snapshot (`REPEATABLE READ`), so neither sees half a
//! commit. Never changes the session it copies from.

use super::failure::Failures;
use super::rows::storable_id;
use super::statements::{self, Lock};
use crate::protocol::SessionId;
use crate::store::copies;
use crate::store::document::SessionDocument;
use crate::store::lease::Owner;
use crate::store::{SessionRecord, StoreError};
use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use tokio_postgres::IsolationLevel;

#[allow(clippy::too_many_arguments)] // The trait's fork, and what it runs on.
pub async fn fork(
    client: &mut Client,
    failures: &Failures,
    id: &SessionId,
    at_seq: Option<u64>,
    new_id: SessionId,
    owner: Option<Owner>,
    created_by: Option<String>,
    now: DateTime<Utc>,
) -> Result<SessionRecord, StoreError> {
    let operation = "fork session";
    if !storable_id(&id.0) {
        return Err(StoreError::NotFound { id: id.0.clone() });
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    let tx = client.transaction().await.map_err(fail)?;
    let parent = statements::existing_session(&tx, failures, operation, id, Lock::Share).await?;
    let at = copies::fork_point(&parent, at_seq)?;
    let events = statements::events(&tx, failures, operation, id, 0, Some(at)).await?;
    let (record, events) = copies::forked(parent, at, events, new_id, owner, created_by, now);
    statements::insert_session(&tx, failures, &record).await?;
    statements::insert_events(&tx, failures, &record.id, 0, &events).await?;
    tx.commit()
        .await
        .map_err(|e| failures.statement(operation, Some(&record.id), e))?;
    Ok(record)
}

pub async fn export(
    client: &mut Client,
    failures: &Failures,
    id: &SessionId,
    now: DateTime<Utc>,
) -> Result<SessionDocument, StoreError> {
    let operation = "export session";
    if !storable_id(&id.0) {
        return Err(StoreError::NotFound { id: id.0.clone() });
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    // One snapshot: the record and the log agree.
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(fail)?;
    let record = statements::existing_session(&tx, failures, operation, id, Lock::None).await?;
    let events = statements::events(&tx, failures, operation, id, 0, None).await?;
    tx.commit()
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    Ok(copies::exported(record, events, now))
}

pub async fn import(
    client: &mut Client,
    failures: &Failures,
    document: SessionDocument,
    new_id: SessionId,
    owner: Option<Owner>,
    now: DateTime<Utc>,
) -> Result<SessionRecord, StoreError> {
    let operation = "import session";
    let (record, events) = copies::imported(document, new_id, owner, now)?;
    let fail = |e| failures.statement(operation, Some(&record.id), e);
    let tx = client.transaction().await.map_err(fail)?;
    statements::insert_session(&tx, failures, &record).await?;
    statements::insert_events(&tx, failures, &record.id, 0, &events).await?;
    tx.commit()
        .await
        .map_err(|e| failures.statement(operation, Some(&record.id), e))?;
    Ok(record)
}
