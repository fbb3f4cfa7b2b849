//! `agentbus sessions rewind|undo|gc`: a stored session's checkpoints from
//! the command line, through the same service `/rewind` and `/undo` use
//! (`StoredSessions::changes`, `rewind`, `undo`, `collect_blobs`), worded
//! as they word it (`runtime::rewind::{describe, file_line}`).
//!
//! - `rewind ID`: the session's turns, oldest first, each with what it
//!   changed in the workspace.
//! - `rewind ID SEQ [--mode both|conversation|code] [--force]`: take back
//!   the files and/or the conversation to before turn SEQ (the
//!   conversation: a fork, which the report names); `--preview` only says
//!   what would be done, with each file's diff.
//! - `undo ID [--force] [--preview]`: the file changes of the last turn
//!   that made some.
//! - `gc`: delete the stored file versions no checkpoint needs.
//!
//! Only `--preview` and the list may look at a session another live
//! process holds: rewinding under a running session would change its files
//! and its conversation behind its back (it is rewound there, with
//! `/rewind`). What is done goes to stdout (`--json`: the report, as the
//! `rewound` event's data has it); hints for the next step go to stderr.

use agentbus_engine::StoredSessions;
use agentbus_engine::protocol::SessionId;
use agentbus_engine::protocol::checkpoint::{
    FileAction, RewindList, RewindMode, RewindReport, TurnChanges,
};
use agentbus_engine::runtime::rewind::{describe, file_line};
use agentbus_engine::runtime::{Owner, RewindOptions};
use agentbus_engine::text::count;
use std::io::Write;
use std::path::Path;

/// `sessions rewind ID`: the turns and what each changed.
pub async fn list(
    out: &mut impl Write,
    stored: &StoredSessions,
    id: &SessionId,
    json: bool,
) -> anyhow::Result<()> {
    let turns = stored.changes(id).await?;
    if json {
        serde_json::to_writer_pretty(&mut *out, &RewindList { turns })?;
        writeln!(out)?;
        return Ok(());
    }
    write_turns(out, id, &turns)?;
    if !turns.is_empty() {
        eprintln!(
            "`agentbus sessions rewind {id} SEQ [--mode both|conversation|code] [--preview]` takes back to before turn SEQ."
        );
    }
    Ok(())
}

/// The turns as text: each turn's seq and prompt, then a line per file it
/// changed.
fn write_turns(out: &mut impl Write, id: &SessionId, turns: &[TurnChanges]) -> std::io::Result<()> {
    if turns.is_empty() {
        return writeln!(out, "Session {id} has no turns to rewind to yet.");
    }
    writeln!(
        out,
        "Turns of session {id} (oldest first), with what each changed:"
    )?;
    for turn in turns {
        let undone = if turn.undone { " [undone]" } else { "" };
        writeln!(out, "  {:>5}  {}{undone}", turn.seq, one_line(&turn.prompt))?;
        if turn.files.is_empty() {
            writeln!(out, "         (no files changed)")?;
        }
        for file in &turn.files {
            writeln!(out, "         {}", file_line(file))?;
        }
    }
    Ok(())
}

