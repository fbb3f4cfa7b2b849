//! Where the interactive chat's renderer writes: straight to the terminal
//! while one of our own inputs runs, or — while the prompt waits for the
//! user — through reedline's external printer, so that events arriving
//! meanwhile (another client's turn on the same session, an MCP server
//! coming up) appear above the prompt without tearing the line being typed.
//!
//! The printer is fed one screen row at a time, each no wider than the
//! terminal: reedline repaints its prompt one row below where it was per
//! message it prints, so a batch of several messages, or one message that
//! wraps, would leave the prompt painted over the output (or the screen
//! scrolled away). Rows wait here, in order, until the printer's queue is
//! empty; [`pump`](Screen::pump) offers the next one. A partial line (a
//! reply still streaming) waits until it is complete or the screen goes
//! back to the terminal. Nothing is dropped. Write plain text above the
//! prompt (no colour codes): rows are measured in characters.

use reedline::ExternalPrinter;
use std::collections::VecDeque;
use std::io::{self, Stdout, Write};
use unicode_width::UnicodeWidthChar;

pub struct Screen<T: Write = Stdout> {
    terminal: T,
    printer: ExternalPrinter<String>,
    above_prompt: bool,
    /// Complete rows not handed to the printer yet.
    rows: VecDeque<String>,
    /// Bytes after the last newline written above the prompt.
    partial: Vec<u8>,
}

impl Screen {
    pub fn new() -> Screen {
        Screen::on(io::stdout())
    }
}

impl<T: Write> Screen<T> {
    /// A screen whose terminal is `terminal`.
    pub fn on(terminal: T) -> Screen<T> {
        Screen {
            terminal,
            printer: ExternalPrinter::new(1),
            above_prompt: false,
            rows: VecDeque::new(),
            partial: Vec::new(),
        }
    }

    /// The printer the line editor must be built with.
    pub fn printer(&self) -> ExternalPrinter<String> {
        self.printer.clone()
    }

    /// From now on, write above the prompt.
    pub fn above_prompt(&mut self) {
        self.above_prompt = true;
    }

    /// Hand the printer the next row if it has printed the last one.
    pub fn pump(&mut self) {
        if !self.printer.receiver().is_empty() {
            return;
        }
        if let Some(row) = self.rows.pop_front()
            && let Err(refused) = self.printer.sender().try_send(row)
        {
            self.rows.push_front(refused.into_inner());
        }
    }

    /// Back to the terminal (the editor has returned): print what the
    /// printer did not get to, the waiting rows, then the partial line.
    pub fn on_terminal(&mut self) -> io::Result<()> {
        self.above_prompt = false;
        while let Some(row) = self.printer.get_line() {
            writeln!(self.terminal, "{row}")?;
        }
        for row in self.rows.drain(..) {
            writeln!(self.terminal, "{row}")?;
        }
        self.terminal.write_all(&self.partial)?;
        self.partial.clear();
        self.terminal.flush()
    }

    fn take_whole_lines(&mut self) {
        let width = crossterm::terminal::size().map_or(80, |(columns, _)| usize::from(columns));
        while let Some(end) = self.partial.iter().position(|b| *b == b'\n') {
            let line = String::from_utf8_lossy(&self.partial[..end]).into_owned();
            self.rows
                .extend(wrap(line.trim_end_matches('\r'), width.saturating_sub(1)));
            self.partial.drain(..=end);
        }
    }
}

impl<T: Write> Write for Screen<T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !self.above_prompt {
            return self.terminal.write(buf);
        }
        self.partial.extend_from_slice(buf);
        self.take_whole_lines();
        self.pump();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.above_prompt {
            self.pump();
            Ok(())
        } else {
            self.terminal.flush()
        }
    }
}

/// `line` cut into rows of at most `width` columns (at least one row, and
/// at least one character per row).
fn wrap(line: &str, width: usize) -> Vec<String> {
    let mut rows = vec![String::new()];
    let mut used = 0;
    for c in line.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width.max(1) && used > 0 {
            rows.push(String::new());
            used = 0;
        }
        if let Some(row) = rows.last_mut() {
            row.push(c);
        }
        used += w;
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(printer: &ExternalPrinter<String>, screen: &mut Screen<Vec<u8>>) -> Vec<String> {
        let mut rows = Vec::new();
        loop {
            screen.pump();
            match printer.get_line() {
                Some(row) => rows.push(row),
                None => return rows,
            }
        }
    }

    #[test]
    fn rows_reach_the_printer_one_at_a_time_and_in_order() {
        let mut screen = Screen::on(Vec::new());
        let printer = screen.printer();
        screen.above_prompt();
        screen.write_all("> hello\nThe rep".as_bytes()).unwrap();
        screen
            .write_all("ly ends.\r\nsecond\nnext".as_bytes())
            .unwrap();
        assert_eq!(printer.receiver().len(), 1, "one row queued at a time");
        assert_eq!(
            printed(&printer, &mut screen),
            ["> hello", "The reply ends.", "second"]
        );
        assert_eq!(screen.partial, b"next");
    }

    #[test]
    fn back_on_the_terminal_nothing_waits() {
        let mut screen = Screen::on(Vec::new());
        let printer = screen.printer();
        screen.above_prompt();
        screen.write_all(b"one\ntwo\nthr").unwrap();
        assert_eq!(printer.receiver().len(), 1);
        screen.on_terminal().unwrap();
        assert!(printer.get_line().is_none());
        assert!(screen.rows.is_empty() && screen.partial.is_empty());
        screen.write_all(b"ee, direct").unwrap();
        assert!(printer.get_line().is_none());
        assert_eq!(screen.terminal, b"one\ntwo\nthree, direct");
    }

    #[test]
    fn long_lines_wrap_by_display_width() {
        assert_eq!(wrap("abcdefg", 3), ["abc", "def", "g"]);
        assert_eq!(wrap("", 3), [""]);
        assert_eq!(wrap("日本語", 4), ["日本", "語"]);
        assert_eq!(wrap("abc", 0), ["a", "b", "c"]);
    }
}
