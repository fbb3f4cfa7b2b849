//! The API's request and answer bodies, in one place for the server (which
//! documents them in the OpenAPI document) and its Rust client
//! ([`crate::remote`]). Plain data. Events themselves are the protocol's
//! envelopes.

use crate::config::ConfigError;
use agentbus_engine::protocol::ControlCommand;
use agentbus_engine::runtime::{ListCursor, SessionRecord};
use agentbus_engine::settings::McpServerConfig;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// `POST /v1/sessions`.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// Model profile (default: the configured one).
    pub model: Option<String>,
    /// A title (default: the first query).
    pub title: Option<String>,
    /// The directory tools work in (default: the server's workspace).
    pub workspace: Option<String>,
    /// This session's own `[context]` keys (`max_tokens`, `strategy`, ...),
    /// over the profile's and the server's.
    #[schema(value_type = Option<crate::api_schemas::ContextOptions>)]
    pub context: Option<serde_json::Value>,
    /// The permission mode: `default`, `accept-edits`, `plan` or `bypass`
    /// (default: the server's `permission_mode`).
    #[schema(value_type = Option<crate::api_schemas::PermissionModeName>)]
    pub permission_mode: Option<agentbus_engine::protocol::PermissionMode>,
    /// The named agent it runs as: `build` (default), `plan`, or one of
    /// the configuration's or the workspace's agent files.
    pub agent: Option<String>,
    /// MCP servers of its own (an editor's), offered to this session alone.
    #[schema(value_type = Option<crate::api_schemas::McpServerMap>)]
    pub mcp_servers: Option<McpServers>,
}

/// `POST /v1/sessions/{id}/open`.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenSession {
    /// The MCP servers the session has of its own from now on, replacing
    /// those it had (absent: it keeps them; a session not loaded has none).
    #[schema(value_type = Option<crate::api_schemas::McpServerMap>)]
    pub mcp_servers: Option<McpServers>,
}

/// MCP servers given with a session: `{NAME: settings}`, each settings
/// object shaped like a `[mcp_servers.NAME]` table of the configuration.
/// They travel as they are — `env` and `headers`, which may hold secrets,
/// included — and are never stored or logged (`Debug` shows the names
/// only).
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct McpServers(pub serde_json::Map<String, serde_json::Value>);

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

impl McpServers {
    /// Most servers one request may give a session (each is a process).
    pub const MAX: usize = crate::api_schemas::MAX_MCP_SERVERS;

    /// The servers as a request carries them, secrets included.
    pub fn new(servers: &BTreeMap<String, McpServerConfig>) -> Self {
        let mut map = serde_json::Map::new();
        for (name, config) in servers {
            // `env` and `headers` are never serialised with the rest.
            let Ok(serde_json::Value::Object(mut fields)) = serde_json::to_value(config) else {
                tracing::warn!(server = %name, "an MCP server's settings could not be written as JSON; it is not sent");
                continue;
            };
            fields.insert("env".into(), serde_json::json!(config.env));
            fields.insert("headers".into(), serde_json::json!(config.headers));
            map.insert(name.clone(), serde_json::Value::Object(fields));
        }
        McpServers(map)
    }

    /// Each server's settings, checked like a `[mcp_servers.NAME]` table:
    /// the first that does not fit is refused, naming the server and the
    /// field.
    pub fn settings(self) -> Result<BTreeMap<String, McpServerConfig>, ConfigError> {
        self.0
            .into_iter()
            .map(|(name, value)| {
                let config = crate::config::given_mcp_server(&name, value, "the request body")?;
                Ok((name, config))
            })
            .collect()
    }
}

/// A new session's id.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Created {
    pub id: String,
}

