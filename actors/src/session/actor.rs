//! AgentLoop actor: drives one session.
//!
//! Owns the session's [`SessionState`] and is the ONLY code that calls
//! [`step`] and the only publisher on the session's topic. Accepts
//! [`Submit`] (a query or control command from a front end; replies with
//! its input id), [`Feed`] (any other input of the core, as it is: an
//! interrupt, a shutdown, and the signals its own tasks send back — model
//! events, tool outcomes, session command replies, catalog changes),
//! [`Snapshot`], [`IdleFor`], [`PendingApprovals`], [`UseFiles`] and [`ServersGiven`].
//!
//! Performs the effects `step` returns: stamps each event with the next
//! `seq`; commits the persisted ones to the store (one transaction per
//! step) BEFORE publishing anything; starts model calls, tool batches and
//! session commands (through [`SessionCommands`], which the set of sessions
//! provides) as tasks that feed their results back.
//!
//! Holds the session's background commands (`bash` with
//! `run_in_background`) and hands them to every tool call; when it stops
//! (unloaded, closed, the process stopping) it ends them, logs it and,
//! unless fenced, says so in a `notice`.
//!
//! Never awaits a model stream, a tool or a session command inside a
//! handler — those run on tasks that report back with [`Feed`] — so an
//! interrupt is handled at once. Never swallows a store failure: the events
//! are still shown, followed by an `error` event of kind `store`, and kept
//! for the next commit, so the log is whole once the store works again.
//! Never acknowledges an input before it is stored.
//!
//! On a node of a cluster, the session may be taken from this node:
//! `session/fence.rs` says how it then stops.

use super::core::{Effect, Input, SessionCommand, SessionState, step};
use super::fence;
use super::journal::{Journal, Outcome};
use super::model_input::model_input;
use super::now_ms;
use super::turn_trace::TurnTraces;
use crate::bus::{LifecycleTopic, SessionTopic};
use crate::hooks::run::{HookContext, Matched};
use crate::model::{GrantedCall, ModelRequest, ToolOutcome};
use crate::protocol::hook::{HookDecision, HookEvent, HookSet};
use crate::protocol::{
    AgentMessage, ErrorEvent, ErrorKind, EventEnvelope, InputId, LifecycleKind, SessionId,
    SystemEvent, UserInput,
};
use crate::provider::ModelClient;
use crate::session::SessionError;
use crate::store::{AcceptedInput, SessionStore, StoreError};
use crate::tools::executor::{RunTool, ToolExecutor};
use crate::tools::registry::ToolCatalog;
use crate::tools::{BackgroundCommands, Files};
use futures::StreamExt;
use futures::future::BoxFuture;
use kameo::Actor;
use kameo::actor::{ActorRef, WeakActorRef};
use kameo::error::Infallible;
use kameo::message::{Context, Message};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What an AgentLoop starts from.
pub struct AgentLoopArgs {
    pub state: Box<SessionState>,
    /// Effects to perform before anything else: the events that close a turn
    /// a dead process left unfinished (see `session::core::restore`).
    pub startup: Vec<Effect>,
    /// The session was loaded from the store, not created.
    pub resumed: bool,
    /// The seq to continue after (0 for a new session).
    pub last_seq: u64,
    /// Inputs accepted before a crash and not started: they run first.
    pub waiting: Vec<AcceptedInput>,
    /// The tool catalog to follow (tools and MCP server statuses); the
    /// session reads its own view of it.
    pub catalog: watch::Receiver<Arc<ToolCatalog>>,
    /// Notices to show once the session has started (about the MCP
    /// servers given with it).
    pub notices: Vec<String>,
    pub topic: Arc<SessionTopic>,
    /// Where busy/idle changes are announced.
    pub lifecycle: Arc<LifecycleTopic>,
    pub model: Arc<dyn ModelClient>,
    pub tools: ActorRef<ToolExecutor>,
    /// Where events are committed.
    pub store: Arc<dyn SessionStore>,
    /// Who performs the session commands (`/new`, `/fork`, ...).
    pub commands: Arc<dyn SessionCommands>,
    /// Who runs the `task` calls' child sessions (`None` in a child: no
    /// grandchildren).
    pub subagents: Option<Arc<dyn Subagents>>,
    pub workspace: PathBuf,
    /// Cancelled when this node fences itself: the session stops at once
    /// (never cancelled for a process of its own).
    pub fence: CancellationToken,
    /// The environment hooks run with (the tools' commands' policy).
    pub environment: crate::settings::EnvironmentPolicy,
    /// Keeps what tool calls change in the workspace (`None`:
    /// `[checkpoints] enabled = false`).
    pub recorder: Option<Arc<crate::checkpoint::Recorder>>,
}

/// Runs a `task` call: a named agent in a child session, to the end of its
/// turn. The set of sessions provides it; the AgentLoop hands each `task`
/// call on instead of sending it to the ToolExecutor.
pub trait Subagents: Send + Sync + 'static {
    /// Run `call` (its arguments: `description`, `prompt`, `agent`) for
    /// the parent session `parent`, which had reached `at_seq`. `report`
    /// gets the child's start and end (for the parent's stream); the
    /// outcome is the child's final text. `cancel` (the parent was
    /// interrupted) interrupts the child.
    fn run(
        &self,
        call: crate::model::ToolCall,
        parent: SubagentParent,
        report: SubagentReport,
        cancel: CancellationToken,
    ) -> BoxFuture<'static, ToolOutcome>;

    /// Pass a decision on child session `child`'s approval request
    /// `request_id` (as the child named it) to the child.
    fn decide(
        &self,
        child: SessionId,
        request_id: String,
        decision: crate::protocol::ApprovalDecision,
    ) -> BoxFuture<'static, Result<(), SessionError>>;
}

/// Where a child's start and end are told (awaited, so the end is told
/// before the call's outcome).
pub type SubagentReport =
    Box<dyn Fn(super::core::SubagentUpdate) -> BoxFuture<'static, ()> + Send + Sync>;

/// What a child session needs of its parent.
#[derive(Clone, Debug)]
pub struct SubagentParent {
    pub session_id: SessionId,
    pub at_seq: u64,
    pub workspace: PathBuf,
    /// The parent's model profile (a child whose agent names none runs
    /// with it).
    pub model: String,
    /// The parent's permission mode: a parent in plan mode has children in
    /// plan mode.
    pub permission_mode: crate::protocol::PermissionMode,
}

