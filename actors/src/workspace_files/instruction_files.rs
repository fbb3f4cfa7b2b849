//! Reading a session's instruction files from disk: `AGENTS.md` in the
//! user's configuration directory, and the workspace's `AGENTS.md` — else
//! its `CLAUDE.md` — for daemon sessions and library agents alike.
//!
//! The I/O half of `session::core::instructions` (the core must not read
//! files): called when a session is created or loaded, and by the library's
//! builder. A file that is missing or empty adds nothing; one that exists
//! but cannot be used (unreadable, not UTF-8, not a file) becomes a problem
//! naming its path, which the session shows as a notice when it starts —
//! never a failed session. Each file is read up to the cap and no further.

use crate::session::core::instructions::{InstructionFile, Instructions, MAX_FILE_BYTES, Scope};
use std::io::Read;
use std::path::Path;

/// The project's files, in the order they are looked for: the first that
/// exists is the one read.
pub const PROJECT_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// The user-level file's name in the configuration directory.
pub const USER_FILE: &str = "AGENTS.md";

/// The instructions for a session in `workspace`: `config_dir/AGENTS.md`
/// (when there is a configuration directory), then the workspace's file
/// (when there is a workspace).
pub fn read(config_dir: Option<&Path>, workspace: Option<&Path>) -> Instructions {
    let mut instructions = Instructions::default();
    let mut add = |path: &Path, scope| match read_file(path, scope) {
        Ok(Some(file)) => instructions.files.push(file),
        Ok(None) => {}
        Err(problem) => {
            tracing::warn!("{problem}");
            instructions.problems.push(problem);
        }
    };
    let user = config_dir.map(|dir| dir.join(USER_FILE));
    if let Some(path) = &user {
        add(path, Scope::User);
    }
    if let Some(workspace) = workspace {
        let project = PROJECT_FILES
            .iter()
            .map(|name| workspace.join(name))
            .find(|path| path.symlink_metadata().is_ok());
        // The workspace may be the configuration directory itself.
        if let Some(path) = project.filter(|p| !same_file(p, user.as_deref())) {
            add(&path, Scope::Project);
        }
    }
    instructions
}