/// A stored session.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Session {
    pub id: String,
    pub title: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub model: String,
    pub workspace: String,
    /// `[parent id, seq]` for a fork, and for a sub-agent's session (the
    /// parent's seq when it made the `task` call).
    #[schema(value_type = Option<crate::api_schemas::SessionParent>)]
    pub parent: Option<(String, u64)>,
    /// For a sub-agent's session: the parent's `task` call it runs for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_call: Option<String>,
    pub event_count: u64,
    /// How many queries it holds (its `user` events).
    pub turns: u64,
    /// The last stored seq.
    pub last_seq: u64,
    /// Loaded in this server's memory.
    pub loaded: bool,
    /// A turn or command is running or queued (on a node of a cluster, for
    /// a session another node drives: as that node last said).
    pub busy: bool,
    /// How many of its tool calls wait for the user's approval (`POST
    /// .../approvals/{request_id}`): 0 for a session not loaded on this
    /// server. The lifecycle stream says when it changes (`approvals`).
    #[serde(default)]
    pub pending_approvals: u32,
    /// The name of the API token that created it (`[server.tokens.NAME]`,
    /// or `admin`); absent for a session made without one (the command
    /// line, an editor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by: Option<String>,
    /// The tokens given it to follow (`PATCH` with `viewers`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub viewers: Vec<String>,
}

impl Session {
    pub fn new(record: SessionRecord, loaded: bool, busy: bool, pending_approvals: u32) -> Self {
        Session {
            id: record.id.0,
            title: record.title,
            created_at: record.created_at,
            updated_at: record.updated_at,
            model: record.model,
            workspace: record.workspace,
            parent: record.parent.map(|(id, seq)| (id.0, seq)),
            parent_call: record.parent_call,
            event_count: record.event_count,
            turns: record.turns,
            last_seq: record.last_seq,
            loaded,
            busy,
            pending_approvals,
            created_by: record.created_by,
            viewers: record.viewers,
        }
    }
}

/// `GET /v1/sessions`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Sessions {
    pub sessions: Vec<Session>,
    /// When `limit` was given and the page is full: pass it as `after` for
    /// the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// `POST /v1/sessions/{id}/fork`.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Fork {
    /// Copy events up to this seq (default: all stored).
    pub at_seq: Option<u64>,
}

/// `PATCH /v1/sessions/{id}`: what to change about a session.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionChange {
    /// Its new title: one line (no control characters), not blank, at
    /// most [`SessionChange::MAX_TITLE`] characters.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub title: Option<String>,
    /// The names of the tokens (`[server.tokens.NAME]`) that may follow the
    /// session, replacing those given before (`[]`: none). Only its creator
    /// or an admin may give it.
    #[schema(max_items = 64, inline)]
    pub viewers: Option<Vec<TokenName>>,
}

impl SessionChange {
    /// The longest title taken, in characters.
    pub const MAX_TITLE: usize = 200;
    /// The most viewers a session is given.
    pub const MAX_VIEWERS: usize = 64;
}

/// A token's name: `NAME` of `[server.tokens.NAME]`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[schema(min_length = 1, max_length = 64, pattern = "^[A-Za-z0-9_.-]+$")]
pub struct TokenName(pub String);

/// `GET /v1/sessions/{id}/history`: which turns.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// The turns whose events come before this seq (default: the newest
    /// turns).
    #[param(value_type = Option<i64>, minimum = 1, nullable = false)]
    pub before: Option<u64>,
    /// How many turns (their `user` events, and everything after each up
    /// to the next); default 30.
    #[param(value_type = Option<i64>, minimum = 1, maximum = 1000, nullable = false)]
    pub turns: Option<u32>,
}

impl HistoryQuery {
    /// The most turns one page holds.
    pub const MAX_TURNS: u32 = 1000;
    /// The turns a page holds when `turns` is not given.
    pub const DEFAULT_TURNS: u32 = 30;
}

/// `GET /v1/sessions/{id}/history`: the stored events of some turns.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct History {
    /// The stored events of the turns asked for, in seq order (the first
    /// page also holds what came before the first query, when it reaches
    /// the start).
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<agentbus_engine::protocol::EventEnvelope>,
    /// Pass as `before` for the turns before these; `null`: these reach
    /// the start of the log.
    pub next_before: Option<u64>,
    /// The last stored seq when this was read: follow the events stream
    /// from it (`?after=`).
    pub last_seq: u64,
    /// Only without `before`: what the events before this page say that
    /// the page's state comes from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier: Option<Earlier>,
}