/// Performs the session commands the core cannot answer alone: they read or
/// write stored sessions (`/new`, `/sessions`, `/resume`, `/fork`, `/save`,
/// `/load`). The set of sessions provides it; the AgentLoop only hands the
/// commands on and feeds the reply back.
pub trait SessionCommands: Send + Sync + 'static {
    /// Perform `command` for the session `context` describes; the reply is
    /// what the user sees (a notice when it failed).
    fn perform(
        &self,
        command: SessionCommand,
        context: CommandContext,
    ) -> BoxFuture<'static, SystemEvent>;
}

/// What a session command may know of its session.
pub struct CommandContext {
    pub session_id: SessionId,
    pub workspace: PathBuf,
    /// The session's current model profile (a new session starts with it).
    pub model: String,
}

/// The actor.
pub struct AgentLoop {
    session_id: SessionId,
    /// Boxed, as the arguments' state is: kameo's task keeps several
    /// copies of the actor and its arguments side by side, for as long as
    /// the session lives (with the state inline and the start unboxed, a
    /// 28 KiB task a session).
    state: Box<SessionState>,
    topic: Arc<SessionTopic>,
    lifecycle: Arc<LifecycleTopic>,
    model: Arc<dyn ModelClient>,
    tools: ActorRef<ToolExecutor>,
    store: Arc<dyn SessionStore>,
    commands: Arc<dyn SessionCommands>,
    subagents: Option<Arc<dyn Subagents>>,
    workspace: PathBuf,
    /// Where the file tools read and write: the disk, or the front end
    /// that holds the files (`UseFiles`).
    files: Files,
    /// The commands its `bash` calls started in the background: ended
    /// when the actor stops.
    background: BackgroundCommands,
    /// The seq of the last event stamped (and published or being published).
    last_seq: u64,
    /// What the store holds and what it is still owed (seq reservation,
    /// waiting inputs, events a failed commit could not store).
    journal: Journal,
    /// How to stop the model call and the tool batch the core says are
    /// running (nothing else is kept).
    model_calls: HashMap<u64, CancellationToken>,
    tool_batches: HashMap<u64, CancellationToken>,
    /// Every approval request this actor published (to tell a late answer
    /// from a wrong id).
    requested: std::collections::HashSet<String>,
    /// The tool catalog, read again when the session is given MCP servers.
    catalog: watch::Receiver<Arc<ToolCatalog>>,
    last_activity: Instant,
    me: WeakActorRef<AgentLoop>,
    /// The node's fence: every running call's token is a child of it.
    fence: CancellationToken,
    /// This node may no longer drive the session: nothing more is done.
    fenced: bool,
    /// Inputs a crash left waiting that are not submitted to the core yet
    /// (while starting): still waiting, as far as the store is concerned.
    unsubmitted: Vec<InputId>,
    /// Cancelled when the actor stops: ends its watcher of the fence.
    stopped: CancellationToken,
    /// Where the session's hooks run.
    hook_context: HookContext,
    /// Keeps what tool calls change in the workspace.
    recorder: Option<Arc<crate::checkpoint::Recorder>>,
    /// The seq of the running (or last) turn's `user` event: the turn its
    /// checkpoints belong to.
    turn_seq: u64,
    /// Counts the turns ended (their `result`): a background command's
    /// checkpoint is taken when its turn ends.
    turns_ended: watch::Sender<u64>,
    /// The background commands' checkpoints waiting for their turn's end
    /// (a shutdown lets them finish).
    pending_checkpoints: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    /// A session loaded from the store only to be read (a client following
    /// its events) does not announce its load until it is used: its
    /// `session_started` comes before the first input ([`Announce`] or
    /// any input of the core but a catalog change or the shutdown), so
    /// merely viewing a stored session never changes it.
    start_pending: bool,
    /// Holds `agentbus_sessions_busy` one higher while the session is
    /// not idle (dropped with the actor, however it stops).
    busy: Option<crate::metrics::GaugeGuard>,
    /// The spans of the running turn and its work (telemetry).
    traces: TurnTraces,
}

impl Actor for AgentLoop {
    type Args = AgentLoopArgs;
    type Error = Infallible;

    async fn on_start(args: Self::Args, me: ActorRef<Self>) -> Result<Self, Self::Error> {
        // Boxed: the start awaits whole steps of the core, and kameo's task
        // would otherwise keep room for them (10 KiB) all the session's life.
        Box::pin(Self::start(args, me)).await
    }

    async fn on_stop(
        &mut self,
        _: WeakActorRef<Self>,
        _: kameo::error::ActorStopReason,
    ) -> Result<(), Self::Error> {
        for token in self.model_calls.values().chain(self.tool_batches.values()) {
            token.cancel();
        }
        // `SessionEnd` hooks run on their own: nobody waits for them, and
        // the session can no longer tell how they went (they are logged).
        let matched = matched(&self.state.config.hooks, HookEvent::SessionEnd, None);
        if !matched.is_empty() {
            let context = self.hook_context.clone();
            let mode = self.state.permissions.mode.to_string();
            tokio::spawn(async move {
                let mut fields = serde_json::Map::new();
                fields.insert("reason".into(), "other".into());
                let (_, ran) = crate::hooks::run::run(
                    HookEvent::SessionEnd,
                    None,
                    matched,
                    fields,
                    &mode,
                    &context,
                )
                .await;
                for ran in ran {
                    tracing::info!(session = %context.session_id, hook = %ran.handler, outcome = ?ran.outcome, "SessionEnd hook ran");
                }
            });
        }
        self.stopped.cancel();
        self.end_background_commands().await;
        // Watchers get what was said, then the end of the stream.
        self.topic.close();
        Ok(())
    }
}

