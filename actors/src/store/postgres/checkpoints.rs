//! The operations on the checkpoint tables: blobs (file contents by hash,
//! shared by every session) and checkpoints (what each tool call changed),
//! what taking back a session's changes to its workspace needs
//! (`store::checkpoint`).
//!
//! Exists to keep the blobs' one rule in one place: a blob is deleted only
//! when no checkpoint refers to it — by a collection once it is also
//! unused since the cutoff (asking for a blob, or putting it again, marks
//! it used), or with the last session whose checkpoints referred to it
//! (`sessions::delete` calls [`hashes_of_session`] and
//! [`delete_unreferenced_blobs`] in its transaction). Many hashes are one
//! statement (`= ANY($1)`), a checkpoint's files one `INSERT ... SELECT
//! FROM unnest(...)`; blobs are put one statement each (a blob may be
//! large), pipelined in one transaction, in hash order so that two
//! processes putting the same blobs at once never deadlock. What does not
//! decode is [`StoreError::Corrupt`] naming the session.
//!
//! Never reads the clock (`now` is an argument); a checkpoint's own time
//! is kept to the microsecond (`timestamptz`).

use super::failure::Failures;
use super::rows::{column, corrupt, count, int, storable_id, text};
use crate::protocol::SessionId;
use crate::store::StoreError;
use crate::store::checkpoint::{
    Checkpoint, CheckpointUsage, Collected, FileChange, stored_version,
};
use chrono::{DateTime, Utc};
use deadpool_postgres::{Client, Transaction};
use std::collections::{HashMap, HashSet};
use tokio_postgres::IsolationLevel;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

pub async fn missing_blobs(
    client: &Client,
    failures: &Failures,
    hashes: Vec<String>,
    now: DateTime<Utc>,
) -> Result<Vec<String>, StoreError> {
    let operation = "look up blobs";
    if hashes.is_empty() {
        return Ok(Vec::new());
    }
    let fail = |e| failures.statement(operation, None, e);
    let asked: Vec<String> = hashes.iter().map(|hash| text(hash).into_owned()).collect();
    let statement = client
        .prepare_cached(
            "WITH marked AS (UPDATE blobs SET used_at = $2 \
                 WHERE hash = ANY($1::text[]) AND used_at < $3 RETURNING hash) \
             SELECT hash FROM blobs WHERE hash = ANY($1::text[])",
        )
        .await
        .map_err(fail)?;
    let stale = now - crate::store::checkpoint::MARK_AFTER;
    let rows = client
        .query(&statement, &[&asked, &now, &stale])
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    let mut held = HashSet::with_capacity(rows.len());
    for row in &rows {
        held.insert(column::<String>(row, 0, "")?);
    }
    let mut seen = HashSet::with_capacity(hashes.len());
    Ok(hashes
        .into_iter()
        .zip(asked)
        .filter(|(_, stored)| !held.contains(stored) && seen.insert(stored.clone()))
        .map(|(hash, _)| hash)
        .collect())
}

pub async fn put_blobs(
    client: &mut Client,
    failures: &Failures,
    blobs: Vec<(String, Vec<u8>)>,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let operation = "store blobs";
    // In hash order, each once: rows are locked in the same order by every
    // transaction putting them.
    let mut blobs: Vec<(String, Vec<u8>)> = blobs
        .into_iter()
        .map(|(hash, data)| (text(&hash).into_owned(), data))
        .collect();
    blobs.sort_by(|a, b| a.0.cmp(&b.0));
    blobs.dedup_by(|a, b| a.0 == b.0);
    if blobs.is_empty() {
        return Ok(());
    }
    let fail = |e| failures.statement(operation, None, e);
    let tx = client.transaction().await.map_err(fail)?;
    let statement = tx
        .prepare_cached(
            "INSERT INTO blobs (hash, size, used_at, data) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (hash) DO UPDATE SET used_at = excluded.used_at",
        )
        .await
        .map_err(fail)?;
    let sizes: Vec<i64> = blobs
        .iter()
        .map(|(_, data)| int(data.len() as u64))
        .collect();
    let params: Vec<[&(dyn ToSql + Sync); 4]> = blobs
        .iter()
        .zip(&sizes)
        .map(|((hash, data), size)| -> [&(dyn ToSql + Sync); 4] { [hash, size, &now, data] })
        .collect();
    // Sent together (pipelined on the connection), run in order.
    futures::future::try_join_all(params.iter().map(|params| tx.execute(&statement, params)))
        .await
        .map_err(fail)?;
    tx.commit().await.map_err(fail)
}

