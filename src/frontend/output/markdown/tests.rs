//! The Markdown renderer element by element, and streamed: however a reply
//! is split into deltas, the lines come out the same as from one chunk.

use super::blocks::Layout;
use super::stream::MarkdownStream;

const WIDTH: usize = 60;

fn layout(width: usize) -> Layout {
    Layout {
        width,
        truecolor: false,
    }
}

fn rendered(text: &str) -> Vec<String> {
    MarkdownStream::render_all(text, layout(WIDTH))
}

/// A line without its escape codes.
pub fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ params final
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

fn plain_lines(text: &str) -> Vec<String> {
    rendered(text).iter().map(|l| plain(l)).collect()
}

#[test]
fn headings_lose_their_marks_and_are_bold() {
    let lines = rendered("# Title\n\n## Part\n\n### Small\n\n#### Least");
    assert_eq!(lines[0], "\x1b[1;4mTitle\x1b[0m");
    assert_eq!(lines[2], "\x1b[1mPart\x1b[0m");
    assert_eq!(lines[4], "\x1b[1;3mSmall\x1b[0m");
    assert_eq!(lines[6], "\x1b[3mLeast\x1b[0m");
    assert_eq!(lines[1], "", "a blank line between blocks");
    // A setext heading too.
    assert_eq!(rendered("Title\n===")[0], "\x1b[1;4mTitle\x1b[0m");
}

#[test]
fn emphasis_strong_strikethrough_and_inline_code() {
    let lines = rendered("*it* **bold** ~~gone~~ `code` ***both***");
    assert_eq!(
        lines,
        [
            "\x1b[3mit\x1b[0m \x1b[1mbold\x1b[0m \x1b[9mgone\x1b[0m \x1b[36mcode\x1b[0m \x1b[1;3mboth\x1b[0m"
        ]
    );
}

#[test]
fn links_show_their_text_and_address() {
    let lines: Vec<String> = MarkdownStream::render_all(
        "See [the docs](https://example.com/docs), <https://example.com> and [ref][r].\n\n[r]: https://example.com/ref",
        layout(200),
    )
    .iter()
    .map(|l| plain(l))
    .collect();
    assert_eq!(
        lines[0],
        "See the docs (https://example.com/docs), https://example.com and [ref][r]."
    );
    let colored = rendered("[the docs](https://e.com)");
    assert_eq!(
        colored[0],
        "\x1b[4;34mthe docs\x1b[0m\x1b[2m (https://e.com)\x1b[0m"
    );
    // A definition after its use does not resolve (the use was shown
    // before it came); the definition stays visible, dimmed.
    assert_eq!(lines[2], "[r]: https://example.com/ref");
    // A definition before its use resolves.
    let lines = plain_lines("[r]: https://example.com/ref\n\nSee [ref][r].");
    assert_eq!(
        lines,
        [
            "[r]: https://example.com/ref",
            "",
            "See ref (https://example.com/ref)."
        ]
    );
    // An image is never drawn: its alt text and where it is.
    assert_eq!(
        plain_lines("![a cat](cat.png)"),
        ["[image: a cat] (cat.png)"]
    );
}

#[test]
fn paragraphs_wrap_to_the_width() {
    let text = "word ".repeat(30);
    let lines = MarkdownStream::render_all(&text, layout(20));
    assert!(lines.len() > 5);
    assert!(lines.iter().all(|l| l.chars().count() <= 20), "{lines:?}");
    // Soft breaks are spaces; hard breaks end the line.
    assert_eq!(plain_lines("one\ntwo  \nthree"), ["one two", "three"]);
}

