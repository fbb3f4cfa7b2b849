//! SessionManager actor: creates sessions, loads stored ones, unloads idle
//! ones.
//!
//! Owns the table of loaded sessions (one AgentLoop and one topic each).
//! Accepts [`CreateSession`], [`OpenSession`] (loads a stored session on a
//! task of its own — takes its lease, folds its log through the pure core,
//! closes a turn a dead process left open — while other requests go on; a
//! second request for the same session waits for that load),
//! [`LoadedSession`], [`LoadedSessions`], [`CloseSession`], [`SweepIdle`]
//! (unloads sessions that nobody holds or watches and that have been idle for
//! `idle_unload_secs`; they stay stored), [`DeleteSession`] and [`StopAll`].
//!
//! Gives a session the MCP servers it is created or opened with
//! ([`GivenServers`]) before its AgentLoop starts (so its first turn waits
//! for them like for configured ones), or at once when it is loaded
//! already; a sub-agent's session gets its parent's. Takes them back when it
//! releases the session: a server no session has any more stops.
//!
//! Never touches a conversation: everything a session does goes through its
//! AgentLoop. Holds a session's lease exactly while it is loaded here, so
//! another agentbus process on the same data dir is told it is in use.
//!
//! On a node of a cluster, a session loaded under a claim (every load
//! there: a new epoch) is announced `owner_changed` on the lifecycle topic
//! before its AgentLoop starts, so its `busy` comes after.
//!
//! On a node of a cluster, [`FenceAll`] stops every session at once when
//! the node fences itself: their fence token (the parent of every running
//! call's) is cancelled, and an AgentLoop not stopped shortly after is
//! killed. No lease is released then: the store refuses this node's
//! writes already, and the sessions belong to whoever claims them next.

use super::driven::DrivenSessions;
use super::loader::{Restored, SessionLoader};
use super::options::SessionOptions;
use super::subagents::{ChildSessions, SubagentRunner};
use crate::bus::SessionTopic;
use crate::mcp::given::GivenServers;
use crate::protocol::{LifecycleKind, SessionId};
use crate::provider::ModelClient;
use crate::session::actor::{AgentLoop, AgentLoopArgs};
use crate::session::core::agents::DEFAULT_AGENT;
use crate::session::{SessionError, SessionHandle};
use crate::store::NewSession;
use crate::tools::executor::ToolExecutor;
use futures::FutureExt;
use futures::future::join_all;
use kameo::Actor;
use kameo::actor::{ActorRef, Spawn, WeakActorRef};
use kameo::message::{Context, Message};
use kameo::reply::DelegatedReply;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// Create a session.
pub struct CreateSession(pub SessionOptions);

/// A stored session, loaded if it is not already. With `mcp_servers`, the
/// session has exactly those MCP servers of its own from now on (replacing
/// any it had); without, it keeps what it has (a session loaded now has
/// none).
pub struct OpenSession {
    pub id: SessionId,
    pub mcp_servers: Option<GivenSet>,
}

/// MCP servers given to a session, by name.
pub type GivenSet = std::collections::BTreeMap<String, crate::settings::McpServerConfig>;

/// A loaded session by id.
pub struct LoadedSession(pub SessionId);

/// Ids of the loaded sessions.
pub struct LoadedSessions;

/// Stop a session's AgentLoop and release it; `true` if it was loaded.
pub struct CloseSession(pub SessionId);

/// Unload the sessions idle for longer than `idle_unload_secs`; replies with
/// how many were unloaded.
pub struct SweepIdle;

/// Stop every session and release every lease (shutdown): running turns
/// end with a stored `cancelled` result first. No session is created or
/// loaded after it.
pub struct StopAll;

/// Delete a session: unload it if loaded, then remove it from the store.
pub struct DeleteSession {
    pub id: SessionId,
    /// The name of the API token deleting it (`None`: without a token),
    /// said by the lifecycle event `deleted`.
    pub by: Option<String>,
}

/// The node fenced itself: stop every session now, without committing or
/// releasing anything; loads in flight are called off. Sessions may be
/// created and loaded again afterwards (once the node has rejoined, the
/// store lets it claim them). Replies with how many were stopped.
pub struct FenceAll;

/// How long a fenced AgentLoop may take to stop on its own (publishing
/// its last `error` event) before it is killed.
const FENCED_STOP: Duration = Duration::from_millis(500);

