//! One piece of Markdown rendered for the terminal: pulldown-cmark's
//! events (CommonMark with GFM tables, strikethrough and task lists) built
//! into a small tree of [`Block`]s, then laid out as styled lines no wider
//! than the terminal.
//!
//! - headings: bold (level 1 also underlined, 3 italic too, 4–6 italic),
//!   without their `#`s;
//! - emphasis italic, strong bold, strikethrough crossed out, inline code
//!   in cyan, links underlined in blue followed by their address, dimmed
//!   (the address alone when it is the text);
//! - lists with `•`, `◦`, `▪` by depth, or their numbers, and task boxes;
//!   continuation lines indented under the item's text;
//! - block quotes behind a dimmed `│`;
//! - tables with aligned columns, the header bold, narrowed to the width
//!   by wrapping the widest cells;
//! - fenced code between its dimmed fences, highlighted
//!   ([`CodeHighlighter`]); indented code plain, indented.
//!
//! Pure: the width is an argument.

use super::code::CodeHighlighter;
use super::styled::{self, BLUE, CYAN, Line, Span, Style, line_width, sanitize, wrap};
use pulldown_cmark::{Alignment, CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use std::collections::HashMap;

/// Link reference definitions seen before a block: normalised label →
/// (address, title).
pub type Definitions = HashMap<String, (String, String)>;

/// The parser options every piece is read with.
pub fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// A reference label as CommonMark matches it: case-folded, inner
/// whitespace collapsed.
pub fn normalize_label(label: &str) -> String {
    label
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// A block of the tree.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    Paragraph(Vec<Span>),
    Heading(u8, Vec<Span>),
    /// `fence`: the info string of a fenced block; `None` for indented code.
    Code {
        fence: Option<String>,
        text: String,
    },
    Quote(Vec<Block>),
    /// `start`: the first number of an ordered list.
    List {
        start: Option<u64>,
        items: Vec<Item>,
    },
    Table {
        aligns: Vec<Alignment>,
        head: Vec<Vec<Span>>,
        rows: Vec<Vec<Vec<Span>>>,
    },
    Rule,
    Html(String),
}

/// A list item: its task box, if any, and its blocks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Item {
    pub task: Option<bool>,
    pub blocks: Vec<Block>,
}

/// A container being filled.
enum Frame {
    Quote(Vec<Block>),
    List {
        start: Option<u64>,
        items: Vec<Item>,
    },
    Item(Item),
    Table {
        aligns: Vec<Alignment>,
        head: Vec<Vec<Span>>,
        rows: Vec<Vec<Vec<Span>>>,
        row: Vec<Vec<Span>>,
    },
}

/// An inline style pushed by a start tag.
#[derive(Clone, Copy)]
enum Inline {
    Emphasis,
    Strong,
    Strike,
    Link,
}

/// Builds the tree from the parser's events.
#[derive(Default)]
struct Builder {
    root: Vec<Block>,
    frames: Vec<Frame>,
    inline: Vec<Span>,
    styles: Vec<Inline>,
    /// Open links and images: their address, where their text starts, and
    /// whether it is an image.
    links: Vec<(String, usize, bool)>,
    /// Inside a paragraph, heading or table cell (else inline text is a
    /// tight list item's).
    in_text_block: bool,
    /// The code or HTML block being read.
    code: Option<(Option<String>, String)>,
    html: Option<String>,
}

impl Builder {
    fn style(&self) -> Style {
        let mut style = Style::PLAIN;
        for s in &self.styles {
            match s {
                Inline::Emphasis => style.italic = true,
                Inline::Strong => style.bold = true,
                Inline::Strike => style.strike = true,
                Inline::Link => {
                    style.underline = true;
                    style.fg = Some(BLUE);
                }
            }
        }
        style
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = self.code.as_mut() {
            code.push_str(text);
        } else if let Some(html) = self.html.as_mut() {
            html.push_str(text);
        } else {
            let style = self.style();
            self.inline
                .push(Span::new(sanitize(text).replace('\n', " "), style));
        }
    }

