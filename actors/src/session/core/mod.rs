//! The pure session core: a conversation as a state machine with no I/O.
//!
//! ```text
//! step(&mut state, input, now_ms) -> Vec<Effect>
//! ```
//!
//! Inputs are what front ends send (queries, control commands, interrupts)
//! and signals fed back by the driver (model stream events, model failure,
//! tool outcomes). Effects are requests for the driver: emit an event, call
//! the model, run tools, cancel them. The core never awaits and never touches
//! the network, the disk or the clock (time arrives as `now_ms`), so every
//! conversation rule is a deterministic unit test (see `tests.rs`).
//!
//! Rules kept here and nowhere else:
//! - one FIFO queue for queries and control commands; interrupt bypasses it;
//! - every accepted query produces exactly one `result` event;
//! - the history never holds a tool call without its result, nor a result
//!   without its call — not even after an interrupt or a provider failure;
//! - tool results are emitted and recorded in the order of the calls;
//! - a turn makes at most `max_steps` model calls;
//! - a tool call runs only when the mode and the rules let it, or the user
//!   allowed it (`permission`); an interrupt settles every open request;
//! - an interrupt closes the turn within its own step (the streamed part
//!   kept, marked interrupted; a cancelled result for every call without
//!   one; `result` cancelled) and asks the driver to cancel what runs;
//!   what the cancelled work still reports carries a stale `request_id`
//!   or `batch_id` and is ignored.
//!
//! Its dependencies are only `protocol`, `model`, `text`, `tokens`,
//! `permissions` and `images`, and it names no I/O, clock or actor crate
//! (`tests/all/layout.rs` checks both).

pub mod agents;
pub mod attach;
pub mod claude_tools;
pub mod commands;
pub mod context;
pub mod custom_commands;
mod effect;
pub mod hooks;
mod input;
pub mod instructions;
pub mod mcp_wait;
pub mod partial;
pub mod permission;
pub mod plan;
mod restore;
pub mod skills;
mod state;
mod step;
pub mod turn;

#[cfg(test)]
mod attach_tests;
#[cfg(test)]
mod custom_commands_tests;
#[cfg(test)]
mod images_tests;
#[cfg(test)]
mod instructions_tests;
#[cfg(test)]
mod plan_tests;
#[cfg(test)]
mod skills_tests;
#[cfg(test)]
mod tests;

pub use effect::{Effect, SessionCommand};
pub use input::{Input, SubagentUpdate};
pub use restore::restore;
pub use state::{SessionConfig, SessionState};
pub use step::step;