impl AgentLoop {
    /// What [`Actor::on_start`] does: the actor made from its arguments,
    /// started, and what a crash left waiting submitted.
    async fn start(args: AgentLoopArgs, me: ActorRef<Self>) -> Result<Self, Infallible> {
        let session_name = args.state.session_id.to_string();
        let traces = TurnTraces::new(args.state.session_id.clone());
        let mut this = AgentLoop {
            session_id: args.state.session_id.clone(),
            state: args.state,
            topic: args.topic,
            lifecycle: args.lifecycle,
            model: args.model,
            tools: args.tools,
            store: args.store,
            commands: args.commands,
            subagents: args.subagents,
            workspace: args.workspace.clone(),
            files: Files::Disk,
            background: BackgroundCommands::default(),
            recorder: args.recorder,
            turn_seq: args.last_seq,
            turns_ended: watch::Sender::new(0),
            pending_checkpoints: Default::default(),
            last_seq: args.last_seq,
            journal: Journal::new(
                args.last_seq,
                args.waiting.iter().map(|w| w.input_id).collect(),
            ),
            model_calls: HashMap::new(),
            tool_batches: HashMap::new(),
            requested: Default::default(),
            catalog: args.catalog.clone(),
            last_activity: Instant::now(),
            me: me.downgrade(),
            fence: args.fence.clone(),
            fenced: false,
            unsubmitted: args.waiting.iter().map(|w| w.input_id).collect(),
            stopped: CancellationToken::new(),
            start_pending: false,
            hook_context: HookContext {
                workspace: args.workspace.clone(),
                environment: args.environment,
                session_id: session_name,
            },
            busy: None,
            traces,
        };
        let fenced = me.downgrade();
        fence::watch(args.fence, this.stopped.clone(), || async move {
            if let Some(me) = fenced.upgrade() {
                let _ = me.tell(NodeFenced).await;
            }
        });
        // A plain load (nothing to close, nothing waiting, no notices)
        // announces itself when the session is first used.
        let quiet = args.resumed
            && args.startup.is_empty()
            && args.waiting.is_empty()
            && args.notices.is_empty();
        this.perform_all(args.startup).await;
        if quiet {
            this.start_pending = true;
        } else {
            this.apply(Input::Started {
                resumed: args.resumed,
            })
            .await;
        }
        let mut catalog = args.catalog;
        let current = catalog.borrow_and_update().clone();
        let session = this.session_id.clone();
        this.apply(catalog_input(&current, &session)).await;
        if !args.notices.is_empty() {
            let notices = args.notices;
            this.apply(Input::ServersGiven { notices }).await;
        }
        // What a crash left waiting runs now, in the order it was accepted.
        for AcceptedInput { input_id, input } in args.waiting {
            this.unsubmitted.retain(|id| *id != input_id);
            this.apply(Input::Submit { input_id, input }).await;
        }
        let weak = me.downgrade();
        tokio::spawn(async move {
            while catalog.changed().await.is_ok() {
                let current = catalog.borrow_and_update().clone();
                let Some(me) = weak.upgrade() else { return };
                if me
                    .tell(Feed(catalog_input(&current, &session)))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        });
        Ok(this)
    }
    /// The session stops: the commands it left running in the background
    /// are ended (SIGTERM, then SIGKILL, reaped), said in the log and, when
    /// the session can still emit, in a notice.
    async fn end_background_commands(&mut self) {
        let ended = self.background.end_all().await;
        if ended.is_empty() {
            return;
        }
        let text = format!(
            "The session stopped, so its background {} ended: {}.",
            if ended.len() == 1 {
                "command was"
            } else {
                "commands were"
            },
            ended.join(", ")
        );
        tracing::info!(session = %self.session_id, "{text}");
        if !self.fenced {
            let notice = AgentMessage::System(SystemEvent::bare(
                crate::protocol::SystemSubtype::Notice,
                text,
            ));
            let event = self.stamp(None, notice);
            self.commit_and_publish(vec![event]).await;
        }
    }

    /// Let the background commands' checkpoints being taken finish (their
    /// turn ended; the store is still open), for at most 30 s.
    async fn keep_background_checkpoints(&mut self) {
        let pending: Vec<_> = match self.pending_checkpoints.lock() {
            Ok(mut pending) => pending.drain(..).collect(),
            Err(_) => return,
        };
        // Whether or not the turn ended: look now.
        self.turns_ended.send_modify(|n| *n += 1);
        let all = futures::future::join_all(pending);
        if tokio::time::timeout(Duration::from_secs(30), all)
            .await
            .is_err()
        {
            tracing::warn!(session = %self.session_id, "a background command's checkpoint was not finished in 30 s");
        }
    }

    /// Feed one input through the core and perform what it asks.
    async fn apply(&mut self, input: Input) {
        if self.fenced {
            return;
        }
        if self.start_pending && !matches!(input, Input::CatalogChanged { .. } | Input::Shutdown) {
            self.announce_start().await;
        }
        // The process stops: what the session left running in the
        // background ends now, while its notice can still be stored (the
        // store may be gone by the time the actor itself stops).
        if matches!(input, Input::Shutdown) {
            self.apply_now(input).await;
            self.end_background_commands().await;
            // What they changed until then is kept (the store still open).
            self.keep_background_checkpoints().await;
            return;
        }
        self.apply_now(input).await;
    }

    /// The deferred `session_started` of a quiet load, once.
    async fn announce_start(&mut self) {
        if std::mem::take(&mut self.start_pending) {
            self.apply_now(Input::Started { resumed: true }).await;
        }
    }

    async fn apply_now(&mut self, input: Input) {
        // A tool-list change is not use of the session (idle unloading).
        if !matches!(input, Input::CatalogChanged { .. }) {
            self.last_activity = Instant::now();
        }
        let was_idle = self.state.is_idle();
        let was_waiting = self.state.pending_approvals();
        let effects = step(&mut self.state, input, now_ms());
        self.traces.started(self.running_turn());
        self.perform_all(effects).await;
        self.traces.settle(self.running_turn());
        // Keep only the cancellations of what still runs.
        let (call, batch) = (
            self.state.running_model_call(),
            self.state.running_tool_batch(),
        );
        self.model_calls.retain(|id, _| Some(*id) == call);
        self.tool_batches.retain(|id, _| Some(*id) == batch);
        let waiting = self.state.pending_approvals();
        if waiting != was_waiting {
            self.lifecycle.announce_approvals(&self.session_id, waiting);
        }
        let idle = self.state.is_idle();
        if idle {
            self.busy = None;
        } else if self.busy.is_none() {
            self.busy = Some(crate::metrics::get().session_busy());
        }
        if idle != was_idle {
            let kind = if idle {
                LifecycleKind::Idle
            } else {
                LifecycleKind::Busy
            };
            self.lifecycle.announce(&self.session_id, kind);
        }
    }

    /// Perform effects in order. Consecutive events are stamped and
    /// committed as one batch before any of them is published.
    async fn perform_all(&mut self, effects: Vec<Effect>) {
        let mut batch = Vec::new();
        for effect in effects {
            match effect {
                Effect::Emit { turn_id, message } => {
                    count(&message);
                    self.observe(turn_id, &message);
                    batch.push(self.stamp(turn_id, message))
                }
                other => {
                    self.commit_and_publish(std::mem::take(&mut batch)).await;
                    self.perform(other).await;
                }
            }
        }
        self.commit_and_publish(batch).await;
    }

    /// Hooks that watch what the session says run beside it: an approval
    /// request (`PermissionRequest`, which may answer it, and
    /// `Notification`), a compaction (`PreCompact`, `PostCompact`). Their
    /// reports come back as [`Input::HooksRan`].
    fn observe(&self, turn_id: Option<InputId>, message: &AgentMessage) {
        use crate::protocol::SystemSubtype;
        let hooks = &self.state.config.hooks;
        if hooks.is_empty() {
            return;
        }
        let mut runs: Vec<(
            HookEvent,
            Option<String>,
            serde_json::Map<String, serde_json::Value>,
        )> = Vec::new();
        let mut request = None;
        match message {
            AgentMessage::ApprovalRequest(asked) if asked.child_session.is_none() => {
                let workspace = self.hook_context.workspace.display().to_string();
                let mut fields =
                    crate::session::core::hooks::tool_fields(&asked.name, &asked.input, &workspace);
                fields.insert("reason".into(), asked.reason.clone().into());
                runs.push((
                    HookEvent::PermissionRequest,
                    Some(asked.name.clone()),
                    fields,
                ));
                let mut note = serde_json::Map::new();
                note.insert(
                    "message".into(),
                    format!("agentbus needs your permission to use {}", asked.name).into(),
                );
                note.insert("notification_type".into(), "permission_prompt".into());
                runs.push((HookEvent::Notification, None, note));
                request = Some(asked.request_id.clone());
            }
            AgentMessage::System(s) if s.subtype == SystemSubtype::Compacting => {
                let mut fields = serde_json::Map::new();
                fields.insert("trigger".into(), "auto".into());
                runs.push((HookEvent::PreCompact, None, fields));
            }
            AgentMessage::System(s) if s.subtype == SystemSubtype::Compacted => {
                let mut fields = serde_json::Map::new();
                fields.insert("trigger".into(), "auto".into());
                runs.push((HookEvent::PostCompact, None, fields));
            }
            _ => return,
        }
        let Some(me) = self.me.upgrade() else { return };
        for (event, tool, fields) in runs {
            let matched = matched(hooks, event, tool.as_deref());
            if matched.is_empty() {
                continue;
            }
            let (me, context) = (me.clone(), self.hook_context.clone());
            let mode = self.state.permissions.mode.to_string();
            let request = request
                .clone()
                .filter(|_| event == HookEvent::PermissionRequest);
            tokio::spawn(async move {
                let (answer, ran) = crate::hooks::run::run(
                    event,
                    tool.as_deref(),
                    matched,
                    fields,
                    &mode,
                    &context,
                )
                .await;
                let _ = me.tell(Feed(Input::HooksRan { turn_id, ran })).await;
                // A hook that answers the request answers it as a user
                // would; the first answer wins.
                let decision = match answer.decision {
                    Some(HookDecision::Allow) => Some(crate::protocol::ApprovalDecision::new(
                        crate::protocol::ApprovalChoice::AllowOnce,
                    )),
                    Some(HookDecision::Deny | HookDecision::Block) => {
                        Some(crate::protocol::ApprovalDecision::reject(format!(
                            "a PermissionRequest hook denied it: {}",
                            answer.reason.unwrap_or_else(|| "no reason given".into())
                        )))
                    }
                    _ => None,
                };
                if let (Some(request_id), Some(decision)) = (request, decision) {
                    let _ = me
                        .tell(Feed(Input::Approval {
                            request_id,
                            decision,
                        }))
                        .await;
                }
            });
        }
    }

    fn stamp(&mut self, turn_id: Option<InputId>, message: AgentMessage) -> Arc<EventEnvelope> {
        self.last_seq += 1;
        match &message {
            AgentMessage::ApprovalRequest(request) => {
                self.requested.insert(request.request_id.clone());
            }
            AgentMessage::User(_) => self.turn_seq = self.last_seq,
            AgentMessage::Result(_) => self.turns_ended.send_modify(|n| *n += 1),
            _ => {}
        }
        self.state.context.seqs.observe(&message, self.last_seq);
        self.traces.saw(turn_id, &message, self.last_seq);
        Arc::new(EventEnvelope {
            session_id: self.session_id.clone(),
            seq: self.last_seq,
            turn_id,
            at: chrono::Utc::now(),
            message,
        })
    }

    async fn commit_and_publish(&mut self, mut batch: Vec<Arc<EventEnvelope>>) {
        if self.fenced {
            return;
        }
        let queued: Vec<InputId> = self
            .unsubmitted
            .iter()
            .copied()
            .chain(self.state.queue.iter().map(|q| q.input_id))
            .collect();
        let busy = !self.state.is_idle() || !queued.is_empty();
        let commit = self.journal.commit_for(&batch, queued, busy);
        if !commit.is_empty() {
            let started = Instant::now();
            let span = self
                .traces
                .store_commit(batch.last().and_then(|e| e.turn_id), batch.len());
            let committed = fence::commit_unless_fenced(
                &self.fence,
                self.store.as_ref(),
                &self.session_id,
                commit.clone(),
            )
            .await;
            let commit_outcome = match &committed {
                Ok(()) => crate::metrics::Outcome::Ok,
                Err(_) => crate::metrics::Outcome::Error,
            };
            crate::spans::record_commit(
                &span,
                committed.as_ref().err().map(|e| match e {
                    StoreError::Fenced { .. } => "fenced",
                    _ => "store_error",
                }),
            );
            drop(span);
            crate::metrics::get()
                .store_commit_duration
                .get_or_create(&crate::metrics::CommitLabels {
                    outcome: commit_outcome,
                })
                .observe(started.elapsed().as_secs_f64());
            let outcome = match committed {
                Ok(()) => self.journal.saved(commit),
                Err(StoreError::Fenced { reason, .. }) => {
                    crate::metrics::get().cluster_fencing_refusals.inc();
                    self.stop_fenced(&reason);
                    return;
                }
                Err(failure) => {
                    tracing::error!(session = %self.session_id, "could not save events: {failure}");
                    self.journal.failed(commit, failure.to_string())
                }
            };
            if let Some(message) = self.store_message(outcome) {
                let turn_id = batch.last().and_then(|e| e.turn_id);
                let event = self.stamp(turn_id, message);
                // Stored with the next commit, like the events before it.
                self.journal.owe(event.clone());
                batch.push(event);
            }
        }
        for event in batch {
            tracing::trace!(session = %self.session_id, seq = event.seq, kind = event.message.type_name(), "event");
            crate::metrics::get()
                .events_published
                .get_or_create(&crate::metrics::EventLabels {
                    kind: event.message.type_name(),
                })
                .inc();
            if let Err(refused) = self.topic.publish(event) {
                // Only this actor publishes on its topic, so this is a bug.
                tracing::error!(session = %self.session_id, seq = refused.seq, "event refused by the topic: out of order");
            }
        }
    }

    /// This node may no longer drive the session (`reason`): stop at once
    /// (`session/fence.rs` says what that means). Running calls are
    /// cancelled, nothing more is committed or published but the last word
    /// for watchers; then the actor stops and the stream ends.
    fn stop_fenced(&mut self, reason: &str) {
        if self.fenced {
            return;
        }
        self.fenced = true;
        tracing::warn!(session = %self.session_id, "stopping the session on this node: {reason}");
        for token in self.model_calls.values().chain(self.tool_batches.values()) {
            token.cancel();
        }
        let seq = self.topic.last_seq() + 1;
        if let Some(event) =
            fence::last_word(&self.session_id, seq, self.journal.reserved_seq(), reason)
        {
            let _ = self.topic.publish(Arc::new(event));
        }
        if let Some(me) = self.me.upgrade() {
            tokio::spawn(async move {
                let _ = me.stop_gracefully().await;
            });
        }
    }

    /// What the user is told of a commit: an `error` (kind `store`) when an
    /// outage starts, a notice when it ends.
    fn store_message(&self, outcome: Outcome) -> Option<AgentMessage> {
        match outcome {
            Outcome::Saved | Outcome::StillFailing => None,
            Outcome::FirstFailure { reason } => Some(AgentMessage::Error(ErrorEvent {
                kind: ErrorKind::Store,
                message: format!(
                    "could not save this session's events ({reason}); they are shown, and saved as soon as the store works again — until then a crash would lose them"
                ),
            })),
            Outcome::Recovered { late } => {
                tracing::info!(session = %self.session_id, late, "the store works again");
                Some(AgentMessage::System(SystemEvent::bare(
                    crate::protocol::SystemSubtype::Notice,
                    if late == 1 {
                        "The store works again: the event it could not save earlier is saved now."
                            .to_string()
                    } else {
                        format!(
                            "The store works again: the {late} events it could not save earlier are saved now."
                        )
                    },
                )))
            }
        }
    }

    async fn perform(&mut self, effect: Effect) {
        if self.fenced {
            return;
        }
        match effect {
            Effect::Emit { turn_id, message } => {
                count(&message);
                self.observe(turn_id, &message);
                let event = self.stamp(turn_id, message);
                self.commit_and_publish(vec![event]).await;
            }
            Effect::CallModel {
                request_id,
                request,
            } => self.start_model_call(request_id, request),
            Effect::CancelModel { request_id } => {
                if let Some(token) = self.model_calls.remove(&request_id) {
                    token.cancel();
                }
            }
            Effect::RunTools { batch_id, calls } => self.start_tools(batch_id, calls),
            Effect::CancelTools { batch_id } => {
                if let Some(token) = self.tool_batches.remove(&batch_id) {
                    token.cancel();
                }
            }
            Effect::SessionCommand { input_id, command } => {
                self.start_session_command(input_id, command)
            }
            Effect::RunHook {
                hook_id,
                event,
                tool,
                fields,
            } => {
                let subject = tool.clone().or_else(|| {
                    fields
                        .get("source")
                        .and_then(|s| s.as_str())
                        .map(str::to_string)
                });
                let matched = matched(&self.state.config.hooks, event, subject.as_deref());
                let Some(me) = self.me.upgrade() else { return };
                let context = self.hook_context.clone();
                let mode = self.state.permissions.mode.to_string();
                tokio::spawn(async move {
                    let (answer, ran) = crate::hooks::run::run(
                        event,
                        tool.as_deref(),
                        matched,
                        fields,
                        &mode,
                        &context,
                    )
                    .await;
                    let done = Input::HookDone {
                        hook_id,
                        answer,
                        ran,
                    };
                    let _ = me.tell(Feed(done)).await;
                });
            }
            Effect::ApprovalTimer {
                request_id,
                after_ms,
            } => {
                let Some(me) = self.me.upgrade() else { return };
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(after_ms)).await;
                    let _ = me.tell(Feed(Input::ApprovalTimedOut { request_id })).await;
                });
            }
            Effect::McpWaitTimer { turn_id, after_ms } => {
                let me = self.me.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(after_ms)).await;
                    if let Some(me) = me.upgrade() {
                        let _ = me.tell(Feed(Input::McpWaitTimedOut { turn_id })).await;
                    }
                });
            }
            Effect::SaveRule { rule } => {
                let Some(me) = self.me.upgrade() else { return };
                let workspace = self.workspace.clone();
                tokio::spawn(async move {
                    let saving = rule.clone();
                    let result = tokio::task::spawn_blocking(move || {
                        super::project_rules::save_allow_rule(&workspace, &saving)
                    })
                    .await
                    .unwrap_or_else(|e| Err(e.to_string()))
                    .map(|path| path.display().to_string());
                    let _ = me.tell(Feed(Input::RuleSaved { rule, result })).await;
                });
            }
        }
    }

    /// Run a session command (store work, files) on a task of its own; its
    /// reply comes back as [`Input::CommandDone`].
    fn start_session_command(&mut self, input_id: InputId, command: SessionCommand) {
        let Some(me) = self.me.upgrade() else { return };
        let context = CommandContext {
            session_id: self.session_id.clone(),
            workspace: self.workspace.clone(),
            model: self.state.model.clone(),
        };
        let reply = self.commands.perform(command, context);
        tokio::spawn(async move {
            let reply = reply.await;
            let _ = me.tell(Feed(Input::CommandDone { input_id, reply })).await;
        });
    }

    fn start_model_call(&mut self, request_id: u64, request: ModelRequest) {
        let Some(me) = self.me.upgrade() else { return };
        let token = self.fence.child_token();
        self.model_calls.insert(request_id, token.clone());
        let span = self
            .traces
            .model_call(self.running_turn(), &request, &self.state.config.models);
        let mut stream = self.model.stream(request);
        tokio::spawn(async move {
            let mut trace = crate::spans::ModelCallTrace::new(span);
            loop {
                let item = tokio::select! {
                    biased;
                    _ = token.cancelled() => return,
                    item = stream.next() => item,
                };
                trace.saw(&item);
                let (input, last) = model_input(request_id, item);
                if me.tell(Feed(input)).await.is_err() || last {
                    return;
                }
            }
        });
    }

    /// Run a `task` call: its child session reports its start and end, and
    /// its final text comes back as the call's outcome.
    fn start_subagent(
        &self,
        subagents: Arc<dyn Subagents>,
        batch_id: u64,
        call: crate::model::ToolCall,
        token: &CancellationToken,
        me: ActorRef<AgentLoop>,
    ) {
        let parent = SubagentParent {
            session_id: self.session_id.clone(),
            at_seq: self.last_seq,
            workspace: self.workspace.clone(),
            model: self.state.model.clone(),
            permission_mode: self.state.permissions.mode,
        };
        let reporter = me.clone();
        let report: SubagentReport = Box::new(move |update| {
            let reporter = reporter.clone();
            Box::pin(async move {
                let _ = reporter
                    .tell(Feed(Input::Subagent { batch_id, update }))
                    .await;
            })
        });
        let call_id = call.id.clone();
        let span = self
            .traces
            .tool_call(self.running_turn(), &call, &self.state.tools);
        let run = subagents.run(call, parent, report, token.clone());
        tokio::spawn(async move {
            let outcome = run.await;
            let (ended, error) = tool_outcome(&outcome);
            crate::spans::record_tool_outcome(&span, ended, error);
            drop(span);
            let finished = Input::ToolFinished {
                batch_id,
                call_id,
                outcome,
                checkpoint: None,
            };
            let _ = me.tell(Feed(finished)).await;
        });
    }

    /// Run calls of batch `batch_id` (a batch may start in several parts:
    /// a call that waited for approval joins its batch later).
    fn start_tools(&mut self, batch_id: u64, calls: Vec<GrantedCall>) {
        let Some(me) = self.me.upgrade() else { return };
        let fence = &self.fence;
        let token = self
            .tool_batches
            .entry(batch_id)
            .or_insert_with(|| fence.child_token())
            .clone();
        for call in calls {
            let me = me.clone();
            if let Some(subagents) = self
                .subagents
                .as_ref()
                .filter(|_| call.call.name == crate::session::core::agents::TASK_TOOL)
            {
                self.start_subagent(subagents.clone(), batch_id, call.call, &token, me);
                continue;
            }
            let executor = self.tools.clone();
            let call_id = call.call.id.clone();
            let checkpoint = self.checkpoint_for(&call.call);
            // A background command changes files after its call returned:
            // what it changed is looked at when the turn ends.
            let background = call.call.name == "bash"
                && call.call.input.get("run_in_background") == Some(&serde_json::Value::Bool(true));
            let mut turn_end = self.turns_ended.subscribe();
            let pending = self.pending_checkpoints.clone();
            let after = AfterTool::new(
                &self.state.config.hooks,
                &call.call,
                self.hook_context.clone(),
                self.state.permissions.mode.to_string(),
            );
            let turn_id = self.running_turn();
            let span = self
                .traces
                .tool_call(turn_id, &call.call, &self.state.tools);
            let run = RunTool::new(
                call,
                self.workspace.clone(),
                token.clone(),
                self.files.clone(),
                self.background.clone(),
            )
            .by(self.session_id.clone())
            .traced(span.clone());
            let task = async move {
                let before = match &checkpoint {
                    Some(c) => c.before().await,
                    None => None,
                };
                let mut outcome = executor
                    .ask(run)
                    .await
                    .unwrap_or_else(ToolOutcome::executor_unavailable);
                let checkpoint = match (checkpoint, before) {
                    (Some(c), Some(before)) if background => {
                        let look = tokio::spawn(async move {
                            // Ended, or the session stopped: look now.
                            let _ = turn_end.changed().await;
                            c.after(before).await;
                        });
                        if let Ok(mut pending) = pending.lock() {
                            pending.retain(|h| !h.is_finished());
                            pending.push(look);
                        }
                        None
                    }
                    (Some(c), Some(before)) => c.after(before).await,
                    _ => None,
                };
                if let Some(after) = after {
                    let ran = after.run(&mut outcome).await;
                    if !ran.is_empty() {
                        let _ = me.tell(Feed(Input::HooksRan { turn_id, ran })).await;
                    }
                }
                let finished = Input::ToolFinished {
                    batch_id,
                    call_id,
                    outcome,
                    checkpoint,
                };
                let _ = me.tell(Feed(finished)).await;
            };
            tokio::spawn(tracing::Instrument::instrument(task, span));
        }
    }

    /// The turn the core says runs.
    fn running_turn(&self) -> Option<InputId> {
        self.state.turn.as_ref().map(|t| t.id)
    }

    /// How `call`'s changes are kept, if it can change files (and the
    /// files are on the disk, not held by the front end).
    fn checkpoint_for(&self, call: &crate::model::ToolCall) -> Option<CallCheckpoint> {
        let recorder = self.recorder.clone()?;
        if !matches!(self.files, Files::Disk) {
            return None;
        }
        let writing_mcp = self.state.tools.iter().any(|t| {
            t.name == call.name
                && matches!(t.origin, crate::model::ToolOrigin::Mcp { writes: true, .. })
        });
        let scope = crate::checkpoint::recorder::scope(
            &call.name,
            &call.input,
            &self.workspace,
            writing_mcp,
        )?;
        Some(CallCheckpoint {
            recorder,
            scope,
            turn_seq: self.turn_seq,
            call_id: call.id.clone(),
            tool: call.name.clone(),
        })
    }
}

