//! Settings: the resolved configuration the runtime runs with.
//!
//! Plain data. Loading files, merging layers and expanding `${VAR}` is the
//! binary's job (`src/config/`); a library user may build [`Settings`] in
//! code. API keys are never stored resolved: a profile names where its key
//! comes from and [`ModelProfile::api_key`] reads it when a request is made.

mod cluster;
pub mod thinking;

use crate::protocol::{ContextConfig, ModelInfo, Pricing};
pub use crate::store::location::{LocationError, PostgresUrl, StoreLocation};
pub use cluster::{
    ClusterName, ClusterNameError, ClusterSettings, NatsAddress, redact_nats_address,
};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
pub use thinking::{Thinking, ThinkingSupport};

/// Everything the runtime needs.
#[derive(Clone, Debug, Serialize)]
pub struct Settings {
    /// Name of the default model profile.
    pub model: String,
    pub system_prompt: String,
    /// Most model calls per turn.
    pub max_steps: u32,
    /// Emit `stream_event`s.
    pub include_partial_messages: bool,
    /// Tools removed from the registry.
    pub disallowed_tools: Vec<String>,
    /// Directory tools work in.
    pub workspace: PathBuf,
    pub models: BTreeMap<String, ModelProfile>,
    pub tools: ToolSettings,
    /// MCP servers by name (disabled ones included; they are not started).
    pub mcp_servers: BTreeMap<String, McpServerConfig>,
    /// `[mcp]`: what sessions do about MCP servers as a whole.
    pub mcp: McpSettings,
    /// Where the session database lives (`agentbus.db`) and the chat history.
    pub data_dir: PathBuf,
    /// The user's configuration directory (`~/.config/agentbus`, or the
    /// folder of `$AGENTBUS_CONFIG`): its `AGENTS.md` is appended to the
    /// system prompt of every session. `None`: no user-level instructions.
    pub config_dir: Option<PathBuf>,
    pub sessions: SessionSettings,
    pub server: ServerSettings,
    /// `[context]`: how requests are kept inside the context window.
    pub context: ContextConfig,
    /// The instructions a summary is written with (`config/prompts/compact.md`).
    pub compact_prompt: String,
    /// `permission_mode` and `[permissions]`: what runs without asking.
    pub permissions: PermissionSettings,
    /// `[sandbox]`: where `bash` and the file tools may write.
    pub sandbox: SandboxSettings,
    /// `[agents.NAME]`: named agents defined in the configuration (the
    /// built-in `build` and `plan`, and the agent files of a session's
    /// workspace, are added per session).
    pub agents: Vec<crate::protocol::AgentDefinition>,
    /// `[subagents]`: the `task` tool's limits.
    pub subagents: SubagentSettings,
    /// `[hooks]`: the configuration's own hooks (Claude Code's structure),
    /// run by every session; the workspace's hook files are added per
    /// session.
    pub hooks: Vec<crate::protocol::hook::HookGroup>,
    /// `[skills]`: where Agent Skills are read besides the usual folders,
    /// and how much of the system prompt their listing may take.
    pub skills: SkillSettings,
    /// `[checkpoints]`: what a session keeps of its changes to the
    /// workspace, so they can be taken back.
    pub checkpoints: CheckpointSettings,
    /// Advice shown when the default profile cannot be reached (set when
    /// the profile was picked as the fallback because no key was found).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreachable_hint: Option<String>,
    /// `[cluster]`: this process is one node of several sharing one
    /// Postgres database (`agentbus serve` only; other commands use the
    /// cluster's database as a plain store). `None`: a process of its own.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterSettings>,
}

/// `[subagents]`: how the `task` tool runs named agents in child sessions.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SubagentSettings {
    /// How many children of one batch of `task` calls run at once (the
    /// rest wait their turn).
    #[serde(default = "default_max_concurrent_subagents")]
    pub max_concurrent_subagents: usize,
}

fn default_max_concurrent_subagents() -> usize {
    4
}

impl Default for SubagentSettings {
    fn default() -> Self {
        SubagentSettings {
            max_concurrent_subagents: default_max_concurrent_subagents(),
        }
    }
}

/// `[skills]`: Agent Skills (`SKILL.md` folders). The workspace's
/// `.claude/skills/` and `.agents/skills/` and the user's
/// `~/.claude/skills/` and `~/.agents/skills/` are always read.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SkillSettings {
    /// More folders of skills (each holding `NAME/SKILL.md`), read after
    /// the user's and before the workspace's; relative to the file that
    /// names them, `~/` the home directory.
    #[serde(default)]
    pub paths: Vec<PathBuf>,
    /// The most characters of the system prompt the skills' listing may
    /// take; skills beyond it are left out of the listing (and the user
    /// told), still loadable by name.
    #[serde(default = "default_skill_prompt_chars")]
    pub max_prompt_chars: usize,
}

/// As the session core's default (`session::core::skills`).
fn default_skill_prompt_chars() -> usize {
    8_000
}

impl Default for SkillSettings {
    fn default() -> Self {
        SkillSettings {
            paths: Vec::new(),
            max_prompt_chars: default_skill_prompt_chars(),
        }
    }
}

/// `[checkpoints]`: before a tool call that can change files, what it may
/// touch is kept (content-addressed blobs in the session store), so
/// `/rewind` and `/undo` can take the changes back.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSettings {
    /// Keep checkpoints at all.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// A look at the whole workspace (before and after a command) stops
    /// after this many files, and says so.
    #[serde(default = "default_checkpoint_files")]
    pub max_files: usize,
    /// A larger file is not kept (and a rewind cannot restore it).
    #[serde(default = "default_checkpoint_file_bytes")]
    pub max_file_bytes: u64,
    /// A look at the workspace keeps at most this many bytes of files.
    #[serde(default = "default_checkpoint_total_bytes")]
    pub max_total_bytes: u64,
    /// The most bytes of blobs one session's checkpoints keep; its oldest
    /// are forgotten past it.
    #[serde(default = "default_checkpoint_session_bytes")]
    pub max_session_bytes: u64,
}

fn default_checkpoint_files() -> usize {
    20_000
}
fn default_checkpoint_file_bytes() -> u64 {
    10 * 1024 * 1024
}
fn default_checkpoint_total_bytes() -> u64 {
    256 * 1024 * 1024
}
fn default_checkpoint_session_bytes() -> u64 {
    1024 * 1024 * 1024
}

