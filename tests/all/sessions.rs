//! Sessions that last, end to end: stored, resumed, recovered after SIGKILL,
//! driven by two processes at once, forked, exported and imported.

use crate::support::*;
use serde_json::Value;

fn text_of(out: &Finished) -> String {
    out.stdout_text()
}

/// `sessions show` without its header (id, times): the messages.
async fn conversation(fx: &Fixture, id: &str) -> Vec<String> {
    let out = fx.run(&["sessions", "show", id]).await;
    out.stdout.iter().skip(4).cloned().collect()
}

#[tokio::test]
async fn a_second_run_with_the_same_session_sends_the_first_turns_messages() {
    let fx = Fixture::new("two_turns").await;
    let first = fx.run(&["run", "--json", "My name is Ada."]).await;
    assert_eq!(first.code(), Some(0), "{}", first.stderr);
    let id = session_id(&first.events());

    let prefix = &id[..18]; // what `sessions list` shows
    let second = fx
        .run(&["run", "--session", prefix, "What is my name?"])
        .await;
    assert_eq!(second.code(), Some(0), "{}", second.stderr);
    assert_eq!(
        second.stdout,
        ["Your name is in my history: What is my name?"]
    );
    let request = &fx.request_messages()[1];
    assert_eq!(roles(request), ["system", "user", "assistant", "user"]);
    assert_eq!(request[1]["content"], "My name is Ada.");
    assert_eq!(request[2]["content"], "Nice to meet you, Ada.");
    fx.assert_requests_valid();
}

#[tokio::test]
async fn continue_takes_the_latest_session_of_the_workspace() {
    let fx = Fixture::new("two_turns").await;
    let first = fx.run(&["run", "--json", "My name is Ada."]).await;
    let id = session_id(&first.events());
    let second = fx.run(&["run", "--json", "--continue", "And now?"]).await;
    assert_eq!(second.code(), Some(0), "{}", second.stderr);
    assert_eq!(session_id(&second.events()), id);
    let started = &second.events()[0];
    assert_eq!(started["data"]["resumed"], true);
    assert_eq!(started["data"]["messages"], 2);
}

