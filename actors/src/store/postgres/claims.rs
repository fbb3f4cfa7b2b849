//! Claims of sessions by nodes, and the fence every write of a node
//! passes (docs/cluster.md, "Claims and fencing").
//!
//! Exists to keep the ownership rules of a cluster in one place:
//! - a node may claim a session that nobody drives, or whose node's lease
//!   has expired; every claim raises the session's `epoch` (the fencing
//!   token) and its seq reservation, so the new owner starts above every
//!   seq the old one may have shown;
//! - a write (commit, accepted input) is done only while the session's
//!   row — locked by the write's transaction — still names this node and
//!   the claim's epoch, and this node's lease has not expired: otherwise
//!   it is [`StoreError::Fenced`] and nothing is stored;
//! - the sweeps: idle sessions of gone nodes are released in bulk, busy
//!   ones adopted in small batches (`FOR UPDATE SKIP LOCKED`, so nodes
//!   sweeping at once share them out instead of waiting on each other).
//!
//! Every time is the database's `now()`. Never decides when to sweep or
//! what to do with an adopted session: `cluster/ownership/` does.

use super::failure::Failures;
use super::ownership::{CLAIM_RESERVATION, Claim, Ownership};
use super::rows::{column, count};
use crate::protocol::SessionId;
use crate::store::StoreError;
use crate::store::cluster::NodeId;
use deadpool_postgres::{Client, GenericClient};

/// Who holds a session's row, as the database says now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// `owner_node` (`None`: released, or never claimed).
    pub node: Option<NodeId>,
    pub epoch: i64,
    /// The owner node's name, while its row exists.
    pub name: Option<String>,
    /// The owner node's lease has not expired.
    pub alive: bool,
}

impl Holder {
    /// The live node other than `me` that drives the session, as an error.
    pub fn held_by_other(&self, id: &SessionId, me: Option<NodeId>) -> Result<(), StoreError> {
        match self.node {
            Some(node) if self.alive && Some(node) != me => Err(StoreError::HeldByNode {
                id: id.clone(),
                node: self.name.clone().unwrap_or_default(),
                node_id: node.to_string(),
            }),
            _ => Ok(()),
        }
    }
}

/// Why `claim` may no longer write a session whose row `holder` shows;
/// `None` while it may.
pub fn fence_reason(holder: &Holder, claim: &Claim) -> Option<String> {
    let name = |holder: &Holder| holder.name.clone().unwrap_or_else(|| "?".to_string());
    match holder.node {
        None => Some("it was released: this node's lease lapsed".to_string()),
        Some(node) if node != claim.node => Some(format!(
            "node `{}` ({node}) took it over, epoch {}",
            name(holder),
            holder.epoch
        )),
        Some(_) if holder.epoch != claim.epoch => Some(format!(
            "it was claimed again since (epoch {}, this node's claim was epoch {})",
            holder.epoch, claim.epoch
        )),
        Some(_) if !holder.alive => Some("this node's lease lapsed".to_string()),
        Some(_) => None,
    }
}

/// Session `id`'s holder; the row must be locked by the caller's
/// transaction when the answer is acted on. `None`: no such session.
pub async fn holder(
    client: &impl GenericClient,
    failures: &Failures,
    operation: &'static str,
    id: &SessionId,
) -> Result<Option<Holder>, StoreError> {
    let statement = client
        .prepare_cached(
            "SELECT s.owner_node, s.epoch, n.name, COALESCE(n.expires_at > now(), false) \
             FROM sessions s LEFT JOIN nodes n ON n.node_id = s.owner_node WHERE s.id = $1",
        )
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    let row = client
        .query_opt(&statement, &[&id.0])
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    row.map(|row| {
        Ok(Holder {
            node: column::<Option<uuid::Uuid>>(&row, 0, &id.0)?.map(NodeId),
            epoch: column(&row, 1, &id.0)?,
            name: column(&row, 2, &id.0)?,
            alive: column(&row, 3, &id.0)?,
        })
    })
    .transpose()
}