/// How a `task` call ended, for its span: `ok`, `cancelled`, or `error`
/// with its class.
fn tool_outcome(outcome: &ToolOutcome) -> (&'static str, Option<&'static str>) {
    if !outcome.is_error {
        ("ok", None)
    } else if outcome.output == crate::model::INTERRUPTED {
        ("cancelled", None)
    } else {
        ("error", Some("tool_error"))
    }
}

/// What the process's figures count of an event the session says: a
/// turn's end, by stop reason; an approval asked, and how it was settled.
fn count(message: &AgentMessage) {
    let figures = crate::metrics::get();
    match message {
        AgentMessage::Result(result) => figures.turn_ended(result.stop_reason.as_str()),
        AgentMessage::ApprovalRequest(_) => {
            figures.approvals_asked.inc();
        }
        AgentMessage::System(system) => {
            if let Some(resolved) = system.payload::<crate::protocol::ApprovalResolved>() {
                let outcome = serde_json::to_value(resolved.outcome)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                figures
                    .approvals_answered
                    .get_or_create(&crate::metrics::ApprovalLabels { outcome })
                    .inc();
            }
        }
        _ => {}
    }
}

/// One tool call's checkpoint: looked at before it runs, kept after.
struct CallCheckpoint {
    recorder: Arc<crate::checkpoint::Recorder>,
    scope: crate::checkpoint::Scope,
    turn_seq: u64,
    call_id: String,
    tool: String,
}

