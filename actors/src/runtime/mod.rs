//! The runtime: the actors of one agentbus process, wired together, and the
//! facade front ends (and library users) use.
//!
//! `Runtime::start(settings)` opens the session store (SQLite, on a thread
//! of its own, or Postgres; with `[cluster]` as a node of a cluster, whose
//! lease task and sweeper start with the SessionManager), spawns the ToolExecutor, one McpServer per enabled MCP
//! server (they start in parallel; only a session's first model call waits
//! for their handshake, see `session::core::mcp_wait`) and the
//! SessionManager, and connects them to the model providers. MCP servers
//! given with a session (an editor's) start when a session is created or
//! opened with them, are offered to the sessions given them alone, and stop
//! when no session has them (`mcp::given`). Front ends create, open or
//! find sessions here and talk to them through their one door,
//! [`SessionDoor`] (a [`SessionHandle`] for a session driven here;
//! [`Runtime::reach_session`] gives either kind); stored sessions are
//! [`StoredSessions`]. How the process stops — sessions first, then MCP
//! servers, tools and the store — is `shutdown.rs`, written once.
//!
//! Everything a front end may use is re-exported here; the rest of the
//! crate is private to it.

mod shutdown;

pub use crate::bus::feed::{
    ChannelFrontEnd, DropWhenFull, FrontEnd, UiSink, attach_channel, attach_until_full,
};
pub use crate::bus::mirror::Mirror;
pub use crate::bus::reader::{Gaps, Missed, TopicReader};
pub use crate::bus::source::EventSource;
pub use crate::bus::{LifecycleTopic, RecvError, SubscribeError, Subscription};
pub use crate::cluster::{FollowStats, LifecycleStats, LiveStats, RelayStats};
pub use crate::model::{ModelEvent, ModelRequest, ToolOrigin, ToolSpec};
pub use crate::provider::http::describe as describe_http_error;
pub use crate::store::StoreError;

/// Hooks outside a session: `[hooks]` read by the configuration, and a
/// workspace's hook files shown and trusted (`agentbus hooks`).
pub mod hooks {
    pub use crate::hooks::files::{parse, read_project};
    pub use crate::hooks::trust::{TrustError, file as trust_file, is_trusted, trust};
}
pub use crate::provider::{ModelClient, ModelStream, ProviderError, install_crypto_provider};
/// How `/rewind` and `/undo` word what they list and do, for front ends
/// and the command line that show the same without the session (a
/// picker's rows, `agentbus sessions rewind`).
pub mod rewind {
    pub use crate::session::core::commands::rewind::{describe, file_line};
}
pub use crate::session::core::SessionState;
pub use crate::session::core::commands::{COMMANDS, SlashCommand, parse as parse_command};
pub use crate::session::{Failure, SessionDoor, SessionError, SessionHandle};
pub use crate::sessions::SessionOptions;
pub use crate::sessions::checkpoints::RewindOptions;
pub use crate::sessions::stored::StoredSessions;
pub use crate::store::checkpoint::{CheckpointUsage, Collected};
pub use crate::store::cluster::{NodeId, NodeInfo};
pub use crate::store::{ListCursor, ListPage, Owner, SessionDocument, SessionRecord};
pub use crate::tools::registry::{ToolCatalog, ToolView};
/// Whether `bash` commands can be sandboxed here (Landlock), found once.
pub use crate::tools::sandbox::{SandboxSupport, probe as sandbox_support};
/// A front end that holds the files (an editor) gives a session this.
pub use crate::tools::{FileAccess, FileAccessError, Files};

use crate::mcp::given::GivenServers;
use crate::mcp::server::{McpServer, McpServerArgs};
use crate::protocol::{
    AgentInfo, EventEnvelope, InputId, McpServerStatus, Message, SessionId, SessionInput,
};
use crate::provider::Providers;
use crate::sessions::loader::SessionLoader;
use crate::sessions::manager::{
    CloseSession, CreateSession, DeleteSession, LoadedSession, LoadedSessions, OpenSession,
    SessionManager, SessionManagerArgs, StopAll, SweepIdle,
};
use crate::settings::{McpServerConfig, Settings};
use crate::tools::builtin::builtin_tools;
use crate::tools::executor::{ListTools, ToolExecutor};
use crate::tools::registry::{ServerId, ToolRegistry};
use kameo::actor::{ActorRef, Spawn};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::watch;

