//! The runtime: the actors of one agentbus process, wired together.
//!
//! `Runtime::start(settings)` opens the session store (SQLite, on a thread
//! of its own), spawns the ToolExecutor, one McpServer per enabled MCP
//! server (they start in parallel; nobody waits for their handshake) and
//! the SessionManager, and connects them to the model providers. Front ends
//! (and library users) create, open or find sessions here and talk to them
//! through [`SessionHandle`]s. `shutdown` releases every session, stops
//! every MCP server process and waits until each is reaped.

use crate::bus::LifecycleTopic;
use crate::mcp_server::{McpServer, McpServerArgs, StopServer};
use crate::protocol::{EventEnvelope, McpServerStatus, Message, SessionId};
use crate::provider::{ModelClient, ProviderError, Providers};
use crate::session_handle::{SessionError, SessionHandle};
use crate::session_loader::SessionLoader;
use crate::session_manager::{
    CloseSession, CreateSession, DeleteSession, GetSession as GetLoaded,
    ListSessions as ListLoaded, OpenSession, SessionManager, SessionManagerArgs, SessionOptions,
    StopAll, SweepIdle,
};
use crate::settings::Settings;
use crate::store::{
    GetSession, ListSessions, Owner, ResolveId, SessionRecord, Store, StoreError, StoreOptions,
};
use crate::tool_executor::{ToolCatalog, ToolExecutor, ToolRegistry};
use crate::tools::builtin_tools;
use kameo::actor::{ActorRef, Spawn};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Why the runtime could not start.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the thread opening the session store failed: {0}")]
    StoreThread(String),
}

/// The running actors.
pub struct Runtime {
    lifecycle: Arc<LifecycleTopic>,
    manager: ActorRef<SessionManager>,
    tools: ActorRef<ToolExecutor>,
    mcp_servers: Vec<ActorRef<McpServer>>,
    /// The settings, the store and the tool catalog; also reads stored
    /// conversations without loading them.
    loader: SessionLoader,
}

