//! MCP: what the McpServer actor ([`crate::mcp_server`]) is made of.
//!
//! - [`connect`]: starting an rmcp client over stdio or streamable HTTP.
//! - [`naming`]: `mcp__<server>__<tool>` names within the models' limits.
//! - [`content`]: tool results as text the model reads.
//! - [`tool`]: an MCP tool as an entry of the shared tool registry.

pub mod connect;
pub mod content;
pub mod naming;
pub mod tool;
