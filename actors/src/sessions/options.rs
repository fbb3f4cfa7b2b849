//! How a session is created: the options a front end (or a `task` call)
//! gives, unset fields coming from the settings. Plain data, shared by the
//! SessionManager and the sub-agent runners.

use crate::protocol::SessionId;
use std::path::PathBuf;

/// How to create a session; unset fields come from the settings.
#[derive(Clone, Debug, Default)]
pub struct SessionOptions {
    /// Model profile name.
    pub model: Option<String>,
    pub workspace: Option<PathBuf>,
    /// A title (otherwise the first query names the session).
    pub title: Option<String>,
    /// This session's own `[context]` keys (kept with the session).
    pub context: Option<crate::protocol::ContextConfig>,
    /// The permission mode it starts in (default: the agent's, else
    /// `permission_mode`).
    pub permission_mode: Option<crate::protocol::PermissionMode>,
    /// The named agent it runs as (default: `build`).
    pub agent: Option<String>,
    /// A sub-agent's session: the parent session and its `task` call (the
    /// child gets no `task` tool of its own).
    pub parent: Option<ChildOf>,
    /// The model when neither `model` nor the agent names one (a child
    /// runs with its parent's; default: the configured model).
    pub inherit_model: Option<String>,
    /// MCP servers of its own, by name (an editor's), joining the
    /// configured ones for this session alone. Never stored: a session
    /// loaded again has what it is opened with.
    pub mcp_servers: std::collections::BTreeMap<String, crate::settings::McpServerConfig>,
    /// The name of the API token creating it (kept as the session's
    /// `created_by`). `None`: no token (the command line, ACP) — or, for a
    /// sub-agent's session, its parent's creator.
    pub created_by: Option<String>,
}

/// The parent of a sub-agent's session.
#[derive(Clone, Debug)]
pub struct ChildOf {
    pub session: SessionId,
    /// The seq the parent had reached when it made the call.
    pub at_seq: u64,
    /// The parent's `task` call.
    pub call_id: String,
}
