//! Checkpoints and rewind end to end, with the real binary, the scripted
//! model and real files: a turn that writes, edits, runs `sed -i`, creates
//! and deletes files and writes a binary one; each `run` a new process (a
//! restart between the change and the rewind); `/rewind` lists the turn
//! with what it changed, `/rewind SEQ` puts every file back byte for byte,
//! leaves a file someone else changed since as a conflict (until
//! `--force`), and the conversation continues in a fork from before the
//! turn. Also: `/undo`, two sessions on one workspace, symlinks (never
//! followed out), and the same on Postgres.

use crate::support::*;
use agentbus_testkit::Script;
use agentbus_testkit::postgres::fresh_database;
use serde_json::Value;
use std::path::Path;

/// The turn of the issue: three edits and a `sed -i`, a created, a
/// deleted and a binary file; then an answer in the fork.
const TRANSCRIPT: &str = r#"
[[response]]
tool_calls = [
  { id = "w1", name = "write_file", arguments = { path = "a.txt", content = "alpha TWO\n" } },
  { id = "e1", name = "edit_file", arguments = { path = "b.txt", old_string = "beta one", new_string = "beta TWO" } },
  { id = "e2", name = "edit_file", arguments = { path = "src/c.txt", old_string = "gamma one", new_string = "gamma TWO" } },
]
[[response]]
tool_calls = [
  { id = "s1", name = "bash", arguments = { command = "sed -i 's/delta one/delta TWO/' d.txt" } },
]
[[response]]
tool_calls = [
  { id = "s2", name = "bash", arguments = { command = "printf 'made\\n' > created.txt && rm gone.txt && printf '\\000\\001\\377' > blob.bin" } },
]
[[response]]
text = "All changed."
[[response]]
text = "Continuing from before the changes."
"#;

/// The workspace before the turn: `(path, bytes)`.
fn original() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("a.txt", b"alpha one\n".to_vec()),
        ("b.txt", b"beta one\nsecond line\n".to_vec()),
        ("src/c.txt", b"gamma one\n".to_vec()),
        ("d.txt", b"delta one\nkeep\n".to_vec()),
        ("gone.txt", b"to be deleted\n".to_vec()),
        ("blob.bin", vec![0x89, b'P', b'N', b'G', 0, 1, 2, 3]),
    ]
}

fn lay_out(workspace: &Path) {
    for (path, bytes) in original() {
        let path = workspace.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

fn system<'a>(events: &'a [Value], subtype: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "system" && e["subtype"] == subtype)
        .unwrap_or_else(|| panic!("no `{subtype}` event in {events:#?}"))
}

/// `run --json` with `args`, which must succeed; its events.
async fn run_ok(fx: &Fixture, args: &[&str]) -> Vec<Value> {
    run_in_store(fx, None, args).await
}

/// `run --json` with `args` on `store` (`None`: the SQLite default).
async fn run_in_store(fx: &Fixture, store: Option<&str>, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["run", "--json"];
    if let Some(store) = store {
        all.extend(["--store", store]);
    }
    all.extend_from_slice(args);
    let out = fx.run(&all).await;
    assert_eq!(out.code(), Some(0), "{all:?}\nstderr: {}", out.stderr);
    out.events()
}

