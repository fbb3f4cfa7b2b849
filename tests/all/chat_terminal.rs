//! `agentbus chat` on a real terminal (tmux, see `support/tmux.rs`):
//! pastes, keys, `@` mentions, `!` commands, Tab completion, the resume
//! picker, the status line and `--attach`, checked on the screen and in
//! what the scripted model received.

use crate::support::Fixture;
use crate::support::tmux::Terminal;
use agentbus_testkit::last_user_text;
use serde_json::Value;

/// The user texts of every model request, in order.
fn requests(fx: &Fixture) -> Vec<String> {
    fx.server
        .model_calls()
        .iter()
        .map(|r| last_user_text(&r.body).unwrap_or_default())
        .collect()
}

/// The id the chat printed for its session (`● session ID · ...`).
fn session_id(screen: &str) -> String {
    let line = screen
        .lines()
        .find_map(|l| l.strip_prefix("● session "))
        .expect("a session line");
    line.split_whitespace().next().unwrap().to_string()
}

/// The stored events of session `id`.
async fn stored_events(fx: &Fixture, id: &str) -> Vec<Value> {
    let shown = fx.run(&["sessions", "show", id, "--json"]).await;
    assert!(shown.status.success(), "{}", shown.stderr);
    shown.events()
}

/// A chat started and waiting at its prompt.
async fn chat(fx: &Fixture, args: &[&str]) -> Terminal {
    let mut all = vec!["chat"];
    all.extend_from_slice(args);
    let mut term = fx.terminal(&all, &[]);
    term.wait_for("Ctrl-D quits").await;
    term.wait_for_prompt().await;
    term
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_line_paste_is_one_message_and_alt_enter_starts_a_new_line() {
    let fx = Fixture::new("chat_terminal").await;
    let mut term = chat(&fx, &[]).await;
    let pasted: Vec<String> = (1..=14).map(|i| format!("pasted line {i}")).collect();
    term.paste(&pasted.join("\n"));
    term.wait_for("pasted line 14").await;
    assert!(
        fx.server.model_calls().is_empty(),
        "a paste sends nothing by itself"
    );
    term.keys(&["Enter"]);
    term.wait_for("Got all of the paste.").await;
    term.wait_for_prompt().await;
    assert_eq!(requests(&fx), [pasted.join("\n")]);

    term.type_text("first line");
    term.keys(&["M-Enter"]);
    term.type_text("second line");
    term.keys(&["Enter"]);
    let screen = term.wait_for("Got both lines.").await;
    assert_eq!(requests(&fx)[1], "first line\nsecond line");

    let events = stored_events(&fx, &session_id(&screen)).await;
    let users: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "user")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(
        users,
        [pasted.join("\n").as_str(), "first line\nsecond line"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paste_during_a_reply_is_one_message_sent_after_it() {
    let fx = Fixture::new("chat_terminal").await;
    let mut term = chat(&fx, &[]).await;
    term.type_text("answer slowly");
    term.keys(&["Enter"]);
    term.wait_for("This answer").await;
    let pasted = "typed ahead line 1\ntyped ahead line 2\ntyped ahead line 3";
    term.paste(pasted);
    term.keys(&["Enter"]);
    term.wait_for("⏎ next: typed ahead line 1 (+2 lines)").await;
    term.wait_for("Got the paste typed ahead.").await;
    assert_eq!(requests(&fx), ["answer slowly", pasted]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_at_mention_sends_the_file_and_tab_completes_paths_and_arguments() {
    let fx = Fixture::new("chat_terminal").await;
    std::fs::write(
        fx.workspace().join("README.md"),
        "# Demo\nThe readme's own words.\n",
    )
    .unwrap();
    std::fs::create_dir(fx.workspace().join("docs")).unwrap();
    let mut term = chat(&fx, &[]).await;

    // `/model ` and Tab: the profiles.
    term.type_text("/model ");
    term.keys(&["Tab"]);
    term.wait_for("scripted-anthropic").await;
    term.keys(&["Escape"]);
    term.wait_until_gone("scripted-anthropic").await;
    term.keys(&["C-a", "C-k"]);
    term.wait_for_prompt().await;

    // `@` and Tab: the workspace's entries, directories with a slash.
    term.type_text("look at @");
    term.keys(&["Tab"]);
    let screen = term.wait_for("@docs/").await;
    assert!(screen.contains("@README.md"), "{screen}");
    assert!(!screen.contains("NO RECORDS FOUND"), "{screen}");
    term.keys(&["Escape"]);
    term.wait_until_gone("@docs/").await;
    term.keys(&["C-a", "C-k"]);
    term.wait_for_prompt().await;
    // Nothing to offer: no menu at all.
    term.type_text("@nothing-here");
    term.keys(&["Tab"]);
    term.type_text("!");
    term.wait_for("@nothing-here!").await;
    assert!(!term.screen().contains("NO RECORDS FOUND"));
    term.keys(&["C-a", "C-k"]);
    term.wait_for_prompt().await;

    term.type_text("@REA");
    term.keys(&["Tab"]);
    term.wait_for("› @README.md").await;
    term.type_text("summarise");
    term.keys(&["Enter"]);
    let screen = term.wait_for("It is a readme.").await;
    assert!(screen.contains("Attached README.md (2 lines)."), "{screen}");
    let sent = &requests(&fx)[0];
    assert!(
        sent.starts_with("@README.md summarise\n\n<attached-file path=\"README.md\">"),
        "{sent}"
    );
    assert!(sent.contains("The readme's own words."), "{sent}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bang_command_shows_its_output_and_the_next_request_carries_it() {
    let fx = Fixture::new("chat_terminal").await;
    std::fs::write(fx.workspace().join("notes.txt"), "n\n").unwrap();
    std::fs::write(fx.workspace().join("zebra.md"), "z\n").unwrap();
    let mut term = chat(&fx, &[]).await;
    term.type_text("!ls");
    term.keys(&["Enter"]);
    term.wait_for("zebra.md").await;
    let screen = term.wait_for_prompt().await;
    assert!(screen.contains("● $ ls\nnotes.txt\nzebra.md"), "{screen}");
    assert!(fx.server.model_calls().is_empty(), "no model call");

    term.type_text("which file is for notes?");
    term.keys(&["Enter"]);
    term.wait_for("notes.txt, I would say.").await;
    let calls = fx.server.model_calls();
    assert_eq!(calls.len(), 1);
    let messages = calls[0].body["messages"].as_array().unwrap();
    let bang = messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|c| c.starts_with("!ls"))
        .expect("the command's message");
    assert!(
        bang.contains("<command>ls</command>\n<output>\nnotes.txt\nzebra.md\n</output>"),
        "{bang}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resume_picker_resumes_the_chosen_session() {
    let fx = Fixture::new("chat_terminal").await;
    assert!(fx.run(&["run", "alpha topic"]).await.status.success());
    assert!(fx.run(&["run", "beta topic"]).await.status.success());

    let mut term = fx.terminal(&["chat", "--resume"], &[]);
    let screen = term.wait_for("Resume a session").await;
    let rows: Vec<&str> = screen.lines().filter(|l| l.contains(" turn")).collect();
    assert_eq!(rows.len(), 2, "{screen}");
    assert!(
        rows[0].starts_with("› beta topic · just now · 1 turn"),
        "{screen}"
    );
    assert!(
        rows[1].starts_with("  alpha topic · just now · 1 turn"),
        "{screen}"
    );
    term.keys(&["Down"]);
    term.wait_for("› alpha topic").await;
    term.keys(&["Enter"]);
    term.wait_for("Ctrl-D quits").await;
    let screen = term.wait_for_prompt().await;
    assert!(screen.contains("> alpha topic\nAlpha noted."), "{screen}");
    let id = session_id(&screen);

    term.type_text("gamma");
    term.keys(&["Enter"]);
    term.wait_for("Gamma, after alpha.").await;
    term.wait_for_prompt().await;
    let calls = fx.server.model_calls();
    let history = calls.last().unwrap().body["messages"].to_string();
    assert!(
        history.contains("alpha topic") && !history.contains("beta topic"),
        "{history}"
    );

    // `/resume` without an id opens the picker too; Esc keeps this one.
    term.type_text("/resume");
    term.keys(&["Enter"]);
    term.wait_for("Resume a session (1 of this workspace").await;
    term.keys(&["Escape"]);
    term.wait_for("● nothing resumed").await;
    term.wait_for_prompt().await;

    term.keys(&["C-d"]);
    let screen = term.wait_for("[exited 0]").await;
    assert!(
        screen.contains(&format!("agentbus chat --resume {id} (or --continue")),
        "{screen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_line_shows_context_and_mode_and_follows_mode_switches() {
    let fx = Fixture::new("chat_terminal").await;
    // The file and command tools alone, whose definitions the window below
    // is measured against.
    std::fs::write(
        fx.workspace().join(".agentbus.toml"),
        "disallowed_tools = [\"bash_output\", \"kill_shell\", \"web_fetch\"]\n",
    )
    .unwrap();
    fx.add_config(&format!(
        // A window the tool definitions nearly fill (about 2,600 tokens with
        // the 10 % margin: it must be at least 2,900): the message still
        // fits, and the 15 tokens a reply reports are 1 % of it (at most
        // 3,000).
        "[models.windowed]\nprovider = \"openai\"\nmodel = \"scripted-main\"\nbase_url = \"{}\"\ncontext_window = 3000\n",
        fx.server.openai_base_url()
    ));
    let mut term = chat(&fx, &["--model", "windowed"]).await;
    let screen = term
        .wait_until("the status line", |s| {
            Terminal::prompt_line(s).is_some_and(|l| l.contains("windowed · build · bypass mode"))
        })
        .await;
    assert!(!Terminal::prompt_line(&screen).unwrap().contains("context"));

    term.type_text("measure it");
    term.keys(&["Enter"]);
    term.wait_for("Measured.").await;
    term.wait_for_prompt().await;
    let screen = term
        .wait_until("the context in the status line", |s| {
            Terminal::prompt_line(s).is_some_and(|l| l.contains("bypass mode · context 1%"))
        })
        .await;
    // Dimmed, at the right of the prompt.
    let colours = term.screen_with_colours();
    let prompt = colours
        .lines()
        .rev()
        .find(|l| l.contains("windowed · build"))
        .expect("the prompt line");
    assert!(
        prompt.contains("\u{1b}[90mwindowed") || prompt.contains("\u{1b}[38;5;8mwindowed"),
        "{prompt:?}"
    );
    let _ = screen;

    term.type_text("/mode plan");
    term.keys(&["Enter"]);
    term.wait_until("plan mode in the status line", |s| {
        Terminal::prompt_line(s)
            .is_some_and(|l| l.contains("windowed · build · plan mode · context 1%"))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_colour_the_status_line_is_plain() {
    let fx = Fixture::new("chat_terminal").await;
    let mut term = fx.terminal(&["chat"], &[("NO_COLOR", "1")]);
    term.wait_for("scripted · build · bypass mode").await;
    let colours = term.screen_with_colours();
    assert!(!colours.contains('\u{1b}'), "{colours:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attached_chat_says_where_it_is_attached() {
    let fx = Fixture::new("chat_terminal").await;
    let server = fx.serve().await;
    let mut term = chat(&fx, &["--attach", &server.url]).await;
    let screen = term
        .wait_until("the server in the status line", |s| {
            Terminal::prompt_line(s).is_some_and(|l| l.contains("attached to http://"))
        })
        .await;
    assert!(
        screen.contains(&format!(
            "● attached to {}",
            server.url.trim_end_matches('/')
        )),
        "{screen}"
    );
    term.type_text("remote hello");
    term.keys(&["Enter"]);
    term.wait_for("From the server.").await;
    term.wait_for_prompt().await;
    term.keys(&["C-d"]);
    let screen = term.wait_for("[exited 0]").await;
    assert!(
        screen.contains("agentbus chat --attach http://"),
        "{screen}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_asks_to_trust_the_workspaces_hooks_and_remembers_the_answer() {
    let fx = Fixture::new("chat_terminal").await;
    let dir = fx.workspace().join(".claude");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}"#;
    std::fs::write(dir.join("settings.json"), settings).unwrap();
    let mut term = fx.terminal(&["chat"], &[]);
    let screen = term.wait_for("Trust them and let them run? [y/N]").await;
    assert!(
        screen.contains("PreToolUse [Bash]: command: ./guard.sh"),
        "{screen}"
    );
    term.type_text("y");
    term.keys(&["Enter"]);
    term.wait_for("Trusted").await;
    term.wait_for_prompt().await;
    let listed = fx.run(&["hooks", "list"]).await;
    assert!(
        listed.stdout_text().contains("trusted: they run"),
        "{}",
        listed.stdout_text()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rewind_picker_previews_the_diff_and_takes_back_what_is_chosen() {
    use crate::support::tmux::line_with;
    // A turn that edits notes.txt, then one that does not.
    let script = r#"
[[response]]
match = "rework the notes"
tool_calls = [ { id = "r1", name = "edit_file", arguments = '{"path": "notes.txt", "old_string": "second line", "new_string": "second LINE"}' } ]

[[response]]
match = "rework the notes"
text = "Reworked."

[[response]]
match = "talk about it"
text = "Talked."
"#;
    let fx = Fixture::with_script(agentbus_testkit::Script::from_toml_str(script).unwrap()).await;
    let notes = fx.workspace().join("notes.txt");
    std::fs::write(&notes, "first line\nsecond line\n").unwrap();
    let mut term = chat(&fx, &[]).await;
    term.type_line("rework the notes");
    term.wait_for("Reworked.").await;
    term.wait_for_prompt().await;
    term.type_line("talk about it");
    term.wait_for("Talked.").await;
    let screen = term.wait_for_prompt().await;
    let id = session_id(&screen);
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "first line\nsecond LINE\n"
    );
    let calls = fx.server.model_calls().len();

    // The turns, newest first, with what each changed; the highlighted
    // one's preview under them.
    term.type_line("/rewind");
    let screen = term.wait_for("Rewind to before a turn (2 turns").await;
    let picker = &screen[screen.find("Rewind to before a turn").unwrap()..];
    let rows: Vec<&str> = picker.lines().skip(1).take(2).collect();
    assert!(
        rows[0].starts_with("› ") && rows[0].ends_with("talk about it · no files changed"),
        "{screen}"
    );
    assert!(
        rows[1].starts_with("  ") && rows[1].ends_with("  rework the notes · +1 -1 notes.txt"),
        "{screen}"
    );
    term.wait_for("no file would change").await;
    term.keys(&["Down"]);
    term.wait_for_coloured("notes.txt — restore").await;
    // The preview's lines are drawn after its header: wait for the last.
    let screen = term.wait_for_coloured("+second line").await;
    let removed = line_with(&screen, "-second LINE").expect("the removed line");
    let added = line_with(&screen, "+second line").expect("the added line");
    let red = ["31", "91", "38;5;1", "38;5;9"];
    let green = ["32", "92", "38;5;2", "38;5;10"];
    assert!(red.contains(&first_style(removed).as_str()), "{removed:?}");
    assert!(green.contains(&first_style(added).as_str()), "{added:?}");

    // The code only: the file comes back, the conversation stays.
    term.keys(&["Enter"]);
    term.wait_for("what to take back?").await;
    term.keys(&["Down", "Down"]);
    term.wait_for("› Restore code only").await;
    term.keys(&["Enter"]);
    term.wait_for("restored notes.txt").await;
    let screen = term.wait_for_prompt().await;
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "first line\nsecond line\n"
    );
    assert_eq!(session_id(&screen), id, "no fork for the code alone");

    // Esc cancels; then the conversation only: the chat moves to a fork
    // made before the turn, with the turn's prompt back at the prompt.
    term.type_line("/rewind");
    term.wait_for("Rewind to before a turn (2 turns").await;
    term.keys(&["Escape"]);
    term.wait_for("● nothing rewound").await;
    term.wait_for_prompt().await;
    term.type_line("/rewind");
    term.wait_for("Rewind to before a turn (2 turns").await;
    term.keys(&["Down", "Enter"]);
    term.wait_for("what to take back?").await;
    term.keys(&["Down", "Enter"]);
    let screen = term
        .wait_until("the rewound prompt at the prompt", |screen| {
            Terminal::prompt_line(screen).is_some_and(|l| l.contains("rework the notes"))
        })
        .await;
    assert!(
        screen.contains("The conversation continues before turn"),
        "{screen}"
    );
    let fork = screen
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("● session "))
        .and_then(|l| l.split_whitespace().next())
        .expect("the fork's session line");
    assert_ne!(fork, id);
    assert_eq!(fx.server.model_calls().len(), calls, "no model call");
}

/// The SGR parameters a line starts with (`""` when it starts unstyled).
fn first_style(line: &str) -> String {
    line.strip_prefix("\x1b[")
        .and_then(|rest| rest.split_once('m'))
        .map(|(params, _)| params.to_string())
        .unwrap_or_default()
}
