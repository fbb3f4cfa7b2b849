//! The rewind picker: `/rewind` alone in the chat on a terminal.
//!
//! It lists the session's user turns, newest first, each with its event
//! number, its prompt and what it changed (`+A -R path` per file, or "no
//! files changed"), and under the list what rewinding the files to before
//! the highlighted turn would do, with each file's diff coloured as the
//! transcript colours diffs (a preview: `StoredSessions::rewind` in mode
//! `code`, nothing written). Enter on a turn asks what to take back (code
//! and conversation, the conversation only, the code only) and, when the
//! preview found files changed since by someone else, whether to
//! overwrite them (no by default). The answer is a
//! [`ControlCommand::Rewind`] the chat submits like any command, so it
//! waits its turn in the session's queue; a rewind of the conversation
//! answers with a fork the chat switches to, as after `/fork`, with the
//! turn's prompt back at the prompt to edit and send again. Esc cancels
//! at every step.
//!
//! Only for a session of this process: the picker reads the store. With
//! `chat --attach`, `/rewind` is sent as typed and its list is shown.

use super::picker::{self, PreviewLine, PreviewStyle};
use crate::frontend::output::diff;
use agentbus_engine::StoredSessions;
use agentbus_engine::protocol::checkpoint::{FileAction, RewindMode, RewindReport, TurnChanges};
use agentbus_engine::protocol::{ControlCommand, SessionId};
use agentbus_engine::runtime::RewindOptions;
use agentbus_engine::runtime::rewind::file_line;
use anyhow::Context as _;

/// At most this many turns show at once (the list scrolls); the rest of
/// the screen is the preview's.
const MAX_ROWS: usize = 8;