/// The transcript on `store` (`None`: the SQLite default).
async fn rewind_after_edits_and_sed(store: Option<&str>) {
    let fx = Fixture::with_script(Script::from_toml_str(TRANSCRIPT).unwrap()).await;
    let ws = fx.workspace().to_path_buf();
    lay_out(&ws);
    let events = run_in_store(&fx, store, &["change everything"]).await;
    let id = session_id(&events);

    // Each call that changed files names its checkpoint and the files.
    let results = of_type(&events, "tool_result");
    assert_eq!(results.len(), 5, "{results:#?}");
    let write = &results[0]["checkpoint"];
    assert!(
        write["id"].as_str().is_some_and(|s| !s.is_empty()),
        "{write}"
    );
    assert_eq!(write["files"][0]["path"], "a.txt");
    assert_eq!(write["files"][0]["change"], "modified");
    assert!(write["session_bytes"].as_u64().unwrap() > 0, "{write}");
    let sed = &results[3]["checkpoint"];
    assert_eq!(sed["files"][0]["path"], "d.txt", "{sed}");
    assert_eq!(
        (
            sed["files"][0]["added"].clone(),
            sed["files"][0]["removed"].clone()
        ),
        (1.into(), 1.into())
    );
    let shell = &results[4]["checkpoint"]["files"];
    let changes: Vec<(String, String)> = shell
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["change"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            ("blob.bin".to_string(), "modified".to_string()),
            ("created.txt".to_string(), "created".to_string()),
            ("gone.txt".to_string(), "deleted".to_string()),
        ]
    );
    assert_eq!(
        std::fs::read(ws.join("d.txt")).unwrap(),
        b"delta TWO\nkeep\n"
    );

    // Someone else changes b.txt meanwhile.
    std::fs::write(ws.join("b.txt"), b"beta by the user\n").unwrap();

    // A new process: the list names the turn and what it changed.
    let events = run_in_store(&fx, store, &["--session", &id, "/rewind"]).await;
    let list = system(&events, "rewinds");
    let turn = &list["data"]["turns"][0];
    let seq = turn["seq"].as_u64().unwrap();
    assert_eq!(turn["prompt"], "change everything");
    let paths: Vec<&str> = turn["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "a.txt",
            "b.txt",
            "blob.bin",
            "created.txt",
            "d.txt",
            "gone.txt",
            "src/c.txt"
        ]
    );
    let message = list["message"].as_str().unwrap();
    assert!(message.contains("+1 -1 d.txt"), "{message}");

    // Rewind code and conversation.
    let target = format!("/rewind {seq}");
    let events = run_in_store(&fx, store, &["--session", &id, &target]).await;
    let rewound = system(&events, "rewound");
    for (path, bytes) in original() {
        if path == "b.txt" {
            continue;
        }
        assert_eq!(std::fs::read(ws.join(path)).unwrap(), bytes, "{path}");
    }
    assert!(!ws.join("created.txt").exists());
    // The conflict: reported with its diff, not overwritten.
    assert_eq!(
        std::fs::read(ws.join("b.txt")).unwrap(),
        b"beta by the user\n"
    );
    let conflict = rewound["data"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "b.txt")
        .unwrap();
    assert_eq!(conflict["action"], "conflict");
    assert!(
        conflict["diff"]
            .as_str()
            .unwrap()
            .contains("+beta by the user"),
        "{conflict}"
    );
    let text = rewound["message"].as_str().unwrap();
    assert!(text.contains("conflict: b.txt"), "{text}");
    assert!(text.contains("commands ran"), "{text}");
    // The conversation continues in a fork made before the turn.
    let fork = rewound["data"]["switch_to"].as_str().unwrap().to_string();
    assert_ne!(fork, id);
    let events = run_in_store(&fx, store, &["--session", &fork, "go on"]).await;
    assert_eq!(
        the_result(&events)["text"],
        "Continuing from before the changes."
    );
    let last = fx.request_messages().pop().unwrap();
    let texts = serde_json::to_string(&last).unwrap();
    assert!(!texts.contains("change everything"), "{texts}");
    assert!(texts.contains("go on"), "{texts}");

    // Overwriting the conflict when told to.
    let forced = format!("/rewind {seq} code --force");
    let events = run_in_store(&fx, store, &["--session", &id, &forced]).await;
    let rewound = system(&events, "rewound");
    assert_eq!(rewound["data"]["overwrote"], true, "{rewound}");
    assert!(rewound["data"]["switch_to"].is_null());
    assert_eq!(
        std::fs::read(ws.join("b.txt")).unwrap(),
        b"beta one\nsecond line\n"
    );
}

#[tokio::test]
async fn rewind_puts_the_files_back_and_forks_the_conversation() {
    rewind_after_edits_and_sed(None).await;
}

#[tokio::test]
async fn rewind_works_the_same_on_postgres() {
    let Some(database) = fresh_database().await else {
        return;
    };
    rewind_after_edits_and_sed(Some(&database.url())).await;
}