/// The fence of a write: session `id`'s row (locked by the caller's
/// transaction) must still be `claim`'s. A refused claim is forgotten.
pub async fn check_fence(
    client: &impl GenericClient,
    failures: &Failures,
    ownership: &Ownership,
    id: &SessionId,
    claim: &Claim,
    operation: &'static str,
) -> Result<(), StoreError> {
    let holder = holder(client, failures, operation, id)
        .await?
        .ok_or_else(|| StoreError::NotFound { id: id.0.clone() })?;
    match fence_reason(&holder, claim) {
        None => Ok(()),
        Some(reason) => {
            ownership.forget_if(id, *claim);
            tracing::warn!(session = %id, epoch = claim.epoch, "{operation} refused: {reason}");
            Err(StoreError::Fenced {
                id: id.clone(),
                reason,
            })
        }
    }
}

/// Claim session `id` (its row locked by the caller's transaction) for
/// node `me`: a new epoch, the seq reservation raised. Returns the claim.
/// [`StoreError::Fenced`] when `me`'s own lease has expired.
pub async fn claim(
    client: &impl GenericClient,
    failures: &Failures,
    id: &SessionId,
    me: NodeId,
) -> Result<Claim, StoreError> {
    let operation = "claim session";
    let statement = client
        .prepare_cached(
            "UPDATE sessions SET owner_node = $2, epoch = epoch + 1, \
                 seq_reserved = GREATEST(last_seq, seq_reserved) + $3, status = 'active', \
                 owner = NULL \
             WHERE id = $1 \
               AND EXISTS (SELECT 1 FROM nodes WHERE node_id = $2 AND expires_at > now()) \
             RETURNING epoch",
        )
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    let row = client
        .query_opt(&statement, &[&id.0, &me.0, &CLAIM_RESERVATION])
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    let Some(row) = row else {
        return Err(StoreError::Fenced {
            id: id.clone(),
            reason: "this node's lease lapsed before it could claim the session".to_string(),
        });
    };
    Ok(Claim {
        node: me,
        epoch: column(&row, 0, &id.0)?,
        adopted: None,
    })
}

/// A new session `id` (inserted by the caller's transaction) is claimed by
/// `me` as its first owner: epoch 1.
pub async fn claim_new(
    client: &impl GenericClient,
    failures: &Failures,
    id: &SessionId,
    me: NodeId,
) -> Result<Claim, StoreError> {
    let operation = "claim a new session";
    let changed = client
        .execute(
            "UPDATE sessions SET owner_node = $2, epoch = 1, owner = NULL WHERE id = $1 \
               AND EXISTS (SELECT 1 FROM nodes WHERE node_id = $2 AND expires_at > now())",
            &[&id.0, &me.0],
        )
        .await
        .map_err(|e| failures.statement(operation, Some(id), e))?;
    if changed == 0 {
        return Err(StoreError::Fenced {
            id: id.clone(),
            reason: "this node's lease lapsed before it could create the session".to_string(),
        });
    }
    Ok(Claim {
        node: me,
        epoch: 1,
        adopted: None,
    })
}

/// Give session `id` up, if `claim` still holds it.
pub async fn release(
    client: &Client,
    failures: &Failures,
    id: &SessionId,
    claim: &Claim,
) -> Result<(), StoreError> {
    client
        .execute(
            "UPDATE sessions SET owner_node = NULL, status = 'idle' \
             WHERE id = $1 AND owner_node = $2 AND epoch = $3",
            &[&id.0, &claim.node.0, &claim.epoch],
        )
        .await
        .map_err(|e| failures.statement("release session", Some(id), e))?;
    Ok(())
}

/// Give up session `id` as `claim` holds it, marking it idle.
pub async fn abandon(
    client: &Client,
    failures: &Failures,
    id: &SessionId,
    claim: &Claim,
) -> Result<(), StoreError> {
    client
        .execute(
            "UPDATE sessions SET owner_node = NULL, status = 'idle', busy = false \
             WHERE id = $1 AND owner_node = $2 AND epoch = $3",
            &[&id.0, &claim.node.0, &claim.epoch],
        )
        .await
        .map_err(|e| failures.statement("give up a session", Some(id), e))?;
    Ok(())
}