/// Why the runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The live plane (`[cluster] nats_url`) could not be reached.
    #[error(transparent)]
    Live(#[from] crate::cluster::LiveError),
}

/// The running actors.
pub struct Runtime {
    manager: ActorRef<SessionManager>,
    tools: ActorRef<ToolExecutor>,
    /// The configured MCP servers.
    mcp_servers: Vec<ActorRef<McpServer>>,
    /// The MCP servers given to sessions.
    given: Arc<GivenServers>,
    /// The settings, the stored sessions and the tool catalog; also reads
    /// stored conversations without loading them.
    loader: SessionLoader,
    /// This process as a node of a cluster (`[cluster]`), if it is one.
    node: Option<crate::cluster::Node>,
    /// The node's live plane (`[cluster] nats_url`), if it has one.
    live: Option<Arc<crate::cluster::NodePlane>>,
}

impl Runtime {
    /// Start with the real providers.
    pub async fn start(settings: Settings) -> Result<Runtime, RuntimeError> {
        let mut providers = Providers::new(settings.models.clone())?;
        if let Some(hint) = &settings.unreachable_hint {
            providers = providers.with_connect_hint(&settings.model, hint.clone());
        }
        Self::with_model_client(settings, Arc::new(providers)).await
    }

    /// Start with any model client (a fake one in tests). Returns once each
    /// MCP server's process is spawned (not initialized) and the catalog
    /// lists every server, so a server whose program does not exist is
    /// already known, and a session's first turn knows what to wait for.
    pub async fn with_model_client(
        settings: Settings,
        model: Arc<dyn ModelClient>,
    ) -> Result<Runtime, RuntimeError> {
        let registered = std::time::Instant::now();
        let (stored, cluster) = match &settings.cluster {
            Some(cluster) => {
                let (stored, node) = StoredSessions::open_node(cluster).await?;
                (stored, Some(node))
            }
            None => (StoredSessions::open(&settings).await?, None),
        };
        let mut settings = settings;
        // Commands and MCP servers never see agentbus's own secrets.
        settings.tools.environment.secrets = settings.secret_variables();
        // The tools enforce the `[sandbox]` section.
        settings.tools.sandbox = settings.sandbox.clone();
        if settings.sandbox.enabled
            && let SandboxSupport::Unavailable { reason } = sandbox_support()
        {
            // Said once per process; each session's start says it too.
            tracing::warn!(
                "commands run WITHOUT a sandbox: {reason}; permission modes and rules still apply"
            );
        }
        let settings = Arc::new(settings);
        let registry = ToolRegistry::new(builtin_tools(), &settings.disallowed_tools);
        let (catalog_tx, catalog) = watch::channel(Arc::new(ToolCatalog::default()));
        let tools = ToolExecutor::spawn(ToolExecutor::new(
            registry,
            settings.tools.clone(),
            catalog_tx,
        ));
        let mut mcp_servers = Vec::new();
        let enabled = settings.mcp_servers.iter().filter(|(_, c)| c.enabled);
        for (name, config) in enabled.clone() {
            mcp_servers.push(McpServer::spawn(McpServerArgs {
                id: ServerId::configured(name),
                config: config.clone(),
                workspace: settings.workspace.clone(),
                environment: settings.tools.environment.clone(),
                executor: tools.clone(),
            }));
        }
        for server in &mcp_servers {
            server.wait_for_startup().await;
        }
        let given = Arc::new(GivenServers::new(
            tools.clone(),
            enabled.map(|(name, _)| name.clone()).collect(),
            settings.tools.environment.clone(),
        ));
        // Each server told the executor its first status while starting;
        // an ask queued behind those reports returns once the catalog
        // holds them all.
        let _ = tools.ask(ListTools).await;
        let live = match (&cluster, &settings.cluster) {
            (Some(cluster), Some(cluster_settings)) => crate::cluster::NodePlane::connect(
                cluster_settings,
                cluster.clone(),
                stored.store().clone(),
                stored.lifecycle().clone(),
            )
            .await?
            .map(Arc::new),
            _ => None,
        };
        let driven = live
            .as_ref()
            .map(|live| live.driven() as Arc<dyn crate::sessions::driven::DrivenSessions>);
        let loader = SessionLoader::new(settings, catalog, stored);
        let manager = SessionManager::spawn(SessionManagerArgs {
            model,
            tools: tools.clone(),
            loader: loader.clone(),
            given: given.clone(),
            driven,
        });
        let node = match (cluster, &loader.settings().cluster) {
            (Some(cluster), Some(settings)) => Some(crate::cluster::Node::start(
                cluster,
                manager.clone(),
                settings,
                registered,
                live.as_ref().map(|live| live.link()),
            )),
            _ => None,
        };
        Ok(Runtime {
            loader,
            manager,
            tools,
            mcp_servers,
            given,
            node,
            live,
        })
    }