#[tokio::test]
async fn sigkill_during_a_tool_call_then_resume_continues_with_a_valid_history() {
    let fx = Fixture::new("killed_in_tool").await;
    let mut agent = fx.spawn(&["run", "--json", "Run the long job"]);
    let started = agent.wait_for_event(|e| e["type"] == "assistant").await;
    let id = started["session_id"].as_str().unwrap().to_string();
    agent.kill9();
    let killed = agent.finish().await;
    assert_eq!(killed.code(), None, "killed by a signal");
    kill_processes_with_cmdline("agentbus-test-killed-in-tool"); // the orphaned tool, if it started

    let resumed = fx
        .run(&["run", "--json", "--session", &id, "Did it finish?"])
        .await;
    assert_eq!(resumed.code(), Some(0), "{}", resumed.stderr);
    let events = resumed.events();
    // The load closed the dead turn first, then the new turn ran.
    let closing = of_type(&events, "tool_result")[0];
    assert_eq!(closing["call_id"], "long1");
    assert_eq!(closing["cancelled"], true);
    let results = of_type(&events, "result");
    assert_eq!(results[0]["stop_reason"], "error");
    assert!(
        results[0]["error"]
            .as_str()
            .unwrap()
            .contains("agentbus stopped before this turn finished")
    );
    assert_eq!(results[1]["stop_reason"], "end_turn");
    assert!(
        results[1]["text"]
            .as_str()
            .unwrap()
            .contains("not finished")
    );

    let request = &fx.request_messages()[1];
    assert_eq!(
        roles(request),
        ["system", "user", "assistant", "tool", "user"]
    );
    assert_eq!(request[3]["tool_call_id"], "long1");
    fx.assert_requests_valid();

    // Every event is stored: the first run's, the closing, the second turn.
    let show = fx.run(&["sessions", "show", &id]).await;
    let text = text_of(&show);
    for line in [
        "user: Run the long job",
        "assistant: Starting the long job.",
        "tool call bash (long1)",
        "tool result bash (long1, cancelled)",
        "result: error",
        "user: Did it finish?",
        "result: end_turn",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
}

#[tokio::test]
async fn sigkill_while_a_stream_is_open_then_resume_continues() {
    let fx = Fixture::new("killed_in_stream").await;
    let mut agent = fx.spawn(&["run", "--json", "Tell me"]);
    let delta = agent
        .wait_for_event(|e| e["type"] == "stream_event" && e["event"]["type"] == "text_delta")
        .await;
    let id = delta["session_id"].as_str().unwrap().to_string();
    agent.kill9();
    agent.finish().await;

    let resumed = fx.run(&["run", "--json", "--session", &id, "Again"]).await;
    assert_eq!(resumed.code(), Some(0), "{}", resumed.stderr);
    let results = of_type(&resumed.events(), "result")
        .into_iter()
        .cloned()
        .collect::<Vec<_>>();
    assert_eq!(
        results[0]["stop_reason"], "error",
        "the cut turn was closed"
    );
    assert_eq!(results[1]["text"], "A fresh answer.");
    let request = &fx.request_messages()[1];
    assert_eq!(
        roles(request),
        ["system", "user", "user"],
        "the unfinished answer was never stored"
    );
    fx.assert_requests_valid();
}

#[tokio::test]
async fn two_processes_run_two_sessions_at_once_with_interleaved_tool_calls() {
    let fx = Fixture::new("interleaved_sessions").await;
    let alpha = fx.spawn(&["run", "--json", "alpha task"]);
    let beta = fx.spawn(&["run", "--json", "beta task"]);
    let (alpha, beta) = tokio::join!(alpha.finish(), beta.finish());
    assert_eq!(alpha.code(), Some(0), "{}", alpha.stderr);
    assert_eq!(beta.code(), Some(0), "{}", beta.stderr);
    assert_eq!(
        the_result(&alpha.events())["text"],
        "alpha: alpha saw beta\n"
    );
    assert_eq!(the_result(&beta.events())["text"], "beta: beta saw alpha\n");

    for (out, own, other) in [(&alpha, "alpha", "beta"), (&beta, "beta", "alpha")] {
        let id = session_id(&out.events());
        let show = text_of(&fx.run(&["sessions", "show", &id]).await);
        assert!(show.contains(&format!("user: {own} task")), "{show}");
        assert!(
            !show.contains(&format!("{other} task")),
            "histories never mix:\n{show}"
        );
    }
    fx.assert_requests_valid();
}

#[tokio::test]
async fn a_session_driven_by_another_process_is_refused_with_a_clear_message() {
    let fx = Fixture::new("many_answers").await;
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("hello\n").await;
    let result = chat.wait_for_event(|e| e["type"] == "result").await;
    let id = result["session_id"].as_str().unwrap().to_string();

    let second = fx.run(&["run", "--session", &id, "me too"]).await;
    assert_eq!(second.code(), Some(1));
    assert!(
        second.stderr.contains("another agentbus process")
            && second.stderr.contains(&id)
            && second.stderr.contains("agentbus chat"),
        "names the holder: {}",
        second.stderr
    );
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);

    // Once the chat has exited, the session is free again.
    let third = fx.run(&["run", "--session", &id, "now?"]).await;
    assert_eq!(third.code(), Some(0), "{}", third.stderr);
}