#[tokio::test]
async fn undo_takes_back_only_this_sessions_last_turn() {
    let script = Script::from_toml_str(
        r#"
[[response]]
tool_calls = [ { id = "a1", name = "write_file", arguments = { path = "mine.txt", content = "first\n" } } ]
[[response]]
text = "one"
[[response]]
tool_calls = [ { id = "a2", name = "write_file", arguments = { path = "mine.txt", content = "second\n" } } ]
[[response]]
text = "two"
[[response]]
tool_calls = [ { id = "b1", name = "bash", arguments = { command = "printf 'theirs\\n' > theirs.txt" } } ]
[[response]]
text = "other session"
"#,
    )
    .unwrap();
    let fx = Fixture::with_script(script).await;
    let ws = fx.workspace().to_path_buf();
    let events = run_ok(&fx, &["write first"]).await;
    let mine = session_id(&events);
    run_ok(&fx, &["--session", &mine, "write second"]).await;
    // Another session on the same workspace creates its own file.
    let events = run_ok(&fx, &["make theirs"]).await;
    let theirs = session_id(&events);
    assert_ne!(mine, theirs);
    assert_eq!(std::fs::read(ws.join("theirs.txt")).unwrap(), b"theirs\n");

    let events = run_ok(&fx, &["--session", &mine, "/debug"]).await;
    let debug = system(&events, "debug")["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        debug.contains("checkpoints   2 tool calls kept (2 files changed"),
        "{debug}"
    );

    // /undo: the last turn of this session, only its files.
    let events = run_ok(&fx, &["--session", &mine, "/undo"]).await;
    let rewound = system(&events, "rewound");
    assert_eq!(rewound["data"]["mode"], "code");
    assert_eq!(std::fs::read(ws.join("mine.txt")).unwrap(), b"first\n");
    assert_eq!(std::fs::read(ws.join("theirs.txt")).unwrap(), b"theirs\n");
    // Again: the turn before (the file did not exist then).
    run_ok(&fx, &["--session", &mine, "/undo"]).await;
    assert!(!ws.join("mine.txt").exists());
    let out = fx
        .run(&["run", "--json", "--session", &mine, "/undo"])
        .await;
    let events = out.events();
    let notice = system(&events, "notice");
    assert!(
        notice["message"]
            .as_str()
            .unwrap()
            .contains("nothing to undo"),
        "{notice}"
    );
    assert_eq!(std::fs::read(ws.join("theirs.txt")).unwrap(), b"theirs\n");
    // The list shows the undone turns as undone.
    let events = run_ok(&fx, &["--session", &mine, "/rewind"]).await;
    let turns = &system(&events, "rewinds")["data"]["turns"];
    assert_eq!(turns[0]["undone"], true, "{turns}");
    assert_eq!(turns[1]["undone"], true, "{turns}");
}

#[tokio::test]
async fn symlinks_are_kept_as_links_and_never_followed_out() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("victim.txt"), b"outside, untouched\n").unwrap();
    let script = r#"
[[response]]
tool_calls = [ { id = "l1", name = "bash", arguments = { command = "rm cfg && ln -s other.txt cfg && printf 'through the link\\n' > out/new.txt" } } ]
[[response]]
text = "relinked"
"#;
    let fx = Fixture::with_script(Script::from_toml_str(script).unwrap()).await;
    let ws = fx.workspace().to_path_buf();
    std::fs::write(ws.join("real.txt"), b"real\n").unwrap();
    std::fs::write(ws.join("other.txt"), b"other\n").unwrap();
    std::os::unix::fs::symlink("real.txt", ws.join("cfg")).unwrap();
    std::os::unix::fs::symlink(outside.path(), ws.join("out")).unwrap();
    let events = run_ok(&fx, &["relink"]).await;
    let id = session_id(&events);
    let files = &of_type(&events, "tool_result")[0]["checkpoint"]["files"];
    // The link changed; nothing outside the workspace was recorded.
    assert_eq!(files.as_array().unwrap().len(), 1, "{files}");
    assert_eq!(files[0]["path"], "cfg");
    assert!(outside.path().join("new.txt").exists());

    let events = run_ok(&fx, &["--session", &id, "/undo"]).await;
    system(&events, "rewound");
    assert_eq!(
        std::fs::read_link(ws.join("cfg")).unwrap(),
        Path::new("real.txt")
    );
    assert_eq!(std::fs::read(ws.join("other.txt")).unwrap(), b"other\n");
    // Outside the workspace: neither written nor removed.
    assert!(outside.path().join("new.txt").exists());
    assert_eq!(
        std::fs::read(outside.path().join("victim.txt")).unwrap(),
        b"outside, untouched\n"
    );
}

