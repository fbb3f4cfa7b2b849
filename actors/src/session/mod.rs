//! One session: its pure core, the actor that drives it, and the handle
//! front ends hold.
//!
//! - [`core`]: the conversation as a state machine with no I/O (`step`),
//!   the slash commands, and the fold that rebuilds a stored session.
//! - `actor`: the AgentLoop, the only caller of `step` for its session.
//! - [`handle`]: what a front end holds to talk to a live session.
//! - `store_commands`: how the AgentLoop performs the commands that read or
//!   write stored sessions (`/new`, `/fork`, `/save`, ...).
//! - [`error`]: why a session could not do what was asked.
//!
//! The set of sessions (creating, loading, unloading) is [`crate::sessions`].

pub mod actor;
pub mod core;
pub mod error;
pub mod handle;
pub mod store_commands;

pub use error::{Failure, SessionError};
pub use handle::SessionHandle;