/// What the events before a history page say about the session's state.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct Earlier {
    /// The `system` events before the page that change the session's
    /// state (`session_started`, `mode`, `agent`, `model_switched`,
    /// `plan`, `cleared`, `usage`, `context`), in seq order.
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<agentbus_engine::protocol::EventEnvelope>,
    /// The turns' `result`s before the page, summed: one entry for each
    /// run of results with none of `events` between them, in seq order.
    pub results: Vec<ResultsSummed>,
}

/// A run of `result` events, summed.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
pub struct ResultsSummed {
    /// The seq of the first `result` of the run.
    pub from_seq: u64,
    /// The seq of the last `result` of the run.
    pub to_seq: u64,
    /// How many `result`s.
    pub turns: u64,
    /// Their `usage`, summed.
    #[schema(value_type = Object)]
    pub usage: agentbus_engine::protocol::Usage,
    /// The last `context` one of them gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub context: Option<agentbus_engine::protocol::ContextUsage>,
}

/// `GET /v1/sessions/{id}/rewind`: the turns a rewind can go back to.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Rewinds {
    /// The session's user turns, oldest first, each with what it changed
    /// in the workspace.
    #[schema(value_type = Vec<crate::api_schemas::TurnChanges>)]
    pub turns: Vec<agentbus_engine::protocol::checkpoint::TurnChanges>,
}

/// What a rewind takes back (`RewindMode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewindMode {
    /// The files return to their state before the turn, and the
    /// conversation continues in a fork made before it.
    #[default]
    Both,
    /// A fork before the turn (as `/fork`); the files stay as they are.
    Conversation,
    /// The files alone; the conversation stays in this session.
    Code,
}

impl From<RewindMode> for agentbus_engine::protocol::checkpoint::RewindMode {
    fn from(mode: RewindMode) -> Self {
        use agentbus_engine::protocol::checkpoint::RewindMode as Mode;
        match mode {
            RewindMode::Both => Mode::Both,
            RewindMode::Conversation => Mode::Conversation,
            RewindMode::Code => Mode::Code,
        }
    }
}

/// `POST /v1/sessions/{id}/rewind`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Rewind {
    /// The turn to go back to before: the seq of its `user` event (`GET
    /// .../rewind` lists them).
    pub seq: u64,
    /// What to take back (default: `both`).
    #[serde(default)]
    pub mode: RewindMode,
    /// Also overwrite files changed since by someone else (default: they
    /// are left alone, as conflicts).
    #[serde(default)]
    pub overwrite: bool,
    /// Only say what would happen: nothing is changed, no fork is made.
    #[serde(default)]
    pub preview: bool,
}

/// `POST /v1/sessions/{id}/undo`.
#[derive(Debug, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Undo {
    /// Also overwrite files changed since by someone else (default: they
    /// are left alone, as conflicts).
    #[serde(default)]
    pub overwrite: bool,
    /// Only say what would happen: nothing is changed.
    #[serde(default)]
    pub preview: bool,
}

/// `POST /v1/sessions/{id}/input`: text (slash commands allowed) or a
/// control command such as `{"command": "clear"}`.
#[derive(Debug, Deserialize)]
#[serde(try_from = "serde_json::Value")]
pub enum Input {
    /// A query and the images attached to it (`images`: `[{"media_type":
    /// "image/png", "data": BASE64}]`, each checked as the providers would).
    Text(String, Vec<agentbus_engine::protocol::Image>),
    Command(ControlCommand),
}

impl Input {
    /// As the session takes it, sent by the token named `by`.
    pub fn into_session_input(self, by: Option<String>) -> agentbus_engine::protocol::SessionInput {
        use agentbus_engine::protocol::SessionInput;
        match self {
            Input::Text(text, images) => SessionInput::Query { text, images, by },
            Input::Command(command) => SessionInput::Control { command, by },
        }
    }
}

