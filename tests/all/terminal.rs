//! What a person sees in a real terminal (tmux, 100×40): the chat renders
//! a Markdown answer (a heading without its `#`, emphasis, a table, Rust
//! code highlighted) in colour, and an edit as a coloured diff under a call
//! line that names the path first; `agentbus run` renders the answer on a
//! terminal but prints it exactly as the model wrote it into a pipe, and
//! so does the chat with `NO_COLOR`.

use crate::support::tmux::{Terminal, line_with, without_escapes};
use crate::support::*;

const COLUMNS: u16 = 100;
const ROWS: u16 = 40;

/// The binary with `args` in a terminal, colour allowed (whatever the
/// environment running the tests says) and no log lines on the screen.
fn in_terminal(fx: &Fixture, args: &[&str], env: &[(&str, &str)]) -> Terminal {
    fx.terminal_of_size(args, env, COLUMNS, ROWS)
}

/// The chat in a terminal, at its prompt.
async fn chat(fx: &Fixture, env: &[(&str, &str)]) -> Terminal {
    let mut chat = in_terminal(fx, &["chat"], env);
    chat.wait_for_coloured("Type a message").await;
    chat
}

/// The answer the script gives to "explain", as the model wrote it.
fn scripted_answer() -> String {
    let path = agentbus_testkit::fixtures_dir().join("scripts/markdown_answer.toml");
    let script: toml::Value =
        toml::from_str(&std::fs::read_to_string(&path).expect("read the script")).expect("TOML");
    script["response"][0]["text"]
        .as_str()
        .expect("the first response's text")
        .to_string()
}

/// The parameters of every SGR sequence in `line` before `text`, e.g.
/// `["1;4", "39"]`.
fn styles_before(line: &str, text: &str) -> Vec<String> {
    let mut styles = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("\x1b[") {
        if without_escapes(&rest[..at]).contains(text) {
            break;
        }
        let after = &rest[at + 2..];
        let Some(end) = after.find('m') else { break };
        styles.push(after[..end].to_string());
        rest = &after[end + 1..];
    }
    styles
}

/// Whether one of the SGR sequences sets `code` (`1` bold, `4`
/// underline, ...).
fn sets(styles: &[String], code: &str) -> bool {
    styles.iter().any(|s| s.split(';').any(|part| part == code))
}