#[test]
fn lists_nested_numbered_and_tasks() {
    let text = "- one\n- two\n  - inner\n    - deepest\n- three\n\n3. third\n4. fourth\n   1. sub\n\n- [ ] todo\n- [x] done";
    assert_eq!(
        plain_lines(text),
        [
            "• one",
            "• two",
            "  ◦ inner",
            "    ▪ deepest",
            "• three",
            "",
            "3. third",
            "4. fourth",
            "   1. sub",
            "",
            "• ☐ todo",
            "• ☑ done",
        ]
    );
    // Continuation lines hang under the item's text.
    let long = format!("1. {}", "word ".repeat(10));
    let lines: Vec<String> = MarkdownStream::render_all(&long, layout(20))
        .iter()
        .map(|l| plain(l))
        .collect();
    assert_eq!(lines[0], "1. word word word");
    assert!(
        lines[1..].iter().all(|l| l.starts_with("   word")),
        "{lines:?}"
    );
    // A loose list looks like a tight one; its items' paragraphs apart.
    assert_eq!(
        plain_lines("- a\n\n- b\n\n  more of b"),
        ["• a", "• b", "", "  more of b"]
    );
}

#[test]
fn block_quotes_have_a_bar() {
    assert_eq!(
        plain_lines("> quoted\n> still\n>\n> second\n>> nested"),
        ["│ quoted still", "│", "│ second", "│", "│ │ nested"]
    );
}

#[test]
fn tables_align_their_columns() {
    let text =
        "| Name | Qty | Note |\n|:-----|----:|:----:|\n| apple | 3 | red |\n| kiwi | 12 | x |";
    assert_eq!(
        plain_lines(text),
        [
            "Name  │ Qty │ Note",
            "──────┼─────┼─────",
            "apple │   3 │ red",
            "kiwi  │  12 │  x",
        ]
    );
    let lines = rendered(text);
    assert!(
        lines[0].contains("\x1b[1mName\x1b[0m"),
        "the header is bold"
    );
}

#[test]
fn tables_narrow_to_fit_the_width() {
    let text = format!(
        "| a | b |\n|---|---|\n| {} | short |",
        "long words in this cell ".repeat(3).trim()
    );
    let lines: Vec<String> = MarkdownStream::render_all(&text, layout(40))
        .iter()
        .map(|l| plain(l))
        .collect();
    assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:#?}");
    assert!(lines.len() > 3, "the long cell wraps: {lines:#?}");
    assert!(lines.iter().skip(2).all(|l| l.contains(" │")), "{lines:#?}");
}

#[test]
fn fenced_code_is_highlighted_between_its_fences() {
    let lines = rendered("```rust\nfn main() {\n    let x = 1;\n}\n```");
    assert_eq!(lines[0], "\x1b[2m```rust\x1b[0m");
    assert_eq!(plain(&lines[1]), "fn main() {");
    assert!(lines[1].contains("\x1b[38;5;"), "{:?}", lines[1]);
    assert_eq!(plain(&lines[2]), "    let x = 1;");
    assert_eq!(lines[4], "\x1b[2m```\x1b[0m");
    assert_eq!(lines.len(), 5);
    // Unknown language or none: the code as it is.
    assert_eq!(
        rendered("```\nplain <text>\n```"),
        ["\x1b[2m```\x1b[0m", "plain <text>", "\x1b[2m```\x1b[0m"]
    );
    // Indented code keeps its indent.
    assert_eq!(
        plain_lines("    indented\n    code"),
        ["    indented", "    code"]
    );
}

#[test]
fn rules_and_html_are_shown() {
    assert_eq!(plain_lines("a\n\n---\n\nb")[2], "─".repeat(WIDTH));
    assert_eq!(plain_lines("<div>\nhi\n</div>"), ["<div>", "hi", "</div>"]);
}

#[test]
fn escape_sequences_in_the_text_never_reach_the_terminal() {
    let lines = rendered("evil \x1b]0;title\x07 text");
    assert!(
        !lines[0].contains('\x07') && !lines[0].contains("\x1b]"),
        "{lines:?}"
    );
}

/// A reply with every kind of block, and awkward places to split it.
pub const SAMPLE: &str = "# Streaming test\n\nSome *emphasis* and **strong** text with `code`, a [link](https://example.com).\n\n- first item\n- second item\n  - nested item\n- third\n\n1. one\n2. two\n\n> a quote\n> over lines\n\n| col a | col b |\n|-------|------:|\n| 1 | 2 |\n| three | four |\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n\nAfter the code.\n\n---\n\n[r]: https://example.com/r\n\nLast [ref][r] line without newline";