    /// This process as a node of a cluster: its id and name, if it is one.
    pub fn node(&self) -> Option<(NodeId, String)> {
        self.node
            .as_ref()
            .map(|node| (node.id(), node.name().to_string()))
    }

    /// The nodes of the cluster, oldest first, with how many sessions each
    /// drives; `None` when this process is not a node of one.
    pub async fn cluster_nodes(&self) -> Option<Result<Vec<NodeInfo>, SessionError>> {
        let node = self.node.as_ref()?;
        Some(node.nodes().await.map_err(SessionError::from))
    }

    /// Whether this process can take work: its store answers and, on a
    /// node of a cluster, its lease is held (the cluster's nodes list it
    /// alive under its current id) and its live plane (NATS) is
    /// connected. `Err` says what is not so, for the log (a readiness
    /// probe's answer says nothing more than ready or not).
    pub async fn ready(&self) -> Result<(), String> {
        self.stored()
            .list(crate::store::ListPage {
                limit: Some(1),
                after: None,
                visible_to: None,
            })
            .await
            .map_err(|e| format!("the session store does not answer: {e}"))?;
        if let Some(node) = &self.node {
            let id = node.id();
            let nodes = node
                .nodes()
                .await
                .map_err(|e| format!("the cluster's nodes cannot be read: {e}"))?;
            if !nodes.iter().any(|n| n.node_id == id && n.alive) {
                return Err(format!("this node ({id}) holds no lease"));
            }
        }
        if let Some(live) = &self.live
            && !matches!(live.link().state(), crate::cluster::LinkState::Connected)
        {
            return Err("the live plane (NATS) is not connected".into());
        }
        Ok(())
    }

    /// What this node's live plane did so far — the sessions it follows
    /// for its clients (one subscription each, however many clients), its
    /// relays', followers' and lifecycle bridge's counts; `None` without a
    /// live plane.
    pub fn live_stats(&self) -> Option<LiveStats> {
        self.live.as_ref().map(|live| live.stats())
    }

    pub fn settings(&self) -> &Settings {
        self.loader.settings()
    }

    /// The stored sessions: find, list, fork, export, import.
    pub fn stored(&self) -> &StoredSessions {
        self.loader.stored()
    }

    /// A new session (with the MCP servers of its own that `options`
    /// gives: see [`open_session_with`](Self::open_session_with)).
    pub async fn create_session(
        &self,
        options: SessionOptions,
    ) -> Result<SessionHandle, SessionError> {
        Ok(self.manager.ask(CreateSession(options)).await?)
    }

    /// The named agents a session in `workspace` (default: the configured
    /// one) can run as — built-in, configured, and the agent files —
    /// with the agent files that could not be used, each naming the file
    /// and the field. (For front ends that offer agents as modes.)
    pub async fn agents(
        &self,
        workspace: Option<&std::path::Path>,
    ) -> (Vec<AgentInfo>, Vec<String>) {
        let workspace = workspace.unwrap_or(&self.settings().workspace);
        let set = self.loader.workspace_files(workspace).await.agents;
        (set.agents.iter().map(|a| a.info()).collect(), set.problems)
    }

    /// A stored session, loaded (and its lease taken) if it is not already.
    /// A session loaded already keeps the MCP servers it was given; one
    /// loaded now has none of its own.
    pub async fn open_session(&self, id: &SessionId) -> Result<SessionHandle, SessionError> {
        let handle = self.load_quietly(id).await?;
        handle.announce().await?;
        Ok(handle)
    }

    /// A stored session, loaded if it is not already, without announcing
    /// the load: its `session_started` waits for its first input (or an
    /// [`open_session`](Self::open_session)), so that following the events
    /// of a stored session does not change it.
    async fn load_quietly(&self, id: &SessionId) -> Result<SessionHandle, SessionError> {
        let open = OpenSession {
            id: id.clone(),
            mcp_servers: None,
        };
        Ok(self.manager.ask(open).await?)
    }

