//! What only the SQLite backend has: its file (made whole, refused when it
//! is not a store, shared by processes, locked past the busy timeout), its
//! schema versions in `user_version`, and columns SQLite lets hold a value
//! of the wrong type.

use super::kit::*;
use crate::store::sqlite::schema::{self, SCHEMA_VERSION};
use crate::store::sqlite::{SqliteStore, StoreOptions};
use crate::store::{ListPage, SessionStore, StoreError};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tempfile::TempDir;

/// A store in a fresh temporary folder (kept alive by the returned guard).
async fn temp_store() -> (TempDir, PathBuf, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nested").join("sessions.db");
    let store = spawn(&path).await;
    (dir, path, store)
}

async fn spawn(path: &Path) -> Store {
    Arc::new(
        SqliteStore::open(StoreOptions::new(path))
            .await
            .expect("store opens"),
    )
}

/// What takes a current file back to version 5 (before sessions named
/// their creator and viewers).
const TO_V5: &str = "DROP TABLE session_viewers; DROP INDEX sessions_by_created_by; \
     ALTER TABLE sessions DROP COLUMN created_by; PRAGMA user_version = 5;";

/// A `SELECT count(*) ...` on a raw connection.
fn count_rows(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> i64 {
    conn.query_row(sql, params, |row| row.get(0))
        .expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_of_the_wrong_type_are_corrupt_not_panicked_on() {
    let (_dir, path, store) = temp_store().await;
    create(&store, "s1").await;
    append(&store, "s1", turn("s1", 1, "hi"))
        .await
        .expect("append");
    raw(&path)
        .execute(
            "UPDATE events SET body = '{not json' WHERE session_id = 's1' AND seq = 3",
            [],
        )
        .expect("tamper");
    let e = load_all(&store, "s1").await.expect_err("corrupt");
    assert!(
        matches!(&e, StoreError::Corrupt { seq: Some(3), .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("session s1, event seq 3"), "{e}");

    raw(&path)
        .execute(
            "UPDATE sessions SET updated_at = 'last tuesday' WHERE id = 's1'",
            [],
        )
        .expect("tamper");
    let e = store.get(&sid("s1")).await.expect_err("corrupt");
    assert!(e.to_string().contains("updated_at"), "{e}");
    let e = store.list(ListPage::default()).await.expect_err("corrupt");
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");

    raw(&path)
        .execute("UPDATE sessions SET last_seq = 'many' WHERE id = 's1'", [])
        .expect("tamper");
    let e = append(&store, "s1", vec![user("s1", 9, "x")])
        .await
        .expect_err("corrupt");
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");

    raw(&path)
        .execute(
            "UPDATE sessions SET owner = 'who knows' WHERE id = 's1'",
            [],
        )
        .expect("tamper");
    let e = store.acquire(&sid("s1"), me()).await.expect_err("corrupt");
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");

    // Deleting is the way out, and it works.
    store.delete(&sid("s1"), me()).await.expect("delete");
    assert_eq!(store.list(ListPage::default()).await.expect("list"), vec![]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_creates_the_folder_and_migrates_to_the_current_schema() {
    let (_dir, path, store) = temp_store().await;
    stop(store).await;
    let conn = raw(&path);
    assert_eq!(schema::version(&conn).expect("version"), SCHEMA_VERSION);
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .expect("journal mode");
    assert_eq!(mode, "wal");
    // Opening again is a no-op migration.
    SqliteStore::open(StoreOptions::new(&path))
        .await
        .expect("reopen")
        .close()
        .await;
    assert_eq!(schema::version(&conn).expect("version"), SCHEMA_VERSION);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_database_is_migrated_keeping_its_sessions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sessions.db");
    {
        let store = spawn(&path).await;
        create(&store, "old").await;
        append(&store, "old", turn("old", 1, "from before"))
            .await
            .expect("append");
        stop(store).await;
    }
    // Take the file back to version 1, as the previous agentbus left it.
    let conn = raw(&path);
    conn.execute_batch(
        &format!("{TO_V5} DROP TABLE checkpoint_files; DROP TABLE checkpoints; DROP TABLE blobs; DROP TABLE inputs; ALTER TABLE sessions DROP COLUMN reserved_seq; ALTER TABLE sessions DROP COLUMN parent_call_id; ALTER TABLE sessions DROP COLUMN turns; PRAGMA user_version = 1;"),
    )
    .expect("downgrade");
    drop(conn);
    let store = spawn(&path).await;
    assert_eq!(
        schema::version(&raw(&path)).expect("version"),
        SCHEMA_VERSION
    );
    let record = get(&store, "old").await.expect("kept");
    assert_eq!((record.last_seq, record.reserved_seq), (4, 0));
    assert_eq!(record.turns, 1, "counted from the log by the migration");
    assert_eq!(
        seqs(&load_all(&store, "old").await.expect("log")),
        [1, 2, 3, 4]
    );
    stop(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_4_database_is_migrated_to_keep_checkpoints() {
    use crate::store::checkpoint::{Checkpoint, FileChange, FileKind, FileVersion};
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sessions.db");
    {
        let store = spawn(&path).await;
        create(&store, "old").await;
        append(&store, "old", turn("old", 1, "from before"))
            .await
            .expect("append");
        stop(store).await;
    }
    // Take the file back to version 4, as the previous agentbus left it.
    let conn = raw(&path);
    conn.execute_batch(&format!(
        "{TO_V5} DROP TABLE checkpoint_files; DROP TABLE checkpoints; DROP TABLE blobs; \
         PRAGMA user_version = 4;"
    ))
    .expect("downgrade");
    drop(conn);

    let store = spawn(&path).await;
    let conn = raw(&path);
    assert_eq!(schema::version(&conn).expect("version"), SCHEMA_VERSION);
    let tables = schema::tables(&conn).expect("tables");
    for table in ["blobs", "checkpoints", "checkpoint_files"] {
        assert!(tables.iter().any(|t| t == table), "{table} in {tables:?}");
    }
    let record = get(&store, "old").await.expect("kept");
    assert_eq!((record.last_seq, record.turns), (4, 1));

    let hash = "ab".repeat(32);
    store
        .put_blobs(vec![(hash.clone(), b"x".to_vec())])
        .await
        .expect("put");
    let checkpoint = Checkpoint {
        id: "0193a1b2-c3d4-7e5f-8a6b-000000000001".to_string(),
        session_id: sid("old"),
        turn_seq: 1,
        call_id: Some("call_2".to_string()),
        tool: "write_file".to_string(),
        created_at: record.created_at,
        changes: vec![FileChange {
            path: "a.txt".to_string(),
            before: None,
            after: Some(FileVersion {
                hash,
                kind: FileKind::File,
                size: 1,
            }),
        }],
        undone: false,
    };
    store
        .add_checkpoint(checkpoint.clone())
        .await
        .expect("a migrated store keeps checkpoints");
    assert_eq!(
        store.checkpoints(&sid("old")).await.expect("checkpoints"),
        vec![checkpoint]
    );
    stop(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_5_database_is_migrated_its_sessions_made_by_no_token() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sessions.db");
    {
        let store = spawn(&path).await;
        create(&store, "old").await;
        append(&store, "old", turn("old", 1, "from before"))
            .await
            .expect("append");
        stop(store).await;
    }
    // Take the file back to version 5, as the previous agentbus left it.
    raw(&path).execute_batch(TO_V5).expect("downgrade");
    assert_eq!(schema::version(&raw(&path)).expect("version"), 5);

    let store = spawn(&path).await;
    let conn = raw(&path);
    assert_eq!(schema::version(&conn).expect("version"), SCHEMA_VERSION);
    let old = get(&store, "old").await.expect("kept");
    assert_eq!((old.created_by, old.viewers), (None, vec![]));
    assert_eq!((old.last_seq, old.turns), (4, 1));

    // The migrated file keeps creators and viewers.
    let new = crate::store::NewSession {
        created_by: Some("alice".into()),
        ..new_session("new")
    };
    store.create(new, me()).await.expect("create");
    store
        .set_viewers(&sid("old"), &["alice".to_string()])
        .await
        .expect("viewers");
    let page = ListPage {
        visible_to: Some("alice".into()),
        ..ListPage::default()
    };
    let seen: Vec<String> = store
        .list(page)
        .await
        .expect("list")
        .into_iter()
        .map(|r| r.id.0)
        .collect();
    assert_eq!(seen, ["new", "old"]);
    stop(store).await;
}

/// A token's page reads its sessions through the indexes (its own by
/// `created_by`, those it follows by `session_viewers.name`, then each by
/// its key): never every session.
#[test]
fn the_list_of_one_tokens_sessions_never_scans_every_session() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut conn = raw(&dir.path().join("sessions.db"));
    schema::migrate(&mut conn, dir.path()).expect("migrate");
    let plan = |sql: &str| -> Vec<String> {
        let mut stmt = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("explain");
        // Every parameter NULL: the plan does not depend on them.
        let nulls = vec![rusqlite::types::Null; stmt.parameter_count()];
        stmt.query_map(rusqlite::params_from_iter(nulls), |row| {
            row.get::<_, String>(3)
        })
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .expect("plan")
    };
    let token = plan(&crate::store::sqlite::list_statement(true));
    let said = token.join("\n");
    assert!(!token.iter().any(|step| step.starts_with("SCAN")), "{said}");
    for index in ["sessions_by_created_by", "session_viewers_by_name"] {
        assert!(said.contains(index), "{index}: {said}");
    }
    // The check sees a scan: the whole list is one (in update order).
    let whole = plan(&crate::store::sqlite::list_statement(false));
    assert!(
        whole.iter().any(|step| step.starts_with("SCAN sessions")),
        "{whole:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_from_a_newer_agentbus_is_refused_untouched() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sessions.db");
    let conn = raw(&path);
    conn.pragma_update(None, "user_version", 99)
        .expect("set version");
    let e = match SqliteStore::open(StoreOptions::new(&path)).await {
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
    let message = e.to_string();
    assert!(message.contains("schema version 99"), "{message}");
    assert!(message.contains("upgrade agentbus"), "{message}");
    let tables = count_rows(&conn, "SELECT count(*) FROM sqlite_master", []);
    assert_eq!(tables, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_a_database_is_refused_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "x".repeat(4096)).expect("write");
    let e = match SqliteStore::open(StoreOptions::new(&path)).await {
        Ok(_) => panic!("opened a text file"),
        Err(e) => e,
    };
    assert!(
        matches!(
            e,
            StoreError::Unusable {
                problem: crate::store::error::Unusable::NotSqlite,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("notes.txt"), "{e}");
    assert_eq!(
        std::fs::read(&path).expect("read"),
        "x".repeat(4096).as_bytes()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stores_opening_a_missing_file_at_once_share_one_whole_database() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sessions.db");
    let opened =
        futures::future::join_all((0..4).map(|_| SqliteStore::open(StoreOptions::new(&path))))
            .await;
    let stores: Vec<Store> = opened
        .into_iter()
        .map(|store| -> Store {
            Arc::new(store.expect("every one opens: none sees a half-made file"))
        })
        .collect();
    for (n, store) in stores.iter().enumerate() {
        create(store, &format!("s{n}")).await;
    }
    let listed = stores[0].list(ListPage::default()).await.expect("list");
    assert_eq!(listed.len(), 4, "one database holds them all");
    for store in stores {
        stop(store).await;
    }
    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with("sessions.db"))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_past_the_busy_timeout_is_locked_naming_the_file_then_passes() {
    let (_dir, path, store) = temp_store().await;
    create(&store, "s1").await;
    let mut holder = raw(&path);
    let lock = holder
        .transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)
        .expect("another connection takes the write lock");
    let mut options = StoreOptions::new(&path);
    options.busy_timeout = std::time::Duration::from_millis(50);
    let impatient: Store = Arc::new(
        SqliteStore::open(options)
            .await
            .expect("reading is not locked"),
    );

    let e = append(&impatient, "s1", turn("s1", 1, "q"))
        .await
        .expect_err("the write lock is held");
    assert!(
        matches!(
            &e,
            StoreError::Locked {
                operation: "append events",
                ..
            }
        ),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("locked by another process"), "{message}");
    assert!(message.contains("50 ms"), "{message}");

    lock.rollback().expect("let go");
    append(&impatient, "s1", turn("s1", 1, "q"))
        .await
        .expect("works again once the lock is gone");
    assert_eq!(load_all(&impatient, "s1").await.expect("load").len(), 4);
    stop(impatient).await;
    stop(store).await;
}