impl Default for CheckpointSettings {
    fn default() -> Self {
        CheckpointSettings {
            enabled: true,
            max_files: default_checkpoint_files(),
            max_file_bytes: default_checkpoint_file_bytes(),
            max_total_bytes: default_checkpoint_total_bytes(),
            max_session_bytes: default_checkpoint_session_bytes(),
        }
    }
}

/// `agentbus serve`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerSettings {
    /// Address to listen on (default `127.0.0.1:7878`; `--listen` wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// The API token, usually `"${AGENTBUS_TOKEN}"`. Required to listen on
    /// anything but loopback; otherwise a random one is kept in
    /// `DATA_DIR/token`.
    #[serde(default, skip_serializing)]
    pub token: Option<Secret>,
    /// `[server.tokens.NAME]`: more tokens, each with a name and a role
    /// (beside `token`, which is the admin named `admin`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tokens: BTreeMap<String, TokenSettings>,
}

/// `[server.tokens.NAME]`: an API token of its own, read from the
/// environment, with what its holder may do and how much.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TokenSettings {
    /// The environment variable holding the token (never the token itself:
    /// a configuration file is read by more people than should drive).
    pub token_env: String,
    /// What the holder may do.
    pub role: Role,
    /// At most this many of its sessions run a turn at once; an input
    /// that would start one more is refused (429).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_busy_sessions: Option<u32>,
    /// At most this many requests a minute (429 with `Retry-After` past
    /// it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u32>,
}

/// What a token's holder may do through `agentbus serve`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Follows the sessions it is given (their events, conversation and
    /// files' history); sends nothing.
    Viewer,
    /// Creates sessions and sees, drives, forks and deletes the ones it
    /// created; follows those it is given.
    User,
    /// Everything, every session.
    Admin,
}

impl Role {
    /// Its name in the configuration and in answers.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::User => "user",
            Role::Admin => "admin",
        }
    }
}

/// How sessions are kept.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SessionSettings {
    /// A session with nothing running, nothing queued and nobody watching is
    /// unloaded from memory after this long (it stays stored).
    #[serde(default = "default_idle_unload_secs")]
    pub idle_unload_secs: u64,
    /// How long a write waits for another agentbus process holding the
    /// database before it fails.
    #[serde(default = "default_busy_timeout_ms")]
    pub busy_timeout_ms: u64,
    /// Where sessions are stored: a SQLite file's path, or a Postgres URL
    /// (`postgres://USER[:PASSWORD]@HOST:PORT/DATABASE`). Default: the
    /// SQLite file `agentbus.db` in the data dir. Shown and serialised
    /// without its password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreLocation>,
}

fn default_idle_unload_secs() -> u64 {
    600
}
fn default_busy_timeout_ms() -> u64 {
    5000
}

impl Default for SessionSettings {
    fn default() -> Self {
        SessionSettings {
            idle_unload_secs: default_idle_unload_secs(),
            busy_timeout_ms: default_busy_timeout_ms(),
            store: None,
        }
    }
}

impl Settings {
    /// The session database of the data dir (the default store).
    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("agentbus.db")
    }

    /// Where sessions are stored: `[sessions] store` (or `--store`), else
    /// the SQLite file of the data dir.
    pub fn store_location(&self) -> StoreLocation {
        self.sessions
            .store
            .clone()
            .unwrap_or_else(|| StoreLocation::Sqlite(self.database_path()))
    }
}

/// What runs without asking (`permission_mode`, `[permissions]`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct PermissionSettings {
    /// The mode new sessions start in.
    pub mode: crate::protocol::PermissionMode,
    /// `allow`, `ask` and `deny`, every configuration file's lists joined
    /// (user file first).
    pub rules: crate::permissions::Rules,
    /// An approval request nobody answers within this long is rejected;
    /// `None`: it waits until answered or interrupted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_timeout_secs: Option<u64>,
}

/// `[sandbox]`: the limits `bash` runs in (Landlock, on Linux), and that
/// the file tools keep to.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SandboxSettings {
    /// `false` runs commands unconfined (the modes and rules still apply).
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Directories besides the workspace (and the temporary directories,
    /// for commands) where writes are allowed. `~/` means the home directory.
    #[serde(default)]
    pub write_roots: Vec<PathBuf>,
    /// Whether commands may open network connections (TCP; see the README
    /// for what Landlock cannot stop).
    #[serde(default = "yes")]
    pub network: bool,
}

fn yes() -> bool {
    true
}

impl SandboxSettings {
    /// The directories file tools may work in without asking, and commands
    /// may write to: the workspace, then each write root (`~/` expanded
    /// against `home` — left out without one — and relative roots against
    /// the workspace), lexically normalised. Symlinks are the tools' to
    /// check when they open a file.
    pub fn roots(
        &self,
        workspace: &std::path::Path,
        home: Option<&std::path::Path>,
    ) -> Vec<PathBuf> {
        let mut roots = vec![crate::permissions::normalize(workspace)];
        for root in &self.write_roots {
            let expanded = match (root.strip_prefix("~"), home) {
                (Ok(rest), Some(home)) => home.join(rest),
                (Ok(_), None) => continue,
                (Err(_), _) => workspace.join(root),
            };
            roots.push(crate::permissions::normalize(&expanded));
        }
        roots
    }
}

/// `$HOME`, when it is set to an absolute path: what `~` means in write
/// roots and permission rules.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute())
}

impl Default for SandboxSettings {
    fn default() -> Self {
        SandboxSettings {
            enabled: true,
            write_roots: Vec::new(),
            network: true,
        }
    }
}

/// Limits for tool calls.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolSettings {
    /// Tool outputs longer than this are truncated with a marker.
    #[serde(default = "default_max_output_bytes")]
    pub max_output_bytes: usize,
    /// A built-in tool call running longer than this is cancelled with an
    /// error result (an MCP server's tools have its `tool_timeout_secs`).
    #[serde(default = "default_tool_timeout_secs")]
    pub timeout_secs: u64,
    /// How many `bash` commands started with `run_in_background` may run
    /// at once in one session; a start beyond is refused.
    #[serde(default = "default_max_background_commands")]
    pub max_background_commands: usize,
    /// `[tools.environment]`: the environment of commands and MCP servers.
    #[serde(default)]
    pub environment: EnvironmentPolicy,
    /// The `[sandbox]` section, copied here by the runtime for the tools.
    #[serde(skip)]
    pub sandbox: SandboxSettings,
}

