//! Loading the configuration: built-in defaults, then the user file, then
//! the project file, then `--config FILE`, then flags.
//!
//! Each file is parsed, has `${VAR}` expanded in every string (except
//! `api_key`, which is expanded only when a request is made so the key never
//! sits in memory longer than needed), and is checked on its own so an error
//! names the file and the key. The files are then merged key by key (tables
//! merge, everything else replaces) and resolved into [`Settings`].

mod agents;
mod check;
mod error;
mod expand;
mod file;
#[cfg(test)]
mod fuzz_tests;
mod mcp_json;

pub use error::ConfigError;

use agentbus_engine::permissions::Rules;
use agentbus_engine::settings::{
    ClusterSettings, McpServerConfig, ModelProfile, PermissionSettings, Settings, StoreLocation,
};
use check::{check, check_entry, check_value_entry};
use file::ConfigFile;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The built-in defaults, compiled in.
pub const DEFAULT_TOML: &str = include_str!("../../config/default.toml");
/// The built-in system prompt, compiled in.
pub const DEFAULT_SYSTEM_PROMPT: &str = include_str!("../../config/prompts/system.md");

/// What the command line contributes.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// `--config FILE`: read last, after the project file.
    pub config_file: Option<PathBuf>,
    /// `--workspace DIR` (default: the current directory).
    pub workspace: Option<PathBuf>,
    /// `--model NAME`.
    pub model: Option<String>,
    /// `--max-steps N`.
    pub max_steps: Option<u32>,
    /// `--data-dir DIR` or `$AGENTBUS_DATA_DIR` (default: the XDG data dir).
    pub data_dir: Option<PathBuf>,
    /// `--store URL|FILE`: where sessions are stored (wins over
    /// `[sessions] store`).
    pub store: Option<String>,
    /// `--permission-mode MODE`.
    pub permission_mode: Option<agentbus_engine::protocol::PermissionMode>,
    /// `--allow RULE`, repeatable: allow rules before the files' own.
    pub allow: Vec<String>,
}

/// The `--allow` rules first (checked, naming the flag), then the files'.
fn with_flag_rules(mut rules: Rules, allow: &[String]) -> Result<Rules, ConfigError> {
    let mut flags = Vec::new();
    for text in allow {
        let rule =
            agentbus_engine::permissions::Rule::parse(text).map_err(|e| ConfigError::Invalid {
                origin: "the command line".into(),
                key: "--allow".into(),
                message: e.to_string(),
            })?;
        flags.push(rule);
    }
    flags.append(&mut rules.allow);
    rules.allow = flags;
    Ok(rules)
}

/// The data directory: the flag or variable, else `~/.local/share/agentbus`.
pub fn data_dir(explicit: Option<&Path>) -> PathBuf {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| dirs::data_dir().map(|d| d.join("agentbus")))
        .unwrap_or_else(|| PathBuf::from(".agentbus"))
}

/// One configuration file, parsed.
struct Layer {
    /// How errors name it: a path, or "built-in defaults".
    origin: String,
    table: toml::Table,
    /// Its `[permissions]` rules, parsed: lists are joined across files,
    /// not replaced like other keys.
    rules: Rules,
}

/// What the configuration files say: the runtime's settings, and the
/// binary's own `[log]`.
pub struct Configuration {
    pub settings: Settings,
    /// Every file's `[log]` keys, later files winning key by key.
    pub log: crate::logging::LogSettings,
    /// Every file's `[telemetry]` keys, later files winning key by key.
    pub telemetry: crate::telemetry::TelemetrySettings,
}

/// Load and resolve the configuration.
pub fn load(options: &LoadOptions) -> Result<Configuration, ConfigError> {
    let workspace = resolve_workspace(options.workspace.as_deref())?;
    let mut layers = vec![parse_layer("built-in defaults".into(), None, DEFAULT_TOML)?];
    if let Some(path) = user_config_path()? {
        layers.push(read_layer(&path)?);
    }
    let project = workspace.join(".agentbus.toml");
    if project.is_file() {
        let layer = read_layer(&project)?;
        refuse_server_tokens(&layer)?;
        layers.push(layer);
    }
    if let Some(path) = &options.config_file {
        layers.push(read_layer(path)?);
    }
    let log = log_settings(&layers)?;
    let telemetry = telemetry_settings(&layers)?;
    let settings = resolve(layers, options, workspace)?;
    Ok(Configuration {
        settings,
        log,
        telemetry,
    })
}

/// Refuse API tokens in a workspace's own file: whoever can write a
/// repository must not be able to let themselves into the daemon that
/// serves it (a token named after a variable they can guess).
fn refuse_server_tokens(layer: &Layer) -> Result<(), ConfigError> {
    let Some(server) = layer.table.get("server").and_then(toml::Value::as_table) else {
        return Ok(());
    };
    match ["token", "tokens"].into_iter().find(|key| server.contains_key(*key)) {
        Some(key) => Err(ConfigError::Invalid {
            origin: layer.origin.clone(),
            key: format!("server.{key}"),
            message: "API tokens are set in your own configuration (~/.config/agentbus/config.toml or --config FILE), not in a workspace's .agentbus.toml".to_string(),
        }),
        None => Ok(()),
    }
}

/// The built-in defaults alone, resolved (for tests of other modules).
#[cfg(test)]
pub fn built_in() -> Settings {
    let defaults = parse_layer("built-in defaults".into(), None, DEFAULT_TOML)
        .unwrap_or_else(|e| panic!("{e}"));
    resolve(
        vec![defaults],
        &LoadOptions::default(),
        PathBuf::from("/ws"),
    )
    .unwrap_or_else(|e| panic!("{e}"))
}