/// An input's `images`: `[{"media_type": "image/png", "data": BASE64}]`,
/// each a PNG, JPEG, GIF or WebP image of at most 5 MB whose bytes match
/// its media type.
fn images_of(value: &serde_json::Value) -> Result<Vec<agentbus_engine::protocol::Image>, String> {
    const EXPECTED: &str = r#"expected `images` as [{"media_type": "image/png", "data": "<base64>", "source": "shot.png"}] (`source` optional)"#;
    let Some(items) = value.as_array() else {
        return Err(format!("`images` is not an array; {EXPECTED}"));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let name = format!("images[{i}]");
            let data = item
                .get("data")
                .and_then(|d| d.as_str())
                .ok_or_else(|| format!("{name} has no string `data`; {EXPECTED}"))?;
            let media_type = item.get("media_type").and_then(|m| m.as_str());
            if item.as_object().is_some_and(|o| {
                o.keys()
                    .any(|k| !["data", "media_type", "source"].contains(&k.as_str()))
            }) {
                return Err(format!("{name} has an unknown field; {EXPECTED}"));
            }
            let source = match item.get("source") {
                None => None,
                Some(source) => Some(source.as_str().ok_or_else(|| not_a_name(&name))?),
            };
            checked_image(&name, media_type, data, source)
        })
        .collect()
}

/// One image of an input (`images[N]`, named `name`), checked as the
/// providers check it, with its optional `source` (the file name it is
/// shown and stored under): what HTTP and the WebSocket both accept.
pub fn checked_image(
    name: &str,
    media_type: Option<&str>,
    data: &str,
    source: Option<&str>,
) -> Result<agentbus_engine::protocol::Image, String> {
    let source = source.unwrap_or_default();
    if source.chars().count() > 255 || source.chars().any(char::is_control) {
        return Err(not_a_name(name));
    }
    agentbus_engine::images::from_base64(name, media_type, data)
        .map(|image| agentbus_engine::protocol::Image {
            source: source.to_string(),
            ..image
        })
        .map_err(|e| e.to_string())
}

fn not_a_name(name: &str) -> String {
    format!(
        "{name}.source is not a file name (a string of at most 255 characters, no control characters)"
    )
}

impl TryFrom<serde_json::Value> for Input {
    type Error = String;

    fn try_from(value: serde_json::Value) -> Result<Self, Self::Error> {
        const EXPECTED: &str =
            r#"expected {"text": "..."} or a control command such as {"command": "clear"}"#;
        let Some(object) = value.as_object() else {
            return Err(format!("the input is not a JSON object; {EXPECTED}"));
        };
        if let Some(text) = object.get("text") {
            if object.keys().any(|k| k != "text" && k != "images") {
                return Err(format!("`text` comes alone (or with `images`); {EXPECTED}"));
            }
            let images = match object.get("images") {
                None => Vec::new(),
                Some(images) => images_of(images)?,
            };
            return match text.as_str() {
                Some(text) => Ok(Input::Text(text.to_string(), images)),
                None => Err(format!("`text` must be a string; {EXPECTED}")),
            };
        }
        if object.contains_key("command") {
            let command: ControlCommand = serde_json::from_value(value.clone())
                .map_err(|e| format!("not a control command: {e}"))?;
            // Serde would ignore a misspelt field (`{"command": "fork",
            // "at": 3}` forking at the end): refuse it, naming the fields.
            let fields = crate::api_schemas::command_fields(&command);
            if let Some(unknown) = object.keys().find(|k| !fields.contains(k)) {
                let name = object
                    .get("command")
                    .and_then(|c| c.as_str())
                    .unwrap_or_default();
                let takes: Vec<String> = fields
                    .iter()
                    .filter(|f| *f != "command")
                    .map(|f| format!("`{f}`"))
                    .collect();
                let takes = if takes.is_empty() {
                    "no fields".to_string()
                } else {
                    takes.join(", ")
                };
                return Err(format!(
                    "the `{name}` command has no field `{unknown}`; it takes {takes}"
                ));
            }
            return Ok(Input::Command(command));
        }
        Err(format!("neither `text` nor `command` given; {EXPECTED}"))
    }
}

impl utoipa::PartialSchema for Input {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        crate::api_schemas::input()
    }
}