/// What the picker came to: the command to submit, or why there is none.
pub enum Picked {
    Rewind(ControlCommand),
    Nothing(&'static str),
}

/// The three ways to rewind, as the second question offers them.
const MODES: [(RewindMode, &str); 3] = [
    (RewindMode::Both, "Restore code and conversation"),
    (
        RewindMode::Conversation,
        "Restore conversation only (the files stay)",
    ),
    (
        RewindMode::Code,
        "Restore code only (the conversation stays)",
    ),
];

/// Ask which turn of session `id` to rewind to, and how.
pub async fn pick(stored: &StoredSessions, id: &SessionId, color: bool) -> anyhow::Result<Picked> {
    let mut turns = stored.changes(id).await.context("listing the turns")?;
    if turns.is_empty() {
        return Ok(Picked::Nothing("no turns to rewind to yet"));
    }
    turns.reverse();
    let rows: Vec<String> = turns.iter().map(row).collect();
    let header = format!(
        "Rewind to before a turn ({}, newest first; ↑/↓ choose, Enter picks, Esc cancels):",
        agentbus_engine::text::count(turns.len() as u64, "turn")
    );
    let handle = tokio::runtime::Handle::current();
    let mut reports: Vec<Option<Result<RewindReport, String>>> = vec![None; turns.len()];
    let picked = tokio::task::block_in_place(|| {
        let mut preview = |i: usize| {
            let report = reports[i].get_or_insert_with(|| {
                handle
                    .block_on(preview_of(stored, id, turns[i].seq))
                    .map_err(|e| format!("{e:#}"))
            });
            preview_lines(turns[i].seq, report)
        };
        picker::choose(&header, &rows, MAX_ROWS, Some(&mut preview), color)
    })
    .context("the rewind picker")?;
    let Some(i) = picked else {
        return Ok(Picked::Nothing("nothing rewound"));
    };
    let seq = turns[i].seq;
    let conflicts = match &reports[i] {
        Some(Ok(report)) => report.conflicts().map(|f| f.path.clone()).collect(),
        _ => Vec::new(),
    };
    let header = format!("Rewind to before turn {seq}: what to take back?");
    let rows: Vec<String> = MODES.iter().map(|(_, words)| words.to_string()).collect();
    let mode = tokio::task::block_in_place(|| picker::choose(&header, &rows, 3, None, color))
        .context("the rewind picker")?;
    let Some(mode) = mode.map(|m| MODES[m].0) else {
        return Ok(Picked::Nothing("nothing rewound"));
    };
    let mut overwrite = false;
    if mode != RewindMode::Conversation && !conflicts.is_empty() {
        let which = match conflicts.len() {
            1 => "1 file was".to_string(),
            n => format!("{n} files were"),
        };
        let header = format!(
            "{which} changed since by someone else ({}): overwrite?",
            conflicts.join(", ")
        );
        let rows = [
            "No, leave them as they are".to_string(),
            "Yes, overwrite them".to_string(),
        ];
        let answer = tokio::task::block_in_place(|| picker::choose(&header, &rows, 2, None, color))
            .context("the rewind picker")?;
        match answer {
            Some(answer) => overwrite = answer == 1,
            None => return Ok(Picked::Nothing("nothing rewound")),
        }
    }
    Ok(Picked::Rewind(ControlCommand::Rewind {
        seq: Some(seq),
        mode: Some(mode),
        overwrite,
    }))
}

/// What rewinding the files to before turn `seq` would do.
async fn preview_of(
    stored: &StoredSessions,
    id: &SessionId,
    seq: u64,
) -> anyhow::Result<RewindReport> {
    let options = RewindOptions {
        mode: RewindMode::Code,
        preview: true,
        overwrite: false,
    };
    Ok(stored.rewind(id, seq, options).await?)
}

/// A turn's row: `SEQ  prompt · +A -R path, ...`.
fn row(turn: &TurnChanges) -> String {
    let prompt = turn.prompt.split_whitespace().collect::<Vec<_>>().join(" ");
    let files = if turn.files.is_empty() {
        "no files changed".to_string()
    } else {
        turn.files
            .iter()
            .map(file_line)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let undone = if turn.undone { " [undone]" } else { "" };
    format!("{:>5}  {prompt} · {files}{undone}", turn.seq)
}

/// The preview's lines: what would happen to each file, with its diff.
fn preview_lines(seq: u64, report: &Result<RewindReport, String>) -> Vec<PreviewLine> {
    let dim = |text: String| PreviewLine::new(PreviewStyle::Dim, text);
    let report = match report {
        Ok(report) => report,
        Err(why) => return vec![dim(format!("(no preview: {why})"))],
    };
    let files: Vec<_> = report
        .files
        .iter()
        .filter(|f| f.action != FileAction::Unchanged)
        .collect();
    let mut lines = vec![dim(format!("── the files, rewound to before turn {seq}:"))];
    if files.is_empty() {
        lines.push(dim("no file would change".to_string()));
    }
    for file in files {
        let what = match file.action {
            FileAction::Restore => "restore",
            FileAction::Remove => "remove (created since)",
            FileAction::Recreate => "recreate (deleted since)",
            FileAction::Conflict => "conflict: changed since by someone else; their change:",
            FileAction::Unchanged => "unchanged",
        };
        lines.push(PreviewLine::new(
            PreviewStyle::Plain,
            format!("{} — {what}", file.path),
        ));
        if file.binary {
            lines.push(dim("  (binary: no diff)".to_string()));
        }
        for row in diff::unified_rows(&file.diff) {
            lines.push(PreviewLine::new(
                PreviewStyle::Diff(row.kind),
                format!("  {}", row.signed()),
            ));
        }
    }
    for note in &report.cannot_restore {
        lines.push(dim(format!("Not taken back: {note}.")));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentbus_engine::protocol::checkpoint::{Change, ChangedFile, RewindFile};

    #[test]
    fn a_row_says_the_turn_its_prompt_and_what_it_changed() {
        let turn = TurnChanges {
            seq: 12,
            prompt: "fix the\nparser".into(),
            files: vec![ChangedFile {
                path: "src/a.rs".into(),
                change: Change::Modified,
                added: 3,
                removed: 1,
                binary: false,
            }],
            undone: false,
        };
        assert_eq!(row(&turn), "   12  fix the parser · +3 -1 src/a.rs");
        let quiet = TurnChanges {
            seq: 3,
            prompt: "hello".into(),
            files: Vec::new(),
            undone: true,
        };
        assert_eq!(row(&quiet), "    3  hello · no files changed [undone]");
    }

    #[test]
    fn the_preview_shows_each_file_with_its_diff_rows() {
        let report = RewindReport {
            seq: 2,
            files: vec![
                RewindFile {
                    path: "a.txt".into(),
                    action: FileAction::Restore,
                    diff: "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-alpha TWO\n+alpha one\n".into(),
                    binary: false,
                },
                RewindFile {
                    path: "same.txt".into(),
                    action: FileAction::Unchanged,
                    diff: String::new(),
                    binary: false,
                },
            ],
            cannot_restore: vec!["1 command ran".into()],
            ..RewindReport::default()
        };
        let lines = preview_lines(2, &Ok(report));
        let texts: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "── the files, rewound to before turn 2:",
                "a.txt — restore",
                "  @@ -1 +1 @@",
                "  -alpha TWO",
                "  +alpha one",
                "Not taken back: 1 command ran."
            ]
        );
        assert_eq!(
            lines[3].style,
            PreviewStyle::Diff(crate::frontend::output::diff::RowKind::Removed)
        );
        let failed = preview_lines(2, &Err("no store".into()));
        assert_eq!(failed[0].text, "(no preview: no store)");
    }
}
