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
use crate::store::document::{DocumentSession, SessionDocument};
use crate::store::lease::Owner;
use crate::store::record::{STATUS_ACTIVE, STATUS_IDLE, queries_in, restamp, title_of_events};
use crate::store::{SessionRecord, StoreError};
use chrono::{DateTime, SubsecRound, Utc};
use deadpool_postgres::Client;
use tokio_postgres::IsolationLevel;

fn status_of(owner: Option<Owner>) -> &'static str {
    if owner.is_some() {
        STATUS_ACTIVE
    } else {
        STATUS_IDLE
    }
}

pub async fn fork(
    client: &mut Client,
    failures: &Failures,
    id: &SessionId,
    at_seq: Option<u64>,
    new_id: SessionId,
    owner: Option<Owner>,
    now: DateTime<Utc>,
) -> Result<SessionRecord, StoreError> {
    let operation = "fork session";
    if !storable_id(&id.0) {
        return Err(StoreError::NotFound { id: id.0.clone() });
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    let tx = client.transaction().await.map_err(fail)?;
    let parent = statements::existing_session(&tx, failures, operation, id, Lock::Share).await?;
    let at = at_seq.unwrap_or(parent.last_seq);
    if at > parent.last_seq {
        return Err(StoreError::SeqOutOfRange {
            id: id.clone(),
            at_seq: at,
            last_seq: parent.last_seq,
        });
    }
    let events = statements::events(&tx, failures, operation, id, 0, Some(at)).await?;
    let events = restamp(events, &new_id);
    let record = SessionRecord {
        title: parent.title.map(|title| format!("{title} (fork)")),
        created_at: now,
        updated_at: now,
        model: parent.model,
        workspace: parent.workspace,
        parent: Some((id.clone(), at)),
        parent_call: None,
        status: status_of(owner).to_string(),
        owner,
        last_seq: events.last().map_or(0, |event| event.seq),
        event_count: events.len() as u64,
        reserved_seq: 0,
        claim: None,
        turns: queries_in(&events),
        id: new_id,
    };
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
    let (parent, fork_seq) = record.parent.unzip();
    Ok(SessionDocument::new(
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
    ))
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
    document.validate()?;
    let session = document.session;
    // `validate` made sure parent and fork_seq come together.
    let parent = session.parent.zip(session.fork_seq);
    let events = restamp(document.events, &new_id);
    let record = SessionRecord {
        title: session.title.or_else(|| title_of_events(&events)),
        created_at: session.created_at.trunc_subsecs(6),
        updated_at: now,
        model: session.model,
        workspace: session.workspace,
        parent,
        parent_call: None,
        status: status_of(owner).to_string(),
        owner,
        last_seq: events.last().map_or(0, |event| event.seq),
        event_count: events.len() as u64,
        reserved_seq: 0,
        claim: None,
        turns: queries_in(&events),
        id: new_id,
    };
    let fail = |e| failures.statement(operation, Some(&record.id), e);
    let tx = client.transaction().await.map_err(fail)?;
    statements::insert_session(&tx, failures, &record).await?;
    statements::insert_events(&tx, failures, &record.id, 0, &events).await?;
    tx.commit()
        .await
        .map_err(|e| failures.statement(operation, Some(&record.id), e))?;
    Ok(record)
}
