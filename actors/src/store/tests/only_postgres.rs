//! What only the Postgres backend has: its schema versions in
//! `schema_version` (made once however many processes open it at once, a
//! newer one or another program's tables refused untouched), a server
//! that cannot be reached or a connection that breaks (a clear error
//! naming the URL without its password, and the store working again once
//! Postgres answers), and a commit sent again after its answer was lost.

use super::kit::*;
use crate::session::{Failure, SessionError};
use crate::store::postgres::schema::SCHEMA_VERSION;
use crate::store::{Commit, StoreError, StoreLocation};
use agentbus_testkit::postgres::{TestDatabase, fresh_database};
use agentbus_testkit::tcp_proxy::TcpProxy;
use std::time::Duration;

async fn database() -> Option<TestDatabase> {
    fresh_database().await
}

fn location(url: &str) -> StoreLocation {
    url.parse().expect("a Postgres URL")
}

async fn open(url: &str) -> Result<Store, StoreError> {
    crate::store::open(&location(url), Duration::from_secs(5)).await
}

/// What takes a current database back to version 2 (before sessions
/// named their creator and viewers).
const TO_V2: &str = "DROP TABLE session_viewers; ALTER TABLE sessions DROP COLUMN created_by; \
     DELETE FROM schema_version WHERE version > 2;";

/// Its tables, by name.
async fn tables(database: &TestDatabase) -> Vec<String> {
    database
        .client()
        .await
        .query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
            &[],
        )
        .await
        .expect("tables")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