impl CallCheckpoint {
    async fn before(&self) -> Option<crate::checkpoint::recorder::Before> {
        match self.recorder.before(self.scope.clone()).await {
            Ok(before) => Some(before),
            Err(e) => {
                tracing::warn!(tool = %self.tool, "the call runs without a checkpoint: {e}");
                None
            }
        }
    }

    async fn after(
        self,
        before: crate::checkpoint::recorder::Before,
    ) -> Option<crate::protocol::checkpoint::CheckpointRef> {
        let kept = self
            .recorder
            .after(before, self.turn_seq, Some(self.call_id), &self.tool)
            .await;
        kept.unwrap_or_else(|e| {
            tracing::warn!(tool = %self.tool, "what the call changed was not kept: {e}");
            None
        })
    }
}

/// The hooks `event` about `subject` runs, with where each came from.
fn matched(set: &HookSet, event: HookEvent, subject: Option<&str>) -> Vec<Matched> {
    crate::session::core::hooks::matching(set, event, subject)
        .flat_map(|group| {
            group.handlers.iter().map(|handler| Matched {
                handler: handler.clone(),
                source: group.source.clone(),
            })
        })
        .collect()
}

/// The `PostToolUse` (or `PostToolUseFailure`) hooks of one tool call: run
/// once it ended, what they say for the model joins its result.
struct AfterTool {
    call: crate::model::ToolCall,
    succeeded: Vec<Matched>,
    failed: Vec<Matched>,
    context: HookContext,
    mode: String,
}