/// A prompt on one line.
fn one_line(prompt: &str) -> String {
    prompt.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `sessions rewind ID SEQ`: take back (or preview taking back) to before
/// turn `seq`.
pub async fn rewind(
    out: &mut impl Write,
    stored: &StoredSessions,
    data_dir: &Path,
    id: &SessionId,
    seq: u64,
    options: RewindOptions,
    json: bool,
) -> anyhow::Result<()> {
    let turns = stored.changes(id).await?;
    if !turns.iter().any(|t| t.seq == seq) {
        let seqs: Vec<String> = turns.iter().map(|t| t.seq.to_string()).collect();
        if seqs.is_empty() {
            anyhow::bail!("session {id} has no turns to rewind to yet");
        }
        anyhow::bail!(
            "{seq} is not a turn of session {id}: its turns start at events {} (`agentbus sessions rewind {id}` lists them with what each changed)",
            seqs.join(", ")
        );
    }
    if !options.preview {
        refuse_if_held(stored, data_dir, id, "rewind").await?;
    }
    let report = stored.rewind(id, seq, options).await?;
    show(out, id, &report, json)
}

/// `sessions undo ID`: take back (or preview taking back) the last turn's
/// file changes.
pub async fn undo(
    out: &mut impl Write,
    stored: &StoredSessions,
    data_dir: &Path,
    id: &SessionId,
    preview: bool,
    overwrite: bool,
    json: bool,
) -> anyhow::Result<()> {
    if !preview {
        refuse_if_held(stored, data_dir, id, "undo").await?;
    }
    let report = stored.undo(id, preview, overwrite).await?;
    show(out, id, &report, json)
}

/// A rewind's report: as JSON, or in words (with each file's diff for a
/// preview), and on stderr how to go on.
fn show(
    out: &mut impl Write,
    id: &SessionId,
    report: &RewindReport,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        serde_json::to_writer_pretty(&mut *out, report)?;
        writeln!(out)?;
    } else {
        write_report(out, report)?;
    }
    if let Some(fork) = &report.forked {
        eprintln!("Continue the conversation there: agentbus chat --resume {fork}");
    }
    if !report.preview && !report.overwrote && report.conflicts().next().is_some() {
        eprintln!(
            "`agentbus sessions rewind {id} {} --mode {} --force` overwrites the conflicts.",
            report.seq,
            report.mode.as_str()
        );
    }
    Ok(())
}

fn write_report(out: &mut impl Write, report: &RewindReport) -> std::io::Result<()> {
    if report.preview {
        writeln!(
            out,
            "Preview of rewinding to before turn {} (nothing was changed):",
            report.seq
        )?;
        if report.mode != RewindMode::Code {
            writeln!(
                out,
                "would continue the conversation before turn {} in a new session (a fork)",
                report.seq
            )?;
        }
    }
    let text = describe(report);
    if !text.is_empty() {
        writeln!(out, "{text}")?;
    }
    if report.preview {
        // The conflicts' diffs are in the description already.
        for file in report
            .files
            .iter()
            .filter(|f| !matches!(f.action, FileAction::Unchanged | FileAction::Conflict))
        {
            if file.binary {
                writeln!(out, "{}: binary, no diff", file.path)?;
            } else if !file.diff.is_empty() {
                writeln!(out, "{}", file.diff.trim_end())?;
            }
        }
    }
    Ok(())
}

/// Refuse to change session `id` while another live process holds it.
async fn refuse_if_held(
    stored: &StoredSessions,
    data_dir: &Path,
    id: &SessionId,
    what: &str,
) -> anyhow::Result<()> {
    let Some(record) = stored.get(id).await? else {
        anyhow::bail!("session {id} vanished");
    };
    let Some(owner) = record.owner else {
        return Ok(());
    };
    if owner == Owner::current() || !owner.is_alive() {
        return Ok(());
    }
    let there = match crate::daemons::url_of(data_dir, &owner.to_string()) {
        Some(url) => format!(
            "the agentbus daemon at {url} (pid {}): {what} it there (/{what} in `agentbus chat --attach {url} --session {id}`)",
            owner.pid
        ),
        None => format!(
            "another agentbus process (pid {}): {what} it there with /{what}, or close it first",
            owner.pid
        ),
    };
    anyhow::bail!("session {id} is open in {there}; `--preview` only looks")
}

/// `sessions gc`: collect the blobs no checkpoint needs; say what was
/// freed and what the checkpoints hold now.
pub async fn gc(out: &mut impl Write, stored: &StoredSessions, json: bool) -> anyhow::Result<()> {
    let collected = stored.collect_blobs().await?;
    let usage = stored.checkpoint_usage().await?;
    if json {
        let both = serde_json::json!({ "collected": collected, "usage": usage });
        serde_json::to_writer_pretty(&mut *out, &both)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "Freed {} ({}).",
        count(collected.blobs, "blob"),
        count(collected.bytes, "byte")
    )?;
    writeln!(
        out,
        "The checkpoints now hold {} and {} ({}).",
        count(usage.checkpoints, "checkpoint"),
        count(usage.blobs, "blob"),
        count(usage.blob_bytes, "byte")
    )?;
    eprintln!(
        "A file version no checkpoint needs is kept for an hour after its last use (another session may count on it), then collected."
    );
    Ok(())
}