    /// A tight list item's text, ended by a block inside the item.
    fn flush_loose_text(&mut self) {
        if !self.in_text_block && !self.inline.is_empty() {
            let spans = std::mem::take(&mut self.inline);
            self.push(Block::Paragraph(spans));
        }
    }

    fn push(&mut self, block: Block) {
        match self.frames.last_mut() {
            Some(Frame::Quote(blocks)) => blocks.push(block),
            Some(Frame::Item(item)) => item.blocks.push(block),
            // Blocks only ever sit in quotes and items; anything else
            // (never produced by the parser) goes to the root.
            _ => self.root.push(block),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::Heading { .. } => {
                self.flush_loose_text();
                self.in_text_block = true;
            }
            Tag::CodeBlock(kind) => {
                self.flush_loose_text();
                let fence = match kind {
                    CodeBlockKind::Fenced(info) => Some(info.to_string()),
                    CodeBlockKind::Indented => None,
                };
                self.code = Some((fence, String::new()));
            }
            Tag::HtmlBlock => {
                self.flush_loose_text();
                self.html = Some(String::new());
            }
            Tag::BlockQuote(_) => {
                self.flush_loose_text();
                self.frames.push(Frame::Quote(Vec::new()));
            }
            Tag::List(start) => {
                self.flush_loose_text();
                self.frames.push(Frame::List {
                    start,
                    items: Vec::new(),
                });
            }
            Tag::Item => self.frames.push(Frame::Item(Item::default())),
            Tag::Table(aligns) => self.frames.push(Frame::Table {
                aligns,
                head: Vec::new(),
                rows: Vec::new(),
                row: Vec::new(),
            }),
            Tag::TableHead | Tag::TableRow => {}
            Tag::TableCell => self.in_text_block = true,
            Tag::Emphasis => self.styles.push(Inline::Emphasis),
            Tag::Strong => self.styles.push(Inline::Strong),
            Tag::Strikethrough => self.styles.push(Inline::Strike),
            Tag::Link { dest_url, .. } => {
                self.links
                    .push((dest_url.to_string(), self.inline.len(), false));
                self.styles.push(Inline::Link);
            }
            Tag::Image { dest_url, .. } => {
                self.inline.push(Span::new("[image: ", Style::dimmed()));
                self.links
                    .push((dest_url.to_string(), self.inline.len(), true));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.in_text_block = false;
                let spans = std::mem::take(&mut self.inline);
                self.push(Block::Paragraph(spans));
            }
            TagEnd::Heading(level) => {
                self.in_text_block = false;
                let spans = std::mem::take(&mut self.inline);
                let level = match level {
                    HeadingLevel::H1 => 1,
                    HeadingLevel::H2 => 2,
                    HeadingLevel::H3 => 3,
                    HeadingLevel::H4 => 4,
                    HeadingLevel::H5 => 5,
                    HeadingLevel::H6 => 6,
                };
                self.push(Block::Heading(level, spans));
            }
            TagEnd::CodeBlock => {
                if let Some((fence, text)) = self.code.take() {
                    self.push(Block::Code { fence, text });
                }
            }
            TagEnd::HtmlBlock => {
                if let Some(html) = self.html.take() {
                    self.push(Block::Html(html));
                }
            }
            TagEnd::BlockQuote(_) => {
                if let Some(Frame::Quote(blocks)) = self.frames.pop() {
                    self.push(Block::Quote(blocks));
                }
            }
            TagEnd::List(_) => {
                if let Some(Frame::List { start, items }) = self.frames.pop() {
                    self.push(Block::List { start, items });
                }
            }
            TagEnd::Item => {
                self.flush_loose_text();
                if let Some(Frame::Item(item)) = self.frames.pop()
                    && let Some(Frame::List { items, .. }) = self.frames.last_mut()
                {
                    items.push(item);
                }
            }
            TagEnd::TableCell => {
                self.in_text_block = false;
                let spans = std::mem::take(&mut self.inline);
                if let Some(Frame::Table { row, .. }) = self.frames.last_mut() {
                    row.push(spans);
                }
            }
            TagEnd::TableHead => {
                if let Some(Frame::Table { head, row, .. }) = self.frames.last_mut() {
                    *head = std::mem::take(row);
                }
            }
            TagEnd::TableRow => {
                if let Some(Frame::Table { rows, row, .. }) = self.frames.last_mut() {
                    rows.push(std::mem::take(row));
                }
            }
            TagEnd::Table => {
                if let Some(Frame::Table {
                    aligns, head, rows, ..
                }) = self.frames.pop()
                {
                    self.push(Block::Table { aligns, head, rows });
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some((url, from, _)) = self.links.pop() {
                    let text: String = self.inline[from.min(self.inline.len())..]
                        .iter()
                        .map(|s| s.text.as_str())
                        .collect();
                    let shown = url.strip_prefix("mailto:").unwrap_or(&url);
                    if !url.is_empty() && text != url && text != shown {
                        self.inline
                            .push(Span::new(format!(" ({})", sanitize(&url)), Style::dimmed()));
                    }
                }
            }
            TagEnd::Image => {
                if let Some((url, _, _)) = self.links.pop() {
                    self.inline.push(Span::new("]", Style::dimmed()));
                    if !url.is_empty() {
                        self.inline
                            .push(Span::new(format!(" ({})", sanitize(&url)), Style::dimmed()));
                    }
                }
            }
            _ => {}
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                let mut style = self.style();
                style.fg = Some(CYAN);
                self.inline.push(Span::new(sanitize(&code), style));
            }
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.text(&math),
            Event::FootnoteReference(label) => self.text(&format!("[^{label}]")),
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.inline.push(Span::hard_break()),
            Event::Rule => {
                self.flush_loose_text();
                self.push(Block::Rule);
            }
            Event::TaskListMarker(done) => {
                if let Some(Frame::Item(item)) = self.frames.last_mut() {
                    item.task = Some(done);
                }
            }
        }
    }
}

