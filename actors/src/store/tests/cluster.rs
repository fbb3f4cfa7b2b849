//! Ownership in a cluster, on one Postgres database shared by several
//! stores opened as nodes: one claim wins, a live node's session is
//! nobody else's, a node whose lease lapsed is fenced by the database (its
//! commits and inputs refused, the epoch stamped on every event never
//! going back), sweeps release idle sessions of gone nodes and adopt busy
//! ones, and a node leaving hands everything back.
//!
//! A node's lease is made to lapse behind its back (`UPDATE nodes SET
//! expires_at = ...`): no test waits for a TTL.

use super::kit::*;
use crate::store::cluster::{ClusterStore, Renewal};
use crate::store::{Commit, StoreError, StoreLocation};
use agentbus_testkit::postgres::{TestDatabase, fresh_database};
use std::sync::Arc;
use std::time::Duration;

/// A node as tests hold it: both faces of one store.
struct Node {
    store: Store,
    cluster: Arc<dyn ClusterStore>,
}

async fn node(database: &TestDatabase, name: &str) -> Node {
    let url = match database.url_with_password(PASSWORD).parse() {
        Ok(StoreLocation::Postgres(url)) => url,
        other => panic!("not a Postgres URL: {other:?}"),
    };
    let (store, cluster) = crate::store::open_node(&url, name.to_string(), Duration::from_secs(60))
        .await
        .unwrap_or_else(|e| panic!("node {name} opens: {e}"));
    Node { store, cluster }
}

/// Node `node`'s lease expired a moment ago (as if it had stopped
/// renewing it a TTL ago).
async fn lapse(database: &TestDatabase, node: &Node) {
    database
        .client()
        .await
        .execute(
            "UPDATE nodes SET expires_at = now() - interval '1 second' WHERE node_id = $1",
            &[&node.cluster.node().0],
        )
        .await
        .expect("lapse the lease");
}

/// `(epoch, owner_node name)` of session `id`.
async fn owner(database: &TestDatabase, id: &str) -> (i64, Option<String>) {
    let row = database
        .client()
        .await
        .query_one(
            "SELECT s.epoch, n.name FROM sessions s LEFT JOIN nodes n ON n.node_id = s.owner_node \
             WHERE s.id = $1",
            &[&id],
        )
        .await
        .expect("the session");
    (row.get(0), row.get(1))
}

