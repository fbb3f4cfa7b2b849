//! One session: its pure core, the actor that drives it, and the handle
//! front ends hold.
//!
//! - [`core`]: the conversation as a state machine with no I/O (`step`),
//!   the slash commands, and the fold that rebuilds a stored session.
//! - `actor`: the AgentLoop, the only caller of `step` for its session.
//! - `journal`: the AgentLoop's account with the store — the seq
//!   reservation, the inputs stored as waiting, events a failed commit owes.
//! - `fence`: on a node of a cluster, how the AgentLoop stops a session
//!   taken from this node (a commit refused, the node fenced).
//! - [`handle`]: what a front end holds to talk to a live session.
//! - [`error`]: why a session could not do what was asked.
//! - [`model_input`]: what a model's stream item becomes for the core, for
//!   every driver (the AgentLoop, the library's `agent`).
//! - [`permission_setup`]: a session's permission settings from the
//!   configuration, `$HOME` and the Landlock probe.
//! - [`agent_files`]: a session's named agents — built-in, configured, and
//!   the agent files of the user's folders and the workspace;
//!   `agent_markdown` reads one file (Claude Code's format).
//! - [`command_files`]: a session's custom slash commands — the command
//!   files of the user's folders and the workspace; `command_markdown`
//!   reads one file (Claude Code's format).
//! - [`skill_files`]: a session's Agent Skills — the `NAME/SKILL.md`
//!   folders of the user's, the configured and the workspace's skills
//!   folders; `skill_markdown` reads one file.
//! - `front_matter`: the YAML front matter the kinds of file share, and
//!   Claude Code's tool names; `markdown_files`: listing and reading them.
//! - `project_rules`: an "allow always" rule saved to the workspace's
//!   `.agentbus.toml`.
//!
//! The set of sessions (creating, loading, unloading) is [`crate::sessions`];
//! so are stored sessions, and the commands that work on them (`/new`,
//! `/fork`, `/save`, ...), which the AgentLoop hands on through
//! [`actor::SessionCommands`].

pub mod actor;
pub mod agent_files;
mod agent_markdown;
pub mod command_files;
mod command_markdown;
pub mod core;
pub mod error;
mod fence;
mod front_matter;
pub mod handle;
pub mod instruction_files;
mod journal;
mod markdown_files;
pub mod model_input;
pub mod permission_setup;
mod project_rules;
pub mod skill_files;
mod skill_markdown;
mod turn_trace;

pub use error::{Failure, SessionError};

/// Milliseconds since the Unix epoch: the `now_ms` every driver of the
/// core (the AgentLoop, the library's driver) passes to `step`.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
pub use handle::SessionHandle;
