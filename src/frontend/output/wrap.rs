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
    // A numbered item (`  2. ...`) continues under its text.
    let rest = &line[own..];
    let item = rest
        .find(". ")
        .filter(|&at| at > 0 && rest[..at].bytes().all(|b| b.is_ascii_digit()))
        .map(|at| own + at + ". ".len());
    let hanging = match line.find(" — ") {
        Some(at) => line[..at + " — ".len()].width(),
        None => item.unwrap_or(own + 2),
    };
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
    for word in line[own..].split(' ').filter(|w| !w.is_empty()) {
        let word_width = word.width();
        if !empty && current_width + 1 + word_width > width {
            lines.push(std::mem::take(&mut current));
            current = " ".repeat(hanging);
            current_width = hanging;
            empty = true;
        }
        if !empty {
            current.push(' ');
            current_width += 1;
        }
        current.push_str(word);
        current_width += word_width;
        empty = false;
    }
    lines.push(current);
    lines.join("\n")
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
    fn not_a_terminal_means_not_wrapped() {
        let text = "  read_file [built-in] — Read a text file with numbered lines.";
        assert_eq!(wrap(text, None), text);
        assert_eq!(wrap("short", Some(40)), "short");
    }
}
