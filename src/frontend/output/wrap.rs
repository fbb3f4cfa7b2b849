//! Command replies (`/tools`, `/help`, `/models`, ...) broken at word
//! boundaries to the terminal's width, so a long line never wraps in the
//! middle of a word; a listing's continuation lines start under its
//! description. Output that is not a terminal is left as it is, and so is
//! JSON (`/debug full`), which must stay copyable.

use std::io::IsTerminal;
use unicode_width::UnicodeWidthStr;

/// `text` wrapped to the width of the terminal stdout is, if it is one.
pub fn to_terminal(text: &str) -> String {
    if text.trim_start().starts_with('{') {
        return text.to_string();
    }
    wrap(text, terminal_width(std::io::stdout().is_terminal()))
}

/// `text` wrapped to the width of the terminal stderr is, if it is one.
pub fn to_stderr(text: &str) -> String {
    wrap(text, terminal_width(std::io::stderr().is_terminal()))
}

/// The terminal's width when the stream is one; `None` otherwise.
fn terminal_width(is_terminal: bool) -> Option<usize> {
    if !is_terminal {
        return None;
    }
    crossterm::terminal::size()
        .ok()
        .map(|(columns, _)| usize::from(columns))
        .filter(|columns| *columns >= 20)
}

/// Each line of `text` longer than `width` columns broken at spaces. The
/// continuation lines are indented to where the description of a listing
/// line starts (after its ` — `), else two columns past the line's own
/// indentation. A word longer than the room stays whole. `None`: as is.
pub fn wrap(text: &str, width: Option<usize>) -> String {
    let Some(width) = width else {
        return text.to_string();
    };
    text.lines()
        .map(|line| wrap_line(line, width))
        .collect::<Vec<_>>()
        .join("\n")
}

fn wrap_line(line: &str, width: usize) -> String {
    if line.width() <= width {
        return line.to_string();
    }
    let own = line.len() - line.trim_start().len();
    let hanging = hanging_indent(line, own);
    // A description that would start past half the width gets more room.
    let hanging = if hanging > width / 2 {
        own + 4
    } else {
        hanging
    };
    let mut lines = Vec::new();
    let mut current = line[..own].to_string();
    let mut current_width = own;
    let mut empty = true;
    for (gap, word) in words(&line[own..]) {
        let word_width = word.width();
        if !empty && current_width + gap.width() + word_width > width {
            lines.push(std::mem::take(&mut current));
            current = " ".repeat(hanging);
            current_width = hanging;
            empty = true;
        }
        if !empty {
            // The spacing between words stays as written (aligned columns).
            current.push_str(gap);
            current_width += gap.width();
        }
        current.push_str(word);
        current_width += word_width;
        empty = false;
    }
    lines.push(current);
    lines.join("\n")
}

/// Where a wrapped line's continuations start: under a listing's
/// description (after ` — `), under a numbered item's text (`2. `), under
/// the second column of a `label   value` line, else two columns in.
fn hanging_indent(line: &str, own: usize) -> usize {
    if let Some(at) = line.find(" — ") {
        return line[..at + " — ".len()].width();
    }
    let rest = &line[own..];
    if let Some(at) = rest
        .find(". ")
        .filter(|&at| at > 0 && rest[..at].bytes().all(|b| b.is_ascii_digit()))
    {
        return own + at + ". ".len();
    }
    if let Some(at) = rest.find("  ") {
        let after = rest[at..].len() - rest[at..].trim_start().len();
        return (line[..own + at].width()) + after;
    }
    own + 2
}

/// The words of `text`, each with the spaces before it.
fn words(text: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let word_start = rest.len() - rest.trim_start_matches(' ').len();
        let gap = &rest[..word_start];
        let after = &rest[word_start..];
        if after.is_empty() {
            break;
        }
        let word_end = after.find(' ').unwrap_or(after.len());
        out.push((gap, &after[..word_end]));
        rest = &after[word_end..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_wraps_at_words_under_its_description() {
        let text =
            "8 tools:\n  read_file [built-in] — Read a text file with numbered lines and more.";
        let wrapped = wrap(text, Some(50));
        let under = " ".repeat(25);
        assert_eq!(
            wrapped,
            format!(
                "8 tools:\n  read_file [built-in] — Read a text file with\n{under}numbered lines and more."
            )
        );
        for line in wrapped.lines() {
            assert!(line.width() <= 50, "{line:?}");
        }
    }

    #[test]
    fn words_are_never_cut_and_nothing_is_lost() {
        let text = "  bash [built-in] — Run a command: supercalifragilisticexpialidocious words";
        let wrapped = wrap(text, Some(30));
        let words = |t: &str| t.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(words(&wrapped), words(text));
        assert!(
            wrapped
                .lines()
                .any(|l| l.trim() == "supercalifragilisticexpialidocious")
        );
    }

    #[test]
    fn a_numbered_item_continues_under_its_text() {
        let wrapped = wrap(
            "  2. use a hosted model: set the key then pick it",
            Some(30),
        );
        assert_eq!(
            wrapped,
            "  2. use a hosted model: set\n     the key then pick it"
        );
    }

    #[test]
    fn aligned_columns_keep_their_spacing_and_continue_under_the_value() {
        let wrapped = wrap(
            "  context       no request yet; the budget is 3584 tokens",
            Some(40),
        );
        assert_eq!(
            wrapped,
            "  context       no request yet; the\n                budget is 3584 tokens"
        );
    }

    #[test]
    fn not_a_terminal_means_not_wrapped() {
        let text = "  read_file [built-in] — Read a text file with numbered lines.";
        assert_eq!(wrap(text, None), text);
        assert_eq!(wrap("short", Some(40)), "short");
    }
}
