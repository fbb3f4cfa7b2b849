//! `[agents.NAME]`: named agents defined in the configuration, checked
//! after the files are merged (a file may override one key of an agent
//! defined in another) so that an error names the file and the key.
//!
//! The same fields as an agent file's front matter, in the configuration's
//! own spelling; tool names are agentbus's (`read_file`, `bash`,
//! `mcp__server__tool`, a prefix ending in `*`). The built-in agents and
//! the agent files are added per session by the runtime.

use super::error::ConfigError;
use agentbus_engine::protocol::{AgentDefinition, PermissionMode};
use agentbus_engine::settings::ModelProfile;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

/// One `[agents.NAME]` table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentEntry {
    /// When to use it.
    #[serde(default)]
    description: String,
    /// Its system prompt (default: the configured `system_prompt`).
    prompt: Option<String>,
    /// Only these tools are offered.
    tools: Option<Vec<String>>,
    /// Never offered.
    #[serde(default)]
    disallowed_tools: Vec<String>,
    /// A model profile (default: the session's).
    model: Option<String>,
    /// The permission mode selecting it switches to.
    permission_mode: Option<PermissionMode>,
    /// Most model calls per turn.
    max_steps: Option<u32>,
}

/// Every `[agents.NAME]`, checked; `origin` says which file defined each.
pub fn resolve(
    tables: BTreeMap<String, toml::Table>,
    origin: &HashMap<String, String>,
    models: &BTreeMap<String, ModelProfile>,
) -> Result<Vec<AgentDefinition>, ConfigError> {
    let mut agents = Vec::new();
    for (name, table) in tables {
        let origin = origin.get(&name).cloned().unwrap_or_default();
        let prefix = format!("agents.{name}");
        let invalid = |key: &str, message: String| ConfigError::Invalid {
            origin: origin.clone(),
            key: format!("{prefix}{key}"),
            message,
        };
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == '_' || c == '.')
        {
            return Err(invalid(
                "",
                "an agent name is one word: letters, digits, `-`, `_` and `.`".into(),
            ));
        }
        let entry: AgentEntry = super::check::check_entry(&table, &origin, &prefix)?;
        if let Some(model) = &entry.model
            && !models.contains_key(model)
        {
            let available: Vec<&str> = models.keys().map(String::as_str).collect();
            return Err(invalid(
                ".model",
                format!(
                    "unknown model profile `{model}`; configured profiles: {}",
                    available.join(", ")
                ),
            ));
        }
        if entry.max_steps == Some(0) {
            return Err(invalid(".max_steps", "expected at least 1".into()));
        }
        agents.push(AgentDefinition {
            name,
            description: entry.description,
            prompt: entry.prompt.filter(|p| !p.trim().is_empty()),
            tools: entry.tools,
            disallowed_tools: entry.disallowed_tools,
            model: entry.model,
            permission_mode: entry.permission_mode,
            max_steps: entry.max_steps,
            source: origin.clone(),
            notes: Vec::new(),
        });
    }
    Ok(agents)
}