/// Constructs whose end is easy to get wrong: quotes apart by a blank
/// line, a loose list with a fence inside an item, a table right after a
/// paragraph, indented code with a blank line inside, HTML, a setext
/// heading, a list that changes its marker, a fence never closed.
pub const TRICKY: &str = "> a\n\n> b\nlazy\n\n1. one\n\n   ```py\n   x = 1\n   ```\n2. two\n10. ten\n\ntext before\n| a | b |\n|---|---|\n| 1 | 2 |\nafter\n\n    code\n\n    more code\n\n<div>\n*x*\n</div>\n\nSetext\n------\n- a\n- b\n* c\n\n```\nnever closed\n";

fn streamed(chunks: &[&str], width: usize) -> Vec<String> {
    let mut stream = MarkdownStream::new(layout(width));
    let mut lines = Vec::new();
    for chunk in chunks {
        lines.extend(stream.push(chunk));
    }
    lines.extend(stream.finish());
    lines
}

#[test]
fn streaming_in_any_split_gives_the_lines_of_one_chunk() {
    let whole = rendered(SAMPLE);
    // Split once at every place (mid-word, mid-fence, mid-table, ...).
    for (at, _) in SAMPLE.char_indices().skip(1) {
        let (a, b) = SAMPLE.split_at(at);
        assert_eq!(streamed(&[a, b], WIDTH), whole, "split at {at}: {a:?}");
    }
    // A character at a time.
    let chars: Vec<String> = SAMPLE.chars().map(String::from).collect();
    let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(streamed(&refs, WIDTH), whole);
    // In pieces of every size up to 16.
    for size in 2..16 {
        let pieces: Vec<String> = chars.chunks(size).map(|c| c.concat()).collect();
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(streamed(&refs, WIDTH), whole, "pieces of {size}");
    }
}

#[test]
fn tricky_endings_stream_as_they_render_whole() {
    let whole = rendered(TRICKY);
    for (at, _) in TRICKY.char_indices().skip(1) {
        let (a, b) = TRICKY.split_at(at);
        assert_eq!(streamed(&[a, b], WIDTH), whole, "split at {at}: {a:?}");
    }
    let chars: Vec<String> = TRICKY.chars().map(String::from).collect();
    let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
    assert_eq!(streamed(&refs, WIDTH), whole);
}

#[test]
fn final_blocks_come_out_while_the_reply_streams() {
    let mut stream = MarkdownStream::new(layout(WIDTH));
    assert!(stream.push("# Title\n").len() == 1, "a heading at once");
    assert!(stream.push("Para").is_empty());
    assert_eq!(stream.pending(), "\nPara");
    assert!(stream.push("graph\n").is_empty(), "a paragraph may go on");
    assert_eq!(stream.push("\n"), ["", "Paragraph"], "until a blank line");
    // A fence line by line.
    assert_eq!(stream.push("```sh\n").len(), 2, "blank line and the fence");
    assert_eq!(stream.push("echo hi\n").len(), 1);
    assert_eq!(stream.push("ec").len(), 0);
    assert_eq!(stream.pending(), "ec");
    assert_eq!(stream.push("ho there\n").len(), 1);
    assert_eq!(stream.push("```\n").len(), 1, "the closing fence");
    // A list item by item.
    assert_eq!(stream.push("- a\n").len(), 0);
    assert_eq!(stream.pending(), "\n- a\n");
    assert_eq!(stream.push("- b\n").len(), 2, "blank line and item a");
    assert_eq!(stream.pending(), "- b\n");
    assert_eq!(stream.push("- c\n").len(), 1);
    assert_eq!(stream.finish().len(), 1);
    assert_eq!(stream.pending(), "");
}

#[test]
fn narrow_and_wide_terminals_stream_alike() {
    for width in [12, 30, 200] {
        let whole = MarkdownStream::render_all(SAMPLE, layout(width));
        let chars: Vec<String> = SAMPLE.chars().map(String::from).collect();
        let pieces: Vec<String> = chars.chunks(7).map(|c| c.concat()).collect();
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(streamed(&refs, width), whole, "width {width}");
    }
}