impl ToSchema for Input {}

/// An input was queued.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Accepted {
    pub input_id: u64,
}

/// `POST /v1/sessions/{id}/approvals/{request_id}`: the answer to an
/// `approval_request` (the first answer wins).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// Run the call once, run it and add the request's `suggested_rule`
    /// to the session's allow rules, or do not run it.
    pub decision: Choice,
    /// For `reject`: what the model reads (why not, what to do instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For `allow_always`: also save the rule to the workspace's
    /// `.agentbus.toml`.
    #[serde(default)]
    pub save: bool,
}

/// The choices of an `approval_request` (its `options` lists those offered).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    AllowOnce,
    AllowAlways,
    Reject,
}

impl Decision {
    /// What the body expects, for error messages.
    pub const EXPECTED: &str = r#"expected {"decision": "allow_once" | "allow_always" | "reject", "message"?: "...", "save"?: true}"#;
}

impl From<Decision> for agentbus_engine::protocol::ApprovalDecision {
    fn from(body: Decision) -> Self {
        use agentbus_engine::protocol::ApprovalChoice;
        agentbus_engine::protocol::ApprovalDecision {
            decision: match body.decision {
                Choice::AllowOnce => ApprovalChoice::AllowOnce,
                Choice::AllowAlways => ApprovalChoice::AllowAlways,
                Choice::Reject => ApprovalChoice::Reject,
            },
            message: body.message,
            save: body.save,
            by: None,
        }
    }
}

/// A decision was applied: the `approval_resolved` event follows on the
/// session's stream.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Settled {
    /// Always true.
    pub settled: bool,
    /// The request settled.
    pub request_id: String,
}

/// `GET /v1/sessions/{id}/messages`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Messages {
    /// The conversation as the model sees it.
    #[schema(value_type = Vec<Object>)]
    pub history: Vec<agentbus_engine::protocol::Message>,
    /// The stored events, as the user saw them.
    #[schema(value_type = Vec<Object>)]
    pub events: Vec<agentbus_engine::protocol::EventEnvelope>,
}

/// `GET /v1/health`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Health {
    pub status: String,
    pub version: String,
    pub sessions_loaded: usize,
    /// With `[cluster]`: this node and the cluster's nodes (absent for a
    /// server of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterHealth>,
}

/// `GET /v1/health` of a node of a cluster.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ClusterHealth {
    /// This node's id (a new one after it fenced itself and rejoined).
    pub node_id: String,
    /// This node's name (`[cluster] name`, default the host name).
    pub name: String,
    /// Every node the database knows, oldest first: live ones, and for a
    /// while those whose lease expired.
    pub nodes: Vec<ClusterNode>,
    /// This node's live plane (absent without `nats_url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveHealth>,
    /// Why `nodes` could not be read (the database did not answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A node's live plane: what it follows, and what it did since it started.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LiveHealth {
    /// Sessions other nodes drive that this node follows for its clients:
    /// one subscription each, however many clients follow it here.
    pub followed: usize,
    /// The events of the sessions this node drives, sent to other nodes.
    pub relays: RelayCounts,
    /// The sessions this node followed for its clients.
    pub followers: FollowerCounts,
    /// Lifecycle events across the cluster (`GET /v1/events`).
    pub lifecycle: LifecycleCounts,
}

/// What the relays of a node did.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct RelayCounts {
    /// Events published to other nodes.
    pub published: u64,
    /// Events not published (NATS unreachable): followers read the stored
    /// ones from the database instead.
    pub dropped: u64,
    /// Times a relay fell behind its session and caught up.
    pub lagged: u64,
    /// Dropped events sent again once NATS was back.
    pub resent: u64,
}

/// What the followers of a node did.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct FollowerCounts {
    /// Events handed to this node's clients (from the database or live).
    pub delivered: u64,
    /// Live events dropped as repeats.
    pub duplicates: u64,
    /// Live events dropped as a former owner's.
    pub stale: u64,
    /// Database reads over a gap or at a new owner.
    pub refills: u64,
    /// Database reads after NATS came back, or a busy owner went quiet.
    pub rechecks: u64,
    /// Database reads that failed (and were tried again).
    pub store_errors: u64,
}

