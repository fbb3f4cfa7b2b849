//! `/rewind [SEQ [both|conversation|code] [--force]]` — without a turn,
//! lists the session's user turns and what each changed in the workspace;
//! with one, takes back what the turns from it on did: the files return to
//! their state before it (`code`), the conversation forks before it and the
//! front end switches there (`conversation`), or both (the default). A
//! file changed since by someone else is left alone unless `--force`.

use super::syntax::SlashCommand;
use crate::protocol::checkpoint::{
    FileAction, RewindList, RewindMode, RewindReport, Rewound, TurnChanges,
};
use crate::protocol::{ControlCommand, SystemEvent};

pub const COMMAND: SlashCommand = SlashCommand {
    name: "rewind",
    usage: "/rewind [SEQ [both|conversation|code] [--force]]",
    summary: "take back the files and/or conversation to before a turn (no SEQ: list the turns)",
    parse,
};

fn parse(args: &str) -> Result<ControlCommand, String> {
    let mut seq = None;
    let mut mode = None;
    let mut overwrite = false;
    for word in args.split_whitespace() {
        if word == "--force" || word == "force" {
            overwrite = true;
        } else if let Some(m) = RewindMode::parse(word) {
            mode = Some(m);
        } else if let Ok(n) = word.parse::<u64>() {
            seq = Some(n);
        } else {
            return Err(format!(
                "/rewind takes a turn's event number (seq, from /rewind), then both, conversation or code, then --force; not `{word}`."
            ));
        }
    }
    if seq.is_none() && (overwrite || mode.is_some()) {
        return Err(
            "/rewind needs the turn's event number (seq) first; /rewind alone lists them.".into(),
        );
    }
    Ok(ControlCommand::Rewind {
        seq,
        mode,
        overwrite,
    })
}

/// One line per path: `+3 -1 src/a.rs (created)`.
pub fn file_line(file: &crate::protocol::checkpoint::ChangedFile) -> String {
    use crate::protocol::checkpoint::Change;
    let what = match file.change {
        Change::Created => " (created)",
        Change::Deleted => " (deleted)",
        Change::Modified => "",
    };
    if file.binary {
        format!("binary {}{what}", file.path)
    } else {
        format!("+{} -{} {}{what}", file.added, file.removed, file.path)
    }
}

/// The reply listing the turns.
pub fn listed(turns: Vec<TurnChanges>) -> SystemEvent {
    let mut text = String::new();
    if turns.is_empty() {
        text.push_str("No turns to rewind to yet.");
    } else {
        text.push_str("Turns (rewind with /rewind SEQ [both|conversation|code]):");
        for turn in &turns {
            let undone = if turn.undone { " [undone]" } else { "" };
            text.push_str(&format!("\n  {:>5}  {}{undone}", turn.seq, turn.prompt));
            if turn.files.is_empty() {
                text.push_str("\n         (no files changed)");
            }
            for file in &turn.files {
                text.push_str(&format!("\n         {}", file_line(file)));
            }
        }
    }
    SystemEvent::new(text, &RewindList { turns })
}

/// The reply once a rewind (or `/undo`) was done.
pub fn rewound(report: RewindReport) -> SystemEvent {
    let text = describe(&report);
    let switch_to = report.forked.clone();
    SystemEvent::new(text, &Rewound { report, switch_to })
}

/// What a rewind did (or would do), in words.
pub fn describe(report: &RewindReport) -> String {
    let verb = |done: &str, would: &str| {
        if report.preview {
            would.to_string()
        } else {
            done.to_string()
        }
    };
    let mut lines = Vec::new();
    if report.mode != RewindMode::Conversation {
        let acted: Vec<&crate::protocol::checkpoint::RewindFile> = report
            .files
            .iter()
            .filter(|f| !matches!(f.action, FileAction::Unchanged | FileAction::Conflict))
            .collect();
        if acted.is_empty() && report.conflicts().next().is_none() {
            lines.push("No file needed restoring.".to_string());
        }
        for file in acted {
            let what = match file.action {
                FileAction::Remove => verb("removed", "would remove"),
                FileAction::Recreate => verb("recreated", "would recreate"),
                _ => verb("restored", "would restore"),
            };
            lines.push(format!("{what} {}", file.path));
        }
        for file in report.conflicts() {
            if report.overwrote {
                lines.push(format!(
                    "overwrote {} (it had been changed since by someone else)",
                    file.path
                ));
            } else {
                lines.push(format!(
                    "conflict: {} was changed since by someone else; left as it is (/rewind {} {} --force overwrites it)",
                    file.path,
                    report.seq,
                    report.mode.as_str()
                ));
                if !file.diff.is_empty() {
                    lines.push(file.diff.trim_end().to_string());
                }
            }
        }
    }
    if let Some(fork) = &report.forked {
        lines.push(format!(
            "The conversation continues before turn {} in new session {fork}.",
            report.seq
        ));
    }
    for note in &report.cannot_restore {
        lines.push(format!("Not taken back: {note}."));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_a_mode_and_force_parse_in_any_order_and_mistakes_are_named() {
        assert_eq!(
            parse(""),
            Ok(ControlCommand::Rewind {
                seq: None,
                mode: None,
                overwrite: false
            })
        );
        assert_eq!(
            parse("12 code --force"),
            Ok(ControlCommand::Rewind {
                seq: Some(12),
                mode: Some(RewindMode::Code),
                overwrite: true
            })
        );
        assert_eq!(
            parse("conversation 7"),
            Ok(ControlCommand::Rewind {
                seq: Some(7),
                mode: Some(RewindMode::Conversation),
                overwrite: false
            })
        );
        assert!(parse("12 everything").unwrap_err().contains("`everything`"));
        assert!(
            parse("code")
                .unwrap_err()
                .contains("needs the turn's event number")
        );
    }
}
