//! `agentbus chat` end to end with piped stdin: one input per line,
//! submitted as read, so inputs queue in the session's FIFO.

use crate::support::*;
use serde_json::Value;

fn seq_of(events: &[Value], pred: impl Fn(&Value) -> bool) -> u64 {
    events
        .iter()
        .find(|e| pred(e))
        .and_then(|e| e["seq"].as_u64())
        .expect("event present")
}

#[tokio::test]
async fn interrupt_then_next_query_sends_a_valid_history() {
    let fx = Fixture::new("stall_mid_tool_call").await;
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("first question\n").await;
    chat.wait_for_event(|e| {
        e["type"] == "stream_event" && e["event"]["block"]["type"] == "tool_use"
    })
    .await;
    chat.interrupt();
    let cancelled = chat.wait_for_event(|e| e["type"] == "result").await;
    assert_eq!(cancelled["stop_reason"], "cancelled");
    chat.send("second question\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);

    let requests = fx.request_messages();
    assert_eq!(requests.len(), 2);
    let second = &requests[1];
    assert_eq!(
        roles(second),
        ["system", "user", "assistant", "tool", "user"]
    );
    assert_eq!(
        second[2]["content"], "Working on it",
        "the partial answer is kept"
    );
    assert_eq!(second[2]["tool_calls"][0]["id"], "t1");
    assert_eq!(second[3]["tool_call_id"], "t1");
    assert!(second[3]["content"].as_str().unwrap().contains("cancelled"));
    assert_eq!(second[4]["content"], "second question");
    fx.assert_requests_valid();
}

#[tokio::test]
async fn clear_waits_behind_running_query() {
    let fx = Fixture::new("clear_behind_query").await;
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("first question\n/clear\nsecond question\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let events = out.events();
    assert_gap_free(&events);

    let first_result = seq_of(&events, |e| e["type"] == "result");
    let cleared = seq_of(&events, |e| e["subtype"] == "cleared");
    let second_user = seq_of(&events, |e| {
        e["type"] == "user" && e["text"] == "second question"
    });
    assert!(
        first_result < cleared && cleared < second_user,
        "{first_result} < {cleared} < {second_user}"
    );

    let requests = fx.request_messages();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        roles(&requests[1]),
        ["system", "user", "assistant", "tool"],
        "the first turn was whole"
    );
    assert_eq!(
        roles(&requests[2]),
        ["system", "user"],
        "the clear applied before the second query"
    );
    assert_eq!(requests[2][1]["content"], "second question");
    fx.assert_requests_valid();
}

#[tokio::test]
async fn slash_commands_behave_in_chat() {
    let fx = Fixture::new("chat_commands").await;
    let mut chat = fx.spawn_with_stdin(&["chat", "--json"]);
    chat.send("/model other\nhello\n/usage\n/tools\n/debug full\n/foo\n/clear\nhello again\n/quit\nnever sent\n")
        .await;
    let out = chat.finish().await;
    assert_eq!(
        out.code(),
        Some(1),
        "an unknown command makes a scripted chat fail: {}",
        out.stderr
    );
    let events = out.events();
    let system = |subtype: &str| -> Value {
        events
            .iter()
            .find(|e| e["type"] == "system" && e["subtype"] == subtype)
            .cloned()
            .unwrap_or_else(|| panic!("no {subtype} event"))
    };

    let requests = fx.server.requests();
    assert_eq!(requests.len(), 2, "commands never reached the model");
    assert_eq!(
        requests[0].body["model"], "scripted-other",
        "/model switched the profile"
    );
    assert!(
        !requests[0].headers.contains_key("authorization"),
        "the other profile has no key"
    );

    assert_eq!(system("usage")["data"]["session"]["input_tokens"], 30);
    assert!(
        system("tools")["message"]
            .as_str()
            .unwrap()
            .contains("edit_file")
    );
    let debug = system("debug");
    assert_eq!(debug["data"]["model"], "other");
    assert_eq!(debug["data"]["history"].as_array().unwrap().len(), 2);
    assert!(!serde_json::to_string(&events).unwrap().contains(SECRET));
    assert!(
        system("notice")["message"]
            .as_str()
            .unwrap()
            .contains("/foo")
    );
    system("cleared");
    system("quit");

    let messages = fx.request_messages();
    assert_eq!(
        roles(&messages[1]),
        ["system", "user"],
        "/clear dropped the first exchange"
    );
    assert_eq!(messages[1][1]["content"], "hello again");
    assert!(
        !events
            .iter()
            .any(|e| e["type"] == "user" && e["text"] == "never sent"),
        "/quit ended the chat"
    );
}

#[tokio::test]
async fn chat_text_output_shows_tool_calls_results_and_answers() {
    let fx = Fixture::new("one_tool_round").await;
    std::fs::write(fx.workspace().join("a.txt"), "hello from a.txt\n").unwrap();
    let mut chat = fx.spawn_with_stdin(&["chat"]);
    chat.send("What does a.txt say?\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let text = out.stdout_text();
    assert!(text.contains("> What does a.txt say?"), "{text}");
    assert!(text.contains("⏺ read_file(path: \"a.txt\")"), "{text}");
    assert!(text.contains("⎿      1\thello from a.txt"), "{text}");
    assert!(text.contains("The file says:"), "{text}");
    assert!(text.contains("✓ 2 steps"), "{text}");
}

#[tokio::test]
async fn the_transcript_shows_the_thinking_on_its_own_line_before_the_answer() {
    let fx = Fixture::new("thinking").await;
    fx.add_thinking_profile();
    let mut chat = fx.spawn_with_stdin(&["chat", "--model", "scripted-thinking"]);
    chat.send("What is 2 + 2?\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let lines = &out.stdout;
    let thought = lines
        .iter()
        .position(|l| l == "✻ Two and two make four.")
        .unwrap_or_else(|| panic!("no thinking line: {lines:#?}"));
    assert_eq!(lines[thought + 1], "4", "the answer follows: {lines:#?}");
}

/// `printf 'make notes\n' | agentbus`: the calls that need approval come
/// after the input has ended, when nobody can answer them. Each is
/// rejected with `run`'s way out, the model reads why, the turn finishes
/// and the chat exits by itself.
#[tokio::test]
async fn a_piped_chat_rejects_what_nobody_can_approve_once_its_input_has_ended() {
    let fx = Fixture::new("file_tools").await;
    fx.set_permission_mode("default");
    let mut chat = fx.spawn_with_stdin(&[]);
    chat.send("make notes\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let text = out.stdout_text();
    for says in [
        "Rejected write_file: write_file was not run: it needs approval",
        "Rejected edit_file: edit_file was not run: it needs approval",
        "Rejected bash: bash was not run: it needs approval",
        "the chat's input has ended, so nobody can answer; to allow it, run again with",
        "--permission-mode accept-edits",
        "Done. The command said:",
    ] {
        assert!(text.contains(says), "{says}:\n{text}");
    }
    assert!(!fx.workspace().join("notes/todo.txt").exists());
    let last = fx.request_messages().pop().unwrap_or_default();
    let told = serde_json::to_string(&last).unwrap_or_default();
    assert!(
        told.contains("bash was not run: it needs approval"),
        "the model reads why: {told}"
    );
}

/// `printf 'make notes\n/quit\n' | agentbus --permission-mode accept-edits`:
/// `/quit` ends the input as end of file does; the edits run, the command
/// that still needs approval is rejected, and the chat exits.
#[tokio::test]
async fn a_piped_chat_ended_by_quit_rejects_the_command_and_exits() {
    let fx = Fixture::new("file_tools").await;
    fx.set_permission_mode("default");
    let mut chat = fx.spawn_with_stdin(&["--permission-mode", "accept-edits"]);
    chat.send("make notes\n/quit\n").await;
    let out = chat.finish().await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    let text = out.stdout_text();
    assert!(
        text.contains("Rejected bash: bash was not run: it needs approval"),
        "{text}"
    );
    assert!(!text.contains("write_file was not run"), "{text}");
    assert_eq!(
        std::fs::read_to_string(fx.workspace().join("notes/todo.txt")).ok(),
        Some("alpha\ngamma\n".to_string())
    );
}