pub async fn blob(
    client: &Client,
    failures: &Failures,
    hash: &str,
) -> Result<Option<Vec<u8>>, StoreError> {
    let operation = "read a blob";
    let fail = |e| failures.statement(operation, None, e);
    let statement = client
        .prepare_cached("SELECT data FROM blobs WHERE hash = $1")
        .await
        .map_err(fail)?;
    let row = client
        .query_opt(&statement, &[&text(hash).as_ref()])
        .await
        .map_err(fail)?;
    row.map(|row| column::<Vec<u8>>(&row, 0, "")).transpose()
}

pub async fn add_checkpoint(
    client: &mut Client,
    failures: &Failures,
    checkpoint: &Checkpoint,
) -> Result<(), StoreError> {
    let operation = "store a checkpoint";
    let id = &checkpoint.session_id;
    if !storable_id(&id.0) {
        return Err(StoreError::NotFound { id: id.0.clone() });
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    let tx = client.transaction().await.map_err(fail)?;
    let statement = tx
        .prepare_cached(
            "INSERT INTO checkpoints (id, session_id, turn_seq, call_id, tool, created_at, undone) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .await
        .map_err(fail)?;
    let checkpoint_id = text(&checkpoint.id);
    let inserted = tx
        .execute(
            &statement,
            &[
                &checkpoint_id.as_ref(),
                &id.0,
                &int(checkpoint.turn_seq),
                &checkpoint.call_id.as_deref().map(text).as_deref(),
                &text(&checkpoint.tool).as_ref(),
                &checkpoint.created_at,
                &checkpoint.undone,
            ],
        )
        .await;
    match inserted {
        Ok(_) => {}
        Err(e) if e.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION) => {
            return Err(StoreError::NotFound { id: id.0.clone() });
        }
        Err(e) => return Err(fail(e)),
    }
    if !checkpoint.changes.is_empty() {
        let mut paths = Vec::new();
        let mut before_hashes = Vec::new();
        let mut before_kinds = Vec::new();
        let mut before_sizes = Vec::new();
        let mut after_hashes = Vec::new();
        let mut after_kinds = Vec::new();
        let mut after_sizes = Vec::new();
        for change in &checkpoint.changes {
            let (before, after) = (change.before.as_ref(), change.after.as_ref());
            paths.push(text(&change.path).into_owned());
            before_hashes.push(before.map(|v| text(&v.hash).into_owned()));
            before_kinds.push(before.map(|v| v.kind.as_str()));
            before_sizes.push(before.map(|v| int(v.size)));
            after_hashes.push(after.map(|v| text(&v.hash).into_owned()));
            after_kinds.push(after.map(|v| v.kind.as_str()));
            after_sizes.push(after.map(|v| int(v.size)));
        }
        let statement = tx
            .prepare_cached(
                "INSERT INTO checkpoint_files (checkpoint_id, path, before_hash, before_kind, \
                     before_size, after_hash, after_kind, after_size) \
                 SELECT $1, f.path, f.before_hash, f.before_kind, f.before_size, f.after_hash, \
                     f.after_kind, f.after_size \
                 FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], \
                     $7::text[], $8::bigint[]) \
                     AS f (path, before_hash, before_kind, before_size, after_hash, after_kind, \
                     after_size)",
            )
            .await
            .map_err(fail)?;
        tx.execute(
            &statement,
            &[
                &checkpoint_id.as_ref(),
                &paths,
                &before_hashes,
                &before_kinds,
                &before_sizes,
                &after_hashes,
                &after_kinds,
                &after_sizes,
            ],
        )
        .await
        .map_err(fail)?;
    }
    tx.commit().await.map_err(fail)
}

pub async fn checkpoints(
    client: &mut Client,
    failures: &Failures,
    id: &SessionId,
) -> Result<Vec<Checkpoint>, StoreError> {
    let operation = "load checkpoints";
    if !storable_id(&id.0) {
        return Ok(Vec::new());
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    // One snapshot: the checkpoints and their files agree.
    let tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(fail)?;
    let statement = tx
        .prepare_cached(
            "SELECT id, turn_seq, call_id, tool, created_at, undone FROM checkpoints \
             WHERE session_id = $1 ORDER BY id",
        )
        .await
        .map_err(fail)?;
    let rows = tx.query(&statement, &[&id.0]).await.map_err(fail)?;
    let statement = tx
        .prepare_cached(
            "SELECT f.checkpoint_id, f.path, f.before_hash, f.before_kind, f.before_size, \
                    f.after_hash, f.after_kind, f.after_size \
             FROM checkpoint_files f JOIN checkpoints c ON c.id = f.checkpoint_id \
             WHERE c.session_id = $1 ORDER BY f.checkpoint_id, f.path",
        )
        .await
        .map_err(fail)?;
    let file_rows = tx.query(&statement, &[&id.0]).await.map_err(fail)?;
    tx.commit().await.map_err(fail)?;

    let session = id.0.as_str();
    let mut checkpoints = Vec::with_capacity(rows.len());
    let mut at = HashMap::with_capacity(rows.len());
    for row in &rows {
        let checkpoint_id: String = column(row, 0, session)?;
        let turn_seq = count(session, "a checkpoint's turn_seq", column(row, 1, session)?)?;
        at.insert(checkpoint_id.clone(), checkpoints.len());
        checkpoints.push(Checkpoint {
            id: checkpoint_id,
            session_id: id.clone(),
            turn_seq,
            call_id: column(row, 2, session)?,
            tool: column(row, 3, session)?,
            created_at: column::<DateTime<Utc>>(row, 4, session)?,
            changes: Vec::new(),
            undone: column(row, 5, session)?,
        });
    }
    for row in &file_rows {
        let checkpoint_id: String = column(row, 0, session)?;
        let path: String = column(row, 1, session)?;
        let place = |detail: String| {
            corrupt(
                session,
                None,
                format!("checkpoint {checkpoint_id}, {path:?}: {detail}"),
            )
        };
        let before = stored_version(
            "before",
            column(row, 2, session)?,
            column(row, 3, session)?,
            column(row, 4, session)?,
        )
        .map_err(place)?;
        let after = stored_version(
            "after",
            column(row, 5, session)?,
            column(row, 6, session)?,
            column(row, 7, session)?,
        )
        .map_err(place)?;
        // Every file row is of a checkpoint read above (one snapshot).
        if let Some(checkpoint) = at
            .get(&checkpoint_id)
            .and_then(|&index| checkpoints.get_mut(index))
        {
            checkpoint.changes.push(FileChange {
                path,
                before,
                after,
            });
        }
    }
    Ok(checkpoints)
}

/// Run `sql` (`$1` the session, `$2` checkpoint ids) on `ids`.
async fn on_checkpoints(
    client: &Client,
    failures: &Failures,
    operation: &'static str,
    id: &SessionId,
    ids: &[String],
    sql: &str,
) -> Result<(), StoreError> {
    if !storable_id(&id.0) || ids.is_empty() {
        return Ok(());
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    let ids: Vec<String> = ids.iter().map(|id| text(id).into_owned()).collect();
    let statement = client.prepare_cached(sql).await.map_err(fail)?;
    client
        .execute(&statement, &[&id.0, &ids])
        .await
        .map_err(fail)
        .map(drop)
}

pub async fn mark_undone(
    client: &Client,
    failures: &Failures,
    id: &SessionId,
    ids: &[String],
) -> Result<(), StoreError> {
    on_checkpoints(
        client,
        failures,
        "mark checkpoints undone",
        id,
        ids,
        "UPDATE checkpoints SET undone = true WHERE session_id = $1 AND id = ANY($2::text[])",
    )
    .await
}

pub async fn drop_checkpoints(
    client: &Client,
    failures: &Failures,
    id: &SessionId,
    ids: &[String],
) -> Result<(), StoreError> {
    on_checkpoints(
        client,
        failures,
        "drop checkpoints",
        id,
        ids,
        "DELETE FROM checkpoints WHERE session_id = $1 AND id = ANY($2::text[])",
    )
    .await
}

pub async fn checkpoint_usage(
    client: &Client,
    failures: &Failures,
) -> Result<CheckpointUsage, StoreError> {
    let operation = "count checkpoints and blobs";
    let row = client
        .query_one(
            "SELECT (SELECT count(*) FROM checkpoints), count(*), \
                    COALESCE(sum(size), 0)::bigint FROM blobs",
            &[],
        )
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    Ok(CheckpointUsage {
        checkpoints: count("", "the number of checkpoints", column(&row, 0, "")?)?,
        blobs: count("", "the number of blobs", column(&row, 1, "")?)?,
        blob_bytes: count("", "the blobs' total size", column(&row, 2, "")?)?,
    })
}

pub async fn collect_blobs(
    client: &Client,
    failures: &Failures,
    unused_since: DateTime<Utc>,
) -> Result<Collected, StoreError> {
    let operation = "collect unused blobs";
    // One statement: the deletion and what it counts agree. A negative
    // size (corrupt) counts as nothing: the blob is gone.
    let row = client
        .query_one(
            "WITH gone AS ( \
                 DELETE FROM blobs b WHERE b.used_at < $1 \
                 AND NOT EXISTS (SELECT 1 FROM checkpoint_files f WHERE f.before_hash = b.hash) \
                 AND NOT EXISTS (SELECT 1 FROM checkpoint_files f WHERE f.after_hash = b.hash) \
                 RETURNING b.size) \
             SELECT count(*), COALESCE(sum(GREATEST(size, 0)), 0)::bigint FROM gone",
            &[&unused_since],
        )
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    Ok(Collected {
        blobs: count("", "the number of blobs collected", column(&row, 0, "")?)?,
        bytes: count("", "the bytes collected", column(&row, 1, "")?)?,
    })
}

/// The hashes session `id`'s checkpoints refer to (to delete, with the
/// session, those no other checkpoint refers to).
pub async fn hashes_of_session(
    tx: &Transaction<'_>,
    failures: &Failures,
    operation: &'static str,
    id: &SessionId,
) -> Result<Vec<String>, StoreError> {
    let fail = |e| failures.statement(operation, Some(id), e);
    let statement = tx
        .prepare_cached(
            "SELECT DISTINCT v.hash \
             FROM checkpoints c JOIN checkpoint_files f ON f.checkpoint_id = c.id, \
                  LATERAL (VALUES (f.before_hash), (f.after_hash)) AS v (hash) \
             WHERE c.session_id = $1 AND v.hash IS NOT NULL",
        )
        .await
        .map_err(fail)?;
    let rows = tx.query(&statement, &[&id.0]).await.map_err(fail)?;
    rows.iter().map(|row| column(row, 0, &id.0)).collect()
}

/// Delete those of `hashes` no checkpoint refers to any more and not
/// marked used within [`BLOB_GRACE`](crate::store::checkpoint::BLOB_GRACE).
pub async fn delete_unreferenced_blobs(
    tx: &Transaction<'_>,
    failures: &Failures,
    operation: &'static str,
    id: &SessionId,
    hashes: &[String],
) -> Result<(), StoreError> {
    if hashes.is_empty() {
        return Ok(());
    }
    let fail = |e| failures.statement(operation, Some(id), e);
    let statement = tx
        .prepare_cached(
            "DELETE FROM blobs b WHERE b.hash = ANY($1::text[]) AND b.used_at < $2 \
             AND NOT EXISTS (SELECT 1 FROM checkpoint_files f WHERE f.before_hash = b.hash) \
             AND NOT EXISTS (SELECT 1 FROM checkpoint_files f WHERE f.after_hash = b.hash)",
        )
        .await
        .map_err(fail)?;
    let cutoff = Utc::now() - crate::store::checkpoint::BLOB_GRACE;
    tx.execute(&statement, &[&hashes, &cutoff])
        .await
        .map_err(fail)
        .map(drop)
}