/// What environment `bash` commands and MCP server processes start with
/// (Codex's `shell_environment_policy`). Whatever the policy, the
/// variables that hold provider keys and the server token are removed.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentPolicy {
    /// Which variables are passed on at all: `all` (default), `core`
    /// (HOME, PATH, USER, SHELL, LANG, LC_*, TERM, TMPDIR and the like) or
    /// `none`.
    #[serde(default)]
    pub inherit: Inherit,
    /// Names removed, as globs matched without regard to case (default:
    /// `*_KEY`, `*_SECRET`, `*_TOKEN`, `*_PASSWORD`).
    #[serde(default = "default_environment_exclude")]
    pub exclude: Vec<String>,
    /// When not empty, only names matching one of these globs are kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include_only: Vec<String>,
    /// Variables set for every command (after the filters). Values are
    /// never serialised.
    #[serde(default, skip_serializing)]
    pub set: BTreeMap<String, String>,
    /// Variables that hold secrets of agentbus's own (the profiles' API
    /// keys, the server token): always removed. Filled in from the
    /// settings when the runtime starts.
    #[serde(skip)]
    pub secrets: Vec<String>,
}

/// `inherit` of [`EnvironmentPolicy`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Inherit {
    #[default]
    All,
    Core,
    None,
}

fn default_environment_exclude() -> Vec<String> {
    ["*_KEY", "*_SECRET", "*_TOKEN", "*_PASSWORD"]
        .map(String::from)
        .to_vec()
}

impl Default for EnvironmentPolicy {
    fn default() -> Self {
        EnvironmentPolicy {
            inherit: Inherit::All,
            exclude: default_environment_exclude(),
            include_only: Vec::new(),
            set: BTreeMap::new(),
            secrets: Vec::new(),
        }
    }
}

/// The output cap sent to Anthropic-format servers when a profile sets
/// none (their API requires one); it is taken from the context window.
pub const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 8192;

/// The smallest `budget_tokens` Anthropic accepts for extended thinking.
pub const ANTHROPIC_MIN_THINKING_BUDGET: u32 = 1024;

/// Anthropic's price of a cache read, as a share of the input price.
pub const ANTHROPIC_CACHE_READ: f64 = 0.1;
/// Anthropic's price of a five-minute cache write, as a share of the input
/// price.
pub const ANTHROPIC_CACHE_WRITE_5M: f64 = 1.25;
/// Anthropic's price of a one-hour cache write, as a share of the input
/// price.
pub const ANTHROPIC_CACHE_WRITE_1H: f64 = 2.0;

/// The instructions summaries are written with, compiled in.
pub const DEFAULT_COMPACT_PROMPT: &str = include_str!("../../config/prompts/compact.md");

/// Tool outputs are cut to this many bytes unless `[tools]` says otherwise
/// (about what a model reads comfortably in one result).
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 30_000;

fn default_max_output_bytes() -> usize {
    DEFAULT_MAX_OUTPUT_BYTES
}

fn default_tool_timeout_secs() -> u64 {
    900
}

/// Background commands one session may run at once unless `[tools]` says
/// otherwise.
pub const DEFAULT_MAX_BACKGROUND_COMMANDS: usize = 8;

fn default_max_background_commands() -> usize {
    DEFAULT_MAX_BACKGROUND_COMMANDS
}

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings {
            max_output_bytes: default_max_output_bytes(),
            timeout_secs: default_tool_timeout_secs(),
            max_background_commands: default_max_background_commands(),
            environment: EnvironmentPolicy::default(),
            sandbox: SandboxSettings::default(),
        }
    }
}

/// `[mcp]`: what sessions do about MCP servers as a whole.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpSettings {
    /// The longest a session's first model call waits for MCP servers on
    /// their first start, so that it offers their tools (0: it never
    /// waits). Each server also stops being waited for when it fails or
    /// reaches its own `startup_timeout_secs`.
    #[serde(default = "default_first_turn_wait_secs")]
    pub first_turn_wait_secs: u64,
}

fn default_first_turn_wait_secs() -> u64 {
    10
}

impl Default for McpSettings {
    fn default() -> Self {
        McpSettings {
            first_turn_wait_secs: default_first_turn_wait_secs(),
        }
    }
}

impl McpSettings {
    /// The most `first_turn_wait_secs` may be.
    pub const MAX_FIRST_TURN_WAIT_SECS: u64 = 600;

    /// Values that mean something; the message says what is expected.
    pub fn check(&self) -> Result<(), String> {
        if self.first_turn_wait_secs > Self::MAX_FIRST_TURN_WAIT_SECS {
            return Err(format!(
                "first_turn_wait_secs is {}, expected 0 (never wait) to {} seconds",
                self.first_turn_wait_secs,
                Self::MAX_FIRST_TURN_WAIT_SECS
            ));
        }
        Ok(())
    }

    /// `first_turn_wait_secs` in milliseconds, as sessions count it.
    pub fn first_turn_wait_ms(&self) -> u64 {
        self.first_turn_wait_secs.saturating_mul(1000)
    }
}

/// One MCP server (`[mcp_servers.NAME]`, an entry of a `.mcp.json`, or one
/// given with a session). Exactly one of `command` (stdio) and `url`
/// (streamable HTTP) is set. `env` and `headers` may hold secrets: they are
/// never serialised, and `Debug` shows their names only.
#[derive(Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// `false`: configured but not started.
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Program to start (stdio transport).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Extra environment for the program (values may be secrets: never
    /// serialised).
    #[serde(default, skip_serializing)]
    pub env: BTreeMap<String, String>,
    /// Working directory of the program (default: the workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Endpoint of a streamable HTTP server, e.g. `http://127.0.0.1:3001/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// HTTP headers, e.g. `{ Authorization = "Bearer ${TOKEN}" }` (never
    /// serialised).
    #[serde(default, skip_serializing)]
    pub headers: BTreeMap<String, String>,
    /// Text appended to the system prompt of sessions using this server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// Starting (connect, initialize, list tools) may take this long.
    #[serde(default = "default_startup_timeout_secs")]
    pub startup_timeout_secs: u64,
    /// One tool call may take this long; then it is cancelled. Replaces
    /// `[tools] timeout_secs` for this server's tools, longer or shorter.
    #[serde(default = "default_mcp_tool_timeout_secs")]
    pub tool_timeout_secs: u64,
}

fn default_mcp_tool_timeout_secs() -> u64 {
    300
}

fn default_true() -> bool {
    true
}
fn default_startup_timeout_secs() -> u64 {
    30
}

