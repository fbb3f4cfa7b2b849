//! The store's rules as tests, through the trait, on every backend:
//! append-only logs, titles, leases across processes, fork, delete,
//! export/import, id prefixes, waiting inputs, seq reservations and two
//! stores sharing one database; blobs and checkpoints in `checkpoints.rs`,
//! who made a session and who may follow it in `visibility.rs`.
//! Each test gets its own empty store (a
//! temporary SQLite file, a fresh Postgres database) and synchronises on
//! replies, never on sleeps. What only one backend has is tested in
//! `only_sqlite.rs` and `only_postgres.rs`; `kit.rs` is what they share.

mod checkpoints;
mod cluster;
mod kit;
mod only_postgres;
mod only_sqlite;
mod visibility;

use super::*;
use crate::protocol::{AgentMessage, AssistantEvent, ContentBlock, EventEnvelope, Usage};
use crate::store::document::{DOCUMENT_FORMAT, DOCUMENT_VERSION, DocumentError, DocumentSession};
use crate::store::record::{STATUS_ACTIVE, STATUS_IDLE, TITLE_MAX_CHARS};
use kit::*;
use std::time::Instant;

kit::on_every_backend! {
    appended_batches_come_back_in_seq_order_with_the_same_bodies,
    the_title_is_the_first_line_of_the_first_user_message,
    appending_an_existing_seq_fails_and_changes_nothing,
    stream_events_are_never_stored,
    appending_another_sessions_event_is_refused,
    text_with_nul_characters_is_stored_and_read_back,
    everything_survives_reopening_the_database,
    unknown_sessions_are_not_found,
    creating_a_taken_id_is_refused,
    a_corrupt_row_is_reported_not_panicked_on,
    an_assistant_row_from_before_thinking_loads_and_thinking_round_trips,
    a_failed_operation_leaves_the_store_serving,
    a_session_leased_by_a_live_process_is_busy_until_that_process_dies,
    a_released_session_is_idle_and_can_be_acquired_again,
    fork_copies_the_log_up_to_at_seq_and_leaves_the_parent_untouched,
    fork_defaults_to_the_whole_log_and_needs_no_owner,
    forking_beyond_the_end_of_the_log_is_an_error_naming_both_seqs,
    deleting_a_session_deletes_its_events,
    export_then_import_round_trips_the_session,
    import_refuses_an_invalid_document_and_stores_nothing,
    resolve_id_takes_an_exact_id_or_a_unique_prefix,
    ids_are_compared_byte_by_byte_whatever_the_databases_collation,
    list_orders_sessions_by_their_last_update,
    pages_of_the_list_follow_each_other_when_sessions_are_updated_meanwhile,
    accepted_inputs_wait_until_a_commit_no_longer_lists_them,
    a_seq_reservation_only_grows_and_a_reload_continues_above_it,
    two_stores_on_one_database_both_write_their_own_sessions,
}

// ---------------------------------------------------------------- logs

async fn appended_batches_come_back_in_seq_order_with_the_same_bodies(backend: Backend) {
    let store = backend.open().await;
    let created = create(&store, "s1").await;
    assert_eq!(created.status, STATUS_ACTIVE);
    assert_eq!(created.owner, Some(me()));
    assert_eq!((created.last_seq, created.event_count), (0, 0));

    let first = turn("s1", 1, "read a.txt");
    let second = turn("s1", 5, "and b.txt");
    append(&store, "s1", first.clone()).await.expect("append 1");
    append(&store, "s1", second.clone())
        .await
        .expect("append 2");
    append(&store, "s1", vec![]).await.expect("empty batch");

    let (record, events) = store.acquire(&sid("s1"), me()).await.expect("acquire");
    let expected: Vec<EventEnvelope> = unwrapped(&first)
        .into_iter()
        .chain(unwrapped(&second))
        .collect();
    assert_eq!(events, expected);
    assert_eq!((record.last_seq, record.event_count), (8, 8));
    assert_eq!((created.turns, record.turns), (0, 2), "a query per turn");
    assert!(record.updated_at >= created.updated_at);
    assert_eq!(get(&store, "s1").await, Some(record));

    // The body column is exactly the envelope's JSON, as written.
    let body = backend
        .text("SELECT CAST(body AS TEXT) FROM events WHERE session_id = 's1' AND seq = 2")
        .await;
    assert_eq!(body, serde_json::to_string(&*first[1]).expect("json"));

    let replay = store
        .load_events(&sid("s1"), 3, Some(6))
        .await
        .expect("load range");
    assert_eq!(seqs(&replay), vec![4, 5, 6]);

    // Only some types, before a seq (what a long log's state comes from).
    let typed = store
        .load_events_of_types(&sid("s1"), 7, &["user", "result"])
        .await
        .expect("load by type");
    let expected: Vec<EventEnvelope> = expected
        .into_iter()
        .filter(|e| e.seq < 7 && matches!(e.message.type_name(), "user" | "result"))
        .collect();
    assert!(expected.len() >= 2, "{expected:?}");
    assert_eq!(typed, expected);
}

