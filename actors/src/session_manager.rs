//! SessionManager actor: creates sessions and finds them again.
//!
//! Owns the table of live sessions (one AgentLoop and one topic each).
//! Accepts [`CreateSession`], [`GetSession`], [`ListSessions`],
//! [`CloseSession`]. Creating a session checks its model profile, asks the
//! ToolExecutor for the tool list and spawns the session's AgentLoop.
//!
//! Never touches a conversation: everything a session does goes through its
//! AgentLoop.

use crate::agent_loop::{AgentLoop, AgentLoopArgs};
use crate::bus::SessionTopic;
use crate::provider::ModelClient;
use crate::session::{SessionConfig, SessionState};
use crate::session_handle::{SessionError, SessionHandle};
use crate::settings::Settings;
use crate::tool_executor::{ToolCatalog, ToolExecutor};
use kameo::Actor;
use kameo::actor::{ActorRef, Spawn};
use kameo::message::{Context, Message};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::watch;

/// How to create a session; unset fields come from the settings.
#[derive(Clone, Debug, Default)]
pub struct SessionOptions {
    /// Model profile name.
    pub model: Option<String>,
    pub workspace: Option<PathBuf>,
}

/// Create a session.
pub struct CreateSession(pub SessionOptions);

/// Find a live session by id.
pub struct GetSession(pub crate::protocol::SessionId);

/// Ids of the live sessions.
pub struct ListSessions;

/// Stop a session's AgentLoop and forget it; `true` if it existed.
pub struct CloseSession(pub crate::protocol::SessionId);

/// The actor.
#[derive(Actor)]
pub struct SessionManager {
    settings: Arc<Settings>,
    /// The system prompt with the prompts of the enabled MCP servers.
    system_prompt: String,
    model: Arc<dyn ModelClient>,
    tools: ActorRef<ToolExecutor>,
    catalog: watch::Receiver<Arc<ToolCatalog>>,
    sessions: HashMap<crate::protocol::SessionId, SessionHandle>,
}

impl SessionManager {
    pub fn new(
        settings: Arc<Settings>,
        model: Arc<dyn ModelClient>,
        tools: ActorRef<ToolExecutor>,
        catalog: watch::Receiver<Arc<ToolCatalog>>,
    ) -> Self {
        SessionManager {
            system_prompt: system_prompt(&settings),
            settings,
            model,
            tools,
            catalog,
            sessions: HashMap::new(),
        }
    }
}

/// The configured prompt, then the `prompt` of each enabled MCP server.
fn system_prompt(settings: &Settings) -> String {
    let mut prompt = settings.system_prompt.clone();
    for (name, server) in settings.mcp_servers.iter().filter(|(_, s)| s.enabled) {
        if let Some(extra) = server.prompt.as_deref().filter(|p| !p.trim().is_empty()) {
            prompt.push_str(&format!("\n\n# MCP server `{name}`\n{}", extra.trim()));
        }
    }
    prompt
}

impl Message<CreateSession> for SessionManager {
    type Reply = Result<SessionHandle, SessionError>;

    async fn handle(
        &mut self,
        CreateSession(options): CreateSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        let settings = &self.settings;
        let model = options.model.unwrap_or_else(|| settings.model.clone());
        if !settings.models.contains_key(&model) {
            return Err(SessionError::UnknownProfile {
                name: model,
                available: settings
                    .models
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let workspace = options
            .workspace
            .unwrap_or_else(|| settings.workspace.clone());
        let tools = self.catalog.borrow().tools.clone();
        let config = SessionConfig {
            system_prompt: self.system_prompt.clone(),
            max_steps: settings.max_steps,
            include_partial_messages: settings.include_partial_messages,
            models: settings.model_infos(),
            workspace: workspace.display().to_string(),
        };
        let state = SessionState::new(crate::protocol::SessionId::new(), config, model, tools);
        let id = state.session_id.clone();
        let topic = Arc::new(SessionTopic::new(0));
        let agent_loop = AgentLoop::spawn(AgentLoopArgs {
            state,
            catalog: self.catalog.clone(),
            topic: topic.clone(),
            model: self.model.clone(),
            tools: self.tools.clone(),
            workspace,
        });
        let handle = SessionHandle::new(id.clone(), agent_loop, topic);
        self.sessions.insert(id, handle.clone());
        Ok(handle)
    }
}

impl Message<GetSession> for SessionManager {
    type Reply = Option<SessionHandle>;

    async fn handle(
        &mut self,
        GetSession(id): GetSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        self.sessions.get(&id).cloned()
    }
}

impl Message<ListSessions> for SessionManager {
    type Reply = Vec<crate::protocol::SessionId>;

    async fn handle(&mut self, _: ListSessions, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let mut ids: Vec<_> = self.sessions.keys().cloned().collect();
        ids.sort();
        ids
    }
}

impl Message<CloseSession> for SessionManager {
    type Reply = bool;

    async fn handle(
        &mut self,
        CloseSession(id): CloseSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> bool {
        match self.sessions.remove(&id) {
            Some(handle) => {
                handle.stop().await;
                true
            }
            None => false,
        }
    }
}