#[tokio::test]
async fn fork_at_a_seq_then_both_branches_continue_on_their_own() {
    let fx = Fixture::new("many_answers").await;
    let first = fx.run(&["run", "--json", "first question"]).await;
    let id = session_id(&first.events());
    let fork_point = the_result(&first.events())["seq"].as_u64().unwrap();
    fx.run(&["run", "--session", &id, "second question"]).await;

    let fork = fx
        .run(&["sessions", "fork", &id, "--at", &fork_point.to_string()])
        .await;
    assert_eq!(fork.code(), Some(0), "{}", fork.stderr);
    let fork_id = fork.stdout[0].trim().to_string();
    assert_ne!(fork_id, id);

    let branch = fx
        .run(&["run", "--session", &fork_id, "branch question"])
        .await;
    assert_eq!(branch.code(), Some(0), "{}", branch.stderr);
    let main = fx.run(&["run", "--session", &id, "main question"]).await;
    assert_eq!(main.code(), Some(0), "{}", main.stderr);

    let requests = fx.request_messages();
    let branch_request = &requests[2];
    let main_request = &requests[3];
    let users = |r: &Vec<Value>| -> Vec<String> {
        r.iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(users(branch_request), ["first question", "branch question"]);
    assert_eq!(
        users(main_request),
        ["first question", "second question", "main question"]
    );
    let parent = text_of(&fx.run(&["sessions", "show", &fork_id]).await);
    assert!(
        parent.contains(&format!("forked from {id} at event {fork_point}")),
        "{parent}"
    );
}

#[tokio::test]
async fn export_then_import_gives_the_same_conversation_and_bad_files_change_nothing() {
    let fx = Fixture::new("many_answers").await;
    let first = fx.run(&["run", "--json", "remember this"]).await;
    let id = session_id(&first.events());
    fx.run(&["run", "--session", &id, "and this"]).await;
    let file = fx.home.path().join("export.json");
    let export = fx
        .run(&["sessions", "export", &id, "--out", file.to_str().unwrap()])
        .await;
    assert_eq!(export.code(), Some(0), "{}", export.stderr);
    let document: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(document["format"], "agentbus-session");
    assert_eq!(document["version"], 1);
    assert!(
        !document.to_string().contains(SECRET),
        "no secrets in exports"
    );

    let import = fx
        .run(&["sessions", "import", file.to_str().unwrap()])
        .await;
    assert_eq!(import.code(), Some(0), "{}", import.stderr);
    let new_id = import.stdout[0].trim().to_string();
    let original = conversation(&fx, &id).await;
    assert!(original.iter().any(|l| l.contains("user: and this")));
    assert_eq!(original, conversation(&fx, &new_id).await);

    let sessions_before = fx.run(&["sessions", "list", "--json"]).await.stdout_text();
    let corrupt = fx.home.path().join("corrupt.json");
    std::fs::write(
        &corrupt,
        "{\"format\": \"agentbus-session\", \"version\": 1, \"events\": [",
    )
    .unwrap();
    let refused = fx
        .run(&["sessions", "import", corrupt.to_str().unwrap()])
        .await;
    assert_eq!(refused.code(), Some(1));
    assert!(
        refused.stderr.contains("corrupt.json") && refused.stderr.contains("not JSON"),
        "{}",
        refused.stderr
    );
    let mut newer = document.clone();
    newer["version"] = 2.into();
    std::fs::write(&corrupt, newer.to_string()).unwrap();
    let refused = fx
        .run(&["sessions", "import", corrupt.to_str().unwrap()])
        .await;
    assert!(
        refused.stderr.contains("newer agentbus"),
        "{}",
        refused.stderr
    );
    let sessions_after = fx.run(&["sessions", "list", "--json"]).await.stdout_text();
    assert_eq!(sessions_before, sessions_after, "nothing changed");
}

#[tokio::test]
async fn session_commands_in_chat_switch_and_store() {
    let fx = Fixture::new("many_answers").await;
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("one\n/fork\ntwo\n/save saved.json\n/new\nthree\n/sessions\n")
        .await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let events = out.events();
    let sessions: Vec<&str> = events
        .iter()
        .filter_map(|e| e["session_id"].as_str())
        .collect();
    let mut distinct: Vec<&str> = sessions.clone();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "original, fork, new: {distinct:?}");

    let forked = events.iter().find(|e| e["subtype"] == "forked").unwrap();
    assert_eq!(forked["data"]["switch_to"], distinct[1]);
    // "two" went to the fork, whose request also has "one".
    let requests = fx.request_messages();
    let users = |r: &Vec<Value>| -> Vec<String> {
        r.iter()
            .filter(|m| m["role"] == "user")
            .map(|m| m["content"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(users(&requests[1]), ["one", "two"]);
    assert_eq!(users(&requests[2]), ["three"], "/new started empty");
    let saved = fx.workspace().join("saved.json");
    assert!(std::fs::read_to_string(&saved).unwrap().contains("\"two\""));
    let listing = events.iter().find(|e| e["subtype"] == "sessions").unwrap();
    assert_eq!(listing["data"].as_array().unwrap().len(), 3);

    // /load brings the saved fork back as a new session; /resume goes back.
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send(&format!(
        "/load saved.json\nfour\n/resume {}\nfive\n",
        distinct[0]
    ))
    .await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stdout_text());
    let requests = fx.request_messages();
    assert_eq!(users(&requests[3]), ["one", "two", "four"]);
    assert_eq!(users(&requests[4]), ["one", "five"]);
    fx.assert_requests_valid();
}

#[tokio::test]
async fn a_store_write_failure_is_an_error_event_and_a_failing_exit() {
    let fx = Fixture::new("gated_tool").await;
    fx.add_config("[sessions]\nbusy_timeout_ms = 100\n");
    let mut agent = fx.spawn(&["run", "--json", "wait for go"]);
    agent.wait_for_event(|e| e["type"] == "assistant").await;

    // Another process takes the database's write lock and keeps it.
    let lock = crate::support::store_lock::StoreLock::take(&fx);

    std::fs::write(fx.workspace().join("go"), "").unwrap();
    let out = agent.finish().await;
    lock.release();
    assert_eq!(
        out.code(),
        Some(1),
        "a run whose events were not saved fails: {}",
        out.stderr
    );
    let events = out.events();
    let errors = of_type(&events, "error");
    assert!(!errors.is_empty());
    assert_eq!(errors[0]["kind"], "store");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("could not save"),
        "{}",
        errors[0]
    );
    assert_eq!(
        the_result(&events)["stop_reason"],
        "end_turn",
        "the turn itself went on"
    );
}

/// `sessions list` shows this workspace's sessions; `--all` every
/// workspace's, with a WORKSPACE column.
#[tokio::test]
async fn sessions_list_shows_this_workspace_and_all_shows_every_one() {
    let fx = Fixture::new("many_answers").await;
    let elsewhere = tempfile::tempdir().unwrap();
    let here = fx.run(&["run", "--json", "asked here"]).await;
    let there = fx
        .run_in(elsewhere.path(), &["run", "--json", "asked elsewhere"])
        .await;
    let (here, there) = (session_id(&here.events()), session_id(&there.events()));

    let list = fx.run(&["sessions", "list"]).await;
    let text = list.stdout_text();
    assert!(
        text.contains(&here[..18]) && text.contains("asked here"),
        "{text}"
    );
    assert!(!text.contains(&there[..18]), "another workspace's: {text}");
    assert!(!text.contains("WORKSPACE"), "{text}");

    let all = fx.run(&["sessions", "list", "--all"]).await;
    let text = all.stdout_text();
    let header = text.lines().next().unwrap();
    assert!(header.contains("WORKSPACE"), "{text}");
    let elsewhere_dir = elsewhere.path().canonicalize().unwrap();
    let line = |id: &str| {
        text.lines()
            .find(|l| l.contains(&id[..18]))
            .unwrap()
            .to_string()
    };
    assert!(
        line(&there).contains(&elsewhere_dir.display().to_string()),
        "{text}"
    );
    let workspace = fx.workspace().canonicalize().unwrap();
    assert!(
        line(&here).contains(&workspace.display().to_string()),
        "{text}"
    );

    let json = fx.run(&["sessions", "list", "--json"]).await;
    let records: Value = serde_json::from_str(&json.stdout_text()).unwrap();
    let ids: Vec<&str> = records
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [here.as_str()]);

    let empty = tempfile::tempdir().unwrap();
    let none = fx.run_in(empty.path(), &["sessions", "list"]).await;
    assert!(
        none.stdout_text().contains("--all") && none.stdout_text().contains("2 sessions"),
        "says where the others are: {}",
        none.stdout_text()
    );
}

