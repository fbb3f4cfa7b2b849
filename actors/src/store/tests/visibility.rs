//! Who made a session and who may follow it, through the trait, on every
//! backend: `created_by` kept through create, get, list, acquire and fork
//! (a fork is its forker's, an import nobody's), viewers replaced as a set,
//! and the list of one token's sessions — those it created and those it
//! follows, paged like the whole list.

use super::kit::*;
use crate::store::{ListCursor, ListPage, NewSession, SessionRecord, StoreError};

on_every_backend! {
    the_creator_is_kept_through_create_get_list_and_acquire,
    a_fork_belongs_to_whoever_forked_it_without_the_parents_viewers,
    an_import_belongs_to_no_token,
    set_viewers_replaces_the_set_sorted_each_name_once,
    viewers_of_an_unknown_session_are_not_found_and_go_with_a_deleted_one,
    a_token_lists_the_sessions_it_created_and_those_it_follows,
    pages_of_one_tokens_list_follow_each_other_and_hold_only_its_sessions,
}

fn made_by(id: &str, token: Option<&str>) -> NewSession {
    NewSession {
        created_by: token.map(str::to_string),
        ..new_session(id)
    }
}

async fn create_by(store: &Store, id: &str, token: Option<&str>) -> SessionRecord {
    store
        .create(made_by(id, token), me())
        .await
        .expect("session created")
}

fn names(names: &[&str]) -> Vec<String> {
    names.iter().map(|name| name.to_string()).collect()
}

fn ids(records: &[SessionRecord]) -> Vec<String> {
    records.iter().map(|r| r.id.0.clone()).collect()
}

async fn visible_to(store: &Store, token: &str) -> Vec<String> {
    let page = ListPage {
        visible_to: Some(token.to_string()),
        ..ListPage::default()
    };
    ids(&store.list(page).await.expect("list"))
}

async fn the_creator_is_kept_through_create_get_list_and_acquire(backend: Backend) {
    let store = backend.open().await;
    let created = create_by(&store, "mine", Some("alice")).await;
    assert_eq!(created.created_by.as_deref(), Some("alice"));
    assert!(created.viewers.is_empty());
    let cli = create_by(&store, "cli", None).await;
    assert_eq!(cli.created_by, None);

    assert_eq!(get(&store, "mine").await.as_ref(), Some(&created));
    let all = store.list(ListPage::default()).await.expect("list");
    let listed = all.iter().find(|r| r.id == sid("mine")).expect("listed");
    assert_eq!(listed.created_by.as_deref(), Some("alice"));
    let (acquired, _) = store.acquire(&sid("mine"), me()).await.expect("acquire");
    assert_eq!(acquired.created_by.as_deref(), Some("alice"));

    // Still there once the session has a log and is read again.
    append(&store, "mine", turn("mine", 1, "q"))
        .await
        .expect("append");
    stop(store).await;
    let store = backend.open().await;
    let record = get(&store, "mine").await.expect("kept");
    assert_eq!(record.created_by.as_deref(), Some("alice"));
    assert_eq!(get(&store, "cli").await.expect("kept").created_by, None);
}

async fn a_fork_belongs_to_whoever_forked_it_without_the_parents_viewers(backend: Backend) {
    let store = backend.open().await;
    create_by(&store, "parent", Some("alice")).await;
    append(&store, "parent", turn("parent", 1, "q"))
        .await
        .expect("append");
    store
        .set_viewers(&sid("parent"), &names(&["bob"]))
        .await
        .expect("viewers");

    let by_bob = store
        .fork(&sid("parent"), None, sid("bobs"), None, Some("bob".into()))
        .await
        .expect("fork");
    assert_eq!(by_bob.created_by.as_deref(), Some("bob"));
    assert!(by_bob.viewers.is_empty(), "{:?}", by_bob.viewers);
    assert_eq!(get(&store, "bobs").await.as_ref(), Some(&by_bob));

    let by_nobody = store
        .fork(&sid("parent"), Some(2), sid("cli"), None, None)
        .await
        .expect("fork");
    assert_eq!(by_nobody.created_by, None);
    assert_eq!(get(&store, "cli").await.and_then(|r| r.created_by), None);

    let parent = get(&store, "parent").await.expect("parent");
    assert_eq!(
        (parent.created_by.as_deref(), parent.viewers),
        (Some("alice"), names(&["bob"])),
        "the parent is untouched"
    );
}

async fn an_import_belongs_to_no_token(backend: Backend) {
    let store = backend.open().await;
    create_by(&store, "orig", Some("alice")).await;
    append(&store, "orig", turn("orig", 1, "q"))
        .await
        .expect("append");
    store
        .set_viewers(&sid("orig"), &names(&["bob"]))
        .await
        .expect("viewers");
    let document = store.export(&sid("orig")).await.expect("export");
    let imported = store
        .import(document, sid("copy"), None)
        .await
        .expect("import");
    assert_eq!((imported.created_by, imported.viewers), (None, vec![]));
    let copy = get(&store, "copy").await.expect("stored");
    assert_eq!((copy.created_by, copy.viewers), (None, vec![]));
}