impl AfterTool {
    /// `None` when no hook runs after `call`, however it ends.
    fn new(
        set: &HookSet,
        call: &crate::model::ToolCall,
        context: HookContext,
        mode: String,
    ) -> Option<Self> {
        let succeeded = matched(set, HookEvent::PostToolUse, Some(&call.name));
        let failed = matched(set, HookEvent::PostToolUseFailure, Some(&call.name));
        (!succeeded.is_empty() || !failed.is_empty()).then(|| AfterTool {
            call: call.clone(),
            succeeded,
            failed,
            context,
            mode,
        })
    }

    /// Run the hooks for `outcome`; what they tell the model is added to
    /// its output. Returns their reports.
    async fn run(self, outcome: &mut ToolOutcome) -> Vec<crate::protocol::hook::HookRan> {
        let (event, matched) = if outcome.is_error {
            (HookEvent::PostToolUseFailure, self.failed)
        } else {
            (HookEvent::PostToolUse, self.succeeded)
        };
        if matched.is_empty() {
            return Vec::new();
        }
        let workspace = self.context.workspace.display().to_string();
        let mut fields =
            crate::session::core::hooks::tool_fields(&self.call.name, &self.call.input, &workspace);
        fields.insert("tool_use_id".into(), self.call.id.clone().into());
        if outcome.is_error {
            fields.insert("error".into(), outcome.output.clone().into());
        } else {
            fields.insert(
                "tool_response".into(),
                serde_json::json!({"output": outcome.output}),
            );
        }
        let (answer, ran) = crate::hooks::run::run(
            event,
            Some(&self.call.name),
            matched,
            fields,
            &self.mode,
            &self.context,
        )
        .await;
        if answer.decision == Some(HookDecision::Block) {
            let reason = answer.reason.unwrap_or_default();
            outcome
                .output
                .push_str(&format!("\n\n{event} hook: {reason}"));
        }
        for context in answer.context {
            outcome
                .output
                .push_str(&format!("\n\n{event} hook context: {context}"));
        }
        ran
    }
}

