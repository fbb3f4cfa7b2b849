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
//! - [`door`]: [`SessionDoor`], the one way to a session wherever it runs
//!   (send an input, follow from a seq).
//! - [`handle`]: the door of a session this process drives.
//! - [`error`]: why a session could not do what was asked.
//! - [`model_input`]: what a model's stream item becomes for the core, for
//!   every driver (the AgentLoop, the library face in `embedded`).
//! - [`permission_setup`]: a session's permission settings from the
//!   configuration, `$HOME` and the Landlock probe.
//! - `project_rules`: an "allow always" rule saved to the workspace's
//!   `.agentbus.toml`.
//!
//! The files a session is made from (named agents, custom commands,
//! skills, instructions) are read by [`crate::workspace_files`].
//!
//! The set of sessions (creating, loading, unloading) is [`crate::sessions`];
//! so are stored sessions, and the commands that work on them (`/new`,
//! `/fork`, `/save`, ...), which the AgentLoop hands on through
//! [`actor::SessionCommands`].

pub mod actor;
pub mod core;
pub mod door;
pub mod error;
mod fence;
pub mod handle;
mod journal;
pub mod model_input;
pub mod permission_setup;
mod project_rules;
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
pub use door::SessionDoor;
pub use handle::SessionHandle;
