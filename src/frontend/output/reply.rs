//! A reply on the terminal while it streams, as Markdown: the lines
//! [`MarkdownStream`] has made final are written once and stay; below them
//! the unfinished rest is shown plain as it arrives, and when more of it
//! becomes final that plain tail is erased (cursor up, clear to the end of
//! the screen) and the rendered lines take its place. Nothing above the
//! tail is ever redrawn, so a long reply neither flickers nor scrolls back.
//!
//! The tail is only ever as tall as the screen less a row: its first row
//! must still be on the screen to be erased. A longer unfinished block (a
//! paragraph taller than the screen) shows what fits, and the rest appears
//! rendered when the block is complete.
//!
//! Returns text to write (`\n` for new lines); writes nothing itself.

use super::markdown::{Layout, MarkdownStream};
use unicode_width::UnicodeWidthChar;

/// The size of the screen, in character cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScreenSize {
    pub columns: usize,
    pub rows: usize,
}

impl ScreenSize {
    /// The terminal's (80×24 when it cannot be asked).
    pub fn of_terminal() -> ScreenSize {
        let (columns, rows) = crossterm::terminal::size().unwrap_or((80, 24));
        ScreenSize {
            columns: usize::from(columns.max(1)),
            rows: usize::from(rows.max(1)),
        }
    }

    /// How Markdown is laid out on it (a column spare: a line that fills
    /// the last column wraps early on some terminals).
    pub fn layout(self) -> Layout {
        Layout {
            width: self.columns.saturating_sub(1).max(10),
            truecolor: truecolor(),
        }
    }
}

/// Whether the terminal says it takes 24-bit colour.
pub fn truecolor() -> bool {
    std::env::var("COLORTERM").is_ok_and(|v| v == "truecolor" || v == "24bit")
}

/// Rows `text` takes when written from the start of a row on a screen
/// `columns` wide (the cursor ends on the last of them).
pub fn rows_taken(text: &str, columns: usize) -> usize {
    text.split('\n').map(|line| wrapped(line, columns).0).sum()
}

/// The rows one line takes and the column it ends at: a character that
/// does not fit on a row starts the next, as the terminal wraps it.
fn wrapped(line: &str, columns: usize) -> (usize, usize) {
    let (mut rows, mut column) = (1, 0);
    for c in line.chars() {
        let w = c.width().unwrap_or(0);
        if column + w > columns.max(1) && column > 0 {
            rows += 1;
            column = 0;
        }
        column += w;
    }
    (rows, column)
}

/// One streaming reply and its plain tail on the screen.
pub struct LiveReply {
    stream: MarkdownStream,
    /// The plain text below the rendered lines now (the start of
    /// [`MarkdownStream::pending`], all of it unless it grew too tall).
    on_screen: String,
    size: ScreenSize,
}

impl LiveReply {
    pub fn new(size: ScreenSize) -> LiveReply {
        LiveReply {
            stream: MarkdownStream::new(size.layout()),
            on_screen: String::new(),
            size,
        }
    }

    /// More text: what to write.
    pub fn push(&mut self, delta: &str) -> String {
        let lines = self.stream.push(delta);
        let pending = self.stream.pending();
        if lines.is_empty() && pending.starts_with(&self.on_screen) {
            return self.extend_tail(&pending);
        }
        let mut out = self.hide();
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
        out.push_str(&self.extend_tail(&pending));
        out
    }

    /// The reply is complete: what to write (the tail replaced by the
    /// last rendered lines).
    pub fn finish(&mut self) -> String {
        let mut out = self.hide();
        for line in self.stream.finish() {
            out.push_str(&line);
            out.push('\n');
        }
        out
    }

    /// Take the plain tail off the screen (something else is about to be
    /// written there): what to write.
    pub fn hide(&mut self) -> String {
        if self.on_screen.is_empty() {
            return String::new();
        }
        let up = rows_taken(&self.on_screen, self.size.columns) - 1;
        self.on_screen.clear();
        if up == 0 {
            "\r\x1b[J".to_string()
        } else {
            format!("\r\x1b[{up}A\x1b[J")
        }
    }