impl fmt::Debug for McpServerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The values of `env` and `headers` may be secrets: names only.
        f.debug_struct("McpServerConfig")
            .field("enabled", &self.enabled)
            .field("command", &self.command)
            .field("args", &self.args)
            .field("env", &self.env.keys().collect::<Vec<_>>())
            .field("cwd", &self.cwd)
            .field("url", &self.url)
            .field("headers", &self.headers.keys().collect::<Vec<_>>())
            .field("prompt", &self.prompt)
            .field("startup_timeout_secs", &self.startup_timeout_secs)
            .field("tool_timeout_secs", &self.tool_timeout_secs)
            .finish()
    }
}

impl McpServerConfig {
    /// A stdio server running `command args...`.
    pub fn stdio(command: impl Into<String>, args: &[&str]) -> Self {
        McpServerConfig {
            enabled: true,
            command: Some(command.into()),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            prompt: None,
            startup_timeout_secs: default_startup_timeout_secs(),
            tool_timeout_secs: default_mcp_tool_timeout_secs(),
        }
    }

    /// A streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        McpServerConfig {
            command: None,
            url: Some(url.into()),
            ..Self::stdio("", &[])
        }
    }
}

/// Which wire format a profile speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI Chat Completions (OpenAI, llama.cpp, Ollama, vLLM, LM Studio, ...).
    Openai,
    /// Anthropic Messages (Anthropic, llama.cpp's /v1/messages, ...).
    Anthropic,
    /// OpenAI Responses (`provider = "openai-responses"`): OpenAI's
    /// newer API, the only one its Codex and `-pro` models answer on.
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::OpenaiResponses => "openai-responses",
        })
    }
}

/// How much reasoning a profile asks of the model (`effort = "..."`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Effort {
    Low,
    Medium,
    High,
    /// The most the model offers (Anthropic's `max`; OpenAI's highest
    /// reasoning effort).
    Max,
}

impl fmt::Display for Effort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
            Effort::Max => "max",
        })
    }
}

/// A profile's prompt caching (`cache = "..."`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CacheSetting {
    /// Cached prefixes live five minutes (Anthropic's default).
    #[serde(rename = "5m")]
    FiveMinutes,
    /// Cached prefixes live an hour (Anthropic's `"ttl": "1h"`).
    #[serde(rename = "1h")]
    OneHour,
    /// Nothing is marked for caching and no cache key is sent.
    #[serde(rename = "off")]
    Off,
}

/// A named model profile (`[models.NAME]`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelProfile {
    pub provider: ProviderKind,
    /// The provider's model id, e.g. `gpt-4.1-mini`.
    pub model: String,
    /// e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    /// Environment variable holding the API key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// The key itself, usually `"${VAR}"` (expanded when a request is made).
    /// Never serialised.
    #[serde(default, skip_serializing)]
    pub api_key: Option<Secret>,
    /// The variable of `api_key_env` may be unset: no key is sent then
    /// (the library's `Provider::openai`, for servers with or without a
    /// key). A configured `api_key_env` is required: never set from a file.
    #[serde(skip)]
    pub key_optional: bool,
    /// Cap on output tokens per model call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Name of the request field for that cap: `max_tokens` (default) or
    /// `max_completion_tokens` (newer OpenAI models).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens_field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_window: Option<u64>,
    /// Anthropic's thinking (`thinking = "adaptive" | "off" | { budget = N
    /// }`): adaptive thinking, none, or extended thinking with a budget (at
    /// least [`ANTHROPIC_MIN_THINKING_BUDGET`], less than the output cap).
    /// Unset: what the model family takes ([`ModelProfile::thinking`]).
    /// A setting the model refuses is refused by [`ModelProfile::check`].
    /// OpenAI-compatible servers need no setting: what they stream as
    /// reasoning is shown as thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<Thinking>,
    /// The older spelling of `thinking = { budget = N }` (one or the
    /// other, not both).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
    /// How hard the model should think: Anthropic's `output_config.effort`
    /// (sent whenever it is set; a model that takes only a budget refuses
    /// it), OpenAI's `reasoning.effort` on the Responses wire (the Chat
    /// Completions wire leaves it out). Unset: the provider's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// Prompt caching (`cache = "5m" | "1h" | "off"`): how long Anthropic
    /// keeps the cached prefix (cache breakpoints on the tools, the system
    /// prompt and the newest messages); `off` asks no provider to cache.
    /// Unset: on, for five minutes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheSetting>,
    /// Whether the model takes images with a query (`run --image`, an
    /// `@pic.png` mention). Unset: yes for the hosted APIs
    /// (`api.openai.com`, `api.anthropic.com`), no elsewhere (a local
    /// server's model often reads no images). See [`ModelProfile::takes_images`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<bool>,
    /// `[models.NAME.context]`: keys of `[context]` for this profile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextConfig>,
    /// Extra HTTP headers sent with every request (values may hold secrets,
    /// so they are never serialised).
    #[serde(default, skip_serializing)]
    pub headers: BTreeMap<String, String>,
    /// Attempts after the first when a call fails in a retryable way.
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// The first backoff delay; it doubles with each attempt.
    #[serde(default = "default_retry_base_delay_ms")]
    pub retry_base_delay_ms: u64,
    /// Longest backoff, and longest `Retry-After` worth waiting for.
    #[serde(default = "default_max_retry_delay_secs")]
    pub max_retry_delay_secs: u64,
    #[serde(default = "default_connect_timeout_secs")]
    pub connect_timeout_secs: u64,
    /// No byte for this long (before or during the stream): try again.
    #[serde(default = "default_stream_idle_timeout_secs")]
    pub stream_idle_timeout_secs: u64,
    /// US dollars per million input tokens (for `/usage`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_per_mtok: Option<f64>,
    /// US dollars per million output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_per_mtok: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_mtok: Option<f64>,
}

fn default_max_retries() -> u32 {
    5
}
fn default_retry_base_delay_ms() -> u64 {
    250
}
fn default_max_retry_delay_secs() -> u64 {
    60
}
fn default_connect_timeout_secs() -> u64 {
    10
}
fn default_stream_idle_timeout_secs() -> u64 {
    300
}