/// A load started by [`OpenSession`] has ended (sent by the loading task).
struct LoadEnded {
    id: SessionId,
    ticket: u64,
    loaded: Result<Restored, SessionError>,
    /// The MCP servers the load was asked with.
    mcp_servers: Option<GivenSet>,
}

/// A stored session being loaded.
struct Loading {
    /// Tells this load from a later one of the same session.
    ticket: u64,
    /// Who asked for the session meanwhile. A sender dropped unanswered
    /// (the load failed or was called off) makes its asker try again.
    waiters: Vec<oneshot::Sender<SessionHandle>>,
}

/// The actor.
pub struct SessionManager {
    model: Arc<dyn ModelClient>,
    tools: ActorRef<ToolExecutor>,
    /// The settings, store, tool catalog and lease owner sessions start with.
    loader: SessionLoader,
    /// The MCP servers given to sessions.
    given: Arc<GivenServers>,
    sessions: HashMap<SessionId, SessionHandle>,
    loading: HashMap<SessionId, Loading>,
    next_ticket: u64,
    /// [`StopAll`] has run.
    stopped: bool,
    /// The fence of this node's current incarnation: each session's is a
    /// child of it.
    fence: CancellationToken,
    /// Itself, for the sub-agent runners of the sessions it starts.
    me: WeakActorRef<SessionManager>,
    /// Told when a session starts or stops here (a node's live plane).
    driven: Option<Arc<dyn DrivenSessions>>,
    /// What looks at each workspace remember (checkpoints), shared by
    /// its sessions and kept in the data directory.
    stat_caches: crate::checkpoint::StatCaches,
}

/// What a SessionManager starts from.
pub struct SessionManagerArgs {
    pub model: Arc<dyn ModelClient>,
    pub tools: ActorRef<ToolExecutor>,
    pub loader: SessionLoader,
    pub given: Arc<GivenServers>,
    /// Told when a session starts or stops here (a node's live plane).
    pub driven: Option<Arc<dyn DrivenSessions>>,
}

impl Actor for SessionManager {
    type Args = SessionManagerArgs;
    type Error = kameo::error::Infallible;

    async fn on_start(args: Self::Args, me: ActorRef<Self>) -> Result<Self, Self::Error> {
        let idle = Duration::from_secs(args.loader.settings().sessions.idle_unload_secs.max(1));
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
        let stat_caches = crate::checkpoint::StatCaches::kept_in(
            args.loader.settings().data_dir.join("checkpoints"),
        );
        Ok(SessionManager {
            loader: args.loader,
            model: args.model,
            tools: args.tools,
            given: args.given,
            sessions: HashMap::new(),
            loading: HashMap::new(),
            next_ticket: 0,
            stopped: false,
            fence: CancellationToken::new(),
            me: me.downgrade(),
            driven: args.driven,
            stat_caches,
        })
    }
}

impl SessionManager {
    /// Start session `session`'s AgentLoop; it shows `notices` once started.
    fn start(&mut self, session: Restored, resumed: bool, notices: Vec<String>) -> SessionHandle {
        let Restored {
            state,
            startup,
            last_seq,
            workspace,
            waiting,
            claimed,
            child_of,
        } = session;
        let id = state.session_id.clone();
        if claimed {
            // Before the AgentLoop starts: its `busy` (inputs waiting)
            // comes after.
            self.announce(&id, LifecycleKind::OwnerChanged);
        }
        let subagents = state.config.task_tool.then(|| {
            Arc::new(SubagentRunner::new(
                Arc::new(ManagerSessions(self.me.clone())),
                self.loader.settings().subagents.max_concurrent_subagents,
            )) as Arc<dyn crate::session::actor::Subagents>
        });
        let topic = Arc::new(SessionTopic::new(last_seq));
        let recorder = self.recorder(&id, &workspace, child_of);
        let agent_loop = AgentLoop::spawn(AgentLoopArgs {
            state: Box::new(state),
            startup,
            resumed,
            last_seq,
            waiting,
            catalog: self.loader.catalog().clone(),
            notices,
            topic: topic.clone(),
            lifecycle: self.loader.stored().lifecycle().clone(),
            model: self.model.clone(),
            tools: self.tools.clone(),
            store: self.loader.stored().store().clone(),
            commands: Arc::new(self.loader.stored().clone()),
            subagents,
            workspace: workspace.clone(),
            fence: self.fence.child_token(),
            environment: self.loader.settings().tools.environment.clone(),
            recorder,
        });
        let handle = SessionHandle::new(
            id.clone(),
            agent_loop,
            topic,
            self.loader.stored().store().clone(),
            last_seq,
            workspace,
        );
        self.sessions.insert(id, handle.clone());
        if let Some(driven) = &self.driven {
            driven.started(&handle);
        }
        handle
    }

