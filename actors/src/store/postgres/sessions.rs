//! The operations on the `sessions` table itself: create, take and give
//! up the lease, delete, name, and find sessions (get, resolve a prefix;
//! the list is `visibility`'s).
//!
//! Exists to keep the lease rule in one place: a session may be taken when
//! it is free, already the caller's, or held by a process that is gone
//! ([`Owner::is_alive`]) — decided under the row's lock (`FOR UPDATE`), so
//! two processes taking one session at once are served one after the
//! other. A node of a cluster (`ownership` given) claims instead (see
//! `claims`): a new epoch, unless its sweep adopted the session already;
//! and nobody takes a session a live node drives. Deleting a session
//! deletes its checkpoints and the blobs only they referred to
//! (`checkpoints`), in the same transaction. Never reads the clock
//! (`now` is an argument) and never decides anything else.

use super::checkpoints;
use super::claims;
use super::failure::Failures;
use super::ownership::{Claim, Ownership};
use super::rows::{MAX_CANDIDATES, int, storable_id, text};
use super::statements::{self, Lock};
use crate::protocol::{EventEnvelope, SessionId};
use crate::store::lease::Owner;
use crate::store::record::{STATUS_ACTIVE, STATUS_IDLE};
use crate::store::{NewSession, NodeClaim, SessionRecord, StoreError};
use chrono::{DateTime, Utc};
use deadpool_postgres::Client;

fn not_found(id: &SessionId) -> StoreError {
    StoreError::NotFound { id: id.0.clone() }
}

pub async fn create(
    client: &mut Client,
    failures: &Failures,
    ownership: Option<&Ownership>,
    new: NewSession,
    owner: Owner,
    now: DateTime<Utc>,
) -> Result<SessionRecord, StoreError> {
    // A node's sessions are held by the node, not the process.
    let record = new.record(ownership.is_none().then_some(owner), now);
    let Some(ownership) = ownership else {
        statements::insert_session(&*client, failures, &record).await?;
        return Ok(record);
    };
    let id = &record.id;
    let me = ownership.claimant(id)?;
    let fail = |e| failures.statement("create session", Some(id), e);
    let tx = client.transaction().await.map_err(fail)?;
    statements::insert_session(&tx, failures, &record).await?;
    let claim = claims::claim_new(&tx, failures, id, me).await?;
    tx.commit().await.map_err(fail)?;
    ownership.record(id, claim);
    Ok(record)
}