/// `source` as a tree of blocks; references to `definitions` resolve (a
/// definition inside `source` does too).
pub fn parse(source: &str, definitions: &Definitions) -> Vec<Block> {
    let mut resolve = |link: pulldown_cmark::BrokenLink<'_>| {
        definitions
            .get(&normalize_label(&link.reference))
            .map(|(url, title)| (url.clone().into(), title.clone().into()))
    };
    let parser = Parser::new_with_broken_link_callback(source, options(), Some(&mut resolve));
    let mut builder = Builder::default();
    for event in parser {
        builder.event(event);
    }
    builder.flush_loose_text();
    builder.root
}

/// How to lay out.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Columns available.
    pub width: usize,
    /// Write colours in 24 bits.
    pub truecolor: bool,
}

/// Blocks laid out one after another (a blank line between them), as
/// lines of text with their escape codes.
pub fn render(blocks: &[Block], layout: Layout) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            lines.push(Vec::new());
        }
        lines.extend(block_lines(block, layout.width.max(10), 0));
    }
    lines
        .iter()
        .map(|l| styled::to_ansi(l, layout.truecolor))
        .collect()
}

fn heading_style(level: u8) -> Style {
    Style {
        bold: level <= 3,
        underline: level == 1,
        italic: level >= 3,
        ..Style::PLAIN
    }
}

/// Adds `over` to each span's style.
fn restyle(spans: &[Span], over: Style) -> Vec<Span> {
    spans
        .iter()
        .map(|s| {
            let mut style = s.style;
            style.bold |= over.bold;
            style.italic |= over.italic;
            style.underline |= over.underline;
            style.dim |= over.dim;
            style.fg = style.fg.or(over.fg);
            Span::new(s.text.clone(), style)
        })
        .collect()
}

