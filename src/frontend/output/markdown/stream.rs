//! A reply's Markdown as it streams: text deltas go in, rendered lines
//! come out as soon as what they show can no longer change.
//!
//! Only whole lines are read (a partial last line can mean anything), and
//! the source is cut into top-level blocks with pulldown-cmark. A block is
//! final once a later block has begun — CommonMark never reopens a closed
//! block — or, while it is the last one, when its own end is plain: a
//! heading or rule at once, a paragraph, table or quote at the blank line
//! after it, a fenced code block at its closing fence. Two blocks stream
//! inside themselves: a top-level fenced code block line by line (a line of
//! code is final when it ends), and a top-level list item by item (an item
//! is final when the next one begins). Everything else waits whole; the
//! caller shows the unfinished rest plain ([`MarkdownStream::pending`]).
//!
//! Each final block is parsed again on its own (with the link reference
//! definitions seen before it) and rendered. So the output is the same
//! however the text was split into deltas — one chunk or a character at
//! a time — and nothing rendered is ever redrawn.

use super::blocks::{
    self, Block, Definitions, Layout, code_lines, fence_close, fence_language, fence_open,
    item_lines, normalize_label, options,
};
use super::code::CodeHighlighter;
use super::styled::{self, Line, Span, Style};
use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};
use std::ops::Range;

/// What a top-level block is, as far as streaming goes.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// Fenced code: its info string and the code read so far.
    Fence { info: String, code: String },
    /// Its items' source ranges.
    List {
        start: Option<u64>,
        items: Vec<Range<usize>>,
    },
    /// Ends at the blank line after it.
    EndsAtBlankLine,
    /// One line (ATX heading, rule) or two (setext heading): ends with it.
    Line,
    /// Ends only when something else begins (indented code, HTML).
    Other,
}

#[derive(Clone, Debug)]
struct Top {
    range: Range<usize>,
    kind: Kind,
}

/// The top-level blocks of `source`.
fn top_level(source: &str) -> Vec<Top> {
    let mut tops = Vec::new();
    let mut depth = 0usize;
    let mut current: Option<Top> = None;
    for (event, range) in Parser::new_ext(source, options()).into_offset_iter() {
        match event {
            Event::Start(tag) => {
                if depth == 0 {
                    let kind = match &tag {
                        Tag::CodeBlock(CodeBlockKind::Fenced(info)) => Kind::Fence {
                            info: info.to_string(),
                            code: String::new(),
                        },
                        Tag::List(start) => Kind::List {
                            start: *start,
                            items: Vec::new(),
                        },
                        Tag::Paragraph | Tag::Table(_) | Tag::BlockQuote(_) => {
                            Kind::EndsAtBlankLine
                        }
                        Tag::Heading { .. } => Kind::Line,
                        _ => Kind::Other,
                    };
                    current = Some(Top {
                        range: range.clone(),
                        kind,
                    });
                } else if depth == 1
                    && matches!(tag, Tag::Item)
                    && let Some(Top {
                        kind: Kind::List { items, .. },
                        ..
                    }) = current.as_mut()
                {
                    items.push(range.clone());
                }
                depth += 1;
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                if depth == 0
                    && let Some(mut top) = current.take()
                {
                    top.range = top.range.start..range.end.max(top.range.end);
                    tops.push(top);
                }
            }
            Event::Text(text) if depth == 1 => {
                if let Some(Top {
                    kind: Kind::Fence { code, .. },
                    ..
                }) = current.as_mut()
                {
                    code.push_str(&text);
                }
            }
            Event::Rule if depth == 0 => tops.push(Top {
                range,
                kind: Kind::Line,
            }),
            _ => {}
        }
    }
    tops
}

/// Where the line holding `at` starts.
fn line_start(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].rfind('\n').map_or(0, |i| i + 1)
}

/// Where the line holding the last byte of `range` ends (after its
/// newline).
fn line_end(text: &str, range: &Range<usize>) -> usize {
    let last = range.end.max(range.start + 1).min(text.len()) - 1;
    match text[last..].find('\n') {
        Some(i) => last + i + 1,
        None => text.len(),
    }
}

fn is_blank(text: &str) -> bool {
    text.trim().is_empty()
}

/// Whether the fenced block `source` (its first line the opening fence)
/// has its closing fence.
fn fence_closed(source: &str) -> bool {
    let mut lines = source.trim_end_matches('\n').split('\n');
    let Some(open) = lines.next() else {
        return false;
    };
    let open = open.trim_start_matches(' ');
    let Some(mark) = open.chars().next().filter(|c| *c == '`' || *c == '~') else {
        return false;
    };
    let length = open.chars().take_while(|c| *c == mark).count();
    let Some(last) = lines.next_back() else {
        return false;
    };
    let indent = last.len() - last.trim_start_matches(' ').len();
    let last = last.trim_start_matches(' ');
    let run = last.chars().take_while(|c| *c == mark).count();
    indent <= 3 && run >= length && is_blank(&last[run * mark.len_utf8()..])
}