/// Open the store for `settings` and run it on a thread of its own.
pub async fn open_store(settings: &Settings) -> Result<ActorRef<Store>, RuntimeError> {
    let options = StoreOptions {
        path: settings.database_path(),
        busy_timeout: Duration::from_millis(settings.sessions.busy_timeout_ms),
    };
    let store = tokio::task::spawn_blocking(move || Store::open(options))
        .await
        .map_err(|e| RuntimeError::StoreThread(e.to_string()))??;
    Ok(Store::spawn_in_thread(store))
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
    /// MCP server's process is spawned (not initialized: nobody waits for
    /// that), so a server whose program does not exist is already known.
    pub async fn with_model_client(
        settings: Settings,
        model: Arc<dyn ModelClient>,
    ) -> Result<Runtime, RuntimeError> {
        let store = open_store(&settings).await?;
        let settings = Arc::new(settings);
        let registry = ToolRegistry::new(builtin_tools(), &settings.disallowed_tools);
        let (catalog_tx, catalog) = watch::channel(Arc::new(ToolCatalog::default()));
        let tools = ToolExecutor::spawn(ToolExecutor::new(
            registry,
            settings.tools.clone(),
            catalog_tx,
        ));
        let mcp_servers = settings
            .mcp_servers
            .iter()
            .filter(|(_, config)| config.enabled)
            .map(|(name, config)| {
                McpServer::spawn(McpServerArgs {
                    name: name.clone(),
                    config: config.clone(),
                    workspace: settings.workspace.clone(),
                    executor: tools.clone(),
                })
            })
            .collect::<Vec<_>>();
        for server in &mcp_servers {
            server.wait_for_startup().await;
        }
        let lifecycle = Arc::new(LifecycleTopic::starting_now());
        let loader = SessionLoader::new(settings, catalog, store, Owner::current());
        let manager = SessionManager::spawn(SessionManagerArgs {
            lifecycle: lifecycle.clone(),
            model,
            tools: tools.clone(),
            loader: loader.clone(),
        });
        Ok(Runtime {
            loader,
            lifecycle,
            manager,
            tools,
            mcp_servers,
        })
    }

    pub fn settings(&self) -> &Settings {
        self.loader.settings()
    }

    /// The session store.
    pub fn store(&self) -> &ActorRef<Store> {
        self.loader.store()
    }

    /// A new session.
    pub async fn create_session(
        &self,
        options: SessionOptions,
    ) -> Result<SessionHandle, SessionError> {
        self.manager
            .ask(CreateSession(options))
            .await
            .map_err(SessionError::from)
    }

    /// A stored session, loaded (and its lease taken) if it is not already.
    pub async fn open_session(&self, id: &SessionId) -> Result<SessionHandle, SessionError> {
        self.manager
            .ask(OpenSession(id.clone()))
            .await
            .map_err(SessionError::from)
    }

    /// A session id from an id or a unique prefix of one.
    pub async fn resolve(&self, prefix: &str) -> Result<SessionId, SessionError> {
        self.loader
            .store()
            .ask(ResolveId {
                prefix: prefix.to_string(),
            })
            .await
            .map_err(SessionError::from)
    }

    /// Copy a stored session (up to `at_seq`; `None`: all of it) into a new
    /// session, announced on the lifecycle topic.
    pub async fn fork_session(
        &self,
        id: &SessionId,
        at_seq: Option<u64>,
    ) -> Result<SessionRecord, SessionError> {
        crate::session_commands::fork_session(self.loader.store(), &self.lifecycle, id, at_seq)
            .await
    }

    /// Stored sessions, most recently updated first (a page of them, as
    /// `query` says).
    pub async fn stored_sessions(
        &self,
        query: ListSessions,
    ) -> Result<Vec<SessionRecord>, SessionError> {
        self.loader
            .store()
            .ask(query)
            .await
            .map_err(SessionError::from)
    }

    /// A loaded session by id.
    pub async fn session(&self, id: &SessionId) -> Option<SessionHandle> {
        self.manager.ask(GetLoaded(id.clone())).await.ok().flatten()
    }

    /// The ids of the sessions loaded in memory.
    pub async fn loaded_sessions(&self) -> Vec<SessionId> {
        self.manager.ask(ListLoaded).await.unwrap_or_default()
    }

    /// Sessions created, busy, idle, closed and deleted, as they happen.
    pub fn lifecycle(&self) -> &Arc<LifecycleTopic> {
        &self.lifecycle
    }

    /// Delete a session (unloading it first if it is loaded).
    pub async fn delete_session(&self, id: &SessionId) -> Result<(), SessionError> {
        self.manager
            .ask(DeleteSession(id.clone()))
            .await
            .map_err(SessionError::from)
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
        match self.stored_session(id).await? {
            Some(record) => self.loader.read(&record).await,
            None => Err(SessionError::Gone(id.clone())),
        }
    }

    /// A stored session's record.
    pub async fn stored_session(
        &self,
        id: &SessionId,
    ) -> Result<Option<SessionRecord>, SessionError> {
        self.loader
            .store()
            .ask(GetSession { id: id.clone() })
            .await
            .map_err(SessionError::from)
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

    /// The tool catalog (tools and MCP server statuses) as it changes.
    pub fn catalog(&self) -> watch::Receiver<Arc<ToolCatalog>> {
        self.loader.catalog().clone()
    }

    /// Wait until every enabled MCP server has left `starting` (ready,
    /// restarting or failed), then return the catalog.
    pub async fn settled_catalog(&self) -> Arc<ToolCatalog> {
        let expected = self.mcp_servers.len();
        let mut catalog = self.catalog();
        let settled = |c: &ToolCatalog| {
            c.servers.len() >= expected
                && c.servers
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
        let _ = self.manager.ask(StopAll).await;
    }

    /// Stop every actor: sessions are released (they stay stored), MCP
    /// server processes are stopped and reaped, the store is closed.
    pub async fn shutdown(&self) {
        let _ = self.manager.ask(StopAll).await;
        let _ = self.manager.stop_gracefully().await;
        self.manager.wait_for_shutdown().await;
        futures::future::join_all(self.mcp_servers.iter().map(|server| async move {
            let _ = server.ask(StopServer).await;
            let _ = server.stop_gracefully().await;
            server.wait_for_shutdown().await;
        }))
        .await;
        let _ = self.tools.stop_gracefully().await;
        self.tools.wait_for_shutdown().await;
        let _ = self.loader.store().stop_gracefully().await;
        self.loader.store().wait_for_shutdown().await;
    }
}