/// `[log]`, merged over the layers.
fn log_settings(layers: &[Layer]) -> Result<crate::logging::LogSettings, ConfigError> {
    let mut merged = crate::logging::LogSettings::default();
    for layer in layers {
        let file: ConfigFile = check(&layer.table, &layer.origin)?;
        if let Some(log) = file.log {
            merged = merged.overridden_by(log);
        }
    }
    Ok(merged)
}

/// `[telemetry]`, merged over the layers.
fn telemetry_settings(
    layers: &[Layer],
) -> Result<crate::telemetry::TelemetrySettings, ConfigError> {
    let mut merged = crate::telemetry::TelemetrySettings::default();
    for layer in layers {
        let file: ConfigFile = check(&layer.table, &layer.origin)?;
        if let Some(telemetry) = file.telemetry {
            merged = merged.overridden_by(telemetry);
        }
    }
    Ok(merged)
}

/// The user's configuration file, where a profile of their own goes:
/// `$AGENTBUS_CONFIG`, else `~/.config/agentbus/config.toml` (whether or
/// not it exists yet).
pub fn user_config_file() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("AGENTBUS_CONFIG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(path));
    }
    dirs::config_dir().map(|d| d.join("agentbus").join("config.toml"))
}

fn resolve_workspace(dir: Option<&Path>) -> Result<PathBuf, ConfigError> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir().map_err(|e| ConfigError::Workspace {
            path: ".".into(),
            reason: e.to_string(),
        })?,
    };
    let canonical = dir.canonicalize().map_err(|e| ConfigError::Workspace {
        path: dir.clone(),
        reason: e.to_string(),
    })?;
    if !canonical.is_dir() {
        return Err(ConfigError::Workspace {
            path: dir,
            reason: "it is a file".into(),
        });
    }
    Ok(canonical)
}

/// `$AGENTBUS_CONFIG` (which must exist when set), else
/// `~/.config/agentbus/config.toml` when it exists.
fn user_config_path() -> Result<Option<PathBuf>, ConfigError> {
    if let Some(path) = std::env::var_os("AGENTBUS_CONFIG").filter(|p| !p.is_empty()) {
        return Ok(Some(PathBuf::from(path)));
    }
    Ok(dirs::config_dir()
        .map(|d| d.join("agentbus").join("config.toml"))
        .filter(|p| p.is_file()))
}

/// The user's configuration directory, where the user-level `AGENTS.md`
/// lives: the folder of `$AGENTBUS_CONFIG` when it is set, else
/// `~/.config/agentbus` (whether or not it holds a `config.toml`).
fn user_config_dir() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("AGENTBUS_CONFIG").filter(|p| !p.is_empty()) {
        return Path::new(&path)
            .parent()
            .map(|dir| {
                if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                }
            })
            .map(Path::to_path_buf);
    }
    dirs::config_dir().map(|d| d.join("agentbus"))
}

fn read_layer(path: &Path) -> Result<Layer, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|reason| ConfigError::Read {
        path: path.to_path_buf(),
        reason,
    })?;
    parse_layer(path.display().to_string(), path.parent(), &text)
}

/// Parse, expand variables, anchor `system_prompt_file` to the file's
/// directory, and check the file's keys.
fn parse_layer(origin: String, dir: Option<&Path>, text: &str) -> Result<Layer, ConfigError> {
    let mut table: toml::Table =
        text.parse()
            .map_err(|e: toml::de::Error| ConfigError::Syntax {
                origin: origin.clone(),
                message: e.to_string().trim().to_string(),
            })?;
    for (key, value) in table.iter_mut() {
        expand_value(value, key, &origin)?;
    }
    for key in ["system_prompt_file", "mcp_json"] {
        if let (Some(toml::Value::String(file)), Some(dir)) = (table.get(key), dir) {
            let anchored = dir.join(file).display().to_string();
            table.insert(key.into(), toml::Value::String(anchored));
        }
    }
    if let Some(toml::Value::Table(log)) = table.get_mut("log")
        && let Some(toml::Value::String(file)) = log.get("file")
    {
        let anchored = anchor_path(file, dir).display().to_string();
        log.insert("file".into(), toml::Value::String(anchored));
    }
    // `[skills] paths` are relative to the file that names them.
    if let Some(toml::Value::Table(skills)) = table.get_mut("skills")
        && let Some(toml::Value::Array(paths)) = skills.get_mut("paths")
    {
        for path in paths.iter_mut() {
            if let toml::Value::String(text) = path {
                *text = anchor_path(text, dir).display().to_string();
            }
        }
    }
    if let Some(toml::Value::Table(sessions)) = table.get_mut("sessions")
        && let Some(toml::Value::String(store)) = sessions.get("store")
        && !store.is_empty()
        && matches!(store.parse(), Ok(StoreLocation::Sqlite(_)))
    {
        let anchored = anchor_path(store, dir).display().to_string();
        sessions.insert("store".into(), toml::Value::String(anchored));
    }
    let file: ConfigFile = check(&table, &origin)?;
    // Each value is checked where it is written, so the error names this
    // file (the merged `[context]` is checked again after merging).
    if let Some(context) = &file.context {
        check_context(context, &origin, "context")?;
    }
    if let Some(mcp) = &file.mcp {
        mcp.check().map_err(|message| ConfigError::Invalid {
            origin: origin.clone(),
            key: "mcp.first_turn_wait_secs".into(),
            message,
        })?;
    }
    if let Some(cluster) = &file.cluster {
        check_cluster(cluster, &origin)?;
    }
    let rules = match file.permissions {
        Some(p) => Rules::parse(&p.allow, &p.ask, &p.deny).map_err(|e| ConfigError::Invalid {
            origin: origin.clone(),
            key: "permissions".into(),
            message: e.to_string(),
        })?,
        None => Rules::default(),
    };
    Ok(Layer {
        origin,
        table,
        rules,
    })
}

