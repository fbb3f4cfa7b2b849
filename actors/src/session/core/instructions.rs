//! Project instructions: the `AGENTS.md` (or `CLAUDE.md`) a user keeps for
//! the model — one in the configuration directory for every workspace, one
//! in the workspace for its project — and how they join the system prompt.
//!
//! Exists so that every request of a session carries what the user wrote
//! for the model, the way Claude Code, Codex and OpenCode do, while the core
//! stays pure: the files are read by the I/O layer
//! (`workspace_files::instruction_files`) when the session is created or loaded,
//! and arrive here as data. This module only says how the text is laid out
//! (user-level first, then the project's, each under a heading naming its
//! file) and what the user is told about files that could not be used.

use serde::Serialize;

/// The most bytes of one file given to the model; the rest is left out
/// (and the user told).
pub const MAX_FILE_BYTES: usize = 64 * 1024;

/// Whose instructions a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// The user's own, from the configuration directory: every workspace.
    User,
    /// The workspace's `AGENTS.md`, else its `CLAUDE.md`.
    Project,
}

/// One instruction file, as read when the session started.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct InstructionFile {
    pub scope: Scope,
    /// Where it was read, as shown to the user and the model.
    pub path: String,
    /// Its text (at most [`MAX_FILE_BYTES`]).
    pub text: String,
    /// The file's whole size in bytes, when `text` is only its start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated_from: Option<u64>,
}

impl InstructionFile {
    /// The file's name (`AGENTS.md`, `CLAUDE.md`).
    pub fn file_name(&self) -> &str {
        std::path::Path::new(&self.path)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(&self.path)
    }

    /// How the file appears in the system prompt: a heading naming it,
    /// then its text.
    pub fn block(&self) -> String {
        let whose = match self.scope {
            Scope::User => "User instructions",
            Scope::Project => "Project instructions",
        };
        let mut block = format!("\n\n# {whose} from {}\n\n{}", self.path, self.text.trim());
        if let Some(size) = self.truncated_from {
            block.push_str(&format!(
                "\n\n[The file is {size} bytes; only its first {MAX_FILE_BYTES} are shown.]"
            ));
        }
        block
    }
}

/// The instructions a session was started with, and what went wrong
/// reading them.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Instructions {
    /// User-level first, then the project's.
    pub files: Vec<InstructionFile>,
    /// Files that exist but could not be used, each a sentence naming the
    /// path and why (unreadable, not UTF-8, not a file).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

impl Instructions {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// What is appended to the configured system prompt: every file's
    /// [`block`](InstructionFile::block), user-level first (empty without
    /// files).
    pub fn section(&self) -> String {
        self.files.iter().map(InstructionFile::block).collect()
    }

    /// The project's file, when the workspace has one.
    pub fn project(&self) -> Option<&InstructionFile> {
        self.files.iter().find(|f| f.scope == Scope::Project)
    }

    /// What the user is told when the session starts: each file that could
    /// not be used, each file cut at the cap.
    pub fn notices(&self) -> Vec<String> {
        let mut notices = self.problems.clone();
        for file in &self.files {
            if let Some(size) = file.truncated_from {
                notices.push(format!(
                    "Instructions {} are {size} bytes; the model is given only the first {} KiB.",
                    file.path,
                    MAX_FILE_BYTES / 1024
                ));
            }
        }
        notices
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::session::core) fn file(scope: Scope, path: &str, text: &str) -> InstructionFile {
        InstructionFile {
            scope,
            path: path.into(),
            text: text.into(),
            truncated_from: None,
        }
    }

    #[test]
    fn no_files_add_nothing() {
        let none = Instructions::default();
        assert_eq!(none.section(), "");
        assert!(none.notices().is_empty());
        assert!(none.project().is_none());
    }

    #[test]
    fn each_file_comes_under_a_heading_naming_it_user_level_first() {
        let both = Instructions {
            files: vec![
                file(
                    Scope::User,
                    "/home/u/.config/agentbus/AGENTS.md",
                    "Answer in French.",
                ),
                file(Scope::Project, "/ws/AGENTS.md", "Run `make check`.\n"),
            ],
            problems: Vec::new(),
        };
        assert_eq!(
            both.section(),
            "\n\n# User instructions from /home/u/.config/agentbus/AGENTS.md\n\nAnswer in French.\
             \n\n# Project instructions from /ws/AGENTS.md\n\nRun `make check`."
        );
        assert_eq!(both.project().map(|f| f.file_name()), Some("AGENTS.md"));
    }

    #[test]
    fn a_cut_file_says_so_to_the_model_and_to_the_user() {
        let cut = Instructions {
            files: vec![InstructionFile {
                truncated_from: Some(100_000),
                ..file(Scope::Project, "/ws/CLAUDE.md", "start")
            }],
            problems: vec!["Cannot read /x/AGENTS.md: permission denied".into()],
        };
        assert!(
            cut.section()
                .ends_with("[The file is 100000 bytes; only its first 65536 are shown.]")
        );
        let notices = cut.notices();
        assert_eq!(notices.len(), 2, "{notices:?}");
        assert!(notices[0].contains("/x/AGENTS.md"));
        assert!(notices[1].contains("/ws/CLAUDE.md") && notices[1].contains("64 KiB"));
    }
}