/// `base_url` as a request can be sent to it: an `http://` or `https://`
/// URL with a host, no spaces, a port that is a number. Refused when the
/// configuration is loaded, so that a typo (`http://127.0.0.1:PORT/v1`, a
/// missing scheme) is said with the file and the key before anything is
/// sent, not found by the first request.
fn check_base_url(base_url: &str) -> Result<(), String> {
    const EXPECTED: &str = "expected an http:// or https:// URL with a host, an optional \
         port (a number) and path, e.g. `http://127.0.0.1:8080/v1`";
    if base_url.chars().any(char::is_whitespace) {
        return Err(format!("`{base_url}` has a space in it; {EXPECTED}"));
    }
    let url = url::Url::parse(base_url)
        .map_err(|e| format!("`{base_url}` is not a valid URL ({e}); {EXPECTED}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "`{base_url}` is not an http:// or https:// URL (its scheme is `{}`); {EXPECTED}",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("`{base_url}` names no host; {EXPECTED}"));
    }
    Ok(())
}

/// Where a profile's key could not be found.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ApiKeyError {
    /// `needed_by` names the setting, e.g. "`api_key` of model profile `x`".
    #[error(
        "environment variable {var} is not set (needed by {needed_by}): set it and start agentbus again, or switch to another profile (/models lists them)"
    )]
    MissingVariable { needed_by: String, var: String },
}

impl ModelProfile {
    /// A profile with every optional setting at its default.
    pub fn new(
        provider: ProviderKind,
        model: impl Into<String>,
        base_url: impl Into<String>,
    ) -> Self {
        ModelProfile {
            provider,
            model: model.into(),
            base_url: base_url.into(),
            api_key_env: None,
            api_key: None,
            key_optional: false,
            max_output_tokens: None,
            max_tokens_field: None,
            context_window: None,
            thinking: None,
            thinking_budget: None,
            effort: None,
            cache: None,
            images: None,
            context: None,
            headers: BTreeMap::new(),
            max_retries: default_max_retries(),
            retry_base_delay_ms: default_retry_base_delay_ms(),
            max_retry_delay_secs: default_max_retry_delay_secs(),
            connect_timeout_secs: default_connect_timeout_secs(),
            stream_idle_timeout_secs: default_stream_idle_timeout_secs(),
            input_per_mtok: None,
            output_per_mtok: None,
            cache_read_per_mtok: None,
            cache_write_per_mtok: None,
        }
    }