/// The style the line starts with: the parameters of its first SGR
/// sequence (`38;5;9`), empty when it starts plain.
fn first_style(line: &str) -> String {
    line.strip_prefix("\x1b[")
        .and_then(|rest| rest.split_once('m'))
        .map(|(params, _)| params.to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_chat_renders_a_markdown_answer_in_colour() {
    let fx = Fixture::new("markdown_answer").await;
    let mut chat = chat(&fx, &[]).await;
    chat.type_line("explain the plan");
    let screen = chat.wait_for_coloured("✓ 1 step").await;
    let text = without_escapes(&screen);

    // The heading: its text alone, bold and underlined.
    assert!(!text.contains("# Plan"), "{text}");
    let heading = line_with(&screen, "Plan").expect("the heading");
    assert_eq!(without_escapes(heading), "Plan");
    let heading_style = styles_before(heading, "Plan");
    assert!(
        sets(&heading_style, "1") && sets(&heading_style, "4"),
        "{heading:?}"
    );

    // Emphasis and inline code without their marks.
    let sentence = line_with(&screen, "We change").expect("the paragraph");
    assert_eq!(
        without_escapes(sentence),
        "We change one word in notes.txt:"
    );
    assert!(sets(&styles_before(sentence, "one"), "1"), "{sentence:?}");

    // The table's columns aligned (the second right-aligned).
    assert!(text.contains("step │      tool\n"), "{text}");
    assert!(text.contains("one  │ edit_file\n"), "{text}");

    // The code highlighted between its fences.
    let code = line_with(&screen, "fn main() {").expect("the code");
    assert_eq!(without_escapes(code), "fn main() {");
    assert!(
        code.contains("\x1b[38;5;") || code.contains("\x1b[38;2;"),
        "the code is coloured: {code:?}"
    );
    assert!(text.contains("```rust\n"), "{text}");
    assert!(text.contains("Done.\n"), "{text}");
}

#[tokio::test]
async fn an_edit_in_the_chat_is_a_coloured_diff_under_its_path() {
    let fx = Fixture::new("markdown_answer").await;
    std::fs::write(
        fx.workspace().join("notes.txt"),
        "zero\none two three\nfour\n",
    )
    .expect("write notes.txt");
    let mut chat = chat(&fx, &[]).await;
    chat.type_line("edit the notes");
    let screen = chat.wait_for_coloured("✓ 2 steps").await;
    let text = without_escapes(&screen);

    // The model wrote `path` last; the call line starts with it and leaves
    // the strings to the diff.
    assert!(
        text.contains("⏺ edit_file(path: \"notes.txt\")\n"),
        "{text}"
    );
    // The diff as the tool applied it: the hunk with its line numbers,
    // the context, the lines removed and added, each in its colour.
    let hunk = line_with(&screen, "@@ -1,3 +1,3 @@").expect("the hunk header");
    let removed = line_with(&screen, "-one two three").expect("the removed line");
    let added = line_with(&screen, "+one TWO three").expect("the added line");
    let context = line_with(&screen, " zero").expect("a context line");
    let red = ["31", "91", "38;5;1", "38;5;9"];
    let green = ["32", "92", "38;5;2", "38;5;10"];
    let cyan = ["36", "96", "38;5;6", "38;5;14"];
    assert!(red.contains(&first_style(removed).as_str()), "{removed:?}");
    assert!(green.contains(&first_style(added).as_str()), "{added:?}");
    assert!(cyan.contains(&first_style(hunk).as_str()), "{hunk:?}");
    assert!(!red.contains(&first_style(context).as_str()), "{context:?}");
    assert_eq!(
        std::fs::read_to_string(fx.workspace().join("notes.txt")).unwrap(),
        "zero\none TWO three\nfour\n"
    );
}

#[tokio::test]
async fn with_no_color_the_chat_shows_the_markdown_as_written() {
    let fx = Fixture::new("markdown_answer").await;
    let mut chat = chat(&fx, &[("NO_COLOR", "1")]).await;
    chat.type_line("explain the plan");
    let screen = chat.wait_for_coloured("✓ 1 step").await;
    let text = without_escapes(&screen);
    for line in scripted_answer().lines().filter(|l| !l.is_empty()) {
        assert!(text.contains(line), "{line:?} as written in:\n{text}");
    }
    let heading = line_with(&screen, "# Plan").expect("the heading as written");
    // No style of its own (tmux may repeat the default colours).
    let plain = ["0", "39", "49", ""];
    assert!(
        styles_before(heading, "Plan")
            .iter()
            .all(|s| s.split(';').all(|p| plain.contains(&p))),
        "{heading:?}"
    );
}

#[tokio::test]
async fn run_renders_the_answer_on_a_terminal() {
    let fx = Fixture::new("markdown_answer").await;
    let mut run = in_terminal(&fx, &["run", "explain the plan"], &[]);
    let screen = run.wait_for_coloured("Done.").await;
    let text = without_escapes(&screen);
    assert!(
        !text.contains("# Plan") && !text.contains("**one**"),
        "{text}"
    );
    let heading = line_with(&screen, "Plan").expect("the heading");
    assert!(sets(&styles_before(heading, "Plan"), "1"), "{heading:?}");
    let code = line_with(&screen, "fn main() {").expect("the code");
    assert!(code.contains("\x1b[38;"), "{code:?}");
}

#[tokio::test]
async fn run_into_a_pipe_prints_the_answer_exactly_as_written() {
    let fx = Fixture::new("markdown_answer").await;
    let out = fx.run(&["run", "explain the plan"]).await;
    assert_eq!(out.code(), Some(0), "stderr: {}", out.stderr);
    assert_eq!(out.stdout_text(), scripted_answer());
}
