//! The runtime: the actors of one agentbus process, wired together.
//!
//! `Runtime::start(settings)` spawns the ToolExecutor, one McpServer per
//! enabled MCP server (they start in parallel; nobody waits for them) and
//! the SessionManager, and connects them to the model providers. Front ends
//! (and library users) create or find sessions here and talk to them through
//! [`SessionHandle`]s. `shutdown` stops every MCP server process and waits
//! until each is reaped.

use crate::mcp_server::{McpServer, McpServerArgs, StopServer};
use crate::protocol::McpServerStatus;
use crate::provider::{ModelClient, ProviderError, Providers};
use crate::session_handle::{SessionError, SessionHandle};
use crate::session_manager::{
    CloseSession, CreateSession, GetSession, SessionManager, SessionOptions,
};
use crate::settings::Settings;
use crate::tool_executor::{ToolCatalog, ToolExecutor, ToolRegistry};
use crate::tools::builtin_tools;
use kameo::actor::{ActorRef, Spawn};
use std::sync::Arc;
use tokio::sync::watch;

/// The running actors.
pub struct Runtime {
    settings: Arc<Settings>,
    manager: ActorRef<SessionManager>,
    tools: ActorRef<ToolExecutor>,
    mcp_servers: Vec<ActorRef<McpServer>>,
    catalog: watch::Receiver<Arc<ToolCatalog>>,
}

impl Runtime {
    /// Start with the real providers.
    pub async fn start(settings: Settings) -> Result<Runtime, ProviderError> {
        let mut providers = Providers::new(settings.models.clone())?;
        if let Some(hint) = &settings.unreachable_hint {
            providers = providers.with_connect_hint(&settings.model, hint.clone());
        }
        Ok(Self::with_model_client(settings, Arc::new(providers)).await)
    }

    /// Start with any model client (a fake one in tests). Returns once each
    /// MCP server's process is spawned (not initialized: nobody waits for
    /// that), so a server whose program does not exist is already known.
    pub async fn with_model_client(settings: Settings, model: Arc<dyn ModelClient>) -> Runtime {
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
        let manager = SessionManager::spawn(SessionManager::new(
            settings.clone(),
            model,
            tools.clone(),
            catalog.clone(),
        ));
        Runtime {
            settings,
            manager,
            tools,
            mcp_servers,
            catalog,
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// A new session.
    pub async fn create_session(
        &self,
        options: SessionOptions,
    ) -> Result<SessionHandle, SessionError> {
        self.manager
            .ask(CreateSession(options))
            .await
            .map_err(|e| match e {
                kameo::error::SendError::HandlerError(e) => e,
                other => SessionError::Internal(other.to_string()),
            })
    }

    /// A live session by id.
    pub async fn session(&self, id: &crate::protocol::SessionId) -> Option<SessionHandle> {
        self.manager
            .ask(GetSession(id.clone()))
            .await
            .ok()
            .flatten()
    }

    /// Close one session.
    pub async fn close_session(&self, id: &crate::protocol::SessionId) -> bool {
        self.manager
            .ask(CloseSession(id.clone()))
            .await
            .unwrap_or(false)
    }

    /// The tool catalog (tools and MCP server statuses) as it changes.
    pub fn catalog(&self) -> watch::Receiver<Arc<ToolCatalog>> {
        self.catalog.clone()
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

    /// Stop every actor; MCP server processes are stopped and reaped.
    pub async fn shutdown(self) {
        futures::future::join_all(self.mcp_servers.iter().map(|server| async move {
            let _ = server.ask(StopServer).await;
            let _ = server.stop_gracefully().await;
            server.wait_for_shutdown().await;
        }))
        .await;
        let _ = self.manager.stop_gracefully().await;
        self.manager.wait_for_shutdown().await;
        let _ = self.tools.stop_gracefully().await;
        self.tools.wait_for_shutdown().await;
    }
}