/// `(seq, epoch)` of every stored event of session `id`.
async fn epochs(database: &TestDatabase, id: &str) -> Vec<(i64, i64)> {
    database
        .client()
        .await
        .query(
            "SELECT seq, epoch FROM events WHERE session_id = $1 ORDER BY seq",
            &[&id],
        )
        .await
        .expect("events")
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// Nodes `node-a` and `node-b` on `database`, and session `s`, created
/// (and so driven) by node-a.
async fn a_drives_s(database: &TestDatabase) -> (Node, Node) {
    let (a, b) = (
        node(database, "node-a").await,
        node(database, "node-b").await,
    );
    a.store
        .create(new_session("s"), me())
        .await
        .expect("create");
    (a, b)
}

fn commit_of(events: Vec<Arc<crate::protocol::EventEnvelope>>, busy: bool) -> Commit {
    Commit {
        events,
        busy: Some(busy),
        ..Commit::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_a_live_node_drives_is_nobody_elses() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let (_a, b) = a_drives_s(&database).await;
    let e = b
        .store
        .acquire(&sid("s"), me())
        .await
        .expect_err("held by a");
    assert!(
        matches!(&e, StoreError::HeldByNode { node, .. } if node == "node-a"),
        "{e}"
    );
    assert!(e.to_string().contains("node-a"), "{e}");
    let e = b
        .store
        .delete(&sid("s"), me())
        .await
        .expect_err("held by a");
    assert!(matches!(e, StoreError::HeldByNode { .. }), "{e}");
    // A process of its own on the same database is refused too.
    let single = Backend::Postgres {
        database: database.clone(),
    }
    .open()
    .await;
    let e = single
        .acquire(&sid("s"), me())
        .await
        .expect_err("held by a");
    assert!(matches!(e, StoreError::HeldByNode { .. }), "{e}");
    assert_eq!(owner(&database, "s").await, (1, Some("node-a".to_string())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_whose_lease_lapsed_is_fenced_once_another_claims_its_session() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let (a, b) = a_drives_s(&database).await;
    a.store
        .commit(&sid("s"), commit_of(vec![user("s", 1, "hi")], true))
        .await
        .expect("a commits while it owns the session");
    lapse(&database, &a).await;
    let (record, events) = b.store.acquire(&sid("s"), me()).await.expect("b claims");
    assert_eq!(events.len(), 1);
    let claim = record.claim.clone().expect("a node's claim");
    assert_eq!(claim.epoch, 2);
    assert_eq!(claim.node, b.cluster.node().to_string());
    assert_eq!(owner(&database, "s").await, (2, Some("node-b".to_string())));

    // The paused owner wakes up: the database refuses its writes.
    let e = a
        .store
        .commit(&sid("s"), commit_of(vec![assistant("s", 2, "late")], true))
        .await
        .expect_err("fenced");
    assert!(matches!(&e, StoreError::Fenced { .. }), "{e}");
    assert!(e.to_string().contains("node-b"), "{e}");
    let input = crate::store::AcceptedInput {
        input_id: 9,
        input: crate::protocol::UserInput::Query {
            text: "late".into(),
            images: Vec::new(),
            by: None,
        },
    };
    let e = a
        .store
        .accept_input(&sid("s"), input)
        .await
        .expect_err("fenced");
    assert!(matches!(e, StoreError::Fenced { .. }), "{e}");
    assert!(
        b.store
            .waiting_inputs(&sid("s"))
            .await
            .expect("inputs")
            .is_empty()
    );

    // The new owner goes on above every seq; the epoch never goes back.
    let next = record.resume_after() + 1;
    b.store
        .commit(&sid("s"), commit_of(vec![user("s", next, "again")], false))
        .await
        .expect("b commits");
    assert_eq!(epochs(&database, "s").await, [(1, 1), (next as i64, 2)]);
    assert!(next > 1, "the claim reserved seqs above the stored ones");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_concurrent_claims_exactly_one_wins() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let a = node(&database, "node-a").await;
    for i in 0..5 {
        a.store
            .create(new_session(&format!("s{i}")), me())
            .await
            .expect("create");
    }
    lapse(&database, &a).await;
    let nodes = [
        node(&database, "node-b").await,
        node(&database, "node-c").await,
        node(&database, "node-d").await,
    ];
    for i in 0..5 {
        let id = sid(&format!("s{i}"));
        let claims =
            futures::future::join_all(nodes.iter().map(|n| n.store.acquire(&id, me()))).await;
        let won = claims.iter().filter(|c| c.is_ok()).count();
        assert_eq!(won, 1, "{claims:?}");
        for lost in claims.iter().filter_map(|c| c.as_ref().err()) {
            assert!(matches!(lost, StoreError::HeldByNode { .. }), "{lost}");
        }
        assert_eq!(owner(&database, &id.0).await.0, 2, "one claim, one epoch");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sweeps_release_idle_sessions_of_gone_nodes_and_adopt_busy_ones() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let (a, b) = (
        node(&database, "node-a").await,
        node(&database, "node-b").await,
    );
    for id in ["idle", "busy"] {
        a.store.create(new_session(id), me()).await.expect("create");
    }
    a.store
        .commit(
            &sid("idle"),
            commit_of(vec![user("idle", 1, "done")], false),
        )
        .await
        .expect("commit");
    let reserved = Commit {
        reserve_seq: Some(1 + 1024),
        ..commit_of(vec![user("busy", 1, "running")], true)
    };
    a.store
        .commit(&sid("busy"), reserved)
        .await
        .expect("commit");
    // Nothing of a live node is swept.
    assert_eq!(b.cluster.release_idle_orphans().await.expect("sweep"), 0);
    assert!(b.cluster.adopt_orphans(8).await.expect("sweep").is_empty());

    lapse(&database, &a).await;
    assert_eq!(b.cluster.release_idle_orphans().await.expect("sweep"), 1);
    assert_eq!(owner(&database, "idle").await, (1, None));
    let adopted = b.cluster.adopt_orphans(8).await.expect("sweep");
    assert_eq!(adopted, [sid("busy")]);
    assert_eq!(
        owner(&database, "busy").await,
        (2, Some("node-b".to_string()))
    );
    assert!(
        b.cluster.adopt_orphans(8).await.expect("sweep").is_empty(),
        "once"
    );

    // Loading it takes the adoption's claim as it is, and continues above
    // everything the old owner reserved.
    let (record, _) = b.store.acquire(&sid("busy"), me()).await.expect("load");
    assert_eq!(record.claim.as_ref().map(|c| c.epoch), Some(2));
    assert_eq!(record.resume_after(), 1025);
    assert_eq!(owner(&database, "busy").await.0, 2, "no second claim");
    b.store
        .commit(
            &sid("busy"),
            commit_of(vec![user("busy", 1026, "on")], false),
        )
        .await
        .expect("the adopter commits");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_heartbeat_fences_and_a_rejoined_node_has_a_new_id_and_no_claims() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let a = node(&database, "node-a").await;
    a.store
        .create(new_session("s"), me())
        .await
        .expect("create");
    assert_eq!(
        a.cluster.heartbeat().await.expect("renew"),
        Renewal::Renewed
    );
    lapse(&database, &a).await;
    assert_eq!(a.cluster.heartbeat().await.expect("renew"), Renewal::Lapsed);
    a.cluster.fence();
    let e = a
        .store
        .commit(&sid("s"), commit_of(vec![user("s", 1, "x")], true))
        .await
        .expect_err("fenced locally");
    assert!(matches!(e, StoreError::Fenced { .. }), "{e}");
    let e = a
        .store
        .create(new_session("t"), me())
        .await
        .expect_err("fenced");
    assert!(matches!(e, StoreError::Fenced { .. }), "{e}");

    let old = a.cluster.node();
    let new = a.cluster.rejoin().await.expect("rejoin");
    assert_ne!(old, new);
    let names = database
        .client()
        .await
        .query(
            "SELECT name, expires_at > now() FROM nodes ORDER BY started_at",
            &[],
        )
        .await
        .expect("nodes");
    let live: Vec<(String, bool)> = names.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(live, [("node-a".into(), false), ("node-a".into(), true)]);
    // The old claim is gone; claiming again is a new epoch.
    let e = a
        .store
        .commit(&sid("s"), commit_of(vec![user("s", 1, "x")], true))
        .await
        .expect_err("no claim");
    assert!(matches!(e, StoreError::Fenced { .. }), "{e}");
    let (record, _) = a.store.acquire(&sid("s"), me()).await.expect("claim again");
    assert_eq!(record.claim.as_ref().map(|c| c.epoch), Some(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_leaving_releases_its_sessions_and_its_lease() {
    let Some(database) = fresh_database().await else {
        return;
    };
    let (a, b) = a_drives_s(&database).await;
    a.cluster.leave().await.expect("leave");
    assert_eq!(owner(&database, "s").await, (1, None));
    let nodes = b.cluster.nodes().await.expect("nodes");
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].name, "node-b");
    assert!(nodes[0].alive);
    let (record, _) = b
        .store
        .acquire(&sid("s"), me())
        .await
        .expect("b takes it at once");
    assert_eq!(record.claim.as_ref().map(|c| c.epoch), Some(2));
    assert_eq!(b.cluster.nodes().await.expect("nodes")[0].sessions, 1);
}