async fn the_title_is_the_first_line_of_the_first_user_message(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    assert_eq!(get(&store, "s1").await.and_then(|r| r.title), None);

    append(&store, "s1", vec![assistant("s1", 1, "hello")])
        .await
        .expect("append");
    assert_eq!(get(&store, "s1").await.and_then(|r| r.title), None);

    append(
        &store,
        "s1",
        vec![
            user("s1", 2, "\n  fix the parser  \nit breaks on tabs"),
            user("s1", 3, "second message"),
        ],
    )
    .await
    .expect("append");
    let title = get(&store, "s1").await.and_then(|r| r.title);
    assert_eq!(title.as_deref(), Some("fix the parser"));

    append(&store, "s1", vec![user("s1", 4, "later message")])
        .await
        .expect("append");
    let title = get(&store, "s1").await.and_then(|r| r.title);
    assert_eq!(title.as_deref(), Some("fix the parser"));

    create(&store, "long").await;
    let long = "é".repeat(200);
    append(&store, "long", vec![user("long", 1, &long)])
        .await
        .expect("append");
    let title = get(&store, "long")
        .await
        .and_then(|r| r.title)
        .expect("title");
    assert_eq!(title.chars().count(), TITLE_MAX_CHARS);
    assert!(title.ends_with('…'));
}

async fn appending_an_existing_seq_fails_and_changes_nothing(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    append(&store, "s1", turn("s1", 1, "hi"))
        .await
        .expect("append");
    let before = get(&store, "s1").await;

    // seq 5 is new but seq 2 exists: the whole batch is refused.
    let e = append(
        &store,
        "s1",
        vec![user("s1", 5, "new"), user("s1", 2, "overwrite?")],
    )
    .await
    .expect_err("refused");
    assert!(matches!(e, StoreError::SeqConflict { seq: 2, .. }), "{e:?}");
    assert!(e.to_string().contains("never overwritten"), "{e}");

    let e = append(&store, "s1", vec![user("s1", 4, "again")])
        .await
        .expect_err("refused");
    assert!(
        matches!(
            e,
            StoreError::SeqConflict {
                seq: 4,
                last_seq: 4,
                ..
            }
        ),
        "{e:?}"
    );

    assert_eq!(get(&store, "s1").await, before);
    let events = load_all(&store, "s1").await.expect("load");
    assert_eq!(events, unwrapped(&turn("s1", 1, "hi")));
}

async fn stream_events_are_never_stored(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    append(
        &store,
        "s1",
        vec![
            user("s1", 1, "hi"),
            stream("s1", 2),
            stream("s1", 3),
            assistant("s1", 4, "hello"),
        ],
    )
    .await
    .expect("append");
    // A batch of nothing but stream events stores nothing at all.
    let before = get(&store, "s1").await;
    append(&store, "s1", vec![stream("s1", 5)])
        .await
        .expect("append");
    assert_eq!(get(&store, "s1").await, before);

    let events = load_all(&store, "s1").await.expect("load");
    assert_eq!(seqs(&events), vec![1, 4]);
    let record = before.expect("record");
    assert_eq!((record.last_seq, record.event_count), (4, 2));
    let streamed = backend
        .count("SELECT count(*) FROM events WHERE type = 'stream_event'")
        .await;
    assert_eq!(streamed, 0);
}

async fn appending_another_sessions_event_is_refused(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    create(&store, "s2").await;
    let e = append(&store, "s1", vec![user("s2", 1, "hi")])
        .await
        .expect_err("refused");
    assert!(matches!(e, StoreError::ForeignEvent { .. }), "{e:?}");
    assert!(e.to_string().contains("belongs to session s2"), "{e}");
    assert_eq!(load_all(&store, "s1").await.expect("load"), vec![]);
}

async fn text_with_nul_characters_is_stored_and_read_back(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    // A command's output may hold NUL bytes; a query too.
    let events = vec![
        user("s1", 1, "look\0here"),
        assistant("s1", 2, "reading"),
        tool_result_with("s1", 3, "bin\0ary\0"),
    ];
    append(&store, "s1", events.clone()).await.expect("stored");
    assert_eq!(
        load_all(&store, "s1").await.expect("load"),
        unwrapped(&events)
    );
    let title = get(&store, "s1").await.and_then(|r| r.title);
    assert!(
        title.as_deref().is_some_and(|t| t.starts_with("look")),
        "{title:?}"
    );
    store
        .set_title(&sid("s1"), "a\0title")
        .await
        .expect("titled");
    // An id with a NUL names no session.
    let e = store.resolve("s\0").await.expect_err("none");
    assert!(matches!(e, StoreError::NotFound { .. }), "{e:?}");
    assert_eq!(get(&store, "s\u{0}1").await, None);
}

