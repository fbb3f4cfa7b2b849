//! Administration commands: look after stored sessions and MCP servers
//! without chatting.
//!
//! - [`sessions`]: `agentbus sessions list|show|export|import|fork|delete`,
//!   straight from the store (no model, no MCP server started), and
//!   [`rewind`]: `agentbus sessions rewind|undo|gc`, the checkpoints'.
//! - [`mcp`]: `agentbus mcp list`, which starts the configured MCP servers
//!   once and reports what each offers.
//! - [`hooks`]: `agentbus hooks list|trust`, the hooks a session in the
//!   workspace runs, and trusting the workspace's own.

pub mod hooks;
pub mod mcp;
pub mod rewind;
pub mod sessions;