/// A path written in a configuration file: `~/` is the home directory, a
/// relative path is relative to the file's folder.
fn anchor_path(path: &str, dir: Option<&Path>) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(home) = dirs::home_dir()
    {
        return home.join(rest);
    }
    match dir {
        Some(dir) => dir.join(path),
        None => PathBuf::from(path),
    }
}

fn expand_value(value: &mut toml::Value, key: &str, origin: &str) -> Result<(), ConfigError> {
    match value {
        toml::Value::String(s) => {
            if key.ends_with("api_key") || key == "server.token" {
                return Ok(()); // expanded when a request is made
            }
            *s = expand::expand(s).map_err(|var| ConfigError::UndefinedVariable {
                origin: origin.to_string(),
                key: key.to_string(),
                var,
            })?;
        }
        toml::Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                expand_value(item, &format!("{key}[{i}]"), origin)?;
            }
        }
        toml::Value::Table(t) => {
            for (k, v) in t.iter_mut() {
                expand_value(v, &format!("{key}.{k}"), origin)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The MCP servers: the workspace's `.mcp.json` and the file named by
/// `mcp_json` first, then `[mcp_servers.NAME]` tables over them key by key.
fn mcp_servers(
    workspace: &Path,
    mcp_json: Option<&Path>,
    toml_servers: BTreeMap<String, toml::Table>,
    toml_origin: &HashMap<String, String>,
) -> Result<BTreeMap<String, McpServerConfig>, ConfigError> {
    let mut tables: BTreeMap<String, (toml::Table, String)> = BTreeMap::new();
    let workspace_json = workspace.join(".mcp.json");
    let json_files = workspace_json
        .is_file()
        .then_some(workspace_json.as_path())
        .into_iter()
        .chain(mcp_json);
    for path in json_files {
        for (name, table) in mcp_json::read(path)? {
            tables.insert(name, (table, path.display().to_string()));
        }
    }
    for (name, table) in toml_servers {
        let origin = toml_origin.get(&name).cloned().unwrap_or_default();
        let entry = tables
            .entry(name)
            .or_insert_with(|| (toml::Table::new(), origin.clone()));
        merge_tables(&mut entry.0, table);
        entry.1 = origin;
    }
    let mut servers = BTreeMap::new();
    for (name, (table, origin)) in tables {
        let prefix = format!("mcp_servers.{name}");
        let server: McpServerConfig = check_entry(&table, &origin, &prefix)?;
        servers.insert(name, one_transport(server, &origin, prefix)?);
    }
    Ok(servers)
}

/// An MCP server given with a session, as the HTTP API gets it (an entry
/// `NAME` of a request's `mcp_servers`): the shape of a
/// `[mcp_servers.NAME]` table, checked alike, so a refusal names the server
/// and the field. `${VAR}` is not expanded: the variables are the server's,
/// not the client's to read.
pub fn given_mcp_server(
    name: &str,
    value: serde_json::Value,
    origin: &str,
) -> Result<McpServerConfig, ConfigError> {
    let prefix = format!("mcp_servers.{name}");
    // serde would read the settings from an array too, field by field.
    if !value.is_object() {
        return Err(ConfigError::Invalid {
            origin: origin.to_string(),
            key: prefix,
            message: format!(
                "expected an object of settings, such as {{\"command\": \"PROGRAM\"}}, not {}",
                json_kind(&value)
            ),
        });
    }
    let server: McpServerConfig = check_value_entry(value, origin, &prefix)?;
    one_transport(server, origin, prefix)
}

/// What kind of JSON value `value` is, for messages.
fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// A server must say how it is reached: exactly one of `command` and `url`.
fn one_transport(
    server: McpServerConfig,
    origin: &str,
    key: String,
) -> Result<McpServerConfig, ConfigError> {
    if server.command.is_some() == server.url.is_some() {
        return Err(ConfigError::Invalid {
            origin: origin.to_string(),
            key,
            message:
                "set exactly one of `command` (a stdio server) and `url` (a streamable HTTP server)"
                    .into(),
        });
    }
    Ok(server)
}

/// Merge `layer` over `base`: tables merge recursively, other values replace.
/// `system_prompt` and `system_prompt_file` replace each other.
fn merge(base: &mut toml::Table, layer: toml::Table) {
    for exclusive in [
        ("system_prompt", "system_prompt_file"),
        ("system_prompt_file", "system_prompt"),
    ] {
        if layer.contains_key(exclusive.0) {
            base.remove(exclusive.1);
        }
    }
    merge_tables(base, layer);
}

fn merge_tables(base: &mut toml::Table, layer: toml::Table) {
    for (key, value) in layer {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(l)) => merge_tables(b, l),
            (_, v) => {
                base.insert(key, v);
            }
        }
    }
}