async fn everything_survives_reopening_the_database(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    append(&store, "s1", turn("s1", 1, "remember me"))
        .await
        .expect("append");
    let record = get(&store, "s1").await;
    stop(store).await;

    let store = backend.open().await;
    assert_eq!(get(&store, "s1").await, record);
    assert_eq!(
        load_all(&store, "s1").await.expect("load"),
        unwrapped(&turn("s1", 1, "remember me"))
    );
    append(&store, "s1", turn("s1", 5, "more"))
        .await
        .expect("append after reopening");
    assert_eq!(get(&store, "s1").await.map(|r| r.last_seq), Some(8));
}

async fn unknown_sessions_are_not_found(backend: Backend) {
    let store = backend.open().await;
    let not_found = |r: Result<_, StoreError>| matches!(r, Err(StoreError::NotFound { .. }));
    let owner = me();
    let id = || sid("nope");
    assert!(not_found(store.acquire(&id(), owner).await.map(|_| ())));
    assert!(not_found(store.release(&id(), owner).await));
    assert!(not_found(
        append(&store, "nope", vec![user("nope", 1, "x")]).await
    ));
    assert!(not_found(load_all(&store, "nope").await.map(|_| ())));
    assert!(not_found(
        store
            .fork(&id(), None, sid("f"), None, None)
            .await
            .map(|_| ())
    ));
    assert!(not_found(store.delete(&id(), owner).await));
    assert!(not_found(store.export(&id()).await.map(|_| ())));
    assert_eq!(get(&store, "nope").await, None);
    let e = load_all(&store, "nope").await.expect_err("not found");
    assert_eq!(e.to_string(), "no stored session matches \"nope\"");
}

async fn creating_a_taken_id_is_refused(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    let e = store
        .create(new_session("s1"), me())
        .await
        .expect_err("refused");
    assert!(matches!(e, StoreError::Exists { .. }), "{e:?}");
}

async fn a_corrupt_row_is_reported_not_panicked_on(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    append(&store, "s1", turn("s1", 1, "hi"))
        .await
        .expect("append");
    backend
        .execute(
            "UPDATE events SET body = '{\"not\": \"an event\"}' WHERE session_id = 's1' AND seq = 3",
        )
        .await;
    let e = load_all(&store, "s1").await.expect_err("corrupt");
    assert!(
        matches!(&e, StoreError::Corrupt { seq: Some(3), .. }),
        "{e:?}"
    );
    assert!(e.to_string().contains("session s1, event seq 3"), "{e}");
    let e = store.export(&sid("s1")).await.expect_err("corrupt");
    assert!(matches!(&e, StoreError::Corrupt { .. }), "{e:?}");

    // The body of another event of the session (or of another session).
    backend
        .execute(&format!(
            "UPDATE events SET body = '{}' WHERE session_id = 's1' AND seq = 3",
            serde_json::to_string(&*user("s1", 2, "moved")).expect("json")
        ))
        .await;
    let e = load_all(&store, "s1").await.expect_err("corrupt");
    assert!(
        e.to_string().contains("is event seq 2 of session s1"),
        "{e}"
    );

    backend
        .execute("UPDATE sessions SET event_count = -1 WHERE id = 's1'")
        .await;
    let e = store.get(&sid("s1")).await.expect_err("corrupt");
    assert!(e.to_string().contains("event_count is negative"), "{e}");
    let e = store.list(ListPage::default()).await.expect_err("corrupt");
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");

    backend
        .execute("UPDATE sessions SET last_seq = -3 WHERE id = 's1'")
        .await;
    let e = append(&store, "s1", vec![user("s1", 9, "x")])
        .await
        .expect_err("corrupt");
    assert!(matches!(e, StoreError::Corrupt { .. }), "{e:?}");

    backend
        .execute("UPDATE sessions SET event_count = 4, last_seq = 4, owner = 'who knows' WHERE id = 's1'")
        .await;
    let e = store.acquire(&sid("s1"), me()).await.expect_err("corrupt");
    assert!(e.to_string().contains("\"who knows\""), "{e}");

    // Deleting is the way out, and it works.
    store.delete(&sid("s1"), me()).await.expect("delete");
    assert_eq!(store.list(ListPage::default()).await.expect("list"), vec![]);
}