/// Every line prefixed: `first` on the first, `rest` on the others.
fn prefixed(lines: Vec<Line>, first: &[Span], rest: &[Span]) -> Vec<Line> {
    lines
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let mut out = if i == 0 {
                first.to_vec()
            } else {
                rest.to_vec()
            };
            out.extend(line);
            out
        })
        .collect()
}

/// The lines of a fenced block: its fences dimmed, its code highlighted
/// line by line.
pub fn fence_open(info: &str) -> Line {
    vec![Span::new(
        format!("```{}", sanitize(info.trim())),
        Style::dimmed(),
    )]
}

pub fn fence_close() -> Line {
    vec![Span::new("```", Style::dimmed())]
}

/// The language a fence names: the first word of its info string.
pub fn fence_language(info: &str) -> &str {
    info.split_whitespace()
        .next()
        .unwrap_or("")
        .trim_matches(|c| c == '{' || c == '}' || c == '.')
}

/// The lines of code in a block's text (the last newline ends a line, it
/// does not start one).
pub fn code_lines(text: &str) -> Vec<&str> {
    if text.is_empty() {
        return Vec::new();
    }
    text.strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect()
}

fn block_lines(block: &Block, width: usize, depth: usize) -> Vec<Line> {
    match block {
        Block::Paragraph(spans) => wrap(spans, width),
        Block::Heading(level, spans) => wrap(&restyle(spans, heading_style(*level)), width),
        Block::Code {
            fence: Some(info),
            text,
        } => {
            let mut highlighter = CodeHighlighter::new(fence_language(info));
            let mut lines = vec![fence_open(info)];
            lines.extend(code_lines(text).into_iter().map(|l| highlighter.line(l)));
            lines.push(fence_close());
            lines
        }
        Block::Code { fence: None, text } => code_lines(text)
            .into_iter()
            .map(|l| match sanitize(l) {
                l if l.trim().is_empty() => Vec::new(),
                l => vec![Span::plain(format!("    {l}"))],
            })
            .collect(),
        Block::Html(html) => code_lines(html)
            .into_iter()
            .map(|l| vec![Span::new(sanitize(l), Style::dimmed())])
            .collect(),
        Block::Rule => vec![vec![Span::new("─".repeat(width.min(80)), Style::dimmed())]],
        Block::Quote(blocks) => {
            let bar = [Span::new("│ ", Style::dimmed())];
            let mut lines = Vec::new();
            for (i, inner) in blocks.iter().enumerate() {
                if i > 0 {
                    lines.push(Vec::new());
                }
                lines.extend(block_lines(inner, width.saturating_sub(2).max(1), depth));
            }
            prefixed(lines, &bar, &bar)
                .into_iter()
                .map(|mut l| {
                    if l.len() == 1 {
                        l[0].text = "│".into();
                    }
                    l
                })
                .collect()
        }
        Block::List { start, items } => {
            let mut lines = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let marker = match start {
                    Some(n) => format!("{}. ", n + i as u64),
                    None => format!("{} ", ["•", "◦", "▪"][depth.min(2)]),
                };
                lines.extend(item_lines(item, &marker, width, depth));
            }
            lines
        }
        Block::Table { aligns, head, rows } => table_lines(aligns, head, rows, width),
    }
}

/// One list item behind its marker, continuation lines under its text.
pub fn item_lines(item: &Item, marker: &str, width: usize, depth: usize) -> Vec<Line> {
    let mut first = vec![Span::new(marker, Style::dimmed())];
    if let Some(done) = item.task {
        first.push(Span::plain(if done { "☑ " } else { "☐ " }));
    }
    let indent = line_width(&first);
    let inner = width.saturating_sub(indent).max(1);
    let mut lines = Vec::new();
    let mut previous_paragraph = false;
    for block in &item.blocks {
        let paragraph = matches!(block, Block::Paragraph(_));
        if paragraph && previous_paragraph {
            lines.push(Vec::new());
        }
        previous_paragraph = paragraph;
        lines.extend(block_lines(block, inner, depth + 1));
    }
    if lines.is_empty() {
        lines.push(Vec::new());
    }
    let rest = [Span::plain(" ".repeat(indent))];
    prefixed(lines, &first, &rest)
        .into_iter()
        .map(|mut l| {
            // No trailing spaces on the blank line between paragraphs.
            if l.len() == 1 && l[0].text.trim().is_empty() {
                l.clear();
            }
            l
        })
        .collect()
}