fn resolve(
    layers: Vec<Layer>,
    options: &LoadOptions,
    workspace: PathBuf,
) -> Result<Settings, ConfigError> {
    let mut merged = toml::Table::new();
    let mut profile_origin: HashMap<String, String> = HashMap::new();
    let mut server_origin: HashMap<String, String> = HashMap::new();
    let mut agent_origin: HashMap<String, String> = HashMap::new();
    let mut model_origin = String::from("built-in defaults");
    let mut prompt_origin = String::from("built-in defaults");
    let mut rules = Rules::default();
    let mut hooks = Vec::new();
    for layer in &layers {
        if let Some(table) = layer.table.get("hooks") {
            hooks.extend(configured_hooks(table, &layer.origin)?);
        }
    }
    for layer in layers {
        rules.allow.extend(layer.rules.allow);
        rules.ask.extend(layer.rules.ask);
        rules.deny.extend(layer.rules.deny);
        if let Some(toml::Value::Table(models)) = layer.table.get("models") {
            for name in models.keys() {
                profile_origin.insert(name.clone(), layer.origin.clone());
            }
        }
        if let Some(toml::Value::Table(servers)) = layer.table.get("mcp_servers") {
            for name in servers.keys() {
                server_origin.insert(name.clone(), layer.origin.clone());
            }
        }
        if let Some(toml::Value::Table(agents)) = layer.table.get("agents") {
            for name in agents.keys() {
                agent_origin.insert(name.clone(), layer.origin.clone());
            }
        }
        if layer.table.contains_key("model") {
            model_origin = layer.origin.clone();
        }
        if layer.table.contains_key("system_prompt_file") {
            prompt_origin = layer.origin.clone();
        }
        merge(&mut merged, layer.table);
    }
    let file: ConfigFile = check(&merged, "the merged configuration")?;

    let mut models = BTreeMap::new();
    for (name, table) in file.models.unwrap_or_default() {
        let origin = profile_origin.get(&name).cloned().unwrap_or_default();
        let profile: ModelProfile = check_entry(&table, &origin, &format!("models.{name}"))?;
        if let Some(context) = &profile.context {
            check_context(context, &origin, &format!("models.{name}.context"))?;
        }
        profile
            .check()
            .map_err(|(key, message)| ConfigError::Invalid {
                origin: origin.clone(),
                key: format!("models.{name}.{key}"),
                message,
            })?;
        models.insert(name, profile);
    }
    for (name, profile) in &models {
        if let Some(compact) = profile
            .context
            .as_ref()
            .and_then(|c| c.compact_model.as_ref())
        {
            let origin = profile_origin.get(name).cloned().unwrap_or_default();
            check_compact_model(compact, &models, &origin, &format!("models.{name}.context"))?;
        }
    }
    let mcp_servers = mcp_servers(
        &workspace,
        file.mcp_json.as_deref(),
        file.mcp_servers.unwrap_or_default(),
        &server_origin,
    )?;

    let agents = agents::resolve(file.agents.unwrap_or_default(), &agent_origin, &models)?;

    let mcp = file.mcp.clone().unwrap_or_default();
    mcp.check().map_err(|message| ConfigError::Invalid {
        origin: "the merged configuration".into(),
        key: "mcp.first_turn_wait_secs".into(),
        message,
    })?;

    let context = file.context.clone().unwrap_or_default();
    check_context(&context, "the merged configuration", "context")?;
    if let Some(compact) = &context.compact_model {
        check_compact_model(compact, &models, "the merged configuration", "context")?;
    }

    let cluster = file.cluster.clone();
    if let Some(cluster) = &cluster {
        check_cluster(cluster, "the merged configuration")?;
    }

    let (requested, origin) = match &options.model {
        Some(m) => (m.clone(), "--model".to_string()),
        None => (file.model.unwrap_or_else(|| "auto".into()), model_origin),
    };
    let auto_models = file.auto_models.unwrap_or_default();
    let model = if requested == "auto" {
        pick_auto_model(&models, &auto_models).ok_or_else(|| ConfigError::UnknownModel {
            name: "auto".into(),
            origin: origin.clone(),
            available: available(&models),
        })?
    } else if models.contains_key(&requested) {
        requested
    } else {
        return Err(ConfigError::UnknownModel {
            name: requested,
            origin,
            available: available(&models),
        });
    };

    let prompt_template = match (&file.system_prompt, &file.system_prompt_file) {
        (Some(text), _) => text.clone(),
        (None, Some(path)) => {
            std::fs::read_to_string(path).map_err(|reason| ConfigError::PromptFile {
                origin: prompt_origin,
                path: path.clone(),
                reason,
            })?
        }
        (None, None) => DEFAULT_SYSTEM_PROMPT.to_string(),
    };
    let system_prompt = prompt_template
        .replace("{workspace}", &workspace.display().to_string())
        .replace("{os}", std::env::consts::OS)
        .replace(
            "{date}",
            &chrono::Local::now().format("%Y-%m-%d").to_string(),
        );

    Ok(Settings {
        model,
        system_prompt,
        max_steps: options.max_steps.or(file.max_steps).unwrap_or(50).max(1),
        include_partial_messages: file.include_partial_messages.unwrap_or(true),
        disallowed_tools: file.disallowed_tools.unwrap_or_default(),
        workspace,
        models,
        tools: file.tools.unwrap_or_default(),
        mcp_servers,
        mcp,
        data_dir: data_dir(options.data_dir.as_deref()),
        config_dir: user_config_dir(),
        sessions: sessions_settings(file.sessions.unwrap_or_default(), options, cluster.as_ref())?,
        server: file.server.unwrap_or_default(),
        context,
        compact_prompt: agentbus_engine::settings::DEFAULT_COMPACT_PROMPT.to_string(),
        permissions: PermissionSettings {
            mode: options
                .permission_mode
                .or(file.permission_mode)
                .unwrap_or_default(),
            rules: with_flag_rules(rules, &options.allow)?,
            approval_timeout_secs: file
                .permissions
                .and_then(|p| p.approval_timeout_secs)
                .filter(|s| *s > 0),
        },
        sandbox: file.sandbox.unwrap_or_default(),
        agents,
        subagents: file.subagents.unwrap_or_default(),
        hooks,
        skills: file.skills.unwrap_or_default(),
        checkpoints: file.checkpoints.unwrap_or_default(),
        // Set by the binary for a profile on this machine (`model_check`).
        unreachable_hint: None,
        cluster,
    })
}

/// `[hooks]` of the file `origin`: Claude Code's structure, every entry
/// usable (a problem is an error naming the file and the entry).
fn configured_hooks(
    table: &toml::Value,
    origin: &str,
) -> Result<Vec<agentbus_engine::protocol::hook::HookGroup>, ConfigError> {
    let json = serde_json::to_value(table).map_err(|e| ConfigError::Invalid {
        origin: origin.to_string(),
        key: "hooks".into(),
        message: e.to_string(),
    })?;
    let (groups, problems) = agentbus_engine::runtime::hooks::parse(&json, origin);
    match problems.into_iter().next() {
        Some(problem) => Err(ConfigError::Invalid {
            origin: origin.to_string(),
            key: "hooks".into(),
            message: problem,
        }),
        None => Ok(groups),
    }
}