/// A top-level fenced block partly written: its highlighter, and how many
/// lines of code are out.
struct OpenFence {
    highlighter: CodeHighlighter,
    lines: usize,
}

/// A top-level list partly read: the number of its next item, and
/// whether an item is out (the blank line before the list with it).
struct OpenList {
    next: Option<u64>,
    started: bool,
}

/// One reply's Markdown, streamed.
pub struct MarkdownStream {
    text: String,
    /// The source before this offset is written, and final.
    done: usize,
    /// The source before this offset is shown rendered (past `done` while
    /// a fence streams).
    shown: usize,
    /// Top-level blocks written (a blank line goes before the next).
    blocks: usize,
    fence: Option<OpenFence>,
    list: Option<OpenList>,
    definitions: Definitions,
    layout: Layout,
}

impl MarkdownStream {
    pub fn new(layout: Layout) -> MarkdownStream {
        MarkdownStream {
            text: String::new(),
            done: 0,
            shown: 0,
            blocks: 0,
            fence: None,
            list: None,
            definitions: Definitions::new(),
            layout,
        }
    }

    /// The whole of `text` rendered at once.
    pub fn render_all(text: &str, layout: Layout) -> Vec<String> {
        let mut stream = MarkdownStream::new(layout);
        let mut lines = stream.push(text);
        lines.extend(stream.finish());
        lines
    }

    /// More of the reply; returns the lines that are now final.
    pub fn push(&mut self, delta: &str) -> Vec<String> {
        self.text.push_str(delta);
        if delta.contains('\n') {
            self.advance(false)
        } else {
            Vec::new()
        }
    }

    /// The reply is complete: the rest of its lines.
    pub fn finish(&mut self) -> Vec<String> {
        self.advance(true)
    }

    /// What is not rendered yet, to show as it is (control characters
    /// removed); empty when nothing is. Blank lines before it are shown as
    /// one, as the blank line before the block it will be.
    pub fn pending(&self) -> String {
        let rest = &self.text[self.shown.min(self.text.len())..];
        let mut start = 0;
        for line in rest.split_inclusive('\n') {
            if !is_blank(line) || !line.ends_with('\n') {
                break;
            }
            start += line.len();
        }
        let rest = &rest[start..];
        if rest.is_empty() {
            return String::new();
        }
        let rest = styled::sanitize(rest);
        let inside = self.fence.is_some() || self.list.as_ref().is_some_and(|l| l.started);
        if self.blocks > 0 && !inside {
            format!("\n{rest}")
        } else {
            rest
        }
    }

    fn paint(&self, lines: Vec<Line>, out: &mut Vec<String>) {
        out.extend(
            lines
                .iter()
                .map(|l| styled::to_ansi(l, self.layout.truecolor)),
        );
    }

    /// A new top-level block begins: a blank line before it unless it is
    /// the first.
    fn separate(&mut self, out: &mut Vec<String>) {
        if self.blocks > 0 {
            out.push(String::new());
        }
        self.blocks += 1;
    }

    /// Text between blocks that is not a block: link reference
    /// definitions. They are kept for the blocks after them, and shown
    /// dimmed.
    fn gap(&mut self, gap: &str, out: &mut Vec<String>) {
        if is_blank(gap) {
            return;
        }
        let parser = Parser::new_ext(gap, options());
        for (label, definition) in parser.reference_definitions().iter() {
            let title = definition.title.as_deref().unwrap_or("").to_string();
            self.definitions
                .insert(normalize_label(label), (definition.dest.to_string(), title));
        }
        self.list = None;
        self.separate(out);
        let lines = gap
            .lines()
            .filter(|l| !is_blank(l))
            .map(|l| vec![Span::new(styled::sanitize(l.trim()), Style::dimmed())])
            .collect();
        self.paint(lines, out);
    }

