//! How an MCP server is doing, as sessions report it in `system` events
//! with subtype `mcp_server_status` (`data`: `{server, state, ...}`).

use serde::{Deserialize, Serialize};

/// The state of one configured MCP server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum McpServerStatus {
    /// Connecting, initializing, listing tools. Sessions do not wait.
    Starting,
    /// Its tools are in the registry.
    Ready { tools: usize },
    /// It crashed or could not start and will be started again.
    Restarting {
        attempt: u32,
        delay_ms: u64,
        reason: String,
        /// The last lines it wrote to stderr.
        stderr: Vec<String>,
    },
    /// It could not be started and agentbus gave up.
    Failed { reason: String, stderr: Vec<String> },
    /// Shut down (agentbus is exiting).
    Stopped,
}

impl McpServerStatus {
    /// One line for people: `ready with 13 tools`, `failed: ...`.
    pub fn describe(&self) -> String {
        let tail = |stderr: &[String]| match stderr.last() {
            Some(line) => format!(" (stderr: {line})"),
            None => String::new(),
        };
        match self {
            McpServerStatus::Starting => "starting".into(),
            McpServerStatus::Ready { tools: 1 } => "ready with 1 tool".into(),
            McpServerStatus::Ready { tools } => format!("ready with {tools} tools"),
            McpServerStatus::Restarting {
                attempt,
                delay_ms,
                reason,
                stderr,
            } => format!(
                "restarting (attempt {attempt} in {delay_ms} ms) after: {reason}{}",
                tail(stderr)
            ),
            McpServerStatus::Failed { reason, stderr } => {
                format!("failed: {reason}{}", tail(stderr))
            }
            McpServerStatus::Stopped => "stopped".into(),
        }
    }
}
