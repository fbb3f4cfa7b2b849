//! The protocol: every type that crosses the bus, in one place, as plain data.
//!
//! Front ends (the terminal chat, one-shot runs, the HTTP API and its web
//! page) speak only this vocabulary. It never contains provider wire formats and never contains
//! logic beyond construction helpers: what a type *means* is documented here,
//! what the session *does* with it lives in the session core.
//!
//! - [`agent`]: named agents as sessions keep and show them.
//! - [`checkpoint`]: what tool calls changed in the workspace, and
//!   rewinding it.
//! - [`hook`]: hook events, what hooks answer, and the report of a run.
//! - [`input`]: what a front end sends into a session (queries, control
//!   commands, interrupts).
//! - [`event`]: what a session publishes ([`AgentMessage`] in an
//!   [`EventEnvelope`] carrying a per-session `seq`, never given twice).
//! - [`content`]: the pieces both share: content blocks, usage, stop reasons.
//! - [`context`]: the context window: its configuration, usage and reports.
//! - [`message`]: the conversation history as the model sees it.
//! - [`mcp`]: the status of MCP servers, as sessions report it.
//! - [`permission`]: permission modes, approval decisions and how a
//!   request was settled.
//! - [`plan`]: the model's checklist (`todo_write`) and its `plan` event.
//! - [`profile`]: a model profile as sessions show it (no key).
//! - [`system`]: `system` events and the typed payload of each subtype.

pub mod agent;
pub mod checkpoint;
pub mod content;
pub mod context;
pub mod event;
pub mod hook;
pub mod input;
pub mod lifecycle;
pub mod mcp;
pub mod message;
pub mod permission;
pub mod plan;
pub mod profile;
pub mod system;
pub mod time;

pub use agent::{
    AgentDefinition, AgentInfo, AgentList, AgentSwitched, SubagentFinished, SubagentStarted,
};
pub use content::{ContentBlock, Image, StopReason, Usage};
pub use context::{ContextConfig, ContextUsage, Strategy};
pub use event::{
    AgentMessage, ApprovalRequestEvent, AssistantEvent, BlockKind, ErrorEvent, ErrorKind,
    EventEnvelope, ResultEvent, StreamDelta, StreamEvent, ToolResultEvent, UserEvent,
};
pub use input::{ControlCommand, InputId, SessionInput, UserInput};
pub use lifecycle::{LifecycleEvent, LifecycleKind};
pub use mcp::McpServerStatus;
pub use message::Message;
pub use permission::{
    ApprovalChoice, ApprovalDecision, ApprovalOutcome, ApprovalResolved, ModeChanged,
    PermissionMode,
};
pub use plan::{Plan, PlanItem, PlanStatus};
pub use profile::{ModelInfo, Pricing};
pub use system::{SystemEvent, SystemPayload, SystemSubtype};

use serde::{Deserialize, Serialize};
use std::fmt;

/// A session's identity: a time-ordered UUID (v7) rendered as text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(pub String);

impl SessionId {
    /// A fresh, time-ordered session id.
    pub fn new() -> Self {
        SessionId(uuid::Uuid::now_v7().to_string())
    }

    /// The start of the id, enough to type in `/resume` or `--session`:
    /// past the millisecond timestamp (the first 13 characters of a UUIDv7,
    /// shared by sessions made in the same millisecond) into its random
    /// part.
    pub fn short(&self) -> &str {
        let end = self
            .0
            .char_indices()
            .nth(18)
            .map(|(i, _)| i)
            .unwrap_or(self.0.len());
        &self.0[..end]
    }
}

impl Default for SessionId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for SessionId {
    fn from(s: &str) -> Self {
        SessionId(s.to_string())
    }
}
