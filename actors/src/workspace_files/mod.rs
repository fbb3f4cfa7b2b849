//! The files a session is made from, as users already keep them for
//! Claude Code: named agents, custom slash commands, Agent Skills and
//! instruction files, in the user's folders and the workspace.
//!
//! Exists so that reading them from disk lives apart from the session that
//! uses what they say: these modules find and read files and hand the
//! pure core plain values (`session::core`'s `AgentSet`, `CustomCommands`,
//! `Skills`, `Instructions`); the set of sessions (`sessions/loader.rs`)
//! and the library's builder call them when a session is made or loaded.
//! Nothing here runs a session or writes a file.
//!
//! - [`agent_files`]: a session's named agents — built-in, configured, and
//!   the agent files of the user's folders and the workspace;
//!   `agent_markdown` reads one file (Claude Code's format).
//! - [`command_files`]: a session's custom slash commands — the command
//!   files of the user's folders and the workspace; `command_markdown`
//!   reads one file (Claude Code's format).
//! - [`skill_files`]: a session's Agent Skills — the `NAME/SKILL.md`
//!   folders of the user's, the configured and the workspace's skills
//!   folders; `skill_markdown` reads one file.
//! - [`instruction_files`]: the user's `AGENTS.md` in the configuration
//!   directory, the workspace's `AGENTS.md` else `CLAUDE.md`.
//! - `front_matter`: the YAML front matter the kinds of file share, and
//!   Claude Code's tool names; `markdown_files`: listing and reading them.

pub mod agent_files;
mod agent_markdown;
pub mod command_files;
mod command_markdown;
mod front_matter;
pub mod instruction_files;
mod markdown_files;
pub mod skill_files;
mod skill_markdown;

/// A file written under `root`, its folders made: the readers' tests lay
/// out the user's and the workspace's folders with it.
#[cfg(test)]
fn write_test_file(root: &std::path::Path, file: &str, text: &str) {
    let path = root.join(file);
    std::fs::create_dir_all(path.parent().expect("a folder")).expect("mkdir");
    std::fs::write(path, text).expect("write");
}