/// A run that only asks a command never calls the model and leaves no
/// session behind; one that continues a session keeps it.
#[tokio::test]
async fn a_command_only_run_leaves_no_session_behind() {
    let fx = Fixture::new("plain_reply").await;
    for command in [
        &["/usage"][..],
        &["/models"],
        &["/tools"],
        &["/new"],
        &["/foo"],
    ] {
        let mut args = vec!["run"];
        args.extend_from_slice(command);
        let out = fx.run(&args).await;
        assert!(
            matches!(out.code(), Some(0 | 2)),
            "{command:?}: {}",
            out.stderr
        );
    }
    let list = fx.run(&["sessions", "list", "--all", "--json"]).await;
    assert_eq!(list.stdout_text().trim(), "[]");
    assert!(fx.server.requests().is_empty());

    let asked = fx.run(&["run", "--json", "hello"]).await;
    let id = session_id(&asked.events());
    let usage = fx.run(&["run", "--continue", "/usage"]).await;
    assert_eq!(usage.code(), Some(0), "{}", usage.stderr);
    let list = fx.run(&["sessions", "list", "--all", "--json"]).await;
    let records: Value = serde_json::from_str(&list.stdout_text()).unwrap();
    assert_eq!(records.as_array().unwrap().len(), 1, "{records:#}");
    assert_eq!(records[0]["id"], id.as_str());
}