    /// Session `id`'s recorder of checkpoints (`None`: `[checkpoints]
    /// enabled = false`); a sub-agent's keeps them under its parent.
    fn recorder(
        &self,
        id: &SessionId,
        workspace: &std::path::Path,
        child_of: Option<(SessionId, u64)>,
    ) -> Option<Arc<crate::checkpoint::Recorder>> {
        let settings = &self.loader.settings().checkpoints;
        if !settings.enabled {
            return None;
        }
        let limits = crate::checkpoint::Limits::from(settings);
        let store = self.loader.stored().store().clone();
        let (owner, parent_seq) = match child_of {
            Some((parent, at_seq)) => (parent, Some(at_seq)),
            None => (id.clone(), None),
        };
        let cache = self.stat_caches.of(workspace);
        let recorder = crate::checkpoint::Recorder::new(
            store,
            owner,
            (workspace.to_path_buf(), cache),
            limits,
            settings.max_session_bytes,
        );
        Some(Arc::new(match parent_seq {
            Some(seq) => recorder.for_parent_at(seq),
            None => recorder,
        }))
    }

    /// Tell whoever listens that session `id` stopped here.
    async fn stopped(&self, id: &SessionId) {
        if let Some(driven) = &self.driven {
            driven.stopped(id).await;
        }
    }

    fn announce(&self, session_id: &SessionId, kind: LifecycleKind) {
        self.loader.stored().lifecycle().announce(session_id, kind);
    }

    /// Stop a session that was removed from the table, take back its MCP
    /// servers and give its lease back.
    async fn release(&self, handle: &SessionHandle) {
        handle.stop().await;
        self.stopped(handle.id()).await;
        // The servers no session has now stop on a task of their own.
        drop(self.given.release(handle.id()).await);
        self.announce(handle.id(), LifecycleKind::Closed);
        self.release_lease(handle.id()).await;
    }

    async fn release_lease(&self, id: &SessionId) {
        self.loader.stored().release(id).await;
    }

    /// Shut a session down (its running turn ends with a stored result) and
    /// release it.
    async fn shut_down(&self, handle: &SessionHandle) {
        let _ = handle.shut_down().await;
        self.release(handle).await;
    }
}

impl Message<CreateSession> for SessionManager {
    type Reply = Result<SessionHandle, SessionError>;

    async fn handle(
        &mut self,
        CreateSession(options): CreateSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        if self.stopped {
            return Err(SessionError::ShuttingDown);
        }
        let workspace = options
            .workspace
            .clone()
            .unwrap_or_else(|| self.loader.settings().workspace.clone());
        let files = self.loader.workspace_files(&workspace).await;
        let agent = options.agent.as_deref().unwrap_or(DEFAULT_AGENT);
        let Some(definition) = files.agents.get(agent).cloned() else {
            return Err(SessionError::UnknownAgent {
                name: agent.to_string(),
                available: files.agents.names(),
            });
        };
        let settings = self.loader.settings();
        let model = options
            .model
            .or_else(|| definition.model.clone())
            .or(options.inherit_model)
            .unwrap_or_else(|| settings.model.clone());
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
        // A sub-agent works for whoever made its parent.
        let created_by = match (options.created_by, &options.parent) {
            (None, Some(parent)) => self.loader.stored().creator_of(&parent.session).await?,
            (created_by, _) => created_by,
        };
        let new = NewSession {
            id: SessionId::new(),
            model: model.clone(),
            workspace: workspace.display().to_string(),
            parent: options
                .parent
                .as_ref()
                .map(|p| (p.session.clone(), p.at_seq)),
            parent_call: options.parent.as_ref().map(|p| p.call_id.clone()),
            created_by,
        };
        let record = self.loader.stored().create(new, options.title).await?;
        let id = record.id;
        let mut notices = Vec::new();
        if !options.mcp_servers.is_empty() {
            notices = self.given.give(&id, &workspace, options.mcp_servers).await;
        }
        if let Some(parent) = &options.parent {
            self.given.inherit(&id, &parent.session).await;
        }
        let mut state = self.loader.fresh_state(id, model, &workspace, files);
        state.context.session = options.context;
        state.agent = definition.name;
        state.config.task_tool &= options.parent.is_none();
        if let Some(mode) = options.permission_mode.or(definition.permission_mode) {
            state.permissions.mode = mode;
        }
        let mut restored = Restored::fresh(state, workspace);
        restored.child_of = options.parent.map(|p| (p.session, p.at_seq));
        Ok(self.start(restored, false, notices))
    }
}

