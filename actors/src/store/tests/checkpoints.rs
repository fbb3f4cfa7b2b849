//! Blobs and checkpoints, through the trait, on every backend: blobs come
//! back byte for byte and are shared by hash; checkpoints come back in
//! creation order with their changes; undoing and dropping touch only the
//! named session's; deleting a session takes its checkpoints and the
//! blobs only they referred to; a collection deletes only blobs no
//! checkpoint refers to and unused since its cutoff (asking for a blob, or
//! putting it again, marks it used); what does not decode is corrupt.
//!
//! A blob is made old behind the store's back (`UPDATE blobs SET used_at
//! = ...`): no test waits for a grace period.

use super::kit::*;
use crate::store::StoreError;
use crate::store::checkpoint::{
    Checkpoint, CheckpointUsage, Collected, FileChange, FileKind, FileVersion,
};
use chrono::{DateTime, Duration, SubsecRound, Utc};
use sha2::{Digest, Sha256};

/// Every blob marked used long ago (past the grace period).
const OLD: &str = "UPDATE blobs SET used_at = '2000-01-01T00:00:00.000000Z'";

on_every_backend! {
    blobs_come_back_byte_for_byte_and_only_missing_ones_are_named,
    checkpoints_come_back_in_creation_order_with_their_changes,
    undoing_and_dropping_touch_only_the_named_sessions_checkpoints,
    deleting_a_session_deletes_its_checkpoints_and_the_blobs_only_they_referred_to,
    a_collection_deletes_only_unreferenced_blobs_unused_since_the_cutoff,
    a_blob_asked_for_or_put_again_is_used_and_kept_by_a_collection,
    a_checkpoint_of_an_unknown_session_is_not_found_and_stores_nothing,
    copies_of_a_session_have_no_checkpoints,
    a_checkpoint_row_that_does_not_decode_is_corrupt_naming_the_session,
    ten_thousand_hashes_are_looked_up_in_one_call,
}