async fn set_viewers_replaces_the_set_sorted_each_name_once(backend: Backend) {
    let store = backend.open().await;
    create_by(&store, "s1", Some("alice")).await;
    create_by(&store, "s2", Some("alice")).await;
    let viewers_of = |id: &'static str| {
        let store = store.clone();
        async move { get(&store, id).await.expect("session").viewers }
    };

    store
        .set_viewers(&sid("s1"), &names(&["carol", "bob", "carol"]))
        .await
        .expect("set");
    assert_eq!(viewers_of("s1").await, names(&["bob", "carol"]));
    assert!(viewers_of("s2").await.is_empty(), "only the session named");

    store
        .set_viewers(&sid("s1"), &names(&["dave"]))
        .await
        .expect("replace");
    assert_eq!(viewers_of("s1").await, names(&["dave"]));
    let listed = store.list(ListPage::default()).await.expect("list");
    let s1 = listed.iter().find(|r| r.id == sid("s1")).expect("listed");
    assert_eq!(s1.viewers, names(&["dave"]), "the list reads them too");

    store.set_viewers(&sid("s1"), &[]).await.expect("clear");
    assert!(viewers_of("s1").await.is_empty());
    assert_eq!(
        get(&store, "s1")
            .await
            .and_then(|r| r.created_by)
            .as_deref(),
        Some("alice"),
        "the creator is not a viewer and stays"
    );
}

async fn viewers_of_an_unknown_session_are_not_found_and_go_with_a_deleted_one(backend: Backend) {
    let store = backend.open().await;
    let e = store
        .set_viewers(&sid("nope"), &names(&["bob"]))
        .await
        .expect_err("no session");
    assert!(
        matches!(&e, StoreError::NotFound { id } if id == "nope"),
        "{e:?}"
    );
    assert_eq!(
        backend.count("SELECT count(*) FROM session_viewers").await,
        0,
        "nothing stored"
    );

    create_by(&store, "s1", Some("alice")).await;
    store
        .set_viewers(&sid("s1"), &names(&["bob", "carol"]))
        .await
        .expect("set");
    assert_eq!(
        backend.count("SELECT count(*) FROM session_viewers").await,
        2
    );
    store.delete(&sid("s1"), me()).await.expect("delete");
    assert_eq!(
        backend.count("SELECT count(*) FROM session_viewers").await,
        0
    );
    assert!(visible_to(&store, "bob").await.is_empty());
}

async fn a_token_lists_the_sessions_it_created_and_those_it_follows(backend: Backend) {
    let store = backend.open().await;
    create_by(&store, "a1", Some("alice")).await;
    create_by(&store, "b1", Some("bob")).await;
    create_by(&store, "a2", Some("alice")).await;
    create_by(&store, "b2", Some("bob")).await;
    create_by(&store, "cli", None).await;
    // Bob shows alice b1; alice also follows her own a2 (listed once).
    store
        .set_viewers(&sid("b1"), &names(&["alice", "carol"]))
        .await
        .expect("viewers");
    store
        .set_viewers(&sid("a2"), &names(&["alice"]))
        .await
        .expect("viewers");
    append(&store, "a1", turn("a1", 1, "q"))
        .await
        .expect("append");

    let all = ids(&store.list(ListPage::default()).await.expect("list"));
    assert_eq!(all.len(), 5, "no token: every session");
    let in_order = |wanted: &[&str]| -> Vec<String> {
        all.iter()
            .filter(|id| wanted.contains(&id.as_str()))
            .cloned()
            .collect()
    };
    assert_eq!(
        visible_to(&store, "alice").await,
        in_order(&["a1", "a2", "b1"])
    );
    assert_eq!(visible_to(&store, "bob").await, in_order(&["b1", "b2"]));
    assert_eq!(visible_to(&store, "carol").await, in_order(&["b1"]));
    assert!(visible_to(&store, "dave").await.is_empty(), "neither");
    // The most recently updated first, as the whole list.
    assert_eq!(visible_to(&store, "alice").await[0], "a1");

    // Taking a viewer away hides the session from it.
    store
        .set_viewers(&sid("b1"), &names(&["carol"]))
        .await
        .expect("viewers");
    assert_eq!(visible_to(&store, "alice").await, in_order(&["a1", "a2"]));
}

async fn pages_of_one_tokens_list_follow_each_other_and_hold_only_its_sessions(backend: Backend) {
    let store = backend.open().await;
    // Alice's sessions among others', and two she follows.
    for i in 0..12 {
        let token = if i % 3 == 0 { "alice" } else { "bob" };
        create_by(&store, &format!("s{i:02}"), Some(token)).await;
    }
    for id in ["s04", "s08"] {
        store
            .set_viewers(&sid(id), &names(&["alice"]))
            .await
            .expect("viewers");
    }
    let expected = visible_to(&store, "alice").await;
    assert_eq!(expected.len(), 6, "{expected:?}");

    let page = |after| ListPage {
        limit: Some(4),
        after,
        visible_to: Some("alice".to_string()),
    };
    let first = store.list(page(None)).await.expect("page 1");
    assert_eq!(ids(&first), expected[..4]);
    // A session of hers on page 1 is updated: it moves to the top; the
    // next page goes on from where page 1 ended.
    let moved = first[0].id.0.clone();
    append(&store, &moved, turn(&moved, 1, "q"))
        .await
        .expect("append");
    let second = store
        .list(page(first.last().map(ListCursor::after)))
        .await
        .expect("page 2");
    assert_eq!(ids(&second), expected[4..]);
    let third = store
        .list(page(second.last().map(ListCursor::after)))
        .await
        .expect("page 3");
    assert!(third.is_empty(), "{:?}", ids(&third));
}