/// What a node's lifecycle bridge did.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct LifecycleCounts {
    /// This node's lifecycle events published to the others.
    pub published: u64,
    /// This node's events that could not be published (NATS unreachable).
    pub unsent: u64,
    /// Other nodes' events merged into this node's `GET /v1/events`.
    pub merged: u64,
}

impl From<agentbus_engine::runtime::LiveStats> for LiveHealth {
    fn from(stats: agentbus_engine::runtime::LiveStats) -> Self {
        let (r, f, l) = (stats.relays, stats.followers, stats.lifecycle);
        LiveHealth {
            followed: stats.followed,
            relays: RelayCounts {
                published: r.published,
                dropped: r.dropped,
                lagged: r.lagged,
                resent: r.resent,
            },
            followers: FollowerCounts {
                delivered: f.delivered,
                duplicates: f.duplicates,
                stale: f.stale,
                refills: f.refills,
                rechecks: f.rechecks,
                store_errors: f.store_errors,
            },
            lifecycle: LifecycleCounts {
                published: l.published,
                unsent: l.unsent,
                merged: l.merged,
            },
        }
    }
}

/// One node of a cluster.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ClusterNode {
    pub node_id: String,
    pub name: String,
    pub started_at: DateTime<Utc>,
    /// When its lease expires (the database's clock); it counts as gone
    /// from then on.
    pub expires_at: DateTime<Utc>,
    /// Its lease had not expired when the list was read.
    pub alive: bool,
    /// How many sessions it drives.
    pub sessions: u64,
}

/// One model profile.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Model {
    pub name: String,
    pub provider: String,
    pub model: String,
    pub base_url: String,
    /// Its prices, when configured (the web page's cost figure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Prices>,
}

/// A model profile's prices, in US dollars per million tokens.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, ToSchema)]
pub struct Prices {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// Cached input read (missing: the input price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_per_mtok: Option<f64>,
    /// Cache writes (missing: the input price).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_per_mtok: Option<f64>,
}

/// `GET /v1/models`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Models {
    pub default: String,
    pub models: Vec<Model>,
}

/// One named agent a session can run as.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Agent {
    pub name: String,
    /// When to use it.
    pub description: String,
    /// `built-in`, a configuration file, or the path of its Markdown file.
    pub source: String,
}

/// `GET /v1/agents`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Agents {
    pub agents: Vec<Agent>,
    /// Agent files that could not be used, each naming the file and the
    /// field.
    pub problems: Vec<String>,
}

/// Where `GET /v1/agents` looks for agent files.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct AgentsQuery {
    /// The workspace whose `.agentbus/agents/` and `.claude/agents/` count
    /// (an absolute path on the server; default: the server's workspace).
    pub workspace: Option<String>,
}

/// `GET /v1/tools`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Tools {
    #[schema(value_type = Vec<Object>)]
    pub tools: Vec<serde_json::Value>,
    #[schema(value_type = Object)]
    pub mcp_servers: serde_json::Value,
}

/// `GET /v1/sessions?limit=N&after=CURSOR`.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// At most this many sessions, the most recently updated first
    /// (default: all).
    #[param(value_type = Option<i64>, minimum = 0, maximum = 4294967295_u64, nullable = false)]
    pub limit: Option<u32>,
    /// The next page: the `next` value of the previous page's answer.
    #[param(pattern = "^-?[0-9]{1,18}\\.[0-9A-Za-z_-]+$", nullable = false)]
    pub after: Option<String>,
}

