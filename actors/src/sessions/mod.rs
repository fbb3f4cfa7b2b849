//! The set of sessions: which are loaded, creating new ones, loading stored
//! ones, unloading idle ones.
//!
//! - [`manager`]: the SessionManager actor, owner of the table of loaded
//!   sessions and of their leases.
//! - [`loader`]: the state a session starts from — fresh, or folded from
//!   its stored log — built off the manager's mailbox.
//! - [`stored`]: stored sessions as a service — create, resolve, list,
//!   fork, export, import, delete — the one implementation behind the slash
//!   commands, the HTTP API and the `sessions` command line.
//! - [`checkpoints`]: what each turn changed in the workspace, rewinding
//!   and `/undo`, collecting unneeded blobs (on the stored sessions).
//! - [`store_commands`]: the slash commands that work on stored sessions
//!   (`/new`, `/sessions`, `/resume`, `/fork`, `/save`, `/load`), performed
//!   for every AgentLoop.
//!
//! - [`subagents`]: the `task` calls of a session, each a named agent in a
//!   child session.
//!
//! One session's own life is [`crate::session`].

pub mod checkpoints;
pub mod driven;
pub mod loader;
pub mod manager;
pub mod options;
pub mod store_commands;
pub mod stored;
pub mod subagents;

pub use options::SessionOptions;