/// `[cluster]`'s values mean something (the error names the key).
fn check_cluster(cluster: &ClusterSettings, origin: &str) -> Result<(), ConfigError> {
    cluster
        .check()
        .map_err(|(key, message)| ConfigError::Invalid {
            origin: origin.to_string(),
            key: format!("cluster.{key}"),
            message,
        })
}

/// `[sessions]`, with `--store` over its `store`; with `[cluster]`, the
/// store is the cluster's database (and naming another is an error).
fn sessions_settings(
    mut sessions: agentbus_engine::settings::SessionSettings,
    options: &LoadOptions,
    cluster: Option<&ClusterSettings>,
) -> Result<agentbus_engine::settings::SessionSettings, ConfigError> {
    if let Some(store) = &options.store {
        let location = store
            .parse()
            .map_err(
                |e: agentbus_engine::settings::LocationError| ConfigError::Invalid {
                    origin: "the command line".into(),
                    key: "--store".into(),
                    message: e.to_string(),
                },
            )?;
        sessions.store = Some(location);
    }
    if let Some(cluster) = cluster {
        let shared = cluster.store();
        if let Some(other) = sessions.store.as_ref().filter(|store| **store != shared) {
            let key = match options.store {
                Some(_) => "--store",
                None => "sessions.store",
            };
            return Err(ConfigError::Invalid {
                origin: match options.store {
                    Some(_) => "the command line".into(),
                    None => "the merged configuration".into(),
                },
                key: key.into(),
                message: format!(
                    "it names the store {other}, but with [cluster] sessions are kept in the \
                     cluster's database ({shared}); leave `{key}` out"
                ),
            });
        }
        sessions.store = Some(shared);
    }
    Ok(sessions)
}

/// A `[context]` table whose values mean something.
fn check_context(
    context: &agentbus_engine::protocol::ContextConfig,
    origin: &str,
    table: &str,
) -> Result<(), ConfigError> {
    context.check().map_err(|message| ConfigError::Invalid {
        origin: origin.to_string(),
        key: table.to_string(),
        message,
    })
}

/// `compact_model` names a configured profile.
fn check_compact_model(
    name: &str,
    models: &BTreeMap<String, ModelProfile>,
    origin: &str,
    table: &str,
) -> Result<(), ConfigError> {
    if models.contains_key(name) {
        return Ok(());
    }
    let available = available(models);
    Err(ConfigError::Invalid {
        origin: origin.to_string(),
        key: format!("{table}.compact_model"),
        message: format!("unknown model profile `{name}`; configured profiles: {available}"),
    })
}

fn available(models: &BTreeMap<String, ModelProfile>) -> String {
    models.keys().cloned().collect::<Vec<_>>().join(", ")
}

fn needs_no_key(p: &ModelProfile) -> bool {
    p.api_key.is_none() && p.api_key_env.is_none()
}