    fn advance(&mut self, last: bool) -> Vec<String> {
        let end = if last {
            self.text.len()
        } else {
            self.text.rfind('\n').map_or(0, |i| i + 1)
        };
        let mut out = Vec::new();
        if end <= self.done {
            return out;
        }
        let base = self.done;
        let region = self.text[base..end].to_string();
        let tops = top_level(&region);
        let mut cursor = 0;
        for (i, top) in tops.iter().enumerate() {
            let start = line_start(&region, top.range.start).max(cursor);
            self.gap(&region[cursor..start], &mut out);
            cursor = start;
            self.done = base + cursor;
            self.shown = self.done;
            let stop = line_end(&region, &top.range);
            let source = &region[start..stop];
            let closed = last
                || i + 1 < tops.len()
                || match &top.kind {
                    Kind::Line => true,
                    Kind::EndsAtBlankLine => stop < region.len(),
                    Kind::Fence { .. } => fence_closed(source),
                    Kind::List { .. } | Kind::Other => false,
                };
            match &top.kind {
                Kind::Fence { info, code } => {
                    self.fence_lines(info, code, &mut out);
                    if !closed {
                        self.shown = base + region.len();
                        break;
                    }
                    self.fence = None;
                    out.push(styled::to_ansi(&fence_close(), self.layout.truecolor));
                }
                Kind::List { start, items } => {
                    let numbered =
                        start.map(|n| self.list.as_ref().and_then(|l| l.next).unwrap_or(n));
                    if self.list.is_none() {
                        self.list = Some(OpenList {
                            next: numbered,
                            started: false,
                        });
                    }
                    let final_items = if closed {
                        items.len()
                    } else {
                        items.len().saturating_sub(1)
                    };
                    for item in &items[..final_items] {
                        let from = line_start(&region, item.start).max(cursor);
                        let to = line_end(&region, item).max(from);
                        self.list_item(&region[from..to], &mut out);
                        cursor = to;
                    }
                    if !closed {
                        self.done = base + cursor;
                        self.shown = self.done;
                        return out;
                    }
                    self.list = None;
                }
                _ => {
                    if !closed {
                        break;
                    }
                    self.list = None;
                    self.separate(&mut out);
                    let blocks = blocks::parse(source, &self.definitions);
                    out.extend(blocks::render(&blocks, self.layout));
                }
            }
            cursor = stop;
            self.done = base + cursor;
            self.shown = self.done;
        }
        if last {
            self.gap(&region[cursor..], &mut out);
            self.done = end;
            self.shown = end;
        }
        out
    }

    /// The lines of a top-level fence not written yet (its opening fence
    /// first).
    fn fence_lines(&mut self, info: &str, code: &str, out: &mut Vec<String>) {
        if self.fence.is_none() {
            self.list = None;
            self.separate(out);
            out.push(styled::to_ansi(&fence_open(info), self.layout.truecolor));
            self.fence = Some(OpenFence {
                highlighter: CodeHighlighter::new(fence_language(info)),
                lines: 0,
            });
        }
        let truecolor = self.layout.truecolor;
        if let Some(fence) = self.fence.as_mut() {
            let lines = code_lines(code);
            for line in lines.iter().skip(fence.lines) {
                out.push(styled::to_ansi(&fence.highlighter.line(line), truecolor));
            }
            fence.lines = fence.lines.max(lines.len());
        }
    }

    /// One item of a top-level list, parsed on its own and numbered in
    /// its list.
    fn list_item(&mut self, source: &str, out: &mut Vec<String>) {
        if self.list.as_ref().is_some_and(|l| !l.started) {
            self.separate(out);
        }
        let width = self.layout.width.max(10);
        let parsed = blocks::parse(source, &self.definitions);
        let next = self.list.as_ref().and_then(|l| l.next);
        match parsed.as_slice() {
            [Block::List { items, .. }] if items.len() == 1 => {
                let marker = match next {
                    Some(n) => format!("{n}. "),
                    None => "• ".to_string(),
                };
                self.paint(item_lines(&items[0], &marker, width, 0), out);
            }
            // Not a lone item after all (never seen): as it parses.
            _ => out.extend(blocks::render(&parsed, self.layout)),
        }
        if let Some(list) = self.list.as_mut() {
            list.next = list.next.map(|n| n + 1);
            list.started = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_close_with_a_fence_at_least_as_long() {
        assert!(fence_closed("```rust\nfn x() {}\n```\n"));
        assert!(fence_closed("````\n```\n````"));
        assert!(!fence_closed("````\n```\n"));
        assert!(!fence_closed("```\ncode\n"));
        assert!(!fence_closed("```\n"));
        assert!(fence_closed("~~~\nx\n~~~~  \n"));
        assert!(!fence_closed("```\nx\n    ```\n"));
    }

    #[test]
    fn top_level_blocks_and_list_items_are_found() {
        let tops = top_level("# T\n\npara\n\n- a\n- b\n\n```\nx\n");
        let kinds: Vec<&Kind> = tops.iter().map(|t| &t.kind).collect();
        assert!(matches!(kinds[0], Kind::Line));
        assert!(matches!(kinds[1], Kind::EndsAtBlankLine));
        assert!(matches!(kinds[2], Kind::List { items, .. } if items.len() == 2));
        assert!(matches!(kinds[3], Kind::Fence { code, .. } if code == "x\n"));
    }
}