#[tokio::test]
async fn a_background_commands_changes_are_kept_when_its_turn_ends() {
    let script = Script::from_toml_str(
        r#"
[[response]]
tool_calls = [ { id = "g1", name = "bash", arguments = { command = "printf 'from the background\n' > bg.txt && echo written", run_in_background = true } } ]
[[response]]
tool_calls = [ { id = "g2", name = "bash_output", arguments = { id = "bash_1", wait_secs = 30 } } ]
[[response]]
text = "the background command wrote its file"
"#,
    )
    .unwrap();
    let fx = Fixture::with_script(script).await;
    let ws = fx.workspace().to_path_buf();
    let events = run_ok(&fx, &["start it in the background"]).await;
    let id = session_id(&events);
    let output = of_type(&events, "tool_result")[1]["output"].to_string();
    assert!(output.contains("written"), "{output}");
    assert!(ws.join("bg.txt").exists());

    let events = run_ok(&fx, &["--session", &id, "/rewind"]).await;
    let turns = &system(&events, "rewinds")["data"]["turns"];
    assert_eq!(turns[0]["files"][0]["path"], "bg.txt", "{turns}");
    assert_eq!(turns[0]["files"][0]["change"], "created", "{turns}");
    run_ok(&fx, &["--session", &id, "/undo"]).await;
    assert!(!ws.join("bg.txt").exists());
}

#[tokio::test]
async fn a_writing_mcp_tools_changes_are_kept_and_taken_back() {
    // The npm filesystem server marks `write_file` as writing
    // (`readOnlyHint: false`) and `read_text_file` as read-only; it runs in
    // the workspace, where a relative path resolves.
    let script = Script::from_toml_str(
        r#"
[[response]]
tool_calls = [ { id = "m1", name = "mcp__files__write_file", arguments = { path = "notes.txt", content = "written by MCP\n" } } ]
[[response]]
tool_calls = [ { id = "m2", name = "mcp__files__read_text_file", arguments = { path = "notes.txt" } } ]
[[response]]
text = "written"
"#,
    )
    .unwrap();
    let fx = Fixture::with_script(script).await;
    let ws = fx.workspace().canonicalize().unwrap();
    std::fs::write(ws.join("notes.txt"), b"mine\n").unwrap();
    fx.add_config(&format!(
        "[mcp_servers.files]\ncommand = \"{}\"\nargs = [\"{}\"]\n",
        npm_mcp_bin().join("mcp-server-filesystem").display(),
        ws.display()
    ));
    let events = run_ok(&fx, &["write my notes over MCP"]).await;
    let id = session_id(&events);
    let results = of_type(&events, "tool_result");
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    assert_eq!(results[0]["checkpoint"]["files"][0]["path"], "notes.txt");
    assert!(
        results[1]["checkpoint"].is_null(),
        "read-only: {}",
        results[1]
    );
    assert_eq!(
        std::fs::read(ws.join("notes.txt")).unwrap(),
        b"written by MCP\n"
    );
    run_ok(&fx, &["--session", &id, "/undo"]).await;
    assert_eq!(std::fs::read(ws.join("notes.txt")).unwrap(), b"mine\n");
}

#[tokio::test]
async fn a_sub_agents_changes_belong_to_its_parents_turn() {
    let script = Script::from_toml_str(
        r##"
[[response]]
match = "delegate"
tool_calls = [ { id = "t1", name = "task", arguments = { description = "write it", prompt = "child: write the report", agent = "build" } } ]
[[response]]
match = "child"
tool_calls = [ { id = "cw", name = "write_file", arguments = { path = "report.md", content = "# by the child\n" } } ]
[[response]]
match = "child"
text = "report written"
[[response]]
match = "delegate"
text = "the child wrote it"
"##,
    )
    .unwrap();
    let fx = Fixture::with_script(script).await;
    let ws = fx.workspace().to_path_buf();
    let events = run_ok(&fx, &["delegate the report"]).await;
    let parent = session_id(&events);
    assert!(ws.join("report.md").exists());
    let events = run_ok(&fx, &["--session", &parent, "/rewind"]).await;
    let turns = &system(&events, "rewinds")["data"]["turns"];
    assert_eq!(turns[0]["prompt"], "delegate the report");
    assert_eq!(turns[0]["files"][0]["path"], "report.md", "{turns}");
    run_ok(&fx, &["--session", &parent, "/undo"]).await;
    assert!(!ws.join("report.md").exists());
}
