//! The set of sessions: which are loaded, creating new ones, loading stored
//! ones, unloading idle ones.
//!
//! - [`manager`]: the SessionManager actor, owner of the table of loaded
//!   sessions and of their leases.
//! - [`loader`]: the state a session starts from — fresh, or folded from
//!   its stored log — built off the manager's mailbox.
//!
//! One session's own life is [`crate::session`]; operations on stored
//! sessions that need no loaded session (fork, export, import, ...) are
//! [`crate::stored_sessions`].

pub mod loader;
pub mod manager;

pub use manager::SessionOptions;