impl ListQuery {
    /// `after` as a cursor: `MICROS.ID` exactly as the document's pattern
    /// says (at most 18 digits, an id of letters, digits, `-` and `_`).
    pub fn cursor(&self) -> Result<Option<ListCursor>, String> {
        let Some(text) = self.after.as_deref() else {
            return Ok(None);
        };
        let expected = "expected the `next` value of a previous page (MICROS.ID)";
        let shaped = text.split_once('.').is_some_and(|(micros, id)| {
            let digits = micros.strip_prefix('-').unwrap_or(micros);
            (1..=18).contains(&digits.len())
                && digits.bytes().all(|b| b.is_ascii_digit())
                && !id.is_empty()
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
        if !shaped {
            return Err(format!("`{text}` is not a list cursor; {expected}"));
        }
        text.parse().map(Some)
    }
}

/// Where the server reads `after` from.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct After {
    /// Events after this seq (default: all; `Last-Event-ID` wins).
    #[param(value_type = Option<i64>, minimum = 0, nullable = false)]
    pub after: Option<u64>,
}

/// The largest seq there can be: the store keeps seqs as SQLite integers
/// (the document's `int64`).
pub const MAX_SEQ: u64 = i64::MAX as u64;

impl After {
    /// The seq to resume after (0: from the start).
    pub fn seq(&self) -> Result<u64, String> {
        checked_seq(self.after.unwrap_or(0), "`after`")
    }
}

/// `seq` if a seq can be that large; otherwise the error, naming `what`.
pub fn checked_seq(seq: u64, what: &str) -> Result<u64, String> {
    if seq > MAX_SEQ {
        Err(format!("{what} is {seq}; a seq is at most {MAX_SEQ}"))
    } else {
        Ok(seq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_may_carry_images_checked_as_the_providers_check_them() {
        let png = "iVBORw0KGgoAAAANSUhEUg==";
        let input = Input::try_from(serde_json::json!({
            "text": "what is this?",
            "images": [{"media_type": "image/png", "data": png}],
        }))
        .unwrap();
        let Input::Text(text, images) = input else {
            panic!("a query");
        };
        assert_eq!(text, "what is this?");
        assert_eq!(images[0].media_type, "image/png");
        assert_eq!(images[0].data, png);
        assert_eq!(images[0].source, "", "no name given");
        let Ok(Input::Text(_, named)) = Input::try_from(serde_json::json!({
            "text": "x",
            "images": [{"data": png, "source": "shot.png"}],
        })) else {
            panic!("a query");
        };
        assert_eq!(named[0].source, "shot.png");
        let refused = |images: serde_json::Value| {
            Input::try_from(serde_json::json!({"text": "x", "images": images})).unwrap_err()
        };
        assert!(
            refused(serde_json::json!([{"media_type": "image/jpeg", "data": png}]))
                .contains("does not match")
        );
        assert!(
            refused(serde_json::json!([{"data": png, "source": "a\nb"}]))
                .contains("images[0].source is not a file name")
        );
        assert!(
            refused(serde_json::json!([{"data": png, "source": "x".repeat(256)}]))
                .contains("at most 255 characters")
        );
        assert!(
            refused(serde_json::json!([{"data": "bm90IGFuIGltYWdl"}]))
                .contains("is not a PNG, JPEG, GIF or WebP")
        );
        assert!(refused(serde_json::json!([{"data": "%%"}])).contains("not valid base64"));
        assert!(refused(serde_json::json!({})).contains("not an array"));
        assert!(refused(serde_json::json!([{"data": png, "url": "x"}])).contains("unknown field"));
    }

    #[test]
    fn mcp_servers_travel_whole_and_are_read_back_as_they_were() {
        let mut stdio = McpServerConfig::stdio("mcp-fs", &["--root", "."]);
        stdio.env.insert("TOKEN".into(), "env-secret".into());
        stdio.cwd = Some("/ws".into());
        let mut http = McpServerConfig::http("https://mcp.example/mcp");
        http.headers
            .insert("Authorization".into(), "Bearer header-secret".into());
        let servers = BTreeMap::from([("fs".to_string(), stdio), ("gh".to_string(), http)]);
        let body = McpServers::new(&servers);
        let sent = serde_json::to_string(&body).unwrap();
        assert!(sent.contains("env-secret") && sent.contains("header-secret"));
        let shown = format!("{body:?}");
        assert!(!shown.contains("secret") && shown.contains("fs"), "{shown}");
        let received: McpServers = serde_json::from_str(&sent).unwrap();
        assert_eq!(received.settings().unwrap(), servers);
    }
}