async fn an_assistant_row_from_before_thinking_loads_and_thinking_round_trips(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    append(&store, "s1", turn("s1", 1, "hi"))
        .await
        .expect("append");
    // The body exactly as an agentbus without thinking blocks wrote it.
    let old = r#"{"session_id":"s1","seq":2,"turn_id":1,"at":"2027-01-15T08:00:02.123456Z","type":"assistant","content":[{"type":"text","text":"let me look"},{"type":"tool_use","id":"call_2","name":"read_file","input":{"path":"a.txt"}}],"model":"default","usage":{"input_tokens":10,"output_tokens":5},"finish_reason":"tool_use"}"#;
    backend
        .execute(&format!(
            "UPDATE events SET body = '{old}' WHERE session_id = 's1' AND seq = 2"
        ))
        .await;
    let thinking = AgentMessage::Assistant(AssistantEvent {
        content: vec![
            ContentBlock::Thinking {
                thinking: "They said hi.".into(),
                signature: Some("EqQBCgIYAhIM".into()),
            },
            ContentBlock::RedactedThinking {
                data: "EmwKAhgB".into(),
            },
            ContentBlock::Thinking {
                thinking: "unsigned".into(),
                signature: None,
            },
            ContentBlock::Text {
                text: "Hello.".into(),
            },
        ],
        model: "default".into(),
        usage: Usage::default(),
        finish_reason: "end_turn".into(),
        interrupted: false,
        context: None,
    });
    let new = event("s1", 5, thinking);
    append(&store, "s1", vec![new.clone()])
        .await
        .expect("append");
    let events = load_all(&store, "s1").await.expect("the old row loads");
    let AgentMessage::Assistant(loaded) = &events[1].message else {
        panic!("seq 2 is not an assistant event: {:?}", events[1]);
    };
    assert_eq!(
        loaded.content,
        vec![
            ContentBlock::Text {
                text: "let me look".into()
            },
            ContentBlock::ToolUse {
                id: "call_2".into(),
                name: "read_file".into(),
                input: serde_json::json!({"path": "a.txt"}),
            },
        ]
    );
    assert_eq!(events[4], *new, "thinking comes back as it went in");
    let stored = backend
        .text("SELECT CAST(body AS TEXT) FROM events WHERE session_id = 's1' AND seq = 5")
        .await;
    assert!(
        stored.contains(r#"{"type":"thinking","thinking":"unsigned"}"#),
        "no signature, no field: {stored}"
    );
    stop(store).await;
}

async fn a_failed_operation_leaves_the_store_serving(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    let e = append(&store, "unknown", vec![user("unknown", 1, "x")])
        .await
        .expect_err("no such session");
    assert!(matches!(e, StoreError::NotFound { .. }), "{e:?}");
    // The writer lives on: the next operation is served.
    assert!(get(&store, "s1").await.is_some());
}

// ---------------------------------------------------------------- leases

async fn a_session_leased_by_a_live_process_is_busy_until_that_process_dies(backend: Backend) {
    let store = backend.open().await;
    let mut other = OtherProcess::start();
    let holder = other.owner();
    store
        .create(new_session("s1"), holder)
        .await
        .expect("create");
    append(&store, "s1", turn("s1", 1, "hi"))
        .await
        .expect("append");

    let e = store.acquire(&sid("s1"), me()).await.expect_err("busy");
    assert!(
        matches!(&e, StoreError::Busy { pid, .. } if *pid == holder.pid),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(
        message.contains(&format!(
            "being driven by another agentbus process (pid {})",
            holder.pid
        )),
        "{message}"
    );
    assert!(message.contains("close it there first"), "{message}");

    let e = store.delete(&sid("s1"), me()).await.expect_err("busy");
    assert!(matches!(e, StoreError::Busy { .. }), "{e:?}");
    // Releasing someone else's lease does nothing.
    store
        .release(&sid("s1"), me())
        .await
        .expect("release is a no-op");
    assert_eq!(get(&store, "s1").await.and_then(|r| r.owner), Some(holder));

    other.kill();
    let (record, events) = store
        .acquire(&sid("s1"), me())
        .await
        .expect("the holder is gone");
    assert_eq!(record.owner, Some(me()));
    assert_eq!(record.status, STATUS_ACTIVE);
    assert_eq!(events.len(), 4);
}

async fn a_released_session_is_idle_and_can_be_acquired_again(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    // The holder itself may acquire again (e.g. after a front end reconnects).
    store
        .acquire(&sid("s1"), me())
        .await
        .expect("re-acquire by the holder");
    store.release(&sid("s1"), me()).await.expect("release");
    let record = get(&store, "s1").await.expect("record");
    assert_eq!((record.status.as_str(), record.owner), (STATUS_IDLE, None));

    let other = OtherProcess::start();
    let (record, _) = store
        .acquire(&sid("s1"), other.owner())
        .await
        .expect("a free session is anyone's");
    assert_eq!(record.owner, Some(other.owner()));
}

// ---------------------------------------------------------------- fork, delete

async fn fork_copies_the_log_up_to_at_seq_and_leaves_the_parent_untouched(backend: Backend) {
    let store = backend.open().await;
    create(&store, "parent").await;
    append(&store, "parent", turn("parent", 1, "first question"))
        .await
        .expect("append");
    append(&store, "parent", turn("parent", 5, "second question"))
        .await
        .expect("append");
    let parent_before = get(&store, "parent").await;
    let parent_events = load_all(&store, "parent").await.expect("load");

    let fork = store
        .fork(&sid("parent"), Some(4), sid("child"), Some(me()), None)
        .await
        .expect("fork");
    assert_eq!(fork.parent, Some((sid("parent"), 4)));
    assert_eq!(fork.title.as_deref(), Some("first question (fork)"));
    assert_eq!((fork.last_seq, fork.event_count, fork.turns), (4, 4, 1));
    assert_eq!(
        (fork.model.as_str(), fork.workspace.as_str()),
        ("default", "/work/project")
    );
    assert_eq!(
        (fork.status.as_str(), fork.owner),
        (STATUS_ACTIVE, Some(me()))
    );
    assert_eq!(get(&store, "child").await.as_ref(), Some(&fork));

    let copied = load_all(&store, "child").await.expect("load");
    let expected: Vec<EventEnvelope> = parent_events[..4]
        .iter()
        .cloned()
        .map(|mut e| {
            e.session_id = sid("child");
            e
        })
        .collect();
    assert_eq!(copied, expected);

    assert_eq!(get(&store, "parent").await, parent_before);
    assert_eq!(
        load_all(&store, "parent").await.expect("load"),
        parent_events
    );

    // The fork's log goes on by itself.
    append(&store, "child", vec![user("child", 5, "another way")])
        .await
        .expect("append to fork");
    assert_eq!(
        load_all(&store, "parent").await.expect("load"),
        parent_events
    );
}

async fn fork_defaults_to_the_whole_log_and_needs_no_owner(backend: Backend) {
    let store = backend.open().await;
    create(&store, "parent").await;
    append(&store, "parent", turn("parent", 1, "q"))
        .await
        .expect("append");
    let fork = store
        .fork(&sid("parent"), None, sid("child"), None, None)
        .await
        .expect("fork");
    assert_eq!(fork.parent, Some((sid("parent"), 4)));
    assert_eq!((fork.status.as_str(), fork.owner), (STATUS_IDLE, None));
    assert_eq!(
        seqs(&load_all(&store, "child").await.expect("load")),
        vec![1, 2, 3, 4]
    );

    let e = store
        .fork(&sid("parent"), None, sid("child"), None, None)
        .await
        .expect_err("taken");
    assert!(matches!(e, StoreError::Exists { .. }), "{e:?}");
}

async fn forking_beyond_the_end_of_the_log_is_an_error_naming_both_seqs(backend: Backend) {
    let store = backend.open().await;
    create(&store, "parent").await;
    append(&store, "parent", turn("parent", 1, "q"))
        .await
        .expect("append");
    let e = store
        .fork(&sid("parent"), Some(9), sid("child"), None, None)
        .await
        .expect_err("out of range");
    assert!(
        matches!(
            e,
            StoreError::SeqOutOfRange {
                at_seq: 9,
                last_seq: 4,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "cannot fork session parent at seq 9: its log ends at seq 4"
    );
    assert_eq!(get(&store, "child").await, None);
}

async fn deleting_a_session_deletes_its_events(backend: Backend) {
    let store = backend.open().await;
    create(&store, "s1").await;
    create(&store, "s2").await;
    append(&store, "s1", turn("s1", 1, "q"))
        .await
        .expect("append");
    append(&store, "s2", turn("s2", 1, "q"))
        .await
        .expect("append");
    store.delete(&sid("s1"), me()).await.expect("delete");
    assert_eq!(get(&store, "s1").await, None);
    let count = |id: &str| format!("SELECT count(*) FROM events WHERE session_id = '{id}'");
    assert_eq!(backend.count(&count("s1")).await, 0);
    assert_eq!(backend.count(&count("s2")).await, 4);
}

// ---------------------------------------------------------------- export, import

async fn export_then_import_round_trips_the_session(backend: Backend) {
    let store = backend.open().await;
    create(&store, "orig").await;
    append(&store, "orig", turn("orig", 1, "export me"))
        .await
        .expect("append");
    append(
        &store,
        "orig",
        vec![stream("orig", 5), user("orig", 6, "more")],
    )
    .await
    .expect("append");
    let fork = store
        .fork(&sid("orig"), Some(4), sid("forked"), None, None)
        .await
        .expect("fork");

    let document = store.export(&sid("forked")).await.expect("export");
    assert_eq!(document.format, DOCUMENT_FORMAT);
    assert_eq!(document.version, DOCUMENT_VERSION);
    let text = document.to_json_pretty();
    let read = SessionDocument::from_json(&text).expect("own export reads back");
    assert_eq!(read, document);

    let imported = store
        .import(read, sid("copy"), Some(me()))
        .await
        .expect("import");
    assert_eq!(imported.id, sid("copy"));
    assert_eq!(imported.title, fork.title);
    assert_eq!(imported.created_at, fork.created_at);
    assert_eq!(imported.model, fork.model);
    assert_eq!(imported.workspace, fork.workspace);
    assert_eq!(imported.parent, fork.parent);
    assert_eq!(
        (imported.last_seq, imported.event_count, imported.turns),
        (4, 4, 1)
    );
    assert_eq!(imported.owner, Some(me()));
    assert_eq!(get(&store, "copy").await.as_ref(), Some(&imported));

    let original = load_all(&store, "forked").await.expect("load");
    let copied = load_all(&store, "copy").await.expect("load");
    assert_eq!(seqs(&copied), seqs(&original));
    for (a, b) in original.iter().zip(&copied) {
        assert_eq!(b.session_id, sid("copy"));
        assert_eq!(
            (&a.message, a.seq, a.turn_id, a.at),
            (&b.message, b.seq, b.turn_id, b.at)
        );
    }

    // Exporting the copy gives the same document apart from the id.
    let again = store.export(&sid("copy")).await.expect("export");
    assert_eq!(again.session.id, sid("copy"));
    assert_eq!(
        DocumentSession {
            id: sid("forked"),
            ..again.session.clone()
        },
        document.session
    );
}

async fn import_refuses_an_invalid_document_and_stores_nothing(backend: Backend) {
    let store = backend.open().await;
    create(&store, "orig").await;
    append(&store, "orig", turn("orig", 1, "q"))
        .await
        .expect("append");
    let mut document = store.export(&sid("orig")).await.expect("export");
    document.events.swap(1, 2);
    let e = store
        .import(document, sid("copy"), None)
        .await
        .expect_err("refused");
    assert!(
        matches!(e, StoreError::Document(DocumentError::SeqDisorder { .. })),
        "{e:?}"
    );
    assert_eq!(get(&store, "copy").await, None);
}

// ---------------------------------------------------------------- ids, listing

async fn resolve_id_takes_an_exact_id_or_a_unique_prefix(backend: Backend) {
    let store = backend.open().await;
    for id in ["0193a-1", "0193a-2", "0193b-1", "x1", "x10"] {
        create(&store, id).await;
    }
    let resolve = |prefix: &'static str| store.resolve(prefix);
    assert_eq!(resolve("0193a-2").await.expect("exact"), sid("0193a-2"));
    assert_eq!(
        resolve("0193b").await.expect("unique prefix"),
        sid("0193b-1")
    );
    // An exact id wins over the longer ids it is a prefix of.
    assert_eq!(resolve("x1").await.expect("exact"), sid("x1"));

    let e = resolve("0193").await.expect_err("ambiguous");
    match &e {
        StoreError::Ambiguous { prefix, candidates } => {
            assert_eq!(prefix, "0193");
            assert_eq!(candidates, &["0193a-1", "0193a-2", "0193b-1"]);
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    assert!(e.to_string().contains("0193a-1, 0193a-2, 0193b-1"), "{e}");

    for missing in ["zzz", "0193c", ""] {
        let e = resolve(missing).await.expect_err("none");
        assert!(matches!(e, StoreError::NotFound { .. }), "{missing}: {e:?}");
    }
}

/// A database with a linguistic collation (the Postgres test databases
/// use ICU's `en-US`) sorts `Ab` between `ab` and `ac`: ids must still be
/// compared byte by byte, or the ids starting with `a` are not together.
async fn ids_are_compared_byte_by_byte_whatever_the_databases_collation(backend: Backend) {
    let store = backend.open().await;
    for id in ["ab", "Ab", "ac", "a-1", "b"] {
        create(&store, id).await;
    }
    let e = store.resolve("a").await.expect_err("ambiguous");
    match &e {
        StoreError::Ambiguous { candidates, .. } => {
            assert_eq!(candidates, &["a-1", "ab", "ac"]);
        }
        other => panic!("expected Ambiguous, got {other:?}"),
    }
    assert_eq!(store.resolve("A").await.expect("unique"), sid("Ab"));
    assert_eq!(store.resolve("ac").await.expect("exact"), sid("ac"));
}

async fn list_orders_sessions_by_their_last_update(backend: Backend) {
    let store = backend.open().await;
    for id in ["a", "b", "c"] {
        create(&store, id).await;
    }
    append(&store, "a", turn("a", 1, "q"))
        .await
        .expect("append");
    let ids = |records: Vec<SessionRecord>| -> Vec<String> {
        records.into_iter().map(|r| r.id.0).collect()
    };
    let all = store.list(ListPage::default()).await.expect("list");
    assert!(all.windows(2).all(|w| w[0].updated_at >= w[1].updated_at));
    assert_eq!(ids(all), ["a", "c", "b"]);
    let two = store
        .list(ListPage {
            limit: Some(2),
            ..ListPage::default()
        })
        .await
        .expect("list");
    assert_eq!(ids(two), ["a", "c"]);
}

async fn pages_of_the_list_follow_each_other_when_sessions_are_updated_meanwhile(backend: Backend) {
    let store = backend.open().await;
    for id in ["a", "b", "c", "d", "e"] {
        create(&store, id).await;
    }
    let ids = |records: &[SessionRecord]| -> Vec<String> {
        records.iter().map(|r| r.id.0.clone()).collect()
    };
    let all = ids(&store.list(ListPage::default()).await.expect("list"));
    let page = |after| ListPage {
        limit: Some(2),
        after,
        visible_to: None,
    };
    let first = store.list(page(None)).await.expect("page 1");
    assert_eq!(ids(&first), all[..2]);
    // A session of page 1 is updated: it moves to the top; the pages after
    // page 1 stay as they were.
    let moved = first[0].id.0.clone();
    append(&store, &moved, turn(&moved, 1, "q"))
        .await
        .expect("append");
    let cursor = first.last().map(ListCursor::after).expect("a cursor");
    let second = store
        .list(page(Some(cursor.clone())))
        .await
        .expect("page 2");
    assert_eq!(ids(&second), all[2..4]);
    let third = store
        .list(page(second.last().map(ListCursor::after)))
        .await
        .expect("page 3");
    assert_eq!(ids(&third), all[4..]);
    // Written out and read back, a cursor is the same place.
    assert_eq!(cursor.to_string().parse::<ListCursor>(), Ok(cursor));
    for bad in ["", "12", "x.a", "12."] {
        assert!(bad.parse::<ListCursor>().is_err(), "{bad}");
    }
}

// ---------------------------------------------------------------- inputs, reservations, two stores

async fn accepted_inputs_wait_until_a_commit_no_longer_lists_them(backend: Backend) {
    let store = backend.open().await;
    create(&store, "a").await;
    create(&store, "b").await;
    let query = |text: &str| crate::protocol::UserInput::Query {
        text: text.into(),
        images: Vec::new(),
        by: None,
    };
    for (n, text) in [(1, "first"), (2, "second"), (3, "/usage")] {
        let input = AcceptedInput {
            input_id: n,
            input: query(text),
        };
        store
            .accept_input(&sid("a"), input)
            .await
            .expect("accepted");
    }
    let waiting = store.waiting_inputs(&sid("a")).await.expect("waiting");
    let ids: Vec<_> = waiting.iter().map(|w| w.input_id).collect();
    assert_eq!(ids, [1, 2, 3]);
    assert_eq!(waiting[1].input, query("second"));
    assert_eq!(
        store.sessions_with_waiting_inputs().await.expect("list"),
        [sid("a")]
    );

    // Input 1 starts: its first event and its leaving the list are one commit.
    let commit = Commit {
        events: vec![user("a", 1, "first")],
        reserve_seq: None,
        waiting: Some(vec![2, 3]),
        busy: None,
    };
    store.commit(&sid("a"), commit).await.expect("commit");
    let ids: Vec<_> = store
        .waiting_inputs(&sid("a"))
        .await
        .expect("waiting")
        .iter()
        .map(|w| w.input_id)
        .collect();
    assert_eq!(ids, [2, 3]);

    // A commit that leaves the list alone keeps it.
    let commit = Commit {
        events: vec![result("a", 2)],
        ..Commit::default()
    };
    store.commit(&sid("a"), commit).await.expect("commit");
    assert_eq!(store.waiting_inputs(&sid("a")).await.expect("w").len(), 2);

    // Nothing waits any more: no session is listed.
    let commit = Commit {
        waiting: Some(Vec::new()),
        ..Commit::default()
    };
    store.commit(&sid("a"), commit).await.expect("commit");
    assert!(store.waiting_inputs(&sid("a")).await.expect("w").is_empty());
    assert!(
        store
            .sessions_with_waiting_inputs()
            .await
            .expect("list")
            .is_empty()
    );

    // An input of an unknown session is refused, and deleting a session
    // forgets its inputs.
    let input = AcceptedInput {
        input_id: 1,
        input: query("x"),
    };
    let e = store
        .accept_input(&sid("nope"), input.clone())
        .await
        .expect_err("unknown session");
    assert!(matches!(e, StoreError::NotFound { .. }), "{e:?}");
    store
        .accept_input(&sid("b"), input)
        .await
        .expect("accepted");
    store.delete(&sid("b"), me()).await.expect("deleted");
    assert!(
        store
            .sessions_with_waiting_inputs()
            .await
            .expect("list")
            .is_empty()
    );
    stop(store).await;
    let rows = backend.count("SELECT count(*) FROM inputs").await;
    assert_eq!(rows, 0);
}

async fn a_seq_reservation_only_grows_and_a_reload_continues_above_it(backend: Backend) {
    let store = backend.open().await;
    create(&store, "a").await;
    let commit = Commit {
        events: vec![user("a", 1, "hi")],
        reserve_seq: Some(1025),
        waiting: None,
        busy: None,
    };
    store.commit(&sid("a"), commit).await.expect("commit");
    let record = get(&store, "a").await.expect("record");
    assert_eq!((record.last_seq, record.reserved_seq), (1, 1025));
    assert_eq!(record.resume_after(), 1025);
    // A lower reservation never lowers it (a late or repeated write).
    let commit = Commit {
        reserve_seq: Some(10),
        ..Commit::default()
    };
    store.commit(&sid("a"), commit).await.expect("commit");
    assert_eq!(get(&store, "a").await.expect("record").reserved_seq, 1025);
    // Events past the reservation are stored as usual, and win.
    store
        .commit(
            &sid("a"),
            Commit {
                events: vec![result("a", 2000)],
                ..Commit::default()
            },
        )
        .await
        .expect("commit");
    stop(store).await;
    let store = backend.open().await;
    let (record, _) = store.acquire(&sid("a"), me()).await.expect("acquire");
    assert_eq!(record.resume_after(), 2000);
    stop(store).await;
}

async fn two_stores_on_one_database_both_write_their_own_sessions(backend: Backend) {
    let first = backend.open().await;
    let second = backend.open().await;
    create(&first, "one").await;
    create(&second, "two").await;

    let writer = |store: Store, id: &'static str| async move {
        for turn_no in 0..50u64 {
            append(&store, id, turn(id, turn_no * 4 + 1, "q"))
                .await
                .expect("append under contention");
        }
        store
    };
    let (first, second) = tokio::join!(writer(first, "one"), writer(second, "two"));

    for store in [&first, &second] {
        for id in ["one", "two"] {
            let events = load_all(store, id).await.expect("load");
            assert_eq!(seqs(&events), (1..=200).collect::<Vec<_>>());
        }
    }
}

// ---------------------------------------------------------------- benchmark

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn append_throughput_report_sqlite() {
    append_throughput_report("SQLite", Backend::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn append_throughput_report_postgres() {
    if let Some(backend) = Backend::postgres().await {
        append_throughput_report("Postgres", backend).await;
    }
}

/// Appends one event per commit, as a session's steps do, then loads them.
async fn append_throughput_report(name: &str, backend: Backend) {
    const EVENTS: u64 = 10_000;
    let store = backend.open().await;
    create(&store, "bench").await;
    let events: Vec<Arc<EventEnvelope>> = (1..=EVENTS)
        .map(|seq| match seq % 4 {
            1 => user("bench", seq, "a question of moderate length"),
            2 => assistant("bench", seq, "an answer with a tool call"),
            3 => tool_result("bench", seq),
            _ => result("bench", seq),
        })
        .collect();

    let started = Instant::now();
    for event in &events {
        append(&store, "bench", vec![event.clone()])
            .await
            .expect("append");
    }
    let elapsed = started.elapsed();
    println!(
        "{name}: appended {EVENTS} events one per commit in {elapsed:.2?}: {:.0} commits/s",
        EVENTS as f64 / elapsed.as_secs_f64()
    );

    let started = Instant::now();
    let loaded = load_all(&store, "bench").await.expect("load");
    println!(
        "{name}: loaded {} events in {:.2?}",
        loaded.len(),
        started.elapsed()
    );
    assert_eq!(loaded, unwrapped(&events));
}