    /// A stored session, loaded if it is not already, with exactly
    /// `mcp_servers` of its own (an editor's `session/load`), replacing
    /// those it had. Each is offered to this session alone (and to others
    /// given the same name and settings, which share its process); a name
    /// a configured server has is not started (the session is told). When
    /// this returns, the session's next model call offers them (and waits
    /// for those still on their first start, if it is its first turn). The
    /// settings are never stored.
    pub async fn open_session_with(
        &self,
        id: &SessionId,
        mcp_servers: BTreeMap<String, McpServerConfig>,
    ) -> Result<SessionHandle, SessionError> {
        let open = OpenSession {
            id: id.clone(),
            mcp_servers: Some(mcp_servers),
        };
        let handle = self.manager.ask(open).await?;
        handle.announce().await?;
        Ok(handle)
    }

    /// Session `id` as a front end reaches it, its events from after
    /// `after_seq`: loaded here (claimed, if nobody drives it), or — on a
    /// node with a live plane, when another live node drives it — followed
    /// from that node.
    pub async fn reach_session(
        &self,
        id: &SessionId,
        after_seq: u64,
    ) -> Result<Arc<dyn SessionDoor>, SessionError> {
        // Only read (its events followed): the load is not announced.
        match self.load_quietly(id).await {
            Ok(handle) => Ok(Arc::new(handle)),
            Err(e) if held_elsewhere(&e) => {
                let Some(live) = &self.live else {
                    return Err(e);
                };
                tracing::debug!(session = %id, "following a session another node drives: {e}");
                let followed = live
                    .follow(id, after_seq)
                    .await
                    .map_err(|e| SessionError::Internal(e.to_string()))?;
                Ok(Arc::new(followed))
            }
            Err(e) => Err(e),
        }
    }

    /// Whether `e` (from opening a session) says another live node of this
    /// cluster drives it, so that this node serves it by following it
    /// (with a live plane) rather than loading it.
    pub fn followed_from_here(&self, e: &SessionError) -> bool {
        self.live.is_some() && held_elsewhere(e)
    }

