//! SessionManager actor: creates sessions, loads stored ones, unloads idle
//! ones.
//!
//! Owns the table of loaded sessions (one AgentLoop and one topic each).
//! Accepts [`CreateSession`], [`OpenSession`] (loads a stored session: takes
//! its lease, folds its log through the pure core, closes a turn a dead
//! process left open), [`GetSession`], [`ListSessions`], [`CloseSession`],
//! [`SweepIdle`] (unloads sessions that nobody holds or watches and that
//! have been idle for `idle_unload_secs`; they stay stored) and [`StopAll`].
//!
//! Never touches a conversation: everything a session does goes through its
//! AgentLoop. Holds a session's lease exactly while it is loaded here, so
//! another agentbus process on the same data dir is told it is in use.

use crate::agent_loop::{AgentLoop, AgentLoopArgs, IdleFor, ShutDown};
use crate::bus::{LifecycleTopic, SessionTopic};
use crate::protocol::{LifecycleKind, SessionId};
use crate::provider::ModelClient;
use crate::session::{Effect, SessionConfig, SessionState, restore};
use crate::session_handle::{SessionError, SessionHandle};
use crate::settings::Settings;
use crate::store::{
    AcquireSession, CreateSession as StoreCreate, DeleteSession as StoreDelete, NewSession, Owner,
    ReleaseSession, SetTitle, Store,
};
use crate::tool_executor::{ToolCatalog, ToolExecutor};
use kameo::Actor;
use kameo::actor::{ActorRef, Spawn};
use kameo::message::{Context, Message};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How to create a session; unset fields come from the settings.
#[derive(Clone, Debug, Default)]
pub struct SessionOptions {
    /// Model profile name.
    pub model: Option<String>,
    pub workspace: Option<PathBuf>,
    /// A title (otherwise the first query names the session).
    pub title: Option<String>,
}

/// Create a session.
pub struct CreateSession(pub SessionOptions);

/// A stored session, loaded if it is not already.
pub struct OpenSession(pub SessionId);

/// A loaded session by id.
pub struct GetSession(pub SessionId);

/// Ids of the loaded sessions.
pub struct ListSessions;

/// Stop a session's AgentLoop and release it; `true` if it was loaded.
pub struct CloseSession(pub SessionId);

/// Unload the sessions idle for longer than `idle_unload_secs`; replies with
/// how many were unloaded.
pub struct SweepIdle;

/// Stop every session and release every lease (shutdown): running turns
/// end with a stored `cancelled` result first.
pub struct StopAll;

/// Delete a session: unload it if loaded, then remove it from the store.
pub struct DeleteSession(pub SessionId);

/// The actor.
pub struct SessionManager {
    settings: Arc<Settings>,
    lifecycle: Arc<LifecycleTopic>,
    /// The system prompt with the prompts of the enabled MCP servers.
    system_prompt: String,
    model: Arc<dyn ModelClient>,
    tools: ActorRef<ToolExecutor>,
    catalog: watch::Receiver<Arc<ToolCatalog>>,
    store: ActorRef<Store>,
    owner: Owner,
    sessions: HashMap<SessionId, SessionHandle>,
}

/// What a SessionManager starts from.
pub struct SessionManagerArgs {
    pub settings: Arc<Settings>,
    pub lifecycle: Arc<LifecycleTopic>,
    pub model: Arc<dyn ModelClient>,
    pub tools: ActorRef<ToolExecutor>,
    pub catalog: watch::Receiver<Arc<ToolCatalog>>,
    pub store: ActorRef<Store>,
}

impl Actor for SessionManager {
    type Args = SessionManagerArgs;
    type Error = kameo::error::Infallible;

    async fn on_start(args: Self::Args, me: ActorRef<Self>) -> Result<Self, Self::Error> {
        let idle = Duration::from_secs(args.settings.sessions.idle_unload_secs.max(1));
        let weak = me.downgrade();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(
                (idle / 4).clamp(Duration::from_secs(1), Duration::from_secs(60)),
            );
            loop {
                ticks.tick().await;
                let Some(me) = weak.upgrade() else { return };
                if me.tell(SweepIdle).await.is_err() {
                    return;
                }
            }
        });
        Ok(SessionManager {
            system_prompt: system_prompt(&args.settings),
            settings: args.settings,
            lifecycle: args.lifecycle,
            model: args.model,
            tools: args.tools,
            catalog: args.catalog,
            store: args.store,
            owner: Owner::current(),
            sessions: HashMap::new(),
        })
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

impl SessionManager {
    /// A state for session `id` built from the current configuration.
    fn fresh_state(
        &self,
        id: SessionId,
        model: String,
        workspace: &std::path::Path,
    ) -> SessionState {
        let config = SessionConfig {
            system_prompt: self.system_prompt.clone(),
            max_steps: self.settings.max_steps,
            include_partial_messages: self.settings.include_partial_messages,
            models: self.settings.model_infos(),
            workspace: workspace.display().to_string(),
        };
        let tools = self.catalog.borrow().tools.clone();
        SessionState::new(id, config, model, tools)
    }

    fn start(
        &mut self,
        state: SessionState,
        startup: Vec<Effect>,
        resumed: bool,
        last_seq: u64,
        workspace: PathBuf,
    ) -> SessionHandle {
        let id = state.session_id.clone();
        let topic = Arc::new(SessionTopic::new(last_seq));
        let agent_loop = AgentLoop::spawn(AgentLoopArgs {
            state,
            startup,
            resumed,
            last_seq,
            catalog: self.catalog.clone(),
            topic: topic.clone(),
            lifecycle: self.lifecycle.clone(),
            model: self.model.clone(),
            tools: self.tools.clone(),
            store: self.store.clone(),
            workspace,
        });
        let handle =
            SessionHandle::new(id.clone(), agent_loop, topic, self.store.clone(), last_seq);
        self.sessions.insert(id, handle.clone());
        handle
    }