    /// Put the plain tail back after [`hide`](Self::hide): what to write.
    pub fn show(&mut self) -> String {
        let pending = self.stream.pending();
        self.extend_tail(&pending)
    }

    /// The part of `pending` past what is on the screen, as much as fits.
    fn extend_tail(&mut self, pending: &str) -> String {
        let limit = self.size.rows.saturating_sub(1).max(1);
        let more = &pending[self.on_screen.len().min(pending.len())..];
        let mut candidate = self.on_screen.clone();
        candidate.push_str(more);
        if rows_taken(&candidate, self.size.columns) <= limit {
            self.on_screen = candidate;
            return more.to_string();
        }
        // Too tall: as much as fits, following the rows as the terminal
        // fills them.
        let columns = self.size.columns.max(1);
        let mut rows = rows_taken(&self.on_screen, columns);
        let last = self.on_screen.rsplit('\n').next().unwrap_or("");
        let mut column = wrapped(last, columns).1;
        let mut added = String::new();
        for c in more.chars() {
            let w = if c == '\n' { 0 } else { c.width().unwrap_or(0) };
            if c == '\n' || (column + w > columns && column > 0) {
                if rows >= limit {
                    break;
                }
                rows += 1;
                column = 0;
            }
            column += w;
            added.push(c);
        }
        self.on_screen.push_str(&added);
        added
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: ScreenSize = ScreenSize {
        columns: 20,
        rows: 10,
    };

    #[test]
    fn rows_count_wrapped_lines() {
        assert_eq!(rows_taken("", 10), 1);
        assert_eq!(rows_taken("abc", 10), 1);
        assert_eq!(rows_taken("abc\n", 10), 2);
        assert_eq!(rows_taken(&"x".repeat(10), 10), 1);
        assert_eq!(rows_taken(&"x".repeat(11), 10), 2);
        assert_eq!(rows_taken("a\n\nb", 10), 3);
        // A wide character that does not fit starts the next row.
        assert_eq!(rows_taken("ab日日日", 3), 4);
    }

    #[test]
    fn the_tail_streams_plain_and_is_replaced_once_final() {
        let mut reply = LiveReply::new(SIZE);
        assert_eq!(reply.push("Some **bo"), "Some **bo");
        assert_eq!(reply.push("ld** text"), "ld** text");
        let out = reply.push("\n\nNext");
        // Erased (the tail is one row), then rendered.
        assert!(out.starts_with("\r\x1b[J"), "{out:?}");
        assert!(out.contains("Some \x1b[1mbold\x1b[0m text\n"), "{out:?}");
        assert!(out.ends_with("\nNext"), "{out:?}");
        let end = reply.finish();
        assert!(end.starts_with("\r\x1b[1A\x1b[J"), "{end:?}");
        assert!(end.ends_with("\nNext\n"), "{end:?}");
    }

    #[test]
    fn a_tail_taller_than_the_screen_stops_at_its_last_row() {
        let mut reply = LiveReply::new(ScreenSize {
            columns: 10,
            rows: 4,
        });
        let shown = reply.push(&"word ".repeat(20));
        assert_eq!(rows_taken(&shown, 10), 3, "{shown:?}");
        assert_eq!(reply.push("more"), "");
        let end = reply.finish();
        assert!(end.starts_with("\r\x1b[2A\x1b[J"), "{end:?}");
    }

    #[test]
    fn hidden_and_shown_again_around_other_output() {
        let mut reply = LiveReply::new(SIZE);
        reply.push("partial");
        assert_eq!(reply.hide(), "\r\x1b[J");
        assert_eq!(reply.hide(), "");
        assert_eq!(reply.show(), "partial");
    }
}