/// One file: `None` when it is missing or holds only blanks.
fn read_file(path: &Path, scope: Scope) -> Result<Option<InstructionFile>, String> {
    let shown = path.display();
    let metadata = match std::fs::metadata(path) {
        Ok(metadata) => metadata,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("Instructions {shown} were not read: {e}.")),
    };
    if !metadata.is_file() {
        return Err(format!(
            "Instructions {shown} were not read: it is not a file."
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| file.take(MAX_FILE_BYTES as u64 + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("Instructions {shown} were not read: {e}."))?;
    let truncated_from = (bytes.len() > MAX_FILE_BYTES).then_some(metadata.len());
    bytes.truncate(MAX_FILE_BYTES);
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        // Cut inside a character: keep the whole characters before it.
        Err(e) if truncated_from.is_some() && e.utf8_error().error_len().is_none() => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
        Err(e) => {
            return Err(format!(
                "Instructions {shown} were not read: it is not UTF-8 text (invalid byte at offset {}).",
                e.utf8_error().valid_up_to()
            ));
        }
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(InstructionFile {
        scope,
        path: path.display().to_string(),
        text,
        truncated_from: truncated_from.map(|size| size.max(MAX_FILE_BYTES as u64 + 1)),
    }))
}

fn same_file(path: &Path, other: Option<&Path>) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).ok();
    other.is_some_and(|other| canonical(path).is_some() && canonical(path) == canonical(other))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dirs() -> (tempfile::TempDir, tempfile::TempDir) {
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap())
    }

    fn sources(instructions: &Instructions) -> Vec<(Scope, String)> {
        instructions
            .files
            .iter()
            .map(|f| (f.scope, f.file_name().to_string()))
            .collect()
    }

    #[test]
    fn nothing_there_gives_no_instructions() {
        let (config, workspace) = dirs();
        let read = read(Some(config.path()), Some(workspace.path()));
        assert_eq!(read, Instructions::default());
        assert_eq!(read.section(), "");
    }

    #[test]
    fn user_level_only() {
        let (config, workspace) = dirs();
        std::fs::write(config.path().join("AGENTS.md"), "Answer in French.").unwrap();
        let read = read(Some(config.path()), Some(workspace.path()));
        assert_eq!(sources(&read), [(Scope::User, "AGENTS.md".into())]);
        assert!(read.section().contains("# User instructions from "));
        assert!(read.section().ends_with("Answer in French."));
    }

    #[test]
    fn project_only() {
        let (config, workspace) = dirs();
        std::fs::write(workspace.path().join("AGENTS.md"), "Run `make check`.").unwrap();
        let read = read(Some(config.path()), Some(workspace.path()));
        assert_eq!(sources(&read), [(Scope::Project, "AGENTS.md".into())]);
        assert!(read.section().contains(&format!(
            "# Project instructions from {}",
            workspace.path().join("AGENTS.md").display()
        )));
    }

    #[test]
    fn both_user_level_first() {
        let (config, workspace) = dirs();
        std::fs::write(config.path().join("AGENTS.md"), "USER-RULE").unwrap();
        std::fs::write(workspace.path().join("AGENTS.md"), "PROJECT-RULE").unwrap();
        let read = read(Some(config.path()), Some(workspace.path()));
        assert_eq!(read.files.len(), 2);
        let section = read.section();
        let (user, project) = (section.find("USER-RULE"), section.find("PROJECT-RULE"));
        assert!(
            user.is_some() && project.is_some() && user < project,
            "{section}"
        );
    }

    #[test]
    fn claude_md_when_there_is_no_agents_md() {
        let (config, workspace) = dirs();
        std::fs::write(workspace.path().join("CLAUDE.md"), "claude rules").unwrap();
        let read = read(Some(config.path()), Some(workspace.path()));
        assert_eq!(sources(&read), [(Scope::Project, "CLAUDE.md".into())]);
        assert!(read.section().ends_with("claude rules"));
    }

    #[test]
    fn agents_md_wins_over_claude_md() {
        let (config, workspace) = dirs();
        std::fs::write(workspace.path().join("CLAUDE.md"), "claude rules").unwrap();
        std::fs::write(workspace.path().join("AGENTS.md"), "agents rules").unwrap();
        let read = read(Some(config.path()), Some(workspace.path()));
        assert_eq!(sources(&read), [(Scope::Project, "AGENTS.md".into())]);
        assert!(!read.section().contains("claude rules"));
    }

    #[test]
    fn a_long_file_is_cut_at_the_cap_on_a_character_boundary() {
        let (config, workspace) = dirs();
        // Two-byte characters after one byte: the cap falls inside one.
        let text = format!("x{}", "é".repeat(MAX_FILE_BYTES));
        std::fs::write(workspace.path().join("AGENTS.md"), &text).unwrap();
        let read = read(Some(config.path()), Some(workspace.path()));
        let file = &read.files[0];
        assert_eq!(file.truncated_from, Some(text.len() as u64));
        assert_eq!(file.text.len(), MAX_FILE_BYTES - 1);
        assert!(text.starts_with(&file.text));
        assert_eq!(read.notices().len(), 1, "{:?}", read.notices());
    }

    #[test]
    fn a_file_of_exactly_the_cap_is_whole() {
        let (_, workspace) = dirs();
        std::fs::write(
            workspace.path().join("AGENTS.md"),
            "y".repeat(MAX_FILE_BYTES),
        )
        .unwrap();
        let read = read(None, Some(workspace.path()));
        assert_eq!(read.files[0].truncated_from, None);
        assert!(read.notices().is_empty());
    }

    #[test]
    fn a_file_that_is_not_utf8_is_a_problem_naming_it_not_a_failure() {
        let (config, workspace) = dirs();
        std::fs::write(config.path().join("AGENTS.md"), "fine").unwrap();
        std::fs::write(workspace.path().join("AGENTS.md"), b"ok \xff\xfe bad").unwrap();
        let read = read(Some(config.path()), Some(workspace.path()));
        assert_eq!(sources(&read), [(Scope::User, "AGENTS.md".into())]);
        assert_eq!(read.problems.len(), 1);
        let path = workspace.path().join("AGENTS.md").display().to_string();
        assert!(
            read.problems[0].contains(&path) && read.problems[0].contains("UTF-8"),
            "{:?}",
            read.problems
        );
    }

    #[test]
    fn a_directory_in_the_files_place_is_a_problem() {
        let (_, workspace) = dirs();
        std::fs::create_dir(workspace.path().join("AGENTS.md")).unwrap();
        std::fs::write(workspace.path().join("CLAUDE.md"), "not used").unwrap();
        let read = read(None, Some(workspace.path()));
        assert!(read.files.is_empty());
        assert!(
            read.problems[0].contains("not a file"),
            "{:?}",
            read.problems
        );
    }

    #[test]
    fn an_empty_file_adds_nothing() {
        let (_, workspace) = dirs();
        std::fs::write(workspace.path().join("AGENTS.md"), "  \n\n").unwrap();
        assert_eq!(read(None, Some(workspace.path())), Instructions::default());
    }

    #[test]
    fn the_configuration_directory_as_workspace_is_read_once() {
        let (config, _) = dirs();
        std::fs::write(config.path().join("AGENTS.md"), "once").unwrap();
        let read = read(Some(config.path()), Some(config.path()));
        assert_eq!(sources(&read), [(Scope::User, "AGENTS.md".into())]);
    }
}
