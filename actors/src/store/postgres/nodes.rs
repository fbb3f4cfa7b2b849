//! The `nodes` table: one row per node incarnation, its lease renewed by
//! heartbeats (docs/cluster.md, "Nodes and their leases").
//!
//! Exists to keep the lease rules in one place: a lease is renewed only
//! while it has not expired (`expires_at > now()`), so a node whose lease
//! lapsed learns it from the heartbeat and must fence itself rather than
//! quietly renew; a node leaving releases its sessions and deletes its row
//! in one transaction. Every time is the database's `now()`; nothing here
//! reads a local clock.

use super::failure::Failures;
use super::rows::{column, count};
use crate::store::StoreError;
use crate::store::cluster::{NodeId, NodeInfo, Renewal};
use chrono::{DateTime, Utc};
use deadpool_postgres::{Client, GenericClient};

/// Register node `node` named `name`, its lease running `ttl_secs` from
/// the database's now.
pub async fn register(
    client: &impl GenericClient,
    failures: &Failures,
    node: NodeId,
    name: &str,
    ttl_secs: f64,
) -> Result<(), StoreError> {
    let operation = "register this node";
    client
        .execute(
            "INSERT INTO nodes (node_id, name, started_at, expires_at) \
             VALUES ($1, $2, now(), now() + make_interval(secs => $3))",
            &[&node.0, &name, &ttl_secs],
        )
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    Ok(())
}

/// Renew node `node`'s lease for `ttl_secs`, if it has not expired.
pub async fn heartbeat(
    client: &Client,
    failures: &Failures,
    node: NodeId,
    ttl_secs: f64,
) -> Result<Renewal, StoreError> {
    let operation = "renew this node's lease";
    let statement = client
        .prepare_cached(
            "UPDATE nodes SET expires_at = now() + make_interval(secs => $2) \
             WHERE node_id = $1 AND expires_at > now()",
        )
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    let renewed = client
        .execute(&statement, &[&node.0, &ttl_secs])
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    Ok(match renewed {
        0 => Renewal::Lapsed,
        _ => Renewal::Renewed,
    })
}

/// Mark node `node`'s lease expired now (a node that fenced itself, so
/// that the others adopt its sessions without waiting out the TTL).
pub async fn expire(client: &Client, failures: &Failures, node: NodeId) -> Result<(), StoreError> {
    client
        .execute(
            "UPDATE nodes SET expires_at = now() WHERE node_id = $1 AND expires_at > now()",
            &[&node.0],
        )
        .await
        .map_err(|e| failures.statement("expire an old lease of this node", None, e))?;
    Ok(())
}

/// Node `node` leaves: every session it owns is released and its row
/// deleted, in one transaction.
pub async fn leave(
    client: &mut Client,
    failures: &Failures,
    node: NodeId,
) -> Result<u64, StoreError> {
    let operation = "leave the cluster";
    let fail = |e| failures.statement(operation, None, e);
    let tx = client.transaction().await.map_err(fail)?;
    let released = tx
        .execute(
            "UPDATE sessions SET owner_node = NULL, status = 'idle' WHERE owner_node = $1",
            &[&node.0],
        )
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    tx.execute("DELETE FROM nodes WHERE node_id = $1", &[&node.0])
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    tx.commit()
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    Ok(released)
}

/// Forget lease rows expired for longer than `keep_secs` that own no
/// session: nobody needs them to tell an orphan any more.
pub async fn forget_old(
    client: &Client,
    failures: &Failures,
    keep_secs: f64,
) -> Result<u64, StoreError> {
    client
        .execute(
            "DELETE FROM nodes n WHERE n.expires_at < now() - make_interval(secs => $1) \
             AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.owner_node = n.node_id)",
            &[&keep_secs],
        )
        .await
        .map_err(|e| failures.statement("forget old leases", None, e))
}

/// Every node row, oldest first, with how many sessions each owns.
pub async fn list(client: &Client, failures: &Failures) -> Result<Vec<NodeInfo>, StoreError> {
    let operation = "list the cluster's nodes";
    let rows = client
        .query(
            "SELECT n.node_id, n.name, n.started_at, n.expires_at, n.expires_at > now(), \
                    (SELECT count(*) FROM sessions s WHERE s.owner_node = n.node_id) \
             FROM nodes n ORDER BY n.started_at, n.node_id",
            &[],
        )
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    rows.iter()
        .map(|row| {
            Ok(NodeInfo {
                node_id: NodeId(column(row, 0, "")?),
                name: column(row, 1, "")?,
                started_at: column::<DateTime<Utc>>(row, 2, "")?,
                expires_at: column::<DateTime<Utc>>(row, 3, "")?,
                alive: column(row, 4, "")?,
                sessions: count("", "a node's session count", column(row, 5, "")?)?,
            })
        })
        .collect()
}