impl Message<OpenSession> for SessionManager {
    type Reply = DelegatedReply<Result<SessionHandle, SessionError>>;

    async fn handle(
        &mut self,
        OpenSession { id, mcp_servers }: OpenSession,
        ctx: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        if let Some(handle) = self.sessions.get(&id) {
            if handle.is_alive() {
                let Some(servers) = mcp_servers else {
                    return ctx.reply(Ok(handle.clone()));
                };
                let (handle, given) = (handle.clone(), self.given.clone());
                return ctx.spawn(async move { give(&given, handle, servers).await });
            }
            // Its AgentLoop died: the load below takes its place (and its
            // lease, which no later clean-up of the dead one may release).
            self.sessions.remove(&id);
        }
        if self.stopped {
            return ctx.reply(Err(SessionError::ShuttingDown));
        }
        let me = ctx.actor_ref().clone();
        if let Some(loading) = self.loading.get_mut(&id) {
            let (waiter, loaded) = oneshot::channel();
            loading.waiters.push(waiter);
            let given = self.given.clone();
            return ctx.spawn(async move {
                match (loaded.await, mcp_servers) {
                    (Ok(handle), None) => Ok(handle),
                    (Ok(handle), Some(servers)) => give(&given, handle, servers).await,
                    // That load failed or was called off: ask again, for an
                    // answer of our own.
                    (Err(_), mcp_servers) => me
                        .ask(OpenSession { id, mcp_servers })
                        .await
                        .map_err(SessionError::from),
                }
            });
        }
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        let waiters = Vec::new();
        self.loading.insert(id.clone(), Loading { ticket, waiters });
        let loader = self.loader.clone();
        ctx.spawn(async move {
            // Whatever happens, the load ends with `LoadEnded`: a load that
            // never reported would keep later requests for it waiting.
            let load = std::panic::AssertUnwindSafe(loader.load(id.clone()));
            let loaded = load.catch_unwind().await.unwrap_or_else(|_| {
                Err(SessionError::Internal(format!(
                    "loading session {id} failed (a bug: it panicked)"
                )))
            });
            let done = LoadEnded {
                id,
                ticket,
                loaded,
                mcp_servers,
            };
            me.ask(done).await.map_err(SessionError::from)
        })
    }
}

impl Message<LoadEnded> for SessionManager {
    type Reply = Result<SessionHandle, SessionError>;

    async fn handle(
        &mut self,
        LoadEnded {
            id,
            ticket,
            loaded,
            mcp_servers,
        }: LoadEnded,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        let current = self.loading.get(&id).is_some_and(|l| l.ticket == ticket);
        let waiters = match current {
            true => self.loading.remove(&id).map(|l| l.waiters),
            false => None,
        };
        match (loaded, waiters) {
            (Ok(loaded), Some(waiters)) => {
                let notices = match mcp_servers {
                    Some(servers) => self.given.give(&id, &loaded.workspace, servers).await,
                    None => Vec::new(),
                };
                let handle = self.start(loaded, true, notices);
                for waiter in waiters {
                    let _ = waiter.send(handle.clone());
                }
                Ok(handle)
            }
            (loaded, _) => {
                // Called off while it loaded (deleted, or shutting down), or
                // failed after taking the lease (a store error means it was
                // not taken): give the lease back unless the session is here
                // again by now.
                let leased = !matches!(loaded, Err(SessionError::Store(_)));
                if leased && !self.sessions.contains_key(&id) && !self.loading.contains_key(&id) {
                    self.release_lease(&id).await;
                }
                match loaded {
                    Ok(_) if self.stopped => Err(SessionError::ShuttingDown),
                    Ok(_) => Err(SessionError::Gone(id)),
                    Err(e) => Err(e),
                }
            }
        }
    }
}

impl Message<LoadedSession> for SessionManager {
    type Reply = Option<SessionHandle>;

    async fn handle(
        &mut self,
        LoadedSession(id): LoadedSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        self.sessions.get(&id).filter(|h| h.is_alive()).cloned()
    }
}

impl Message<LoadedSessions> for SessionManager {
    type Reply = Vec<SessionId>;