/// Release, in bulk, the idle sessions whose node's lease expired.
pub async fn release_idle_orphans(client: &Client, failures: &Failures) -> Result<u64, StoreError> {
    client
        .execute(
            "UPDATE sessions s SET owner_node = NULL, status = 'idle' \
             WHERE s.owner_node IS NOT NULL AND NOT s.busy \
               AND NOT EXISTS (SELECT 1 FROM nodes n \
                               WHERE n.node_id = s.owner_node AND n.expires_at > now())",
            &[],
        )
        .await
        .map_err(|e| failures.statement("release idle sessions of gone nodes", None, e))
}

/// Claim up to `limit` busy sessions that no live node drives (and no
/// single-node process leases), oldest update first, for `me`; rows
/// another node is claiming right now are skipped. Returns each with its
/// claim.
pub async fn adopt_orphans(
    client: &Client,
    failures: &Failures,
    me: NodeId,
    limit: u32,
) -> Result<Vec<(SessionId, Claim)>, StoreError> {
    let operation = "adopt busy sessions of gone nodes";
    let rows = client
        .query(
            "WITH orphan AS ( \
                 SELECT s.id FROM sessions s \
                  WHERE s.busy AND s.owner IS NULL \
                    AND NOT EXISTS (SELECT 1 FROM nodes n \
                                    WHERE n.node_id = s.owner_node AND n.expires_at > now()) \
                  ORDER BY s.updated_at LIMIT $2 FOR UPDATE OF s SKIP LOCKED) \
             UPDATE sessions s SET owner_node = $1, epoch = s.epoch + 1, \
                    seq_reserved = GREATEST(s.last_seq, s.seq_reserved) + $3, status = 'active' \
               FROM orphan \
              WHERE s.id = orphan.id \
                AND EXISTS (SELECT 1 FROM nodes WHERE node_id = $1 AND expires_at > now()) \
             RETURNING s.id, s.epoch, s.seq_reserved - $3",
            &[&me.0, &i64::from(limit), &CLAIM_RESERVATION],
        )
        .await
        .map_err(|e| failures.statement(operation, None, e))?;
    rows.iter()
        .map(|row| {
            let id: String = column(row, 0, "")?;
            let epoch: i64 = column(row, 1, &id)?;
            let resume_after = count(&id, "seq_reserved", column(row, 2, &id)?)?;
            let claim = Claim {
                node: me,
                epoch,
                adopted: Some(resume_after),
            };
            Ok((SessionId(id), claim))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(node: Option<NodeId>, epoch: i64, alive: bool) -> Holder {
        Holder {
            node,
            epoch,
            name: Some("node-b".to_string()),
            alive,
        }
    }

    #[test]
    fn a_write_passes_only_while_the_row_names_this_node_its_epoch_and_a_live_lease() {
        let me = NodeId::new();
        let other = NodeId::new();
        let claim = Claim {
            node: me,
            epoch: 3,
            adopted: None,
        };
        assert_eq!(fence_reason(&holder(Some(me), 3, true), &claim), None);
        let taken = fence_reason(&holder(Some(other), 4, true), &claim).expect("refused");
        assert!(
            taken.contains("node-b") && taken.contains("epoch 4"),
            "{taken}"
        );
        let again = fence_reason(&holder(Some(me), 4, true), &claim).expect("refused");
        assert!(again.contains("claimed again"), "{again}");
        assert!(fence_reason(&holder(Some(me), 3, false), &claim).is_some());
        assert!(fence_reason(&holder(None, 3, false), &claim).is_some());
    }

    #[test]
    fn only_a_live_other_node_holds_a_session_against_a_claim() {
        let me = NodeId::new();
        let other = NodeId::new();
        let id = SessionId::from("s");
        assert!(
            holder(Some(other), 1, true)
                .held_by_other(&id, Some(me))
                .is_err()
        );
        assert!(
            holder(Some(other), 1, true)
                .held_by_other(&id, None)
                .is_err()
        );
        assert!(
            holder(Some(other), 1, false)
                .held_by_other(&id, Some(me))
                .is_ok()
        );
        assert!(
            holder(Some(me), 1, true)
                .held_by_other(&id, Some(me))
                .is_ok()
        );
        assert!(holder(None, 1, false).held_by_other(&id, Some(me)).is_ok());
    }
}