pub async fn acquire(
    client: &mut Client,
    failures: &Failures,
    ownership: Option<&Ownership>,
    id: &SessionId,
    owner: Owner,
) -> Result<(SessionRecord, Vec<EventEnvelope>), StoreError> {
    let operation = "acquire session";
    if !storable_id(&id.0) {
        return Err(not_found(id));
    }
    let me = ownership.map(|o| o.claimant(id)).transpose()?;
    let fail = |e| failures.statement(operation, Some(id), e);
    let tx = client.transaction().await.map_err(fail)?;
    let mut record =
        statements::existing_session(&tx, failures, operation, id, Lock::Update).await?;
    // A live node of a cluster drives it: neither a node nor a process of
    // its own may take it.
    let holder = claims::holder(&tx, failures, operation, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    holder.held_by_other(id, me)?;
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
    let claim = match (ownership, me) {
        (Some(ownership), Some(me)) => Some(match ownership.current(id) {
            // Adopted by this node's sweep and not loaded since: that
            // claim is this load's.
            Some(adopted)
                if adopted.node == me
                    && holder.node == Some(me)
                    && holder.epoch == adopted.epoch
                    && adopted.adopted.is_some() =>
            {
                record.reserved_seq = adopted.adopted.unwrap_or(record.reserved_seq);
                Claim {
                    adopted: None,
                    ..adopted
                }
            }
            _ => claims::claim(&tx, failures, id, me).await?,
        }),
        _ => {
            let statement = tx
                .prepare_cached("UPDATE sessions SET status = $1, owner = $2 WHERE id = $3")
                .await
                .map_err(|e| failures.statement(operation, Some(id), e))?;
            tx.execute(&statement, &[&STATUS_ACTIVE, &owner.to_string(), &id.0])
                .await
                .map_err(|e| failures.statement(operation, Some(id), e))?;
            None
        }
    };
    record.status = STATUS_ACTIVE.to_string();
    record.owner = claim.is_none().then_some(owner);
    record.claim = claim.map(|claim| NodeClaim {
        node: claim.node.to_string(),
        epoch: u64::try_from(claim.epoch).unwrap_or_default(),
    });
    let events = statements::events(&tx, failures, operation, id, 0, None).await?;
    tx.commit()
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    if let (Some(ownership), Some(claim)) = (ownership, claim) {
        ownership.record(id, claim);
    }
    Ok((record, events))
}

pub async fn release(
    client: &Client,
    failures: &Failures,
    ownership: Option<&Ownership>,
    id: &SessionId,
    owner: Owner,
) -> Result<(), StoreError> {
    let operation = "release session";
    if !storable_id(&id.0) {
        return Err(not_found(id));
    }
    if let Some(ownership) = ownership {
        // Only this node's claim is given up: a session another node took
        // meanwhile stays its.
        return match ownership.forget(id) {
            Some(claim) => claims::release(client, failures, id, &claim).await,
            None => Ok(()),
        };
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    let statement = client
        .prepare_cached(
            "UPDATE sessions SET status = $1, owner = NULL WHERE id = $2 AND owner = $3",
        )
        .await
        .map_err(fail)?;
    let changed = client
        .execute(&statement, &[&STATUS_IDLE, &id.0, &owner.to_string()])
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    if changed == 0 {
        // Not ours (any more): nothing to release, but the id must exist.
        let exists = client
            .query_opt("SELECT 1 FROM sessions WHERE id = $1", &[&id.0])
            .await
            .map_err(|e| failures.statement(operation, Some(id), e))?;
        if exists.is_none() {
            return Err(not_found(id));
        }
    }
    Ok(())
}

pub async fn set_title(
    client: &Client,
    failures: &Failures,
    id: &SessionId,
    title: &str,
) -> Result<(), StoreError> {
    let operation = "set session title";
    if !storable_id(&id.0) {
        return Err(not_found(id));
    }
    let changed = client
        .execute(
            "UPDATE sessions SET title = $1 WHERE id = $2",
            &[&text(title).as_ref(), &id.0],
        )
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    if changed == 0 {
        return Err(not_found(id));
    }
    Ok(())
}

pub async fn delete(
    client: &mut Client,
    failures: &Failures,
    ownership: Option<&Ownership>,
    id: &SessionId,
    owner: Owner,
) -> Result<(), StoreError> {
    let operation = "delete session";
    if !storable_id(&id.0) {
        return Err(not_found(id));
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    let tx = client.transaction().await.map_err(fail)?;
    // Only the lease is read: deleting is the way out of a corrupt session,
    // so nothing else in the row may stand in the way, and a lease that
    // does not parse protects nothing.
    let row = tx
        .query_opt(
            "SELECT owner FROM sessions WHERE id = $1 FOR UPDATE",
            &[&id.0],
        )
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?
        .ok_or_else(|| not_found(id))?;
    let holder = row
        .try_get::<_, Option<String>>(0)
        .ok()
        .flatten()
        .and_then(|text| text.parse::<Owner>().ok());
    if let Some(holder) = holder
        && holder != owner
        && holder.is_alive()
    {
        return Err(StoreError::Busy {
            id: id.clone(),
            pid: holder.pid,
        });
    }
    if let Some(node) = claims::holder(&tx, failures, operation, id).await? {
        node.held_by_other(id, ownership.map(Ownership::node))?;
    }
    // Its checkpoints go with it (cascade), and then the blobs only they
    // referred to.
    let hashes = checkpoints::hashes_of_session(&tx, failures, operation, id).await?;
    tx.execute("DELETE FROM sessions WHERE id = $1", &[&id.0])
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    checkpoints::delete_unreferenced_blobs(&tx, failures, operation, id, &hashes).await?;
    tx.commit()
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    if let Some(ownership) = ownership {
        ownership.forget(id);
    }
    Ok(())
}

pub async fn get(
    client: &Client,
    failures: &Failures,
    id: &SessionId,
) -> Result<Option<SessionRecord>, StoreError> {
    if !storable_id(&id.0) {
        return Ok(None);
    }
    statements::session(client, failures, "get session", id, Lock::None).await
}

pub async fn resolve(
    client: &Client,
    failures: &Failures,
    prefix: &str,
) -> Result<SessionId, StoreError> {
    let operation = "resolve session id";
    let not_found = || StoreError::NotFound {
        id: prefix.to_string(),
    };
    if prefix.is_empty() || !storable_id(prefix) {
        return Err(not_found());
    }
    // Ids that start with `prefix` sort together, right from `prefix` on
    // (ids are compared byte by byte: `COLLATE "C"`).
    let fail = |e| failures.statement(operation, None, e);
    let statement = client
        .prepare_cached("SELECT id FROM sessions WHERE id >= $1 ORDER BY id LIMIT $2")
        .await
        .map_err(fail)?;
    let rows = client
        .query(&statement, &[&prefix, &int(MAX_CANDIDATES as u64 + 1)])
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    let mut matches = Vec::new();
    for row in &rows {
        let id: String = row
            .try_get(0)
            .map_err(|e| super::rows::corrupt("", None, format!("a session id: {e}")))?;
        if !id.starts_with(prefix) {
            break;
        }
        matches.push(id);
    }
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
