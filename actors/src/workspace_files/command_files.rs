//! The custom slash commands of a session in a workspace: the command
//! files of `~/.claude/commands/`, the configuration directory's
//! `commands/`, the workspace's `.claude/commands/`, then its
//! `.agentbus/commands/` — a later definition of a name replaces an
//! earlier one, so the workspace's win over the user's and `.agentbus`
//! over `.claude`. A file's name without `.md` is the command's name; the
//! subfolders it sits in come first, joined by `:`
//! (`frontend/component.md` is `/frontend:component`).
//!
//! The I/O half of `session::core::custom_commands` (the core must not
//! read files): called when a session is created or loaded. A file that
//! cannot be used — unreadable, bad front matter, no prompt, named like a
//! built-in command — becomes a problem naming the file (and the field),
//! which the session shows as a notice and `/help` lists; the others still
//! load. Never fails a session.

use super::{command_markdown, markdown_files};
use crate::session::core::commands::is_built_in;
use crate::session::core::custom_commands::{CustomCommand, CustomCommands};
use std::path::{Path, PathBuf};

/// The folders read, in order (later wins): `home` is `$HOME`,
/// `config_dir` the user's configuration directory.
pub fn folders(home: Option<&Path>, config_dir: Option<&Path>, workspace: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(home) = home {
        dirs.push(home.join(".claude").join("commands"));
    }
    if let Some(config) = config_dir {
        dirs.push(config.join("commands"));
    }
    dirs.push(workspace.join(".claude").join("commands"));
    dirs.push(workspace.join(".agentbus").join("commands"));
    dirs.dedup();
    dirs
}

/// Every custom command of a session in `workspace`.
pub fn read(home: Option<&Path>, config_dir: Option<&Path>, workspace: &Path) -> CustomCommands {
    let mut definitions: Vec<CustomCommand> = Vec::new();
    let mut problems = Vec::new();
    for dir in folders(home, config_dir, workspace) {
        for path in markdown_files::list(&dir, true, &mut problems) {
            match read_file(&dir, &path) {
                Ok(command) => definitions.push(command),
                Err(why) => problems.push(format!("{}: {why}", path.display())),
            }
        }
    }
    let set = CustomCommands::with(definitions, problems, is_built_in);
    for problem in &set.problems {
        tracing::warn!("command file not used: {problem}");
    }
    set
}

fn read_file(dir: &Path, path: &Path) -> Result<CustomCommand, String> {
    let text = markdown_files::read_text(path)?;
    command_markdown::parse(&text, &name(dir, path), &path.display().to_string())
}

/// The command's name: the path below `dir` without `.md`, folders joined
/// by `:`.
fn name(dir: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(dir).unwrap_or(path).with_extension("");
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join(":")
}

#[cfg(test)]
mod tests {
    use super::super::write_test_file as write;
    use super::*;

    #[test]
    fn the_workspace_wins_over_the_user_and_agentbus_over_claude() {
        let home = tempfile::tempdir().expect("home");
        let config = tempfile::tempdir().expect("config");
        let ws = tempfile::tempdir().expect("workspace");
        write(home.path(), ".claude/commands/review.md", "home review");
        write(home.path(), ".claude/commands/mine.md", "home only");
        write(
            config.path(),
            "commands/mine.md",
            "config wins over ~/.claude",
        );
        write(ws.path(), ".claude/commands/review.md", "claude review");
        write(ws.path(), ".agentbus/commands/review.md", "agentbus review");
        write(
            ws.path(),
            ".claude/commands/frontend/component.md",
            "component",
        );
        write(ws.path(), ".claude/commands/clear.md", "not a built-in");
        write(
            ws.path(),
            ".agentbus/commands/bad.md",
            "---\nallowed-tools: 3\n---\nb",
        );
        let set = read(Some(home.path()), Some(config.path()), ws.path());
        let prompt = |name: &str| set.find(name).map(|c| c.prompt.clone()).unwrap_or_default();
        assert_eq!(prompt("review"), "agentbus review");
        assert_eq!(prompt("mine"), "config wins over ~/.claude");
        assert_eq!(prompt("frontend:component"), "component");
        assert!(set.find("clear").is_none());
        assert!(set.find("bad").is_none());
        assert_eq!(set.problems.len(), 2, "{:?}", set.problems);
        assert!(
            set.problems
                .iter()
                .any(|p| p.contains("bad.md") && p.contains("allowed-tools")),
            "{:?}",
            set.problems
        );
        assert!(
            set.problems
                .iter()
                .any(|p| p.contains("clear.md") && p.contains("built-in")),
            "{:?}",
            set.problems
        );
    }
}
