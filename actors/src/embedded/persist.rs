//! Saving an [`AgentState`] and loading it again.
//!
//! What is saved is what the daemon stores of a session — its settings and
//! its persisted events — and loading folds the events through the core
//! ([`restore`]), as the daemon loads a session: the history, the usage,
//! the summary of a compaction, the model all come back from the events.
//! A turn saved unfinished is closed on load (cancelled results for its
//! open tool calls, a `result` with `stop_reason: error`), so a loaded
//! state can always be continued. Tools are saved by name and re-bound on
//! load to the tools given.

use super::error::AgentError;
use super::state::AgentState;
use crate::protocol::{ContextConfig, EventEnvelope, ModelInfo, SessionId};
use crate::session::core::{SessionConfig, SessionState, restore};
use crate::tools::Tool;
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::Arc;

/// The `format` of a saved state.
const FORMAT: &str = "agentbus-agent-state";
/// The version written (and the only one read).
const VERSION: u32 = 1;

/// A saved state.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Saved {
    format: String,
    version: u32,
    session_id: SessionId,
    /// The model profile in use.
    model: String,
    config: SavedConfig,
    /// The names of the tools the conversation offered.
    tools: Vec<String>,
    /// The seq of the last event stamped (`stream_event`s included).
    last_seq: u64,
    /// The persisted events, in seq order.
    events: Vec<EventEnvelope>,
}

/// [`SessionConfig`], as saved.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SavedConfig {
    system_prompt: String,
    max_steps: u32,
    include_partial_messages: bool,
    models: Vec<ModelInfo>,
    workspace: String,
    context: ContextConfig,
    compact_prompt: String,
}

impl AgentState {
    /// The conversation as JSON: its settings, the names of its tools and
    /// its events (a custom context strategy is not saved: the agent that
    /// continues the conversation brings its own).
    pub fn to_json(&self) -> Result<String, AgentError> {
        let session = &self.session;
        let config = &session.config;
        let saved = Saved {
            format: FORMAT.into(),
            version: VERSION,
            session_id: session.session_id.clone(),
            model: session.model.clone(),
            config: SavedConfig {
                system_prompt: config.system_prompt.clone(),
                max_steps: config.max_steps,
                include_partial_messages: config.include_partial_messages,
                models: config.models.to_vec(),
                workspace: config.workspace.clone(),
                context: config.context.clone(),
                compact_prompt: config.compact_prompt.clone(),
            },
            tools: session.tools.iter().map(|t| t.name.clone()).collect(),
            last_seq: self.last_seq,
            events: self.events.clone(),
        };
        serde_json::to_string_pretty(&saved).map_err(AgentError::Serialize)
    }

    /// A conversation saved with [`to_json`](AgentState::to_json), its
    /// events folded through the core again and its tools re-bound by name
    /// to `tools` (e.g. [`Agent::tools`](super::Agent::tools)):
    /// [`AgentError::MissingTool`] names a tool the conversation offered
    /// that is not among them. Tools given beyond those are offered too.
    pub fn from_json(json: &str, tools: &[Arc<dyn Tool>]) -> Result<AgentState, AgentError> {
        let mut deserializer = serde_json::Deserializer::from_str(json);
        let saved: Saved = serde_path_to_error::deserialize(&mut deserializer)
            .map_err(|e| AgentError::StateFormat(format!("at `{}`: {}", e.path(), e.inner())))?;
        if saved.format != FORMAT {
            return Err(AgentError::StateFormat(format!(
                "its `format` is `{}`, expected `{FORMAT}`",
                saved.format
            )));
        }
        if saved.version != VERSION {
            return Err(AgentError::StateFormat(format!(
                "it is version {}, and this library reads version {VERSION}",
                saved.version
            )));
        }
        let specs: Vec<_> = tools.iter().map(|t| t.spec()).collect();
        if let Some(missing) = saved
            .tools
            .iter()
            .find(|name| !specs.iter().any(|s| &s.name == *name))
        {
            return Err(AgentError::MissingTool {
                name: missing.clone(),
                given: specs.iter().map(|s| s.name.clone()).collect(),
            });
        }
        let config = saved.config;
        // As the builder's default: the saved state keeps no mode of its own
        // (its `mode` events, folded below, do).
        let permissions = crate::session::permission_setup::permission_config(
            crate::protocol::PermissionMode::Bypass,
            Default::default(),
            None,
            std::path::Path::new(&config.workspace),
            &Default::default(),
        );
        let config = SessionConfig {
            system_prompt: config.system_prompt,
            tool_prompts: String::new(),
            agents: Default::default(),
            commands: Default::default(),
            skills: Default::default(),
            task_tool: false,
            plan_tool: false,
            // Not saved: the agent that continues the conversation brings
            // its own (read when it was built).
            instructions: Default::default(),
            max_steps: config.max_steps,
            include_partial_messages: config.include_partial_messages,
            models: config.models.into(),
            workspace: config.workspace,
            permissions,
            context: config.context,
            compact_prompt: config.compact_prompt,
            // As the builder's (an embedded agent has no MCP servers).
            mcp_first_turn_wait_ms: crate::settings::McpSettings::default().first_turn_wait_ms(),
            hooks: Default::default(),
        };
        let session = SessionState::new(saved.session_id, config, saved.model, Arc::new(specs));
        let mut state = AgentState {
            session,
            events: Vec::new(),
            last_seq: 0,
        };
        let closing = restore(&mut state.session, &saved.events);
        state.last_seq = saved.last_seq.max(saved.events.last().map_or(0, |e| e.seq));
        state.events = saved.events;
        state.record_all(closing);
        Ok(state)
    }

    /// Save the conversation as JSON in `path` (written to a temporary file
    /// beside it, then renamed over it).
    pub fn save_to_file(&self, path: impl AsRef<Path>) -> Result<(), AgentError> {
        let path = path.as_ref();
        let json = self.to_json()?;
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(".tmp");
        let temporary = std::path::PathBuf::from(temporary);
        std::fs::write(&temporary, json).map_err(|source| AgentError::Io {
            action: "write",
            path: temporary.clone(),
            source,
        })?;
        std::fs::rename(&temporary, path).map_err(|source| AgentError::Io {
            action: "replace",
            path: path.to_path_buf(),
            source,
        })
    }

    /// Load a conversation saved with
    /// [`save_to_file`](AgentState::save_to_file); see
    /// [`from_json`](AgentState::from_json).
    pub fn load_from_file(
        path: impl AsRef<Path>,
        tools: &[Arc<dyn Tool>],
    ) -> Result<AgentState, AgentError> {
        let path = path.as_ref();
        let json = std::fs::read_to_string(path).map_err(|source| AgentError::Io {
            action: "read",
            path: path.to_path_buf(),
            source,
        })?;
        AgentState::from_json(&json, tools)
    }
}