/// What session `session` sees of `catalog`, as the core takes it.
fn catalog_input(catalog: &ToolCatalog, session: &SessionId) -> Input {
    let view = catalog.view(session);
    Input::CatalogChanged {
        tools: view.tools.clone(),
        servers: view.servers.clone(),
        first_start: view.first_start.clone(),
        prompts: view.prompts.clone(),
    }
}

/// Queue a query or control command; replies with its input id. Events it
/// causes carry that id as `turn_id`.
#[derive(Debug)]
pub struct Submit(pub UserInput);

/// Any other input of the core, as it is: [`Input::Interrupt`] (cancel the
/// running turn now), [`Input::Shutdown`] (the process is stopping: cancel
/// the running turn, answer queued inputs without running them — all of it
/// committed before this returns), and what the actor's own tasks report.
#[derive(Debug)]
pub struct Feed(pub Input);

/// A copy of the session state.
#[derive(Debug)]
pub struct Snapshot;

/// How long the session has been idle (nothing running, nothing queued);
/// `None` while it is busy.
#[derive(Debug)]
pub struct IdleFor;

/// How many tool calls wait for the user's approval.
#[derive(Debug)]
pub struct PendingApprovals;

impl Message<PendingApprovals> for AgentLoop {
    type Reply = u32;

