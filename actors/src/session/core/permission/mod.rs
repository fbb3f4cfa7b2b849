//! Whether a tool call runs, asks first, or never runs — and the approval
//! requests of the calls that ask.
//!
//! The rules are `permissions`' (pure data and a pure matcher); this is
//! where the session's mode and its roots settle what the rules leave open
//! ([`policy`]), and where a call waiting for the user is kept until a
//! decision, a timeout or an interrupt settles it ([`approval`]). Pure,
//! like the rest of the core: the clock of a timeout arrives as an input.
//!
//! - `config.rs` — what the session is configured with and what it keeps.
//! - `policy.rs` — one call's verdict: run (with what grant), ask, deny.
//! - `approval.rs` — requests and their resolution.

pub mod approval;
pub mod config;
pub mod policy;

#[cfg(test)]
mod tests;

pub use config::{PermissionConfig, PermissionState};