/// A chat whose input leaves its session without a turn keeps nothing:
/// the session it made, and one it switched to with `/new`; a chat with a
/// turn keeps its session, and one that resumed a session keeps it.
#[tokio::test]
async fn a_chat_left_without_a_turn_leaves_no_session_behind() {
    let fx = Fixture::new("plain_reply").await;
    for input in [
        "",
        "/usage
",
        "/usage
/new
/models
",
    ] {
        let mut chat = fx.spawn_with_stdin(&["chat"]);
        chat.send(input).await;
        let out = chat.finish().await;
        assert_eq!(out.code(), Some(0), "{input:?}: {}", out.stderr);
    }
    let list = fx.run(&["sessions", "list", "--all", "--json"]).await;
    assert_eq!(list.stdout_text().trim(), "[]");

    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send(
        "hello
/new
",
    )
    .await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let id = session_id(&out.events());
    let mut chat = fx.spawn_with_stdin(&["chat", "--continue"]);
    chat.send(
        "/usage
",
    )
    .await;
    assert_eq!(chat.finish().await.code(), Some(0));
    let list = fx.run(&["sessions", "list", "--all", "--json"]).await;
    let records: Value = serde_json::from_str(&list.stdout_text()).unwrap();
    assert_eq!(records.as_array().unwrap().len(), 1, "{records:#}");
    assert_eq!(records[0]["id"], id.as_str());
}

/// `--continue` on a session a running `agentbus serve` holds says how to
/// join it there, and that way works.
#[tokio::test]
async fn continue_on_a_session_held_by_serve_suggests_attach() {
    let fx = Fixture::new("many_answers").await;
    let first = fx.run(&["run", "--json", "hello"]).await;
    let id = session_id(&first.events());
    let server = fx.serve().await;
    // The daemon loads the session (and takes its lease) to answer.
    server.input(&id, "/usage").await;

    let refused = fx.run(&["run", "--continue", "and now?"]).await;
    assert_eq!(refused.code(), Some(1), "{}", refused.stderr);
    let said = &refused.stderr;
    let attach = format!("--attach {} --session {id}", server.url);
    assert!(
        said.contains(&id) && said.contains("agentbus serve") && said.contains(&attach),
        "{said}"
    );
    let chat = fx.run(&["chat", "--session", &id]).await;
    assert!(chat.stderr.contains(&attach), "chat too: {}", chat.stderr);

    let joined = fx
        .run(&["run", "--attach", &server.url, "--session", &id, "and now?"])
        .await;
    assert_eq!(joined.code(), Some(0), "{}", joined.stderr);
    assert_eq!(joined.stdout, ["answer two"]);
    server.terminate();
    let (status, stderr) = server.wait().await;
    assert_eq!(status.code(), Some(0), "{stderr}");
    let daemons = fx.home.path().join("data/daemons");
    assert!(
        std::fs::read_dir(&daemons).map_or(true, |mut d| d.next().is_none()),
        "the daemon's address file is gone"
    );
}

/// A turn that overwrites a.txt, edits b.txt and creates c.txt; then a
/// turn that changes nothing.
const EDITS: &str = r#"
[[response]]
tool_calls = [
  { id = "w1", name = "write_file", arguments = { path = "a.txt", content = "alpha TWO\n" } },
  { id = "e1", name = "edit_file", arguments = { path = "b.txt", old_string = "beta one", new_string = "beta TWO" } },
  { id = "w2", name = "write_file", arguments = { path = "c.txt", content = "made\n" } },
]
[[response]]
text = "Changed them."
[[response]]
text = "Nothing to change."
"#;

/// The files before the turn (b.txt with CRLF and no final newline: they
/// must come back byte for byte).
const A: &[u8] = b"alpha one\n";
const B: &[u8] = b"beta one\r\nsecond line";

