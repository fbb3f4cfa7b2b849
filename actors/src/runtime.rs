//! The runtime: the actors of one agentbus process, wired together.
//!
//! `Runtime::start(settings)` spawns the ToolExecutor and the
//! SessionManager and connects them to the model providers. Front ends (and
//! library users) create or find sessions here and talk to them through
//! [`SessionHandle`]s.

use crate::provider::{ModelClient, ProviderError, Providers};
use crate::session_handle::{SessionError, SessionHandle};
use crate::session_manager::{
    CloseSession, CreateSession, GetSession, SessionManager, SessionOptions,
};
use crate::settings::Settings;
use crate::tool_executor::{ToolExecutor, ToolRegistry};
use crate::tools::builtin_tools;
use kameo::actor::{ActorRef, Spawn};
use std::sync::Arc;

/// The running actors.
pub struct Runtime {
    settings: Arc<Settings>,
    manager: ActorRef<SessionManager>,
    tools: ActorRef<ToolExecutor>,
}

impl Runtime {
    /// Start with the real providers.
    pub fn start(settings: Settings) -> Result<Runtime, ProviderError> {
        let mut providers = Providers::new(settings.models.clone())?;
        if let Some(hint) = &settings.unreachable_hint {
            providers = providers.with_connect_hint(&settings.model, hint.clone());
        }
        Ok(Self::with_model_client(settings, Arc::new(providers)))
    }

    /// Start with any model client (a fake one in tests).
    pub fn with_model_client(settings: Settings, model: Arc<dyn ModelClient>) -> Runtime {
        let settings = Arc::new(settings);
        let registry = ToolRegistry::new(builtin_tools(), &settings.disallowed_tools);
        let tools = ToolExecutor::spawn(ToolExecutor::new(registry, settings.tools.clone()));
        let manager =
            SessionManager::spawn(SessionManager::new(settings.clone(), model, tools.clone()));
        Runtime {
            settings,
            manager,
            tools,
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

    /// Stop every actor.
    pub async fn shutdown(self) {
        let _ = self.manager.stop_gracefully().await;
        self.manager.wait_for_shutdown().await;
        let _ = self.tools.stop_gracefully().await;
        self.tools.wait_for_shutdown().await;
    }
}