/// The first profile of `order` whose key is available (a profile that needs
/// no key always is); else the first keyless profile.
fn pick_auto_model(models: &BTreeMap<String, ModelProfile>, order: &[String]) -> Option<String> {
    let has_key =
        |name: &str, p: &ModelProfile| needs_no_key(p) || matches!(p.api_key(name), Ok(Some(_)));
    order
        .iter()
        .find(|name| models.get(*name).is_some_and(|p| has_key(name, p)))
        .cloned()
        .or_else(|| {
            models
                .iter()
                .find(|(_, p)| needs_no_key(p))
                .map(|(n, _)| n.clone())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(origin: &str, text: &str) -> Layer {
        parse_layer(origin.into(), Some(Path::new("/cfg")), text).unwrap()
    }

    fn resolve_text(texts: &[&str], options: LoadOptions) -> Result<Settings, ConfigError> {
        let mut layers = vec![parse_layer("built-in defaults".into(), None, DEFAULT_TOML).unwrap()];
        layers.extend(
            texts
                .iter()
                .enumerate()
                .map(|(i, t)| layer(&format!("file{i}.toml"), t)),
        );
        resolve(layers, &options, PathBuf::from("/ws"))
    }

    #[test]
    fn defaults_alone_give_a_usable_configuration() {
        let s = resolve_text(&[], LoadOptions::default()).unwrap();
        assert!(s.models.contains_key("openai") && s.models.contains_key("local"));
        assert!(s.system_prompt.contains("/ws"));
        assert_eq!(s.max_steps, 50);
        assert!(s.include_partial_messages);
    }

    #[test]
    fn skill_paths_are_relative_to_their_file_and_a_wrong_key_is_named() {
        let s = resolve_text(&[], LoadOptions::default()).unwrap();
        assert!(s.skills.paths.is_empty());
        assert_eq!(s.skills.max_prompt_chars, 8000);
        let s = resolve_text(
            &["[skills]\npaths = [\"team-skills\", \"/opt/skills\"]\nmax_prompt_chars = 500"],
            LoadOptions::default(),
        )
        .unwrap();
        assert_eq!(
            s.skills.paths,
            [
                PathBuf::from("/cfg/team-skills"),
                PathBuf::from("/opt/skills")
            ]
        );
        assert_eq!(s.skills.max_prompt_chars, 500);
        let err = parse_layer(
            "team.toml".into(),
            Some(Path::new("/cfg")),
            "[skills]\npath = [\"x\"]",
        )
        .err()
        .expect("refused")
        .to_string();
        assert!(
            err.contains("team.toml") && err.contains("skills.path"),
            "{err}"
        );
    }

    #[test]
    fn the_store_is_the_data_dirs_sqlite_file_unless_the_flag_or_the_file_says() {
        let s = resolve_text(&[], LoadOptions::default()).unwrap();
        assert_eq!(
            s.store_location(),
            StoreLocation::Sqlite(s.data_dir.join("agentbus.db"))
        );

        // A path in a file is relative to that file's folder.
        let s = resolve_text(
            &["[sessions]\nstore = \"db/sessions.db\""],
            LoadOptions::default(),
        )
        .unwrap();
        assert_eq!(
            s.store_location(),
            StoreLocation::Sqlite(PathBuf::from("/cfg/db/sessions.db"))
        );

        // A URL is kept whole for connecting, shown without its password;
        // the flag wins over the file.
        let s = resolve_text(
            &["[sessions]\nstore = \"postgres://a:file-pw@h/db\""],
            LoadOptions {
                store: Some("postgres://agentbus:flag-pw@db:5432/sessions".into()),
                ..Default::default()
            },
        )
        .unwrap();
        let location = s.store_location();
        assert!(
            matches!(location, StoreLocation::Postgres(_)),
            "{location:?}"
        );
        assert_eq!(
            location.to_string(),
            "postgres://agentbus:***@db:5432/sessions"
        );
        assert!(
            !format!("{s:?}").contains("flag-pw"),
            "Debug of the settings"
        );

        let e = resolve_text(
            &[],
            LoadOptions {
                store: Some(String::new()),
                ..Default::default()
            },
        )
        .err()
        .unwrap()
        .to_string();
        assert!(e.contains("--store") && e.contains("empty"), "{e}");
    }

    #[test]
    fn a_cluster_section_is_checked_naming_file_and_key_and_its_database_is_the_store() {
        let cluster = "[cluster]\npostgres_url = \"postgres://ab:pg-secret@db:5432/ab\"\n\
                       nats_url = \"nats://me:nats-secret@nats:4222\"\nname = \"node-1\"\n";
        let s = resolve_text(&[cluster], LoadOptions::default()).unwrap();
        let node = s.cluster.as_ref().expect("a node of a cluster");
        assert_eq!(node.node_ttl_secs, 10, "the default TTL");
        assert_eq!(node.node_name(), "node-1");
        assert_eq!(
            s.store_location().to_string(),
            "postgres://ab:***@db:5432/ab"
        );
        let shown = format!("{s:?}");
        assert!(
            !shown.contains("pg-secret") && !shown.contains("nats-secret"),
            "{shown}"
        );
        // The same database named again is fine; another one is not.
        let same = LoadOptions {
            store: Some("postgres://ab:pg-secret@db:5432/ab".into()),
            ..Default::default()
        };
        assert!(resolve_text(&[cluster], same).is_ok());
        let other = LoadOptions {
            store: Some("sessions.db".into()),
            ..Default::default()
        };
        let e = resolve_text(&[cluster], other).err().unwrap().to_string();
        assert!(e.contains("--store") && e.contains("[cluster]"), "{e}");

        for (text, key) in [
            (
                "[cluster]\npostgres_url = \"sessions.db\"",
                "cluster.postgres_url",
            ),
            (
                "[cluster]\npostgres_url = \"postgres://h/db\"\nnode_ttl_secs = 1",
                "cluster.node_ttl_secs",
            ),
            (
                "[cluster]\npostgres_url = \"postgres://h/db\"\nheartbeat_ms = 9000",
                "cluster.heartbeat_ms",
            ),
            (
                "[cluster]\npostgres_url = \"postgres://h/db\"\nnats_namespace = \"prod.eu\"",
                "cluster.nats_namespace",
            ),
            (
                "[cluster]\npostgres_url = \"postgres://h/db\"\nttl = 3",
                "cluster.ttl",
            ),
            ("[cluster]\nname = \"n\"", "cluster"),
        ] {
            let e = parse_layer("my.toml".into(), None, text)
                .err()
                .unwrap_or_else(|| panic!("{text} is refused"))
                .to_string();
            assert!(e.contains("my.toml") && e.contains(key), "{text}: {e}");
        }
        // Without [cluster], nothing changes.
        assert!(
            resolve_text(&[], LoadOptions::default())
                .unwrap()
                .cluster
                .is_none()
        );
    }

    #[test]
    fn later_files_and_flags_override_earlier_ones() {
        let s = resolve_text(
            &[
                "max_steps = 7\n[models.local]\nmodel = \"qwen\"",
                "max_steps = 9\nsystem_prompt = \"hi\"",
            ],
            LoadOptions {
                model: Some("ollama".into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(s.max_steps, 9);
        assert_eq!(s.system_prompt, "hi");
        assert_eq!(s.model, "ollama");
        assert_eq!(s.models["local"].model, "qwen");
        assert_eq!(
            s.models["local"].base_url, "http://127.0.0.1:8080/v1",
            "other keys kept"
        );
    }

    #[test]
    fn a_wrong_type_names_the_file_and_the_key() {
        let err = parse_layer("my.toml".into(), None, "max_steps = \"ten\"")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("my.toml") && err.contains("max_steps"),
            "{err}"
        );
    }

    #[test]
    fn an_unknown_key_names_the_file_and_lists_what_is_expected() {
        let err = parse_layer("my.toml".into(), None, "modle = \"x\"")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("my.toml") && err.contains("modle") && err.contains("expected one of"),
            "{err}"
        );
    }

    #[test]
    fn a_thinking_budget_anthropic_would_refuse_names_its_file_and_key() {
        let profile = |budget: u32, cap: &str| {
            format!(
                "[models.claude]\nprovider = \"anthropic\"\nmodel = \"claude-x\"\nbase_url = \"http://h\"\n{cap}thinking_budget = {budget}"
            )
        };
        for (text, says) in [
            (
                profile(512, ""),
                "below Anthropic's minimum thinking budget of 1024",
            ),
            (
                profile(4096, "max_output_tokens = 4096\n"),
                "less than the profile's `max_output_tokens` (4096)",
            ),
        ] {
            let err = resolve_text(&[text.as_str()], LoadOptions::default())
                .err()
                .unwrap()
                .to_string();
            assert!(
                err.contains("file0.toml")
                    && err.contains("`models.claude.thinking_budget`")
                    && err.contains(says),
                "{err}"
            );
        }
        let settings = resolve_text(&[profile(4096, "").as_str()], LoadOptions::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(settings.models["claude"].thinking_budget, Some(4096));
    }

    #[test]
    fn thinking_a_model_refuses_names_the_file_the_key_the_model_and_the_fix() {
        let profile = |model: &str, keys: &str| {
            format!(
                "[models.opus]\nprovider = \"anthropic\"\nmodel = \"{model}\"\nbase_url = \"http://h\"\n{keys}"
            )
        };
        for (text, key, says) in [
            (
                profile("claude-opus-4-7", "thinking = { budget = 4096 }"),
                "`models.opus.thinking`",
                "`claude-opus-4-7` takes adaptive thinking only",
            ),
            (
                profile("claude-opus-4-7", "thinking_budget = 4096"),
                "`models.opus.thinking_budget`",
                "write `thinking = \"adaptive\"`",
            ),
            (
                profile("claude-sonnet-4-5", "thinking = \"adaptive\""),
                "`models.opus.thinking`",
                "write `thinking = { budget = N }`",
            ),
            (
                profile(
                    "claude-sonnet-4-5",
                    "thinking = { budget = 2048 }\nthinking_budget = 2048",
                ),
                "`models.opus.thinking`",
                "keep one",
            ),
            (
                profile("claude-opus-4-7", "thinking = \"sometimes\""),
                "models.opus.thinking",
                "expected \"adaptive\", \"off\" or { budget = N }",
            ),
            (
                profile("claude-opus-4-7", "cache = \"2h\""),
                "models.opus.cache",
                "5m",
            ),
        ] {
            let err = resolve_text(&[text.as_str()], LoadOptions::default())
                .err()
                .unwrap_or_else(|| panic!("accepted: {text}"))
                .to_string();
            assert!(
                err.contains("file0.toml") && err.contains(key) && err.contains(says),
                "{err}"
            );
        }
        let settings = resolve_text(
            &[profile(
                "claude-opus-4-7",
                "thinking = \"adaptive\"\neffort = \"high\"\ncache = \"1h\"",
            )
            .as_str()],
            LoadOptions::default(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let opus = &settings.models["opus"];
        assert_eq!(
            opus.thinking,
            Some(agentbus_engine::settings::Thinking::Adaptive)
        );
        assert_eq!(opus.effort, Some(agentbus_engine::settings::Effort::High));
        assert_eq!(
            opus.cache,
            Some(agentbus_engine::settings::CacheSetting::OneHour)
        );
    }

    #[test]
    fn a_bad_profile_names_its_file_and_key() {
        let err = resolve_text(
            &["[models.mine]\nprovider = \"openai\"\nmodel = \"m\"\nbase_urll = \"x\""],
            LoadOptions::default(),
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("file0.toml") && err.contains("models.mine"),
            "{err}"
        );
    }

    #[test]
    fn a_base_url_that_is_not_a_url_names_the_file_the_key_and_what_was_expected() {
        let err = resolve_text(
            &["[models.mine]\nprovider = \"openai\"\nmodel = \"m\"\n\
                 base_url = \"http://127.0.0.1:PORT/v1\""],
            LoadOptions::default(),
        )
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
        assert!(err.contains("file0.toml"), "{err}");
        assert!(err.contains("key `models.mine.base_url`"), "{err}");
        assert!(err.contains("invalid port number"), "{err}");
        assert!(err.contains("expected an http:// or https:// URL"), "{err}");
    }

    #[test]
    fn a_given_mcp_server_is_checked_like_a_configured_one_naming_server_and_field() {
        use serde_json::json;
        let given = |value| given_mcp_server("fs", value, "the request body");
        let ok = given(json!({"command": "mcp-fs", "env": {"TOKEN": "${HOME}"}})).unwrap();
        assert_eq!(ok.command.as_deref(), Some("mcp-fs"));
        assert_eq!(ok.env["TOKEN"], "${HOME}", "never expanded");
        for (value, key, says) in [
            (
                json!({"command": 3}),
                "mcp_servers.fs.command",
                "expected a string",
            ),
            (
                json!({"command": "x", "env": {"A": 1}}),
                "mcp_servers.fs.env.A",
                "expected a string",
            ),
            (
                json!({"command": "x", "colour": "red"}),
                "mcp_servers.fs.colour",
                "unknown field",
            ),
            (
                json!({"command": "x", "url": "http://x"}),
                "mcp_servers.fs",
                "exactly one",
            ),
            (json!({}), "mcp_servers.fs", "exactly one"),
            (
                json!(["x"]),
                "mcp_servers.fs",
                "expected an object of settings",
            ),
            (json!(null), "mcp_servers.fs", "not null"),
        ] {
            let err = given(value.clone()).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!("the request body: key `{key}`:")) && err.contains(says),
                "{value}: {err}"
            );
        }
    }

    #[test]
    fn the_first_turn_wait_for_mcp_servers_is_checked() {
        let s = resolve_text(&[], LoadOptions::default()).unwrap();
        assert_eq!(s.mcp.first_turn_wait_secs, 10, "the default");
        let s = resolve_text(&["[mcp]\nfirst_turn_wait_secs = 0"], LoadOptions::default()).unwrap();
        assert_eq!(s.mcp.first_turn_wait_secs, 0, "0 turns the wait off");
        let err = parse_layer(
            "my.toml".into(),
            None,
            "[mcp]\nfirst_turn_wait_secs = 100000",
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("mcp.first_turn_wait_secs")
                && err.contains("expected 0 (never wait) to 600"),
            "{err}"
        );
        let err = parse_layer("my.toml".into(), None, "[mcp]\nfirst_turn_wait_secs = 601")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("my.toml") && err.contains("expected 0 (never wait) to 600"),
            "the file that says it is named: {err}"
        );
        let err = parse_layer("my.toml".into(), None, "[mcp]\nfirst_turn_wait_secs = -1")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("my.toml") && err.contains("mcp.first_turn_wait_secs"),
            "{err}"
        );
        let err = parse_layer("my.toml".into(), None, "[mcp]\nfirst_turn_wait = 3")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("my.toml") && err.contains("first_turn_wait") && err.contains("expected"),
            "{err}"
        );
    }

    #[test]
    fn agents_are_read_and_a_bad_one_names_its_file_and_key() {
        let s = resolve_text(
            &["[agents.reviewer]\ndescription = \"r\"\ntools = [\"read_file\"]\nmodel = \"local\"\npermission_mode = \"plan\"",
              "[agents.reviewer]\nmax_steps = 3"],
            LoadOptions::default(),
        )
        .unwrap();
        assert_eq!(s.agents.len(), 1);
        let agent = &s.agents[0];
        assert_eq!(agent.tools.as_deref(), Some(&["read_file".to_string()][..]));
        assert_eq!(agent.max_steps, Some(3), "a later file overrides one key");
        assert_eq!(agent.source, "file1.toml");
        let err = resolve_text(&["[agents.x]\nmodel = \"nope\""], LoadOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("file0.toml") && err.contains("agents.x.model") && err.contains("nope"),
            "{err}"
        );
        let err = resolve_text(&["[agents.x]\ntool = [\"bash\"]"], LoadOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("file0.toml") && err.contains("agents.x"),
            "{err}"
        );
    }

    #[test]
    fn syntax_errors_name_the_file() {
        let err = parse_layer("my.toml".into(), None, "max_steps = = 3")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("my.toml") && err.contains("not valid TOML"),
            "{err}"
        );
    }

    #[test]
    fn unknown_model_lists_the_profiles() {
        let err = resolve_text(&["model = \"nope\""], LoadOptions::default())
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("nope") && err.contains("file0.toml") && err.contains("local"),
            "{err}"
        );
    }

    #[test]
    fn undefined_variables_are_named_but_api_keys_wait() {
        let err = parse_layer(
            "my.toml".into(),
            None,
            "system_prompt = \"${AGENTBUS_SURELY_UNSET_VAR}\"",
        )
        .err()
        .unwrap()
        .to_string();
        assert!(
            err.contains("AGENTBUS_SURELY_UNSET_VAR") && err.contains("system_prompt"),
            "{err}"
        );
        let ok = parse_layer(
            "my.toml".into(),
            None,
            "[models.x]\napi_key = \"${AGENTBUS_SURELY_UNSET_VAR}\"",
        );
        assert!(ok.is_ok());
    }

    #[test]
    fn prompt_file_is_read_relative_to_its_config_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("p.md"), "custom prompt in {workspace}").unwrap();
        let l = parse_layer(
            "c.toml".into(),
            Some(dir.path()),
            "system_prompt_file = \"p.md\"",
        )
        .unwrap();
        let defaults = parse_layer("built-in defaults".into(), None, DEFAULT_TOML).unwrap();
        let s = resolve(
            vec![defaults, l],
            &LoadOptions::default(),
            PathBuf::from("/ws"),
        )
        .unwrap();
        assert_eq!(s.system_prompt, "custom prompt in /ws");
    }

    #[test]
    fn telemetry_merges_across_files_with_headers_expanded_and_a_wrong_key_named() {
        let layers = [
            layer(
                "a.toml",
                "[telemetry]\notlp_endpoint = \"http://a:4318\"\nheaders = { x-one = \"1\" }",
            ),
            layer(
                "b.toml",
                "[telemetry]\nservice_name = \"bus\"\n\
                 headers = { authorization = \"Bearer ${AGENTBUS_SURELY_UNSET_VAR:-t0ken}\" }",
            ),
        ];
        let telemetry = telemetry_settings(&layers).unwrap();
        assert_eq!(telemetry.otlp_endpoint.as_deref(), Some("http://a:4318"));
        assert_eq!(telemetry.service_name.as_deref(), Some("bus"));
        let headers = telemetry.headers.unwrap();
        assert_eq!(headers["x-one"], "1");
        assert_eq!(headers["authorization"], "Bearer t0ken");

        let error = parse_layer(
            "c.toml".into(),
            None,
            "[telemetry]\nendpoint = \"http://a:4318\"",
        )
        .err()
        .expect("an unknown key is refused")
        .to_string();
        assert!(
            error.contains("c.toml") && error.contains("telemetry.endpoint"),
            "{error}"
        );
    }

    #[test]
    fn auto_prefers_a_profile_whose_key_is_set_else_a_keyless_one() {
        let mut models = BTreeMap::new();
        let with_env = |env: &str| {
            let mut p =
                ModelProfile::new(agentbus_engine::settings::ProviderKind::Openai, "m", "u");
            p.api_key_env = Some(env.into());
            p
        };
        models.insert("cloud".to_string(), with_env("AGENTBUS_SURELY_UNSET_VAR"));
        models.insert("here".to_string(), with_env("PATH"));
        let mut keyless = with_env("x");
        keyless.api_key_env = None;
        models.insert("local".to_string(), keyless);
        assert_eq!(
            pick_auto_model(&models, &["cloud".into(), "here".into()]).as_deref(),
            Some("here")
        );
        assert_eq!(
            pick_auto_model(&models, &["cloud".into()]).as_deref(),
            Some("local")
        );
    }
}
