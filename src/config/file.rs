//! The shape of one configuration file (every key optional).
//!
//! Each file is checked against this on its own, so an error names the file
//! it is in. Model profiles stay raw tables here: a file may override one key
//! of a profile defined elsewhere, so profiles are checked after merging.

use agentbus_engine::protocol::ContextConfig;
use agentbus_engine::protocol::PermissionMode;
use agentbus_engine::settings::{
    ClusterSettings, McpSettings, SandboxSettings, ServerSettings, SessionSettings, SkillSettings,
    SubagentSettings, ToolSettings,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// Model profile name, or "auto".
    pub model: Option<String>,
    /// Profiles tried in order by `model = "auto"`.
    pub auto_models: Option<Vec<String>>,
    pub system_prompt: Option<String>,
    pub system_prompt_file: Option<PathBuf>,
    pub max_steps: Option<u32>,
    pub include_partial_messages: Option<bool>,
    pub disallowed_tools: Option<Vec<String>>,
    pub tools: Option<ToolSettings>,
    pub sessions: Option<SessionSettings>,
    pub server: Option<ServerSettings>,
    /// `[context]`: keeping requests inside the context window.
    pub context: Option<ContextConfig>,
    pub models: Option<BTreeMap<String, toml::Table>>,
    /// MCP servers, raw like the model profiles (checked after merging).
    pub mcp_servers: Option<BTreeMap<String, toml::Table>>,
    /// `[mcp]`: what sessions do about MCP servers as a whole.
    pub mcp: Option<McpSettings>,
    /// A Claude-style `.mcp.json` to read besides the workspace's own.
    pub mcp_json: Option<PathBuf>,
    /// The mode sessions start in.
    pub permission_mode: Option<PermissionMode>,
    /// `[permissions]`: rules, joined across files (not replaced).
    pub permissions: Option<PermissionsFile>,
    /// `[sandbox]`.
    pub sandbox: Option<SandboxSettings>,
    /// `[agents.NAME]`: named agents, raw like the model profiles (checked
    /// after merging).
    pub agents: Option<BTreeMap<String, toml::Table>>,
    /// `[subagents]`: the `task` tool's limits.
    pub subagents: Option<SubagentSettings>,
    /// `[hooks]`: hooks as in Claude Code's settings files, raw (each
    /// file's are read on their own, so a problem names the file).
    #[expect(
        dead_code,
        reason = "read per layer by `configured_hooks`; here it only lets the key through"
    )]
    pub hooks: Option<toml::Table>,
    /// `[skills]`: more folders of Agent Skills, and the listing's cap.
    pub skills: Option<SkillSettings>,
    /// `[checkpoints]`.
    pub checkpoints: Option<agentbus_engine::settings::CheckpointSettings>,
    /// `[cluster]`: `agentbus serve` as one node of several on one
    /// Postgres database.
    pub cluster: Option<ClusterSettings>,
    /// `[log]`: where the logs go and how they are written (the binary's
    /// own; `--log-file` and `--log-format` win).
    pub log: Option<crate::logging::LogSettings>,
    /// `[telemetry]`: OpenTelemetry traces (the binary's own).
    pub telemetry: Option<crate::telemetry::TelemetrySettings>,
}

/// `[permissions]` as written: rules as text (each file's are checked on
/// their own, so an error names the file).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsFile {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    /// Reject an approval request nobody answered after this long.
    pub approval_timeout_secs: Option<u64>,
}
