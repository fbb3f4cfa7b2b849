//! agentbus-actors: everything agentbus is, minus its front ends.
//!
//! - [`protocol`]: the typed inputs and events every front end speaks.
//! - [`session`]: the pure conversation core (`step`), no I/O.
//! - [`commands`]: slash commands, one file each.
//! - [`bus`]: per-session topics with seq numbers and replay.
//! - [`model`] and [`provider`]: model requests, and the wire formats.
//! - [`tools`]: the built-in tools.
//! - the actors: [`agent_loop`], [`tool_executor`], [`mcp_server`],
//!   [`ui_sink`], [`session_manager`] (with [`session_loader`]); [`runtime`]
//!   wires them together.
//! - [`mcp`]: connecting to MCP servers, naming and reading their tools.
//! - [`settings`]: the resolved configuration; [`text`]: small text helpers.

pub mod agent_loop;
pub mod bus;
pub mod commands;
pub mod mcp;
pub mod mcp_server;
pub mod model;
pub mod protocol;
pub mod provider;
pub mod runtime;
pub mod session;
pub mod session_commands;
pub mod session_handle;
pub mod session_loader;
pub mod session_manager;
pub mod settings;
pub mod store;
pub mod text;
pub mod tool_executor;
pub mod tools;
pub mod ui_sink;

pub use runtime::{Runtime, RuntimeError};
pub use session_handle::{SessionError, SessionHandle};
pub use session_manager::SessionOptions;
pub use settings::Settings;