    fn announce(&self, session_id: &SessionId, kind: LifecycleKind) {
        self.lifecycle.announce(session_id, kind);
    }

    async fn release(&self, handle: &SessionHandle) {
        handle.stop().await;
        self.announce(handle.id(), LifecycleKind::Closed);
        let release = ReleaseSession {
            id: handle.id().clone(),
            owner: self.owner,
        };
        if let Err(e) = self.store.ask(release).await {
            tracing::warn!(session = %handle.id(), "could not release the session: {e}");
        }
    }
}

impl Message<CreateSession> for SessionManager {
    type Reply = Result<SessionHandle, SessionError>;

    async fn handle(
        &mut self,
        CreateSession(options): CreateSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        let model = options.model.unwrap_or_else(|| self.settings.model.clone());
        if !self.settings.models.contains_key(&model) {
            return Err(SessionError::UnknownProfile {
                name: model,
                available: self
                    .settings
                    .models
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let workspace = options
            .workspace
            .unwrap_or_else(|| self.settings.workspace.clone());
        let id = SessionId::new();
        let new = NewSession {
            id: id.clone(),
            model: model.clone(),
            workspace: workspace.display().to_string(),
        };
        self.store
            .ask(StoreCreate {
                new,
                owner: self.owner,
            })
            .await
            .map_err(SessionError::from)?;
        if let Some(title) = options.title.filter(|t| !t.trim().is_empty()) {
            let set = SetTitle {
                id: id.clone(),
                title,
            };
            self.store.ask(set).await.map_err(SessionError::from)?;
        }
        self.announce(&id, LifecycleKind::Created);
        let state = self.fresh_state(id, model, &workspace);
        Ok(self.start(state, Vec::new(), false, 0, workspace))
    }
}

impl Message<OpenSession> for SessionManager {
    type Reply = Result<SessionHandle, SessionError>;

    async fn handle(
        &mut self,
        OpenSession(id): OpenSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        if let Some(handle) = self.sessions.get(&id).filter(|h| h.is_alive()) {
            return Ok(handle.clone());
        }
        let (record, events) = self
            .store
            .ask(AcquireSession {
                id: id.clone(),
                owner: self.owner,
            })
            .await
            .map_err(SessionError::from)?;
        let model = if self.settings.models.contains_key(&record.model) {
            record.model.clone()
        } else {
            tracing::warn!(session = %id, model = %record.model, "the session's model profile is no longer configured; using the default");
            self.settings.model.clone()
        };
        let stored_workspace = PathBuf::from(&record.workspace);
        let workspace = if stored_workspace.is_dir() {
            stored_workspace
        } else {
            self.settings.workspace.clone()
        };
        let fresh = self.fresh_state(id, model, &workspace);
        let (state, startup) = restore(fresh, &events);
        let last_seq = record
            .last_seq
            .max(events.last().map(|e| e.seq).unwrap_or(0));
        Ok(self.start(state, startup, true, last_seq, workspace))
    }
}

impl Message<GetSession> for SessionManager {
    type Reply = Option<SessionHandle>;

    async fn handle(
        &mut self,
        GetSession(id): GetSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        self.sessions.get(&id).filter(|h| h.is_alive()).cloned()
    }
}

impl Message<ListSessions> for SessionManager {
    type Reply = Vec<SessionId>;

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
                self.release(&handle).await;
                true
            }
            None => false,
        }
    }
}

impl Message<SweepIdle> for SessionManager {
    type Reply = usize;

    async fn handle(&mut self, _: SweepIdle, _: &mut Context<Self, Self::Reply>) -> usize {
        let limit = Duration::from_secs(self.settings.sessions.idle_unload_secs);
        let mut idle = Vec::new();
        for (id, handle) in &self.sessions {
            if handle.in_use() || handle.topic().subscriber_count() > 0 {
                continue; // a front end holds it, or someone is watching
            }
            let idle_for = handle.agent_loop().ask(IdleFor).await.ok().flatten();
            if idle_for.is_some_and(|d| d >= limit) || !handle.is_alive() {
                idle.push(id.clone());
            }
        }
        for id in &idle {
            if let Some(handle) = self.sessions.remove(id) {
                tracing::debug!(session = %id, "unloading an idle session");
                self.release(&handle).await;
            }
        }
        idle.len()
    }
}

impl Message<StopAll> for SessionManager {
    type Reply = ();

    async fn handle(&mut self, _: StopAll, _: &mut Context<Self, Self::Reply>) {
        let handles: Vec<_> = self.sessions.drain().map(|(_, h)| h).collect();
        for handle in &handles {
            let _ = handle.agent_loop().ask(ShutDown).await;
            self.release(handle).await;
        }
    }
}

impl Message<DeleteSession> for SessionManager {
    type Reply = Result<(), SessionError>;

    async fn handle(
        &mut self,
        DeleteSession(id): DeleteSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        if let Some(handle) = self.sessions.remove(&id) {
            let _ = handle.agent_loop().ask(ShutDown).await;
            self.release(&handle).await;
        }
        let delete = StoreDelete {
            id: id.clone(),
            owner: self.owner,
        };
        self.store.ask(delete).await.map_err(SessionError::from)?;
        self.announce(&id, LifecycleKind::Deleted);
        Ok(())
    }
}