async fn versions(database: &TestDatabase) -> Vec<i64> {
    database
        .client()
        .await
        .query("SELECT version FROM schema_version ORDER BY version", &[])
        .await
        .expect("versions")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// `e`'s message names the URL without its password.
fn names_the_url_without_its_password(e: &StoreError, database: &TestDatabase) {
    let message = e.to_string();
    assert!(!message.contains(PASSWORD), "{message}");
    assert!(!format!("{e:?}").contains(PASSWORD), "{e:?}");
    assert!(
        message.contains(&format!("postgres://postgres:***@{}", database.address()))
            || message.contains("postgres://postgres:***@127.0.0.1:"),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_makes_the_schema_and_opening_again_changes_nothing() {
    let Some(database) = database().await else {
        return;
    };
    let url = database.url_with_password(PASSWORD);
    open(&url).await.expect("opens").close().await;
    let expected: Vec<i64> = (1..=SCHEMA_VERSION).collect();
    assert_eq!(versions(&database).await, expected);
    assert_eq!(
        tables(&database).await,
        [
            "blobs",
            "checkpoint_files",
            "checkpoints",
            "events",
            "inputs",
            "nodes",
            "schema_version",
            "session_viewers",
            "sessions"
        ]
    );
    open(&url).await.expect("opens again").close().await;
    assert_eq!(
        versions(&database).await,
        expected,
        "no migration ran twice"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_database_is_migrated_to_keep_checkpoints() {
    let Some(backend) = Backend::postgres().await else {
        return;
    };
    let store = backend.open().await;
    create(&store, "old").await;
    append(&store, "old", turn("old", 1, "from before"))
        .await
        .expect("append");
    stop(store).await;
    // Take the database back to version 1, as the previous agentbus left it.
    backend
        .execute(&format!(
            "{TO_V2} DROP TABLE checkpoint_files; DROP TABLE checkpoints; \
                 DROP TABLE blobs; DELETE FROM schema_version WHERE version > 1;"
        ))
        .await;

    let store = backend.open().await;
    let Backend::Postgres { database } = &backend else {
        unreachable!("a Postgres backend");
    };
    assert_eq!(
        versions(database).await,
        (1..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    assert_eq!(get(&store, "old").await.map(|r| r.last_seq), Some(4));
    let hash = "cd".repeat(32);
    store
        .put_blobs(vec![(hash.clone(), b"kept".to_vec())])
        .await
        .expect("a migrated store keeps blobs");
    assert_eq!(
        store.blob(&hash).await.expect("blob").as_deref(),
        Some(b"kept".as_slice())
    );
    stop(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_2_database_is_migrated_its_sessions_made_by_no_token() {
    let Some(backend) = Backend::postgres().await else {
        return;
    };
    let store = backend.open().await;
    create(&store, "old").await;
    append(&store, "old", turn("old", 1, "from before"))
        .await
        .expect("append");
    stop(store).await;
    // Take the database back to version 2, as the previous agentbus left it.
    backend.execute(TO_V2).await;

    let store = backend.open().await;
    let Backend::Postgres { database } = &backend else {
        unreachable!("a Postgres backend");
    };
    assert_eq!(
        versions(database).await,
        (1..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
    let old = get(&store, "old").await.expect("kept");
    assert_eq!((old.created_by, old.viewers), (None, vec![]));
    assert_eq!((old.last_seq, old.turns), (4, 1));
    store
        .set_viewers(&sid("old"), &["alice".to_string()])
        .await
        .expect("a migrated store keeps viewers");
    let page = crate::store::ListPage {
        visible_to: Some("alice".into()),
        ..Default::default()
    };
    let seen = store.list(page).await.expect("list");
    assert_eq!(
        seen.iter().map(|r| r.id.0.as_str()).collect::<Vec<_>>(),
        ["old"]
    );
    stop(store).await;
}

/// A token's page reads its sessions through the indexes (its own by
/// `created_by`, those it follows by `session_viewers.name`, then each by
/// its key): never every session, among thousands of others'.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_of_one_tokens_sessions_never_scans_every_session() {
    let Some(database) = database().await else {
        return;
    };
    open(&database.url_with_password(PASSWORD))
        .await
        .expect("opens")
        .close()
        .await;
    let client = database.client().await;
    client
        .batch_execute(
            "INSERT INTO sessions (id, created_at, updated_at, model, workspace, created_by) \
             SELECT 's' || n, now(), now() - n * interval '1 second', 'm', '/w', \
                    CASE WHEN n % 1000 = 0 THEN 'alice' ELSE 'bob' END \
             FROM generate_series(1, 5000) AS n; \
             INSERT INTO session_viewers (session_id, name) VALUES ('s1', 'alice'); \
             ANALYZE sessions; ANALYZE session_viewers;",
        )
        .await
        .expect("sessions");
    let plan = |visible_to: Option<&'static str>| {
        let client = &client;
        async move {
            let sql = format!(
                "EXPLAIN {}",
                crate::store::postgres::list_statement(visible_to.is_some())
            );
            let (limit, after, after_id) = (
                Some(50_i64),
                None::<chrono::DateTime<chrono::Utc>>,
                None::<String>,
            );
            let rows = match visible_to {
                Some(name) => {
                    client
                        .query(&sql, &[&limit, &after, &after_id, &name])
                        .await
                }
                None => client.query(&sql, &[&limit, &after, &after_id]).await,
            };
            let lines: Vec<String> = rows
                .expect("explain")
                .iter()
                .map(|row| row.get(0))
                .collect();
            lines.join("\n")
        }
    };
    let token = plan(Some("alice")).await;
    assert!(!token.contains("Seq Scan on sessions "), "{token}");
    assert!(!token.contains("sessions_by_updated_at"), "{token}");
    assert!(token.contains("sessions_by_created_by"), "{token}");
    // The check sees a walk through every session: the whole list is one.
    let whole = plan(None).await;
    assert!(
        whole.contains("Seq Scan on sessions ") || whole.contains("sessions_by_updated_at"),
        "{whole}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_opening_an_empty_database_at_once_migrate_it_once() {
    let Some(database) = database().await else {
        return;
    };
    let url = database.url_with_password(PASSWORD);
    let opened = futures::future::join_all((0..4).map(|_| open(&url))).await;
    let stores: Vec<Store> = opened
        .into_iter()
        .map(|store| store.expect("every one opens"))
        .collect();
    for (n, store) in stores.iter().enumerate() {
        create(store, &format!("s{n}")).await;
    }
    let listed = stores[0]
        .list(crate::store::ListPage::default())
        .await
        .expect("list");
    assert_eq!(listed.len(), 4, "one schema holds them all");
    assert_eq!(
        versions(&database).await,
        (1..=SCHEMA_VERSION).collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_from_a_newer_agentbus_is_refused_untouched() {
    let Some(database) = database().await else {
        return;
    };
    database
        .client()
        .await
        .batch_execute(
            "CREATE TABLE schema_version (version bigint PRIMARY KEY, applied_at timestamptz);
             INSERT INTO schema_version VALUES (99, now());",
        )
        .await
        .expect("a newer version");
    let e = match open(&database.url_with_password(PASSWORD)).await {
        Ok(_) => panic!("opened a newer schema"),
        Err(e) => e,
    };
    assert!(
        matches!(
            e,
            StoreError::NewerSchema {
                found: 99,
                supported: SCHEMA_VERSION,
                ..
            }
        ),
        "{e:?}"
    );
    names_the_url_without_its_password(&e, &database);
    assert!(e.to_string().contains("upgrade agentbus"), "{e}");
    assert_eq!(tables(&database).await, ["schema_version"], "nothing made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_programs_database_is_refused_untouched() {
    let Some(database) = database().await else {
        return;
    };
    database
        .client()
        .await
        .batch_execute("CREATE TABLE customers (id int)")
        .await
        .expect("another program's table");
    let e = match open(&database.url_with_password(PASSWORD)).await {
        Ok(_) => panic!("opened another program's database"),
        Err(e) => e,
    };
    assert!(matches!(e, StoreError::ForeignDatabase { .. }), "{e:?}");
    names_the_url_without_its_password(&e, &database);
    let message = e.to_string();
    assert!(message.contains("(customers)"), "{message}");
    assert!(message.contains("createdb"), "{message}");
    assert_eq!(tables(&database).await, ["customers"], "nothing made");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_not_there_is_a_clear_error_naming_where_without_the_password() {
    // A port nothing listens on (it was free a moment ago).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let url = format!("postgres://agentbus:{PASSWORD}@127.0.0.1:{port}/sessions");
    let e = match open(&url).await {
        Ok(_) => panic!("connected to nothing"),
        Err(e) => e,
    };
    assert!(matches!(e, StoreError::Connect { .. }), "{e:?}");
    let message = e.to_string();
    assert!(!message.contains(PASSWORD), "{message}");
    assert!(
        message.starts_with(&format!(
            "cannot connect to the session store postgres://agentbus:***@127.0.0.1:{port}/sessions: "
        )),
        "{message}"
    );
    assert!(
        message.contains(&format!("is Postgres running at 127.0.0.1:{port}")),
        "{message}"
    );
    assert_eq!(SessionError::from(e).failure(), Failure::Unavailable);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_that_does_not_exist_is_named_with_how_to_make_it() {
    let Some(database) = database().await else {
        return;
    };
    let url = format!(
        "postgres://postgres:{PASSWORD}@{}/no_such_database",
        database.address()
    );
    let e = match open(&url).await {
        Ok(_) => panic!("opened a database that does not exist"),
        Err(e) => e,
    };
    assert!(matches!(e, StoreError::Connect { .. }), "{e:?}");
    let message = e.to_string();
    assert!(!message.contains(PASSWORD), "{message}");
    assert!(
        message.contains(&format!(
            "createdb -h 127.0.0.1 -p {} -U postgres no_such_database",
            database.address().rsplit(':').next().unwrap_or_default()
        )),
        "{message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_connection_is_a_store_error_and_the_store_works_again_once_postgres_answers() {
    let Some(database) = database().await else {
        return;
    };
    let target = database.address().parse().expect("an address");
    let proxy = TcpProxy::start(target).await.expect("proxy");
    let url = format!(
        "postgres://postgres:{PASSWORD}@{}/{}",
        proxy.address(),
        database.name
    );
    let store = open(&url).await.expect("opens through the proxy");
    create(&store, "s1").await;
    append(&store, "s1", turn("s1", 1, "before"))
        .await
        .expect("append");

    proxy.cut();
    let later = turn("s1", 5, "during");
    for attempt in 0..2 {
        let e = append(&store, "s1", later.clone())
            .await
            .expect_err("Postgres is out of reach");
        assert!(
            matches!(
                e,
                StoreError::ConnectionLost { .. } | StoreError::Connect { .. }
            ),
            "attempt {attempt}: {e:?}"
        );
        let message = e.to_string();
        assert!(!message.contains(PASSWORD), "{message}");
        assert!(
            message.contains(&format!("postgres://postgres:***@{}", proxy.address())),
            "{message}"
        );
        assert_eq!(SessionError::from(e).failure(), Failure::Unavailable);
    }
    let e = store.get(&sid("s1")).await.expect_err("reads fail too");
    assert!(
        matches!(
            e,
            StoreError::ConnectionLost { .. } | StoreError::Connect { .. }
        ),
        "{e:?}"
    );

    proxy.restore();
    append(&store, "s1", later.clone())
        .await
        .expect("works again once Postgres answers");
    let events = load_all(&store, "s1").await.expect("load");
    assert_eq!(seqs(&events), (1..=8).collect::<Vec<_>>());
    stop(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_sent_again_after_its_answer_was_lost_is_stored_once() {
    let Some(backend) = Backend::postgres().await else {
        return;
    };
    let store = backend.open().await;
    create(&store, "s1").await;
    let first = Commit {
        events: turn("s1", 1, "first"),
        reserve_seq: Some(1025),
        waiting: Some(Vec::new()),
        busy: None,
    };
    store
        .commit(&sid("s1"), first.clone())
        .await
        .expect("commit");
    // The AgentLoop did not hear back: it sends the same events again,
    // with the next step's.
    let mut again = first.clone();
    again.events.push(user("s1", 5, "second"));
    store
        .commit(&sid("s1"), again)
        .await
        .expect("the repeat is recognised");
    let record = get(&store, "s1").await.expect("record");
    assert_eq!(
        (record.last_seq, record.event_count, record.turns),
        (5, 5, 2),
        "each event counted once"
    );
    assert_eq!(
        seqs(&load_all(&store, "s1").await.expect("load")),
        [1, 2, 3, 4, 5]
    );

    // An event at a stored seq that is not the stored one is refused, and
    // nothing of its commit is stored.
    let mut changed = turn("s1", 3, "rewritten");
    changed.truncate(2);
    changed.push(user("s1", 6, "third"));
    let e = store
        .commit(
            &sid("s1"),
            Commit {
                events: changed,
                ..Commit::default()
            },
        )
        .await
        .expect_err("history is never rewritten");
    assert!(
        matches!(
            e,
            StoreError::SeqConflict {
                seq: 3,
                last_seq: 5,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(get(&store, "s1").await.map(|r| r.last_seq), Some(5));
}