/// A session of the two turns in a fresh fixture; its id and the seqs of
/// its turns.
async fn edited_session() -> (Fixture, String, Vec<u64>) {
    let fx = Fixture::with_script(agentbus_testkit::Script::from_toml_str(EDITS).unwrap()).await;
    std::fs::write(fx.workspace().join("a.txt"), A).unwrap();
    std::fs::write(fx.workspace().join("b.txt"), B).unwrap();
    let first = fx.run(&["run", "--json", "change the files"]).await;
    assert_eq!(first.code(), Some(0), "{}", first.stderr);
    let id = session_id(&first.events());
    let second = fx.run(&["run", "--session", &id, "just talk"]).await;
    assert_eq!(second.code(), Some(0), "{}", second.stderr);
    let listed = fx.run(&["sessions", "rewind", &id, "--json"]).await;
    assert_eq!(listed.code(), Some(0), "{}", listed.stderr);
    let list: Value = serde_json::from_str(&listed.stdout_text()).unwrap();
    let seqs = list["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["seq"].as_u64().unwrap())
        .collect();
    (fx, id, seqs)
}

#[tokio::test]
async fn sessions_rewind_lists_the_turns_previews_and_restores_the_files() {
    let (fx, id, seqs) = edited_session().await;
    let ws = fx.workspace().to_path_buf();
    assert_eq!(seqs.len(), 2, "{seqs:?}");
    assert_eq!(
        std::fs::read(ws.join("b.txt")).unwrap(),
        b"beta TWO\r\nsecond line"
    );

    // The list: each turn with what it changed.
    let out = fx.run(&["sessions", "rewind", &id]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let text = out.stdout_text();
    for line in [
        format!("Turns of session {id}"),
        format!("{}  change the files", seqs[0]),
        "+1 -1 a.txt".to_string(),
        "+1 -1 b.txt".to_string(),
        "+1 -0 c.txt (created)".to_string(),
        format!("{}  just talk", seqs[1]),
        "(no files changed)".to_string(),
    ] {
        assert!(text.contains(&line), "{line:?} missing from:\n{text}");
    }
    assert!(
        out.stderr.contains("agentbus sessions rewind"),
        "{}",
        out.stderr
    );
    // `run` and the piped chat print `/rewind`'s list as the session words it.
    let out = fx.run(&["run", "--session", &id, "/rewind"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let text = out.stdout_text();
    assert!(
        text.contains("Turns (rewind with /rewind SEQ") && text.contains("+1 -0 c.txt (created)"),
        "{text}"
    );
    let mut chat = fx.spawn_with_stdin(&["chat", "--session", &id]);
    chat.send("/rewind\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stdout_text().contains("+1 -1 b.txt"),
        "{}",
        out.stdout_text()
    );

    // A preview says what would be done, with the diffs, and does nothing.
    let turn = seqs[0].to_string();
    let out = fx
        .run(&[
            "sessions",
            "rewind",
            &id,
            &turn,
            "--mode",
            "code",
            "--preview",
        ])
        .await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let text = out.stdout_text();
    for line in [
        "nothing was changed",
        "would restore a.txt",
        "would restore b.txt",
        "would remove c.txt",
        "-alpha TWO",
        "+alpha one",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
    assert!(!text.contains("fork"), "code only: {text}");
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), b"alpha TWO\n");

    // Done: the files are as they were, byte for byte; no fork.
    let out = fx
        .run(&["sessions", "rewind", &id, &turn, "--mode", "code"])
        .await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let text = out.stdout_text();
    for line in ["restored a.txt", "restored b.txt", "removed c.txt"] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), A);
    assert_eq!(std::fs::read(ws.join("b.txt")).unwrap(), B);
    assert!(!ws.join("c.txt").exists());
    let list = fx.run(&["sessions", "list", "--json"]).await;
    let records: Value = serde_json::from_str(&list.stdout_text()).unwrap();
    assert_eq!(records.as_array().unwrap().len(), 1, "{records:#}");

    // The turn is taken back: the list says so, and there is nothing left
    // to undo.
    let out = fx.run(&["sessions", "rewind", &id]).await;
    assert!(
        out.stdout_text().contains("change the files [undone]"),
        "{}",
        out.stdout_text()
    );
    let out = fx.run(&["sessions", "undo", &id]).await;
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(out.stderr.contains("nothing to undo"), "{}", out.stderr);

    // The checkpoints are kept (the session still names them).
    let out = fx.run(&["sessions", "gc"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let text = out.stdout_text();
    assert!(text.contains("Freed 0 blobs (0 bytes)."), "{text}");
    assert!(
        text.contains("The checkpoints now hold 3 checkpoints and "),
        "{text}"
    );
    let out = fx.run(&["sessions", "gc", "--json"]).await;
    let gc: Value = serde_json::from_str(&out.stdout_text()).unwrap();
    assert_eq!(gc["usage"]["checkpoints"], 3, "{gc}");
    assert!(gc["usage"]["blob_bytes"].as_u64().unwrap() > 0, "{gc}");
    assert_eq!(gc["collected"]["blobs"], 0, "{gc}");
}

#[tokio::test]
async fn sessions_rewind_refuses_bad_input_plainly() {
    let (fx, id, seqs) = edited_session().await;
    let out = fx.run(&["sessions", "rewind", &id, "9999"]).await;
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    let said = &out.stderr;
    let turns = format!("{}, {}", seqs[0], seqs[1]);
    assert!(
        said.contains(&format!("9999 is not a turn of session {id}")) && said.contains(&turns),
        "{said}"
    );
    let turn = seqs[0].to_string();
    let out = fx
        .run(&["sessions", "rewind", &id, &turn, "--mode", "sideways"])
        .await;
    assert_eq!(out.code(), Some(2), "{}", out.stderr);
    assert!(out.stderr.contains("not a mode"), "{}", out.stderr);
    let out = fx.run(&["sessions", "rewind", &id, "--force"]).await;
    assert_eq!(out.code(), Some(2), "--force needs a turn: {}", out.stderr);
    let out = fx.run(&["sessions", "rewind", "no-such-session"]).await;
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    // Nothing was changed by any of it.
    assert_eq!(
        std::fs::read(fx.workspace().join("a.txt")).unwrap(),
        b"alpha TWO\n"
    );
}

#[tokio::test]
async fn sessions_undo_and_a_rewind_of_both_fork_and_a_held_session_is_left_alone() {
    let (fx, id, seqs) = edited_session().await;
    let ws = fx.workspace().to_path_buf();
    let out = fx.run(&["sessions", "undo", &id, "--preview"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    assert!(
        out.stdout_text().contains("would remove c.txt"),
        "{}",
        out.stdout_text()
    );
    assert!(ws.join("c.txt").exists());
    let out = fx.run(&["sessions", "undo", &id, "--json"]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout_text()).unwrap();
    assert_eq!(report["seq"], seqs[0]);
    assert_eq!(report["mode"], "code");
    assert_eq!(std::fs::read(ws.join("a.txt")).unwrap(), A);
    assert!(!ws.join("c.txt").exists());

    // Both: the files (already back) and a fork before the turn.
    let turn = seqs[1].to_string();
    let out = fx.run(&["sessions", "rewind", &id, &turn]).await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    let text = out.stdout_text();
    let fork = text
        .split("in new session ")
        .nth(1)
        .map(|rest| rest.trim_end_matches('.').trim().to_string())
        .unwrap_or_else(|| panic!("no fork named in:\n{text}"));
    assert!(
        out.stderr
            .contains(&format!("agentbus chat --resume {fork}")),
        "{}",
        out.stderr
    );
    let shown = fx.run(&["sessions", "show", &fork]).await;
    let conversation = shown.stdout_text();
    assert!(
        conversation.contains("user: change the files") && !conversation.contains("just talk"),
        "{conversation}"
    );

    // A session a live process holds is only looked at.
    let server = fx.serve().await;
    server.input(&id, "/usage").await;
    let turn = seqs[0].to_string();
    let out = fx
        .run(&[
            "sessions", "rewind", &id, &turn, "--mode", "code", "--force",
        ])
        .await;
    assert_eq!(out.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("is open in the agentbus daemon at {}", server.url)),
        "{}",
        out.stderr
    );
    let out = fx
        .run(&[
            "sessions",
            "rewind",
            &id,
            &turn,
            "--mode",
            "code",
            "--preview",
        ])
        .await;
    assert_eq!(out.code(), Some(0), "{}", out.stderr);
    server.terminate();
    let (status, stderr) = server.wait().await;
    assert_eq!(status.code(), Some(0), "{stderr}");
}