/// Column widths that fit `width` (separators included) where they can:
/// the widest column gives way first, a column at a time, none below a
/// few columns (a table that cannot fit is left to the terminal to wrap).
fn column_widths(natural: &[usize], width: usize) -> Vec<usize> {
    const NARROWEST: usize = 6;
    let mut widths: Vec<usize> = natural.iter().map(|w| (*w).max(1)).collect();
    let separators = 3 * widths.len().saturating_sub(1);
    while widths.iter().sum::<usize>() + separators > width {
        let Some(widest) = (0..widths.len()).max_by_key(|&c| (widths[c], usize::MAX - c)) else {
            break;
        };
        if widths[widest] <= NARROWEST {
            break;
        }
        widths[widest] -= 1;
    }
    widths
}

/// A line without the spaces at its end (an empty last cell's).
fn trim_end(line: &mut Line) {
    while let Some(last) = line.last_mut() {
        let kept = last.text.trim_end_matches(' ').len();
        if kept > 0 {
            last.text.truncate(kept);
            return;
        }
        line.pop();
    }
}

fn table_lines(
    aligns: &[Alignment],
    head: &[Vec<Span>],
    rows: &[Vec<Vec<Span>>],
    width: usize,
) -> Vec<Line> {
    let columns = std::iter::once(head.len())
        .chain(rows.iter().map(|r| r.len()))
        .max()
        .unwrap_or(0);
    if columns == 0 {
        return Vec::new();
    }
    let bold = Style {
        bold: true,
        ..Style::PLAIN
    };
    let head: Vec<Vec<Span>> = head.iter().map(|c| restyle(c, bold)).collect();
    let natural: Vec<usize> = (0..columns)
        .map(|c| {
            std::iter::once(&head)
                .chain(rows.iter())
                .filter_map(|r| r.get(c))
                .map(|cell| line_width(cell))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let widths = column_widths(&natural, width);
    let separator = Span::new(" │ ", Style::dimmed());
    let row_lines = |row: &[Vec<Span>]| -> Vec<Line> {
        let cells: Vec<Vec<Line>> = (0..columns)
            .map(|c| match row.get(c) {
                Some(cell) => wrap(cell, widths[c]),
                None => vec![Vec::new()],
            })
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        (0..height)
            .map(|i| {
                let mut line = Vec::new();
                for (c, cell) in cells.iter().enumerate() {
                    if c > 0 {
                        line.push(separator.clone());
                    }
                    let content = cell.get(i).cloned().unwrap_or_default();
                    let room = widths[c].saturating_sub(line_width(&content));
                    let (before, after) = match aligns.get(c) {
                        Some(Alignment::Right) => (room, 0),
                        Some(Alignment::Center) => (room / 2, room - room / 2),
                        _ => (0, room),
                    };
                    if before > 0 {
                        line.push(Span::plain(" ".repeat(before)));
                    }
                    line.extend(content);
                    // No padding after the last column.
                    if after > 0 && c + 1 < columns {
                        line.push(Span::plain(" ".repeat(after)));
                    }
                }
                trim_end(&mut line);
                line
            })
            .collect()
    };
    let mut lines = row_lines(&head);
    let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
    lines.push(vec![Span::new(rule.join("─┼─"), Style::dimmed())]);
    for row in rows {
        lines.extend(row_lines(row));
    }
    lines
}