    async fn handle(
        &mut self,
        _: PendingApprovals,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        self.state.pending_approvals()
    }
}

impl Message<Submit> for AgentLoop {
    type Reply = Result<InputId, SessionError>;

    /// Stores the input before anything else: once this answers, a crash
    /// cannot lose it. Refused (and nothing queued) when it cannot be stored.
    async fn handle(
        &mut self,
        Submit(input): Submit,
        _: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        if self.fenced {
            return Err(SessionError::Store(StoreError::Fenced {
                id: self.session_id.clone(),
                reason: "this node stopped driving it".to_string(),
            }));
        }
        let input_id = self.state.next_input_id();
        let accepted = AcceptedInput {
            input_id,
            input: input.clone(),
        };
        if let Err(failure) = self.store.accept_input(&self.session_id, accepted).await {
            if let StoreError::Fenced { reason, .. } = &failure {
                crate::metrics::get().cluster_fencing_refusals.inc();
                self.stop_fenced(reason);
                return Err(SessionError::Store(failure));
            }
            tracing::error!(session = %self.session_id, "could not store an input: {failure}");
            return Err(SessionError::NotAccepted(failure));
        }
        self.journal.accepted(input_id);
        self.apply(Input::Submit { input_id, input }).await;
        Ok(input_id)
    }
}

/// Announce a quiet load now (its `session_started`), if it was not yet:
/// the session was opened to be driven, not only read.
#[derive(Debug)]
pub struct Announce;

impl Message<Announce> for AgentLoop {
    type Reply = ();

    async fn handle(&mut self, _: Announce, _: &mut Context<Self, Self::Reply>) {
        if !self.fenced {
            self.announce_start().await;
        }
    }
}

/// The node fenced itself: stop the session here at once (sent by the
/// actor's own watcher of its fence token).
#[derive(Debug)]
struct NodeFenced;

impl Message<NodeFenced> for AgentLoop {
    type Reply = ();

    async fn handle(&mut self, _: NodeFenced, _: &mut Context<Self, Self::Reply>) {
        self.stop_fenced(fence::NODE_FENCED);
    }
}

impl Message<Feed> for AgentLoop {
    type Reply = ();

    async fn handle(&mut self, Feed(input): Feed, _: &mut Context<Self, Self::Reply>) {
        self.apply(input).await;
    }
}

/// Answer approval request `request_id` (bypassing the queue). Refused
/// when no call waits for it: unknown, or settled already (the first
/// answer wins).
#[derive(Debug)]
pub struct Decide {
    pub request_id: String,
    pub decision: crate::protocol::ApprovalDecision,
}

impl Message<Decide> for AgentLoop {
    type Reply = Result<(), crate::session::SessionError>;

    async fn handle(&mut self, decide: Decide, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        use crate::session::core::permission::approval;
        // A child's request, re-told here as `CHILD/REQUEST`: the child
        // decides.
        if let Some((child, request_id)) = decide.request_id.split_once('/')
            && let Some(subagents) = &self.subagents
            && self.requested.contains(&decide.request_id)
        {
            return subagents
                .decide(
                    SessionId::from(child),
                    request_id.to_string(),
                    decide.decision,
                )
                .await;
        }
        let waiting = approval::waiting(&self.state);
        if !waiting.contains(&decide.request_id) {
            return Err(if self.requested.contains(&decide.request_id) {
                crate::session::SessionError::ApprovalSettled {
                    request_id: decide.request_id,
                }
            } else {
                crate::session::SessionError::UnknownApproval {
                    request_id: decide.request_id,
                    waiting,
                }
            });
        }
        self.apply(Input::Approval {
            request_id: decide.request_id,
            decision: decide.decision,
        })
        .await;
        Ok(())
    }
}

/// From now on the file tools of this session read and write through
/// these `Files` (a front end that holds the files, or the disk again).
/// Calls already running keep the access they started with.
pub struct UseFiles(pub Files);

impl Message<UseFiles> for AgentLoop {
    type Reply = ();

    async fn handle(&mut self, UseFiles(files): UseFiles, _: &mut Context<Self, Self::Reply>) {
        tracing::debug!(session = %self.session_id, ?files, "file tools use new file access");
        self.files = files;
    }
}

/// The session was given MCP servers (or had some taken away): read the
/// catalog now — so the next model call offers what it was given, whatever
/// the catalog's watcher has delivered so far —, let the next turn wait for
/// those on their first start, and show `0`'s notices.
pub struct ServersGiven(pub Vec<String>);

impl Message<ServersGiven> for AgentLoop {
    type Reply = ();

    async fn handle(
        &mut self,
        ServersGiven(notices): ServersGiven,
        _: &mut Context<Self, Self::Reply>,
    ) {
        let current = self.catalog.borrow().clone();
        let session = self.session_id.clone();
        self.apply(catalog_input(&current, &session)).await;
        self.apply(Input::ServersGiven { notices }).await;
    }
}

impl Message<Snapshot> for AgentLoop {
    /// (Never an error: the `Result` only lets the actor reply with a state.)
    type Reply = Result<SessionState, Infallible>;

    async fn handle(&mut self, _: Snapshot, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        Ok(SessionState::clone(&self.state))
    }
}

impl Message<IdleFor> for AgentLoop {
    type Reply = Option<Duration>;

    async fn handle(&mut self, _: IdleFor, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.state.is_idle().then(|| self.last_activity.elapsed())
    }
}