/// SHA-256 of `bytes`, lower-case hex: a blob's key.
fn hash_of(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// `bytes` as a blob to put.
fn blob(bytes: &[u8]) -> (String, Vec<u8>) {
    (hash_of(bytes), bytes.to_vec())
}

/// A version of a path holding `bytes`.
fn version(bytes: &[u8], kind: FileKind) -> FileVersion {
    FileVersion {
        hash: hash_of(bytes),
        kind,
        size: bytes.len() as u64,
    }
}

fn change(path: &str, before: Option<FileVersion>, after: Option<FileVersion>) -> FileChange {
    FileChange {
        path: path.to_string(),
        before,
        after,
    }
}

/// A UUID v7 text whose order is `n`'s (ids sort in creation order).
fn checkpoint_id(n: u32) -> String {
    format!("0193a1b2-c3d4-7e5f-8a6b-{n:012x}")
}

/// Checkpoint `n` of session `session` (its time to the microsecond, as
/// the stores keep it).
fn checkpoint(session: &str, n: u32, changes: Vec<FileChange>) -> Checkpoint {
    Checkpoint {
        id: checkpoint_id(n),
        session_id: sid(session),
        turn_seq: u64::from(n) * 4 + 1,
        call_id: Some(format!("call_{n}")),
        tool: "write_file".to_string(),
        created_at: at(n),
        changes,
        undone: false,
    }
}

fn at(n: u32) -> DateTime<Utc> {
    (time(u64::from(n)) + Duration::minutes(i64::from(n))).trunc_subsecs(6)
}

/// Put `blobs` and keep checkpoint `n` of `session` changing each of them
/// from nothing to it (a file created per blob).
async fn checkpoint_creating(store: &Store, session: &str, n: u32, blobs: &[&[u8]]) {
    store
        .put_blobs(blobs.iter().map(|bytes| blob(bytes)).collect())
        .await
        .expect("put blobs");
    let changes = blobs
        .iter()
        .enumerate()
        .map(|(i, bytes)| {
            change(
                &format!("file{i}.txt"),
                None,
                Some(version(bytes, FileKind::File)),
            )
        })
        .collect();
    store
        .add_checkpoint(checkpoint(session, n, changes))
        .await
        .expect("add checkpoint");
}

async fn held(store: &Store, bytes: &[u8]) -> bool {
    store
        .blob(&hash_of(bytes))
        .await
        .expect("read blob")
        .is_some()
}

/// Make blobs last used long ago, behind the store's back.
async fn make_old(backend: &Backend, blobs: &[&[u8]]) {
    let hashes: Vec<String> = blobs
        .iter()
        .map(|bytes| format!("'{}'", hash_of(bytes)))
        .collect();
    backend
        .execute(&format!(
            "UPDATE blobs SET used_at = '2001-02-03T04:05:06.000000Z' WHERE hash IN ({})",
            hashes.join(", ")
        ))
        .await;
}

/// A cutoff an hour ago: blobs made old are unused since, blobs used now
/// are not.
fn an_hour_ago() -> DateTime<Utc> {
    Utc::now() - Duration::hours(1)
}

async fn usage(store: &Store) -> CheckpointUsage {
    store.checkpoint_usage().await.expect("usage")
}

// ---------------------------------------------------------------- blobs

async fn blobs_come_back_byte_for_byte_and_only_missing_ones_are_named(backend: Backend) {
    let store = backend.open().await;
    let binary: &[u8] = &[0xff, 0xfe, 0x00, 0x80, 0xc3, 0x28, 0x00, 0x0a];
    let text: &[u8] = b"fn main() {}\n";
    let empty: &[u8] = b"";
    let absent: &[u8] = b"never put";
    assert_eq!(usage(&store).await, CheckpointUsage::default());

    let asked = vec![
        hash_of(binary),
        hash_of(absent),
        hash_of(text),
        hash_of(empty),
    ];
    assert_eq!(
        store.missing_blobs(asked.clone()).await.expect("missing"),
        asked,
        "an empty store holds none, named in the order asked"
    );
    store
        .put_blobs(vec![blob(binary), blob(text), blob(empty)])
        .await
        .expect("put");
    let mut again = asked.clone();
    again.push(hash_of(absent));
    assert_eq!(
        store.missing_blobs(again).await.expect("missing"),
        vec![hash_of(absent)],
        "only the one not held, once"
    );
    assert_eq!(
        store.missing_blobs(Vec::new()).await.expect("none asked"),
        Vec::<String>::new()
    );

    for bytes in [binary, text, empty] {
        assert_eq!(
            store.blob(&hash_of(bytes)).await.expect("blob").as_deref(),
            Some(bytes),
            "exactly the bytes put"
        );
    }
    assert_eq!(store.blob(&hash_of(absent)).await.expect("blob"), None);

    // Putting a held blob again keeps one copy.
    store
        .put_blobs(vec![blob(text), blob(text)])
        .await
        .expect("put again");
    let total = (binary.len() + text.len()) as u64;
    assert_eq!(
        usage(&store).await,
        CheckpointUsage {
            checkpoints: 0,
            blobs: 3,
            blob_bytes: total,
        }
    );
    stop(store).await;

    // Kept across a reopening.
    let store = backend.open().await;
    assert_eq!(
        store.blob(&hash_of(binary)).await.expect("blob").as_deref(),
        Some(binary)
    );
    stop(store).await;
}

async fn ten_thousand_hashes_are_looked_up_in_one_call(backend: Backend) {
    let store = backend.open().await;
    let contents: Vec<Vec<u8>> = (0..10_000u32)
        .map(|n| format!("line {n}\n").into_bytes())
        .collect();
    let held: Vec<(String, Vec<u8>)> = contents
        .iter()
        .step_by(2)
        .map(|bytes| blob(bytes))
        .collect();
    store.put_blobs(held).await.expect("put 5,000 blobs");
    let hashes: Vec<String> = contents.iter().map(|bytes| hash_of(bytes)).collect();
    let started = std::time::Instant::now();
    let missing = store.missing_blobs(hashes.clone()).await.expect("missing");
    eprintln!("10,000 hashes looked up in {:?}", started.elapsed());
    let expected: Vec<String> = hashes.into_iter().skip(1).step_by(2).collect();
    assert_eq!(missing, expected);
    assert_eq!(usage(&store).await.blobs, 5_000);
    stop(store).await;
}

// ---------------------------------------------------------------- checkpoints

async fn checkpoints_come_back_in_creation_order_with_their_changes(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    create(&store, "s2").await;
    let (old, new, link) = (
        b"old\n".as_slice(),
        b"new\n".as_slice(),
        b"../target".as_slice(),
    );
    store
        .put_blobs(vec![blob(old), blob(new), blob(link)])
        .await
        .expect("put");

    let first = checkpoint(
        "s1",
        1,
        vec![
            change("a/created.txt", None, Some(version(new, FileKind::File))),
            change("b/deleted.txt", Some(version(old, FileKind::File)), None),
            change(
                "c/link",
                Some(version(old, FileKind::File)),
                Some(version(link, FileKind::Symlink)),
            ),
            change(
                "d/run.sh",
                Some(version(old, FileKind::File)),
                Some(version(old, FileKind::Executable)),
            ),
        ],
    );
    let second = Checkpoint {
        call_id: None,
        tool: "bash".to_string(),
        ..checkpoint(
            "s1",
            2,
            vec![change(
                "a/created.txt",
                Some(version(new, FileKind::File)),
                Some(version(old, FileKind::File)),
            )],
        )
    };
    let empty = checkpoint("s1", 3, Vec::new());
    let other = checkpoint(
        "s2",
        4,
        vec![change("x", None, Some(version(new, FileKind::File)))],
    );
    // Stored out of order: they come back in id (creation) order.
    for checkpoint in [&second, &empty, &first, &other] {
        store
            .add_checkpoint(checkpoint.clone())
            .await
            .expect("add checkpoint");
    }

    let listed = store.checkpoints(&sid("s1")).await.expect("checkpoints");
    assert_eq!(listed, vec![first.clone(), second, empty]);
    assert_eq!(
        store.checkpoints(&sid("s2")).await.expect("checkpoints"),
        vec![other]
    );
    assert_eq!(
        store
            .checkpoints(&sid("nobody"))
            .await
            .expect("checkpoints"),
        vec![],
        "a session that is not there has none"
    );
    assert_eq!(usage(&store).await.checkpoints, 4);

    let e = store
        .add_checkpoint(first)
        .await
        .expect_err("a checkpoint id is kept once");
    assert!(!matches!(e, StoreError::NotFound { .. }), "{e:?}");
    assert_eq!(usage(&store).await.checkpoints, 4, "nothing of it stored");
    stop(store).await;
}

async fn undoing_and_dropping_touch_only_the_named_sessions_checkpoints(backend: Backend) {
    let store = backend.open().await;
    create(&store, "a").await;
    create(&store, "b").await;
    let bytes: &[u8] = b"shared\n";
    checkpoint_creating(&store, "a", 1, &[bytes]).await;
    checkpoint_creating(&store, "a", 2, &[bytes]).await;
    checkpoint_creating(&store, "b", 3, &[bytes]).await;

    // B's checkpoint named with A is not A's to mark.
    store
        .mark_undone(&sid("a"), vec![checkpoint_id(1), checkpoint_id(3)])
        .await
        .expect("mark undone");
    let undone = |list: Vec<Checkpoint>| -> Vec<(String, bool)> {
        list.into_iter().map(|c| (c.id, c.undone)).collect()
    };
    assert_eq!(
        undone(store.checkpoints(&sid("a")).await.expect("a")),
        vec![(checkpoint_id(1), true), (checkpoint_id(2), false)]
    );
    assert_eq!(
        undone(store.checkpoints(&sid("b")).await.expect("b")),
        vec![(checkpoint_id(3), false)]
    );

    store
        .drop_checkpoints(&sid("a"), vec![checkpoint_id(1), checkpoint_id(3)])
        .await
        .expect("drop");
    assert_eq!(
        undone(store.checkpoints(&sid("a")).await.expect("a")),
        vec![(checkpoint_id(2), false)]
    );
    assert_eq!(
        undone(store.checkpoints(&sid("b")).await.expect("b")),
        vec![(checkpoint_id(3), false)]
    );
    assert_eq!(
        backend
            .count(&format!(
                "SELECT count(*) FROM checkpoint_files WHERE checkpoint_id = '{}'",
                checkpoint_id(1)
            ))
            .await,
        0,
        "a dropped checkpoint's files go with it"
    );
    assert!(held(&store, bytes).await, "blobs stay until collected");

    // Unknown ids and sessions change nothing.
    store
        .mark_undone(&sid("nobody"), vec![checkpoint_id(2)])
        .await
        .expect("mark undone");
    store
        .drop_checkpoints(&sid("nobody"), vec![checkpoint_id(2)])
        .await
        .expect("drop");
    store
        .drop_checkpoints(&sid("a"), Vec::new())
        .await
        .expect("drop none");
    assert_eq!(usage(&store).await.checkpoints, 2);
    stop(store).await;
}

async fn deleting_a_session_deletes_its_checkpoints_and_the_blobs_only_they_referred_to(
    backend: Backend,
) {
    let store = backend.open().await;
    create(&store, "s1").await;
    create(&store, "s2").await;
    let (only, also_only, shared, theirs, loose) = (
        b"only s1\n".as_slice(),
        b"s1 twice\n".as_slice(),
        b"both\n".as_slice(),
        b"only s2\n".as_slice(),
        b"nobody's\n".as_slice(),
    );
    // s1's checkpoints: the same blob before in one and after in another.
    let s1 = async |store: &Store| {
        checkpoint_creating(store, "s1", 1, &[only, shared, also_only]).await;
        store
            .add_checkpoint(checkpoint(
                "s1",
                2,
                vec![change(
                    "file2.txt",
                    Some(version(also_only, FileKind::File)),
                    None,
                )],
            ))
            .await
            .expect("add");
    };
    s1(&store).await;
    checkpoint_creating(&store, "s2", 3, &[shared, theirs]).await;
    store.put_blobs(vec![blob(loose)]).await.expect("put");
    // Used within the grace period: another session may count on it.
    store.delete(&sid("s1"), me()).await.expect("delete");
    assert!(held(&store, only).await, "used just now: kept for now");
    create(&store, "s1").await;
    s1(&store).await;
    backend.execute(OLD).await;

    store.delete(&sid("s1"), me()).await.expect("delete");
    assert_eq!(
        store.checkpoints(&sid("s1")).await.expect("checkpoints"),
        vec![]
    );
    assert_eq!(
        backend
            .count("SELECT count(*) FROM checkpoint_files WHERE checkpoint_id IN (SELECT id FROM checkpoints)")
            .await,
        2,
        "only s2's files are left"
    );
    assert_eq!(
        backend.count("SELECT count(*) FROM checkpoint_files").await,
        2
    );
    assert!(!held(&store, only).await, "only s1 referred to it");
    assert!(!held(&store, also_only).await, "only s1 referred to it");
    assert!(held(&store, shared).await, "s2 still refers to it");
    assert!(held(&store, theirs).await);
    assert!(
        held(&store, loose).await,
        "a blob no checkpoint refers to waits for a collection"
    );
    assert_eq!(store.checkpoints(&sid("s2")).await.expect("s2").len(), 1);

    backend.execute(OLD).await;
    store.delete(&sid("s2"), me()).await.expect("delete");
    assert!(!held(&store, shared).await);
    assert_eq!(
        usage(&store).await,
        CheckpointUsage {
            checkpoints: 0,
            blobs: 1,
            blob_bytes: loose.len() as u64,
        }
    );
    stop(store).await;
}

// ---------------------------------------------------------------- collection

async fn a_collection_deletes_only_unreferenced_blobs_unused_since_the_cutoff(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    let (old_loose, old_referenced, recent_loose) = (
        b"old and loose\n".as_slice(),
        b"old but referenced\n".as_slice(),
        b"recent\n".as_slice(),
    );
    checkpoint_creating(&store, "s1", 1, &[old_referenced]).await;
    store
        .put_blobs(vec![blob(old_loose), blob(recent_loose)])
        .await
        .expect("put");
    make_old(&backend, &[old_loose, old_referenced]).await;

    let collected = store.collect_blobs(an_hour_ago()).await.expect("collect");
    assert_eq!(
        collected,
        Collected {
            blobs: 1,
            bytes: old_loose.len() as u64,
        }
    );
    assert!(!held(&store, old_loose).await);
    assert!(
        held(&store, old_referenced).await,
        "a checkpoint refers to it"
    );
    assert!(held(&store, recent_loose).await, "used after the cutoff");

    // Once its checkpoint is dropped, nothing refers to it.
    store
        .drop_checkpoints(&sid("s1"), vec![checkpoint_id(1)])
        .await
        .expect("drop");
    let collected = store.collect_blobs(an_hour_ago()).await.expect("collect");
    assert_eq!(
        collected,
        Collected {
            blobs: 1,
            bytes: old_referenced.len() as u64,
        }
    );
    assert!(!held(&store, old_referenced).await);
    assert!(held(&store, recent_loose).await);

    // A cutoff in the future takes every unreferenced blob.
    let collected = store
        .collect_blobs(Utc::now() + Duration::hours(1))
        .await
        .expect("collect");
    assert_eq!(collected.blobs, 1);
    assert_eq!(usage(&store).await, CheckpointUsage::default());
    let collected = store.collect_blobs(Utc::now()).await.expect("collect");
    assert_eq!(collected, Collected::default(), "nothing left to collect");
    stop(store).await;
}

async fn a_blob_asked_for_or_put_again_is_used_and_kept_by_a_collection(backend: Backend) {
    let store = backend.open().await;
    let (asked, put_again, forgotten) = (
        b"asked for\n".as_slice(),
        b"put again\n".as_slice(),
        b"forgotten\n".as_slice(),
    );
    store
        .put_blobs(vec![blob(asked), blob(put_again), blob(forgotten)])
        .await
        .expect("put");
    make_old(&backend, &[asked, put_again, forgotten]).await;

    // About to take a checkpoint: the store holds it, so it is not put.
    let missing = store
        .missing_blobs(vec![hash_of(asked)])
        .await
        .expect("missing");
    assert_eq!(missing, Vec::<String>::new());
    store
        .put_blobs(vec![blob(put_again)])
        .await
        .expect("put again");

    let collected = store.collect_blobs(an_hour_ago()).await.expect("collect");
    assert_eq!(
        collected,
        Collected {
            blobs: 1,
            bytes: forgotten.len() as u64,
        }
    );
    assert!(held(&store, asked).await, "marked used when asked for");
    assert!(held(&store, put_again).await, "marked used when put again");
    assert!(!held(&store, forgotten).await);
    stop(store).await;
}

// ---------------------------------------------------------------- errors, copies

async fn a_checkpoint_of_an_unknown_session_is_not_found_and_stores_nothing(backend: Backend) {
    let store = backend.open().await;
    let bytes: &[u8] = b"content\n";
    store.put_blobs(vec![blob(bytes)]).await.expect("put");
    let lost = checkpoint(
        "nobody",
        1,
        vec![change("a.txt", None, Some(version(bytes, FileKind::File)))],
    );
    let e = store
        .add_checkpoint(lost)
        .await
        .expect_err("no such session");
    assert!(
        matches!(&e, StoreError::NotFound { id } if id == "nobody"),
        "{e:?}"
    );
    assert_eq!(usage(&store).await.checkpoints, 0);
    assert_eq!(
        backend.count("SELECT count(*) FROM checkpoint_files").await,
        0
    );

    // The store still serves.
    create(&store, "s1").await;
    checkpoint_creating(&store, "s1", 2, &[bytes]).await;
    assert_eq!(store.checkpoints(&sid("s1")).await.expect("s1").len(), 1);
    stop(store).await;
}

async fn copies_of_a_session_have_no_checkpoints(backend: Backend) {
    let store = backend.open().await;
    create(&store, "orig").await;
    append(&store, "orig", turn("orig", 1, "change a file"))
        .await
        .expect("append");
    checkpoint_creating(&store, "orig", 1, &[b"x\n"]).await;

    store
        .fork(&sid("orig"), None, sid("forked"), None, None)
        .await
        .expect("fork");
    let document = store.export(&sid("orig")).await.expect("export");
    store
        .import(document, sid("imported"), None)
        .await
        .expect("import");
    for copy in ["forked", "imported"] {
        assert_eq!(
            store.checkpoints(&sid(copy)).await.expect("checkpoints"),
            vec![],
            "{copy}"
        );
    }
    assert_eq!(
        store.checkpoints(&sid("orig")).await.expect("orig").len(),
        1
    );
    stop(store).await;
}

async fn a_checkpoint_row_that_does_not_decode_is_corrupt_naming_the_session(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    let bytes: &[u8] = b"content\n";
    checkpoint_creating(&store, "s1", 1, &[bytes]).await;
    let file_row = format!("checkpoint_id = '{}'", checkpoint_id(1));

    for (tamper, says) in [
        ("after_kind = 'fifo'", "\"fifo\""),
        ("after_size = NULL", "set together"),
        ("after_size = -3", "negative"),
    ] {
        backend
            .execute(&format!(
                "UPDATE checkpoint_files SET {tamper} WHERE {file_row}"
            ))
            .await;
        let e = store
            .checkpoints(&sid("s1"))
            .await
            .expect_err("does not decode");
        assert!(
            matches!(&e, StoreError::Corrupt { id, .. } if id == "s1"),
            "{tamper}: {e:?}"
        );
        let message = e.to_string();
        assert!(message.contains("session s1"), "{message}");
        assert!(message.contains(says), "{tamper}: {message}");
        backend
            .execute(&format!(
                "UPDATE checkpoint_files SET after_kind = 'file', after_size = {} WHERE {file_row}",
                bytes.len()
            ))
            .await;
        assert_eq!(
            store.checkpoints(&sid("s1")).await.expect("mended").len(),
            1
        );
    }

    backend
        .execute("UPDATE checkpoints SET turn_seq = -1")
        .await;
    let e = store
        .checkpoints(&sid("s1"))
        .await
        .expect_err("does not decode");
    assert!(
        matches!(&e, StoreError::Corrupt { id, .. } if id == "s1"),
        "{e:?}"
    );

    // Deleting is the way out, and takes the blob with it.
    backend.execute(OLD).await;
    store.delete(&sid("s1"), me()).await.expect("delete");
    assert!(!held(&store, bytes).await);
    stop(store).await;
}
