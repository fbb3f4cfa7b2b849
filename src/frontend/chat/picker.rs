//! The chat's pickers: a list to choose from ([`choose`]), with lines
//! about the highlighted row under it when the caller has some (the rewind
//! picker's diffs, `rewind.rs`). ↑/↓ (or k/j, PageUp/PageDown, Home/End)
//! move, Enter picks, Esc (or q, Ctrl-C) cancels. Drawn below the cursor
//! with the terminal in raw mode, and wiped when done.
//!
//! The resume picker (`/resume` without an id, `chat --resume` without
//! one, [`pick`]): this workspace's recent sessions, one per row with its
//! title, age and number of turns.

use crate::frontend::common::backend::Listed;
use crate::frontend::output::diff::{RowKind, styled};
use chrono::{DateTime, Utc};
use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use crossterm::style::Stylize;
use crossterm::{cursor, execute, queue, terminal};
use std::io::{self, Write};
use unicode_width::UnicodeWidthChar;

/// At most this many rows are shown at once (the list scrolls).
const MAX_ROWS: usize = 12;
/// At most this many sessions are offered.
pub const MAX_SESSIONS: usize = 50;

/// The sessions of `workspace` among `listed` (most recent first), as
/// many as the picker offers.
pub fn of_workspace(listed: Vec<Listed>, workspace: Option<&str>) -> Vec<Listed> {
    listed
        .into_iter()
        .filter(|s| workspace.is_none_or(|w| s.workspace == w))
        .take(MAX_SESSIONS)
        .collect()
}

/// One row: `title · age · N turns`, for the picker and `/resume`'s Tab.
pub fn describe(session: &Listed, now: DateTime<Utc>) -> String {
    format!(
        "{} · {} · {}",
        session.title.as_deref().unwrap_or("(untitled)"),
        age(session.updated_at, now),
        turns(session.turns)
    )
}

/// Which of `sessions` the user picks; `None` when they cancel.
pub fn pick(sessions: &[Listed], color: bool) -> io::Result<Option<usize>> {
    let now = Utc::now();
    let rows: Vec<String> = sessions.iter().map(|s| describe(s, now)).collect();
    let header = format!(
        "Resume a session ({} of this workspace; ↑/↓ choose, Enter resumes, Esc cancels):",
        rows.len()
    );
    choose(&header, &rows, MAX_ROWS, None, color)
}

/// A line under a list, about its highlighted row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreviewLine {
    pub text: String,
    pub style: PreviewStyle,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PreviewStyle {
    Plain,
    Dim,
    /// A diff's row, coloured as the transcript colours diffs.
    Diff(RowKind),
}

impl PreviewLine {
    pub fn new(style: PreviewStyle, text: impl Into<String>) -> PreviewLine {
        PreviewLine {
            text: text.into(),
            style,
        }
    }

    fn painted(&self, width: usize, color: bool) -> String {
        let text = fit(&self.text, width);
        match self.style {
            PreviewStyle::Plain => text,
            PreviewStyle::Dim if color => text.dark_grey().to_string(),
            PreviewStyle::Dim => text,
            PreviewStyle::Diff(kind) => styled(kind, &text, color),
        }
    }
}

/// What is shown under the list for row `i` (asked again only when the
/// highlight moves).
pub type Preview<'a> = &'a mut dyn FnMut(usize) -> Vec<PreviewLine>;

/// Which of `rows` the user picks, under `header`, at most `max_rows` of
/// them shown at once (the list scrolls), with `preview`'s lines for the
/// highlighted one under them; `None` when they cancel. Drawn below the
/// cursor in raw mode, and wiped when done.
pub fn choose(
    header: &str,
    rows: &[String],
    max_rows: usize,
    mut preview: Option<Preview<'_>>,
    color: bool,
) -> io::Result<Option<usize>> {
    if rows.is_empty() {
        return Ok(None);
    }
    let _raw = Raw::enable()?;
    let mut out = io::stdout();
    let (columns, lines) = terminal::size().unwrap_or((80, 24));
    let lines = usize::from(lines);
    let shown = rows.len().min(max_rows).min(lines.saturating_sub(2).max(1));
    // What is left below the list, the prompt's line kept.
    let room = lines.saturating_sub(shown + 2);
    let width = usize::from(columns).saturating_sub(3).max(10);
    let (mut selected, mut top) = (0usize, 0usize);
    let mut previewed: Option<(usize, Vec<PreviewLine>)> = None;
    let picked = loop {
        if selected < top {
            top = selected;
        } else if selected >= top + shown {
            top = selected + 1 - shown;
        }
        let below = match preview.as_mut() {
            Some(preview) if room > 0 => {
                if previewed.as_ref().is_none_or(|(i, _)| *i != selected) {
                    previewed = Some((selected, preview(selected)));
                }
                let all = previewed.as_ref().map(|(_, l)| l.as_slice()).unwrap_or(&[]);
                cut(all, room)
            }
            _ => Vec::new(),
        };
        let list = List {
            header,
            rows,
            selected,
            top,
            shown,
            width,
        };
        draw(&mut out, &list, &below, color)?;
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind == KeyEventKind::Release {
            continue;
        }
        let last = rows.len() - 1;
        match key.code {
            KeyCode::Up | KeyCode::Char('k') => selected = selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => selected = (selected + 1).min(last),
            KeyCode::PageUp => selected = selected.saturating_sub(shown),
            KeyCode::PageDown => selected = (selected + shown).min(last),
            KeyCode::Home => selected = 0,
            KeyCode::End => selected = last,
            KeyCode::Enter => break Some(selected),
            KeyCode::Esc | KeyCode::Char('q') => break None,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => break None,
            _ => {}
        }
    };
    execute!(
        out,
        cursor::MoveToColumn(0),
        terminal::Clear(terminal::ClearType::FromCursorDown),
        cursor::Show
    )?;
    Ok(picked)
}