    /// Gives `input` to session `id` wherever it runs: here (loaded, and
    /// claimed if nobody drives it), or on the live node that drives it.
    /// When that node does not answer for it any more (*no responders*),
    /// the session is claimed here if its lease allows, as any session is.
    /// Returns the input id of a query or control command.
    pub async fn send_input(
        &self,
        id: &SessionId,
        input: SessionInput,
    ) -> Result<Option<InputId>, SessionError> {
        let elsewhere = match self.open_session(id).await {
            Ok(handle) => return handle.send(input).await,
            Err(e) if held_elsewhere(&e) && self.live.is_some() => e,
            Err(e) => return Err(e),
        };
        let Some(live) = &self.live else {
            return Err(elsewhere);
        };
        match live.send(id, input.clone()).await {
            Ok(input_id) => Ok(input_id),
            Err(e) if e.is_no_owner() => {
                tracing::info!(session = %id, "no node answers for the session: claiming it here");
                let handle = self.open_session(id).await?;
                handle.send(input).await
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Load every stored session that has inputs waiting (accepted before a
    /// crash and never started), so they run without anyone asking. A
    /// session another live process drives is left to it. Returns the ids
    /// loaded.
    pub async fn resume_waiting_sessions(&self) -> Vec<SessionId> {
        // A node's sweeps adopt such sessions (busy, their owner gone)
        // instead: loading each here would claim sessions live nodes drive.
        if self.node.is_some() {
            return Vec::new();
        }
        let ids = match self.stored().store().sessions_with_waiting_inputs().await {
            Ok(ids) => ids,
            Err(e) => {
                tracing::warn!("could not look for sessions with waiting inputs: {e}");
                return Vec::new();
            }
        };
        let mut loaded = Vec::new();
        for id in ids {
            match self.open_session(&id).await {
                Ok(_) => {
                    tracing::info!(session = %id, "loaded: it has inputs waiting from before a restart");
                    loaded.push(id);
                }
                Err(e) => tracing::warn!(session = %id, "not loaded although inputs wait: {e}"),
            }
        }
        loaded
    }

    /// A session id from an id or a unique prefix of one.
    pub async fn resolve(&self, prefix: &str) -> Result<SessionId, SessionError> {
        self.stored().resolve(prefix).await
    }

    /// A loaded session by id.
    pub async fn session(&self, id: &SessionId) -> Option<SessionHandle> {
        self.manager
            .ask(LoadedSession(id.clone()))
            .await
            .ok()
            .flatten()
    }

    /// The ids of the sessions loaded in memory.
    pub async fn loaded_sessions(&self) -> Vec<SessionId> {
        self.manager.ask(LoadedSessions).await.unwrap_or_default()
    }

    /// Sessions created, busy, idle, closed and deleted, as they happen
    /// (on a node with a live plane, every node's, each naming its node).
    pub fn lifecycle(&self) -> &Arc<LifecycleTopic> {
        self.loader.stored().lifecycle()
    }

    /// Delete a session (unloading it first if it is loaded); the
    /// lifecycle event `deleted` names `by`, the API token deleting it
    /// (`None`: without a token).
    pub async fn delete_session(
        &self,
        id: &SessionId,
        by: Option<String>,
    ) -> Result<(), SessionError> {
        let delete = DeleteSession { id: id.clone(), by };
        Ok(self.manager.ask(delete).await?)
    }

    /// A session's conversation as the model sees it, with the stored
    /// events it comes from. A session not loaded is read from the store
    /// without loading it (no lease is taken).
    pub async fn conversation(
        &self,
        id: &SessionId,
    ) -> Result<(Vec<Message>, Vec<EventEnvelope>), SessionError> {
        if let Some(session) = self.session(id).await {
            let history = session.snapshot().await?.history;
            let events = session.stored_events(0, None).await?;
            return Ok((history, events));
        }
        match self.stored().get(id).await? {
            Some(record) => self.loader.read(&record).await,
            None => Err(SessionError::Gone(id.clone())),
        }
    }

    /// Close one session (it stays stored).
    pub async fn close_session(&self, id: &SessionId) -> bool {
        self.manager
            .ask(CloseSession(id.clone()))
            .await
            .unwrap_or(false)
    }

    /// Unload idle sessions now (normally done periodically).
    pub async fn sweep_idle(&self) -> usize {
        self.manager.ask(SweepIdle).await.unwrap_or(0)
    }

    /// The tool catalog (tools and MCP server statuses) as it changes: the
    /// shared view, and each session's with servers of its own.
    pub fn catalog(&self) -> watch::Receiver<Arc<ToolCatalog>> {
        self.loader.catalog().clone()
    }

    /// Wait until every enabled configured MCP server has left `starting`
    /// (ready, restarting or failed), then return the catalog.
    pub async fn settled_catalog(&self) -> Arc<ToolCatalog> {
        let expected = self.mcp_servers.len();
        let mut catalog = self.catalog();
        let settled = |c: &ToolCatalog| {
            c.shared.servers.len() >= expected
                && c.shared
                    .servers
                    .values()
                    .all(|s| !matches!(s, McpServerStatus::Starting))
        };
        let waited = catalog.wait_for(|c| settled(c)).await.map(|c| c.clone());
        waited.unwrap_or_else(|_| catalog.borrow().clone())
    }

    /// Stop every session: running turns end with a stored `cancelled`
    /// result, queued inputs are answered without running; then each is
    /// released (it stays stored). No session is created or loaded after it.
    pub async fn stop_sessions(&self) {
        // A node draining adopts nothing more.
        if let Some(node) = &self.node {
            node.stop_sweeping();
        }
        let _ = self.manager.ask(StopAll).await;
    }

    /// Stop every actor, in the order `shutdown.rs` gives: sessions are
    /// released (they stay stored), MCP server processes are stopped and
    /// reaped, the store is closed.
    pub async fn shutdown(&self) {
        shutdown::stop(
            &self.manager,
            self.node.as_ref(),
            &self.mcp_servers,
            &self.given,
            &self.tools,
            self.loader.stored(),
        )
        .await;
    }
}

/// Whether `e` says another node drives the session: it is then reached
/// through a door that follows it from that node, not loaded here.
fn held_elsewhere(e: &SessionError) -> bool {
    matches!(
        e,
        SessionError::Store(crate::store::StoreError::HeldByNode { .. })
    )
}
