//! MCP servers: one McpServer actor per configured server and per server
//! given to sessions, and what it is made of.
//!
//! - [`server`]: the McpServer actor (start, list tools, follow changes,
//!   restart after a crash, call tools, stop).
//! - [`given`]: the servers given to sessions (an editor's), each offered
//!   only to the sessions given it, stopped when none has it.
//! - [`connect`]: starting an rmcp client over stdio or streamable HTTP.
//! - [`content`]: tool results as text the model reads.
//! - [`tool`]: an MCP tool as an entry of the shared tool registry.
//!
//! How a server's tools are named (`mcp__<server>__<tool>`) is
//! [`crate::tools::naming`].

pub mod connect;
pub mod content;
pub mod given;
pub mod server;
pub mod tool;