    async fn handle(
        &mut self,
        _: LoadedSessions,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
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
        let limit = Duration::from_secs(self.loader.settings().sessions.idle_unload_secs);
        // A front end holds it, or someone is watching: not idle.
        let unused: Vec<&SessionHandle> = self
            .sessions
            .values()
            .filter(|h| !h.in_use() && h.watchers() == 0)
            .collect();
        let idle_for = join_all(unused.iter().map(|h| h.idle_for())).await;
        let idle: Vec<SessionId> = unused
            .iter()
            .zip(idle_for)
            .filter(|(h, idle_for)| idle_for.is_some_and(|d| d >= limit) || !h.is_alive())
            .map(|(h, _)| h.id().clone())
            .collect();
        let handles: Vec<_> = idle
            .iter()
            .filter_map(|id| self.sessions.remove(id))
            .collect();
        for handle in &handles {
            tracing::debug!(session = %handle.id(), "unloading an idle session");
        }
        join_all(handles.iter().map(|h| self.release(h))).await;
        handles.len()
    }
}

impl Message<StopAll> for SessionManager {
    type Reply = ();

    async fn handle(&mut self, _: StopAll, _: &mut Context<Self, Self::Reply>) {
        self.stopped = true;
        // Loads in flight are called off; whoever waits for one is told the
        // session is gone.
        self.loading.clear();
        let handles: Vec<_> = self.sessions.drain().map(|(_, h)| h).collect();
        join_all(handles.iter().map(|h| self.shut_down(h))).await;
    }
}

impl Message<FenceAll> for SessionManager {
    type Reply = usize;

    async fn handle(&mut self, _: FenceAll, _: &mut Context<Self, Self::Reply>) -> usize {
        let fence = std::mem::take(&mut self.fence);
        fence.cancel();
        self.loading.clear();
        let handles: Vec<SessionHandle> = self.sessions.drain().map(|(_, h)| h).collect();
        let stopped = join_all(handles.iter().map(|handle| async move {
            if tokio::time::timeout(FENCED_STOP, handle.wait_stopped())
                .await
                .is_err()
            {
                tracing::warn!(session = %handle.id(), "killing a fenced session that did not stop");
                handle.kill();
            }
        }));
        stopped.await;
        join_all(handles.iter().map(|handle| self.stopped(handle.id()))).await;
        for handle in &handles {
            drop(self.given.release(handle.id()).await);
            self.announce(handle.id(), LifecycleKind::Closed);
        }
        handles.len()
    }
}

impl Message<DeleteSession> for SessionManager {
    type Reply = Result<(), SessionError>;

    async fn handle(
        &mut self,
        DeleteSession { id, by }: DeleteSession,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        // A load in flight is called off; whoever waits for it asks again
        // (and is told the session does not exist).
        self.loading.remove(&id);
        if let Some(handle) = self.sessions.remove(&id) {
            self.shut_down(&handle).await;
        }
        self.loader.stored().delete(&id, by).await
    }
}

/// Give the loaded session `handle` exactly `servers`; it reads the catalog
/// and shows the notices before this returns.
async fn give(
    given: &GivenServers,
    handle: SessionHandle,
    servers: GivenSet,
) -> Result<SessionHandle, SessionError> {
    let notices = given.give(handle.id(), handle.workspace(), servers).await;
    if let Err(gone) = handle.servers_given(notices).await {
        // Closed meanwhile: what it was just given goes with it.
        drop(given.release(handle.id()).await);
        return Err(gone);
    }
    Ok(handle)
}

/// The SessionManager as the sub-agent runners see it: where child
/// sessions are created and found.
struct ManagerSessions(WeakActorRef<SessionManager>);

impl ChildSessions for ManagerSessions {
    fn create(
        &self,
        options: SessionOptions,
    ) -> futures::future::BoxFuture<'static, Result<SessionHandle, SessionError>> {
        let manager = self.0.clone();
        Box::pin(async move {
            let manager = manager.upgrade().ok_or(SessionError::ShuttingDown)?;
            Ok(manager.ask(CreateSession(options)).await?)
        })
    }

    fn loaded(&self, id: SessionId) -> futures::future::BoxFuture<'static, Option<SessionHandle>> {
        let manager = self.0.clone();
        Box::pin(async move {
            manager
                .upgrade()?
                .ask(LoadedSession(id))
                .await
                .ok()
                .flatten()
        })
    }
}