    /// The settings a provider would refuse, found before any request is
    /// made: `Err((key, why))`, the key within `[models.NAME]`. `base_url`:
    /// an http(s) URL with a host (see `check_base_url`). Thinking:
    /// `thinking` and `thinking_budget` not both; thinking asked of the
    /// Anthropic wire only; a budget within Anthropic's bounds; nothing the
    /// model's family refuses (a budget on an adaptive-only model, adaptive
    /// thinking or `effort` on a budget-only one), the message naming the
    /// model and what to write instead.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        check_base_url(&self.base_url).map_err(|why| ("base_url", why))?;
        let key = if self.thinking.is_some() {
            "thinking"
        } else {
            "thinking_budget"
        };
        if let (Some(thinking), Some(budget)) = (self.thinking, self.thinking_budget) {
            return Err((
                key,
                format!(
                    "both `thinking = {thinking}` and `thinking_budget = {budget}` are set; `thinking_budget = N` is the older spelling of `thinking = {{ budget = N }}`: keep one"
                ),
            ));
        }
        let written = self.thinking.or(self.thinking_budget.map(Thinking::Budget));
        let support = thinking::support(&self.model);
        if self.provider != ProviderKind::Anthropic {
            return match written {
                Some(Thinking::Adaptive | Thinking::Budget(_)) => Err((
                    key,
                    format!(
                        "thinking is asked for with `provider = \"anthropic\"` only (this profile is `{}`); OpenAI-compatible servers stream their reasoning unasked, and it is shown as thinking",
                        self.provider
                    ),
                )),
                _ => Ok(()),
            };
        }
        let model = &self.model;
        match written {
            Some(Thinking::Budget(budget)) => {
                self.check_budget(budget).map_err(|why| (key, why))?;
                if support == ThinkingSupport::AdaptiveOnly {
                    return Err((
                        key,
                        format!(
                            "`{model}` takes adaptive thinking only (Anthropic answers a thinking budget with HTTP 400): write `thinking = \"adaptive\"` instead, and `effort = \"low\" | \"medium\" | \"high\" | \"max\"` for how hard it thinks"
                        ),
                    ));
                }
            }
            Some(Thinking::Adaptive) if support == ThinkingSupport::BudgetOnly => {
                return Err((
                    key,
                    format!(
                        "`{model}` does not take adaptive thinking (Anthropic answers it with HTTP 400; Opus and Sonnet 4.6 and later do): write `thinking = {{ budget = N }}` instead (N at least {ANTHROPIC_MIN_THINKING_BUDGET}, less than `max_output_tokens`), or `thinking = \"off\"`"
                    ),
                ));
            }
            _ => {}
        }
        if let Some(effort) = self.effort
            && support == ThinkingSupport::BudgetOnly
        {
            return Err((
                "effort",
                format!(
                    "`{model}` takes no `effort = \"{effort}\"`: effort goes with adaptive thinking (Opus and Sonnet 4.6 and later); this model thinks within a budget: write `thinking = {{ budget = N }}` and leave `effort` out"
                ),
            ));
        }
        Ok(())
    }

    /// A thinking budget Anthropic accepts: at least the minimum, less than
    /// the output cap.
    fn check_budget(&self, budget: u32) -> Result<(), String> {
        if budget < ANTHROPIC_MIN_THINKING_BUDGET {
            return Err(format!(
                "{budget} is below Anthropic's minimum thinking budget of {ANTHROPIC_MIN_THINKING_BUDGET} tokens"
            ));
        }
        let cap = self
            .max_output_tokens
            .unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS);
        if budget >= cap {
            let whose = if self.max_output_tokens.is_some() {
                "the profile's `max_output_tokens`"
            } else {
                "the default `max_output_tokens`"
            };
            return Err(format!(
                "{budget} must be less than {whose} ({cap}): thinking is part of the output; raise `max_output_tokens` or lower the budget"
            ));
        }
        Ok(())
    }

    /// The thinking this profile asks for: `thinking`, else
    /// `thinking_budget` as a budget, else what the model's family takes
    /// ([`thinking::support`]: adaptive for Opus and Sonnet 4.6 and later,
    /// off for older models and ids that are not Claude's). Always
    /// [`Thinking::Off`] on other wires than Anthropic's.
    pub fn thinking(&self) -> Thinking {
        if self.provider != ProviderKind::Anthropic {
            return Thinking::Off;
        }
        self.thinking
            .or(self.thinking_budget.map(Thinking::Budget))
            .unwrap_or_else(|| thinking::support(&self.model).default_thinking())
    }

    /// The profile's prompt caching (unset: on, five minutes).
    pub fn cache(&self) -> CacheSetting {
        self.cache.unwrap_or(CacheSetting::FiveMinutes)
    }

    /// How long a stream may be silent.
    pub fn idle_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.stream_idle_timeout_secs.max(1))
    }

    /// Prices, when both input and output prices are configured. Cache
    /// prices left unset follow the wire: on Anthropic's, reads cost 0.1×
    /// the input price and writes 1.25× (2× with `cache = "1h"`), as
    /// Anthropic charges; on OpenAI's they stay unset, and
    /// [`Pricing::cost`] charges them at the input price (OpenAI's
    /// discount on cached input differs by model: set
    /// `cache_read_per_mtok`).
    pub fn pricing(&self) -> Option<Pricing> {
        let input = self.input_per_mtok?;
        let (read, write) = match self.provider {
            ProviderKind::Anthropic => {
                let write = match self.cache() {
                    CacheSetting::OneHour => ANTHROPIC_CACHE_WRITE_1H,
                    CacheSetting::FiveMinutes | CacheSetting::Off => ANTHROPIC_CACHE_WRITE_5M,
                };
                (
                    Some(
                        self.cache_read_per_mtok
                            .unwrap_or(input * ANTHROPIC_CACHE_READ),
                    ),
                    Some(self.cache_write_per_mtok.unwrap_or(input * write)),
                )
            }
            // OpenAI's wires: no write premium, a discount that differs by model.
            _ => (self.cache_read_per_mtok, self.cache_write_per_mtok),
        };
        Some(Pricing {
            input_per_mtok: input,
            output_per_mtok: self.output_per_mtok?,
            cache_read_per_mtok: read,
            cache_write_per_mtok: write,
        })
    }

    /// The key to send, if the profile has one: `api_key` (with `${VAR}`
    /// expanded) or else the variable named by `api_key_env`. `Ok(None)` when
    /// the profile needs no key (local servers: no `api_key_env`, or one
    /// that is [`key_optional`](Self::key_optional) and unset). A variable
    /// the profile needs and the environment lacks (or has empty) is the
    /// error: nothing is sent without it, and nothing is retried.
    pub fn api_key(&self, profile: &str) -> Result<Option<String>, ApiKeyError> {
        if let Some(Secret(raw)) = &self.api_key {
            return expand_secret(raw, &format!("`api_key` of model profile `{profile}`"))
                .map(Some);
        }
        let Some(var) = self.api_key_env.as_deref() else {
            return Ok(None);
        };
        match std::env::var(var).ok().filter(|k| !k.is_empty()) {
            Some(key) => Ok(Some(key)),
            None if self.key_optional => Ok(None),
            None => Err(ApiKeyError::MissingVariable {
                needed_by: format!("`api_key_env` of model profile `{profile}`"),
                var: var.to_string(),
            }),
        }
    }

    /// The environment variable this profile needs for its key when the
    /// environment does not have it (unset or empty): the profile cannot
    /// be used until agentbus starts with it set. `None` when the key is
    /// there or none is needed.
    pub fn missing_key(&self) -> Option<String> {
        let var = match &self.api_key {
            Some(secret) => secret.variable()?,
            None if self.key_optional => return None,
            None => self.api_key_env.as_deref()?,
        };
        let set = std::env::var(var).is_ok_and(|v| !v.is_empty());
        (!set).then(|| var.to_string())
    }

    /// Whether `base_url` is on this machine (`localhost`, a loopback
    /// address): a local server, which may simply not be running.
    pub fn is_local(&self) -> bool {
        let Some(rest) = self.base_url.split_once("://").map(|(_, rest)| rest) else {
            return false;
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        let authority = authority
            .rsplit_once('@')
            .map_or(authority, |(_, host)| host);
        let host = if let Some(bracketed) = authority.strip_prefix('[') {
            bracketed.split(']').next().unwrap_or_default()
        } else {
            authority.split(':').next().unwrap_or_default()
        };
        host.eq_ignore_ascii_case("localhost")
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified())
    }

    /// The environment variable a user should set to give this profile a key.
    pub fn key_variable(&self) -> Option<String> {
        if let Some(secret) = &self.api_key {
            return secret.variable().map(String::from);
        }
        self.api_key_env.clone()
    }

    /// Whether images go to this model: `images`, else whether the profile
    /// reaches a hosted API (OpenAI's or Anthropic's), which reads them.
    pub fn takes_images(&self) -> bool {
        self.images.unwrap_or_else(|| {
            let url = self.base_url.to_ascii_lowercase();
            url.starts_with("https://api.openai.com")
                || url.starts_with("https://api.anthropic.com")
        })
    }

    /// The session-facing description (no key).
    pub fn info(&self, name: &str) -> ModelInfo {
        ModelInfo {
            name: name.to_string(),
            provider: self.provider.to_string(),
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            context_window: self.context_window,
            max_output_tokens: match self.provider {
                ProviderKind::Anthropic => Some(
                    self.max_output_tokens
                        .unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS),
                ),
                ProviderKind::Openai | ProviderKind::OpenaiResponses => self.max_output_tokens,
            },
            context: self.context.clone(),
            pricing: self.pricing(),
            key_missing: self.missing_key(),
            images: self.takes_images(),
        }
    }
}

/// The `VAR` of a value written `${VAR}`.
fn variable_of(raw: &str) -> Option<&str> {
    raw.trim().strip_prefix("${")?.strip_suffix('}')
}

fn expand_secret(raw: &str, needed_by: &str) -> Result<String, ApiKeyError> {
    match variable_of(raw) {
        Some(var) => std::env::var(var).map_err(|_| ApiKeyError::MissingVariable {
            needed_by: needed_by.to_string(),
            var: var.to_string(),
        }),
        None => Ok(raw.to_string()),
    }
}