/// At most `room` of `lines`, the last saying how many more there are.
fn cut(lines: &[PreviewLine], room: usize) -> Vec<PreviewLine> {
    if lines.len() <= room {
        return lines.to_vec();
    }
    let kept = room.saturating_sub(1);
    let mut out = lines[..kept].to_vec();
    out.push(PreviewLine::new(
        PreviewStyle::Dim,
        format!("… {} more lines", lines.len() - kept),
    ));
    out
}

/// The list as drawn: its header, and which rows show.
struct List<'a> {
    header: &'a str,
    rows: &'a [String],
    selected: usize,
    top: usize,
    shown: usize,
    width: usize,
}

/// The header, the rows from `top` and the lines `below`, leaving the
/// cursor where they start.
fn draw(
    out: &mut impl Write,
    list: &List<'_>,
    below: &[PreviewLine],
    color: bool,
) -> io::Result<()> {
    queue!(
        out,
        cursor::Hide,
        cursor::MoveToColumn(0),
        terminal::Clear(terminal::ClearType::FromCursorDown)
    )?;
    let width = list.width;
    write!(out, "{}\r\n", fit(list.header, width + 2))?;
    for (i, row) in list.rows.iter().enumerate().skip(list.top).take(list.shown) {
        let row = fit(row, width);
        let line = if i == list.selected {
            let line = format!("› {row}");
            if color {
                line.reverse().to_string()
            } else {
                line
            }
        } else {
            format!("  {row}")
        };
        write!(out, "{line}\r\n")?;
    }
    for line in below {
        write!(out, "{}\r\n", line.painted(width + 2, color))?;
    }
    let drawn = 1 + list.shown.min(list.rows.len() - list.top) + below.len();
    queue!(out, cursor::MoveUp(drawn as u16))?;
    out.flush()
}

/// `text` cut to `width` columns.
fn fit(text: &str, width: usize) -> String {
    let mut used = 0;
    let mut out = String::new();
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width {
            out.pop();
            out.push('…');
            break;
        }
        used += w;
        out.push(c);
    }
    out
}

/// `just now`, `5 min ago`, `3 h ago`, `2 days ago`.
pub fn age(then: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (now - then).num_seconds().max(0);
    match seconds {
        0..60 => "just now".to_string(),
        60..3_600 => format!("{} min ago", seconds / 60),
        3_600..86_400 => format!("{} h ago", seconds / 3_600),
        _ => match seconds / 86_400 {
            1 => "1 day ago".to_string(),
            days => format!("{days} days ago"),
        },
    }
}

fn turns(n: u64) -> String {
    if n == 1 {
        "1 turn".to_string()
    } else {
        format!("{n} turns")
    }
}

/// Raw mode for the life of the guard.
struct Raw;

impl Raw {
    fn enable() -> io::Result<Raw> {
        terminal::enable_raw_mode()?;
        Ok(Raw)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = execute!(io::stdout(), cursor::Show);
        let _ = terminal::disable_raw_mode();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    fn listed(
        title: Option<&str>,
        workspace: &str,
        turns: u64,
        updated_at: DateTime<Utc>,
    ) -> Listed {
        Listed {
            id: "id".into(),
            title: title.map(String::from),
            workspace: workspace.into(),
            updated_at,
            turns,
        }
    }

    #[test]
    fn a_row_says_title_age_and_turns() {
        let now = Utc::now();
        let session = listed(Some("fix the parser"), "/w", 3, now - Duration::minutes(5));
        let row = describe(&session, now);
        assert!(
            row.starts_with("fix the parser · 5 min ago · 3 turns"),
            "{row}"
        );
        let untitled = listed(None, "/w", 1, now - Duration::days(2));
        assert_eq!(describe(&untitled, now), "(untitled) · 2 days ago · 1 turn");
        assert_eq!(age(now - Duration::seconds(10), now), "just now");
        assert_eq!(age(now - Duration::hours(3), now), "3 h ago");
    }

    #[test]
    fn only_this_workspaces_sessions_are_offered() {
        let sessions = vec![
            listed(Some("a"), "/w", 1, Utc::now()),
            listed(Some("b"), "/other", 1, Utc::now()),
        ];
        let kept = of_workspace(sessions.clone(), Some("/w"));
        assert_eq!(kept.len(), 1);
        assert_eq!(of_workspace(sessions, None).len(), 2);
    }

    #[test]
    fn a_long_preview_is_cut_to_the_room_saying_how_much_is_left() {
        let lines: Vec<PreviewLine> = (0..10)
            .map(|i| PreviewLine::new(PreviewStyle::Plain, i.to_string()))
            .collect();
        assert_eq!(cut(&lines, 10), lines);
        let kept = cut(&lines, 4);
        assert_eq!(kept.len(), 4);
        assert_eq!(kept[3].text, "… 7 more lines");
        assert_eq!(kept[3].style, PreviewStyle::Dim);
    }

    #[test]
    fn long_rows_are_cut_to_the_width() {
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
    }
}