/// A secret string: shown as `[redacted]` by `Debug` and never serialised.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl Secret {
    /// The environment variable it names, when it is written `${VAR}`.
    pub fn variable(&self) -> Option<&str> {
        variable_of(&self.0)
    }

    /// The value, with a `${VAR}` form read from the environment;
    /// `needed_by` names the setting in the error, e.g. "`[server] token`".
    pub fn expose(&self, needed_by: &str) -> Result<String, ApiKeyError> {
        expand_secret(&self.0, needed_by)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl Settings {
    /// The environment variables that hold agentbus's own secrets: each
    /// profile's key variable and the server token's, when they come from
    /// the environment.
    pub fn secret_variables(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .models
            .values()
            .filter_map(ModelProfile::key_variable)
            .collect();
        if let Some(var) = self.server.token.as_ref().and_then(Secret::variable) {
            names.push(var.to_string());
        }
        names.extend(self.server.tokens.values().map(|t| t.token_env.clone()));
        names.sort();
        names.dedup();
        names
    }

    /// The session-facing list of profiles.
    pub fn model_infos(&self) -> Vec<ModelInfo> {
        self.models.iter().map(|(name, p)| p.info(name)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(api_key: Option<&str>, env: Option<&str>) -> ModelProfile {
        let mut p = ModelProfile::new(ProviderKind::Openai, "m", "http://x");
        p.api_key_env = env.map(String::from);
        p.api_key = api_key.map(|k| Secret(k.into()));
        p
    }

    #[test]
    fn keys_never_show_in_debug_or_json() {
        let p = profile(Some("sk-very-secret"), None);
        assert!(!format!("{p:?}").contains("sk-very-secret"));
        assert!(
            !serde_json::to_string(&p)
                .unwrap()
                .contains("sk-very-secret")
        );
    }

    #[test]
    fn an_mcp_servers_env_and_headers_never_show_in_debug_or_json() {
        let mut stdio = McpServerConfig::stdio("srv", &[]);
        stdio.env.insert("TOKEN".into(), "env-very-secret".into());
        let mut http = McpServerConfig::http("https://x/mcp");
        http.headers
            .insert("Authorization".into(), "Bearer header-very-secret".into());
        for config in [stdio, http] {
            let shown = format!("{config:?} {}", serde_json::to_string(&config).unwrap());
            assert!(!shown.contains("very-secret"), "{shown}");
        }
        let shown = format!(
            "{:?}",
            McpServerConfig {
                env: [("TOKEN".into(), "x".into())].into(),
                ..McpServerConfig::stdio("srv", &[])
            }
        );
        assert!(shown.contains("TOKEN"), "the names are shown: {shown}");
    }

    #[test]
    fn missing_variable_in_api_key_names_profile_and_variable() {
        let p = profile(Some("${AGENTBUS_TEST_SURELY_UNSET}"), None);
        let err = p.api_key("work").unwrap_err().to_string();
        assert!(
            err.contains("AGENTBUS_TEST_SURELY_UNSET") && err.contains("work"),
            "{err}"
        );
        assert_eq!(
            p.key_variable().as_deref(),
            Some("AGENTBUS_TEST_SURELY_UNSET")
        );
    }

    #[test]
    fn images_default_to_the_hosted_apis_only() {
        let hosted = ModelProfile::new(ProviderKind::Openai, "m", "https://api.openai.com/v1");
        let anthropic =
            ModelProfile::new(ProviderKind::Anthropic, "m", "https://api.anthropic.com");
        let mut local = ModelProfile::new(ProviderKind::Openai, "m", "http://127.0.0.1:8080/v1");
        assert!(hosted.takes_images() && anthropic.takes_images());
        assert!(!local.takes_images());
        local.images = Some(true);
        assert!(local.takes_images() && local.info("local").images);
    }

    #[test]
    fn a_thinking_budget_must_fit_anthropics_limits() {
        let mut p = ModelProfile::new(ProviderKind::Anthropic, "claude", "http://x");
        assert_eq!(p.check(), Ok(()), "no budget, nothing to check");
        p.thinking_budget = Some(4096);
        assert_eq!(p.check(), Ok(()), "under the default cap of 8192");
        for (budget, cap, says) in [
            (
                1023,
                None,
                "below Anthropic's minimum thinking budget of 1024",
            ),
            (
                8192,
                None,
                "less than the default `max_output_tokens` (8192)",
            ),
            (
                2000,
                Some(2000),
                "less than the profile's `max_output_tokens` (2000)",
            ),
        ] {
            p.thinking_budget = Some(budget);
            p.max_output_tokens = cap;
            let (key, why) = p.check().expect_err("refused");
            assert_eq!(key, "thinking_budget");
            assert!(why.contains(says), "{why}");
        }
        let mut openai = profile(None, None);
        openai.thinking_budget = Some(4096);
        let (key, why) = openai.check().expect_err("refused");
        assert_eq!(key, "thinking_budget");
        assert!(why.contains("`provider = \"anthropic\"` only"), "{why}");
    }

    fn anthropic(model: &str) -> ModelProfile {
        ModelProfile::new(ProviderKind::Anthropic, model, "https://api.anthropic.com")
    }

    #[test]
    fn thinking_defaults_to_what_the_model_family_takes() {
        assert_eq!(anthropic("claude-opus-4-7").thinking(), Thinking::Adaptive);
        assert_eq!(
            anthropic("claude-sonnet-4-6-20260101").thinking(),
            Thinking::Adaptive
        );
        assert_eq!(anthropic("claude-sonnet-4-5").thinking(), Thinking::Off);
        assert_eq!(anthropic("local").thinking(), Thinking::Off);
        let mut old = anthropic("claude-sonnet-4-5");
        old.thinking_budget = Some(4096);
        assert_eq!(old.thinking(), Thinking::Budget(4096), "the older spelling");
        let mut quiet = anthropic("claude-opus-4-7");
        quiet.thinking = Some(Thinking::Off);
        assert_eq!(quiet.thinking(), Thinking::Off);
        let mut openai = profile(None, None);
        openai.model = "claude-opus-4-7".into();
        assert_eq!(openai.thinking(), Thinking::Off, "another wire");
    }

    #[test]
    fn a_budget_on_an_adaptive_only_model_is_refused_naming_the_model_and_the_fix() {
        for (thinking, budget, key) in [
            (Some(Thinking::Budget(4096)), None, "thinking"),
            (None, Some(4096), "thinking_budget"),
        ] {
            let mut p = anthropic("claude-opus-4-7");
            p.thinking = thinking;
            p.thinking_budget = budget;
            let (refused, why) = p.check().expect_err("refused");
            assert_eq!(refused, key);
            assert!(
                why.contains("`claude-opus-4-7` takes adaptive thinking only")
                    && why.contains("write `thinking = \"adaptive\"`")
                    && why.contains("`effort = "),
                "{why}"
            );
        }
        // Opus 4.6 still takes a budget (deprecated), and adaptive thinking.
        let mut both = anthropic("claude-opus-4-6");
        both.thinking = Some(Thinking::Budget(4096));
        assert_eq!(both.check(), Ok(()));
        both.thinking = Some(Thinking::Adaptive);
        both.effort = Some(Effort::High);
        assert_eq!(both.check(), Ok(()));
    }

    #[test]
    fn adaptive_thinking_or_effort_on_a_budget_only_model_is_refused_naming_the_fix() {
        let mut p = anthropic("claude-sonnet-4-5-20250929");
        p.thinking = Some(Thinking::Adaptive);
        let (key, why) = p.check().expect_err("refused");
        assert_eq!(key, "thinking");
        assert!(
            why.contains("`claude-sonnet-4-5-20250929` does not take adaptive thinking")
                && why.contains("write `thinking = { budget = N }`"),
            "{why}"
        );
        p.thinking = Some(Thinking::Budget(2048));
        assert_eq!(p.check(), Ok(()));
        p.effort = Some(Effort::Low);
        let (key, why) = p.check().expect_err("refused");
        assert_eq!(key, "effort");
        assert!(
            why.contains("`claude-sonnet-4-5-20250929` takes no `effort = \"low\"`"),
            "{why}"
        );
        // A model nobody knows (a local server's) may be asked anything.
        let mut local = anthropic("local");
        local.thinking = Some(Thinking::Adaptive);
        local.effort = Some(Effort::Max);
        assert_eq!(local.check(), Ok(()));
    }

    #[test]
    fn both_spellings_of_a_budget_at_once_are_refused() {
        let mut p = anthropic("claude-sonnet-4-5");
        p.thinking = Some(Thinking::Budget(2048));
        p.thinking_budget = Some(2048);
        let (key, why) = p.check().expect_err("refused");
        assert_eq!(key, "thinking");
        assert!(why.contains("keep one"), "{why}");
    }

    #[test]
    fn thinking_on_an_openai_profile_is_refused_unless_off() {
        let mut p = profile(None, None);
        p.thinking = Some(Thinking::Adaptive);
        let (key, why) = p.check().expect_err("refused");
        assert_eq!(key, "thinking");
        assert!(why.contains("`provider = \"anthropic\"` only"), "{why}");
        p.thinking = Some(Thinking::Off);
        assert_eq!(p.check(), Ok(()));
        p.effort = Some(Effort::High);
        assert_eq!(p.check(), Ok(()), "effort is the Responses wire's to read");
    }

    #[test]
    fn unset_cache_prices_follow_the_wire() {
        let mut claude = anthropic("claude-sonnet-4-6");
        claude.input_per_mtok = Some(3.0);
        claude.output_per_mtok = Some(15.0);
        let pricing = claude.pricing().expect("priced");
        let near = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-9);
        assert!(near(pricing.cache_read_per_mtok, 0.30), "{pricing:?}");
        assert!(near(pricing.cache_write_per_mtok, 3.75), "{pricing:?}");
        claude.cache = Some(CacheSetting::OneHour);
        let pricing = claude.pricing().expect("priced");
        assert!(near(pricing.cache_write_per_mtok, 6.0), "{pricing:?}");
        claude.cache_read_per_mtok = Some(0.5);
        assert!(near(
            claude.pricing().expect("priced").cache_read_per_mtok,
            0.5
        ));
        let mut openai = profile(None, None);
        openai.input_per_mtok = Some(2.0);
        openai.output_per_mtok = Some(8.0);
        let pricing = openai.pricing().expect("priced");
        assert_eq!(
            (pricing.cache_read_per_mtok, pricing.cache_write_per_mtok),
            (None, None)
        );
    }

    #[test]
    fn an_unset_api_key_env_is_an_error_naming_the_variable_unless_optional() {
        let mut p = profile(None, Some("AGENTBUS_TEST_SURELY_UNSET"));
        let err = p.api_key("cloud").unwrap_err().to_string();
        assert!(
            err.contains("AGENTBUS_TEST_SURELY_UNSET") && err.contains("`cloud`"),
            "{err}"
        );
        assert_eq!(
            p.missing_key().as_deref(),
            Some("AGENTBUS_TEST_SURELY_UNSET")
        );
        assert_eq!(p.info("cloud").key_missing, p.missing_key());
        p.key_optional = true;
        assert_eq!(p.api_key("local"), Ok(None));
        assert_eq!(p.missing_key(), None);
        let keyless = profile(None, None);
        assert_eq!(keyless.api_key("local"), Ok(None));
        assert_eq!(keyless.missing_key(), None);
        let set = profile(None, Some("PATH"));
        assert_eq!(set.missing_key(), None);
    }

    #[test]
    fn a_base_url_must_be_an_http_url_with_a_host() {
        let refused = |url: &str| {
            ModelProfile::new(ProviderKind::Openai, "m", url)
                .check()
                .expect_err(url)
        };
        for (url, says) in [
            ("http://127.0.0.1:PORT/v1", "invalid port number"),
            ("http://127.0.0.1:99999/v1", "invalid port number"),
            ("127.0.0.1:8080/v1", "not a valid URL"),
            ("localhost:8080/v1", "its scheme is `localhost`"),
            ("ftp://example.com/v1", "its scheme is `ftp`"),
            ("http://127.0.0.1:8080/ v1", "has a space in it"),
            (" http://127.0.0.1:8080/v1", "has a space in it"),
            ("http://", "empty host"),
            ("", "not a valid URL"),
        ] {
            let (key, why) = refused(url);
            assert_eq!(key, "base_url", "{url}");
            assert!(why.contains(says), "{url}: {why}");
            assert!(
                why.contains("expected an http:// or https:// URL"),
                "{url}: {why}"
            );
        }
        for url in [
            "http://127.0.0.1:8080/v1",
            "https://api.anthropic.com",
            "http://[::1]:11434/v1",
            "http://localhost/v1/",
        ] {
            assert_eq!(
                ModelProfile::new(ProviderKind::Openai, "m", url).check(),
                Ok(()),
                "{url}"
            );
        }
    }

    #[test]
    fn local_means_this_machine() {
        let at = |url: &str| ModelProfile::new(ProviderKind::Openai, "m", url).is_local();
        assert!(at("http://127.0.0.1:8080/v1"));
        assert!(at("http://localhost:11434/v1"));
        assert!(at("http://LOCALHOST/v1"));
        assert!(at("http://[::1]:8080/v1"));
        assert!(at("http://0.0.0.0:8080"));
        assert!(at("http://user@127.0.0.2:1"));
        assert!(!at("https://api.openai.com/v1"));
        assert!(!at("http://10.0.0.5:8080/v1"));
        assert!(!at("http://localhost.example.com/v1"));
        assert!(!at("not a url"));
    }
}
