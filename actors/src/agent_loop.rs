//! AgentLoop actor: drives one session.
//!
//! Owns the session's [`SessionState`] and is the ONLY code that calls
//! [`step`] and the only publisher on the session's topic. Accepts
//! [`Submit`] (queries and control commands; replies with the input id),
//! [`Interrupt`], [`Snapshot`], [`IdleFor`], the signals its own tasks send
//! back ([`ModelSignal`], [`ToolSignal`]) and [`CatalogSignal`] when the
//! tools or MCP servers change.
//!
//! Performs the effects `step` returns: stamps each event with the next
//! `seq`; commits the persisted ones to the Store (one transaction per
//! step) BEFORE publishing anything; starts model calls and tool batches as
//! cancellable tasks; performs store-backed session commands.
//!
//! Never awaits a model stream or a tool inside a handler — those run on
//! tasks that report back by message — so an `Interrupt` is handled at once.
//! Never swallows a store failure: the events are still shown, followed by
//! an `error` event of kind `store`.

use crate::bus::{LifecycleTopic, SessionTopic};
use crate::model::{ModelEvent, ModelRequest, ToolCall, ToolOutcome};
use crate::protocol::{
    AgentMessage, ErrorEvent, ErrorKind, EventEnvelope, InputId, LifecycleKind, SessionId,
    SystemEvent, UserInput,
};
use crate::provider::ModelClient;
use crate::session::{Effect, Input, SessionCommand, SessionState, step};
use crate::session_commands::{self, CommandContext};
use crate::store::{Append, Store};
use crate::tool_executor::{RunTool, ToolCatalog, ToolExecutor};
use futures::StreamExt;
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
    pub state: SessionState,
    /// Effects to perform before anything else: the events that close a turn
    /// a dead process left unfinished (see `session::restore`).
    pub startup: Vec<Effect>,
    /// The session was loaded from the store, not created.
    pub resumed: bool,
    /// The seq of the last stored event (0 for a new session).
    pub last_seq: u64,
    /// The tool catalog to follow (tools and MCP server statuses).
    pub catalog: watch::Receiver<Arc<ToolCatalog>>,
    pub topic: Arc<SessionTopic>,
    /// Where busy/idle changes are announced.
    pub lifecycle: Arc<LifecycleTopic>,
    pub model: Arc<dyn ModelClient>,
    pub tools: ActorRef<ToolExecutor>,
    pub store: ActorRef<Store>,
    pub workspace: PathBuf,
}

/// The actor.
pub struct AgentLoop {
    session_id: SessionId,
    state: Option<SessionState>,
    topic: Arc<SessionTopic>,
    lifecycle: Arc<LifecycleTopic>,
    model: Arc<dyn ModelClient>,
    tools: ActorRef<ToolExecutor>,
    store: ActorRef<Store>,
    workspace: PathBuf,
    /// The seq of the last event stamped (and published or being published).
    last_seq: u64,
    model_calls: HashMap<u64, CancellationToken>,
    tool_batches: HashMap<u64, CancellationToken>,
    last_activity: Instant,
    me: WeakActorRef<AgentLoop>,
}

impl Actor for AgentLoop {
    type Args = AgentLoopArgs;
    type Error = Infallible;

    async fn on_start(args: Self::Args, me: ActorRef<Self>) -> Result<Self, Self::Error> {
        let mut this = AgentLoop {
            session_id: args.state.session_id.clone(),
            state: Some(args.state),
            topic: args.topic,
            lifecycle: args.lifecycle,
            model: args.model,
            tools: args.tools,
            store: args.store,
            workspace: args.workspace,
            last_seq: args.last_seq,
            model_calls: HashMap::new(),
            tool_batches: HashMap::new(),
            last_activity: Instant::now(),
            me: me.downgrade(),
        };
        this.perform_all(args.startup).await;
        this.apply(Input::Started {
            resumed: args.resumed,
        })
        .await;
        let mut catalog = args.catalog;
        let current = catalog.borrow_and_update().clone();
        this.apply(catalog_input(&current)).await;
        let weak = me.downgrade();
        tokio::spawn(async move {
            while catalog.changed().await.is_ok() {
                let current = catalog.borrow_and_update().clone();
                let Some(me) = weak.upgrade() else { return };
                if me.tell(CatalogSignal(current)).await.is_err() {
                    return;
                }
            }
        });
        Ok(this)
    }

    async fn on_stop(
        &mut self,
        _: WeakActorRef<Self>,
        _: kameo::error::ActorStopReason,
    ) -> Result<(), Self::Error> {
        for token in self.model_calls.values().chain(self.tool_batches.values()) {
            token.cancel();
        }
        // Watchers get what was said, then the end of the stream.
        self.topic.close();
        Ok(())
    }
}

impl AgentLoop {
    /// Feed one input through the core and perform what it asks.
    async fn apply(&mut self, input: Input) {
        // A tool-list change is not use of the session (idle unloading).
        if !matches!(input, Input::CatalogChanged { .. }) {
            self.last_activity = Instant::now();
        }
        let was_idle = self.state.as_ref().is_some_and(|s| s.is_idle());
        let Some(state) = self.state.take() else {
            return;
        };
        let (state, effects) = step(state, input, now_ms());
        self.state = Some(state);
        self.perform_all(effects).await;
        let idle = self.state.as_ref().is_some_and(|s| s.is_idle());
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
                Effect::Emit { turn_id, message } => batch.push(self.stamp(turn_id, message)),
                other => {
                    self.commit_and_publish(std::mem::take(&mut batch)).await;
                    self.perform(other).await;
                }
            }
        }
        self.commit_and_publish(batch).await;
    }

    fn stamp(&mut self, turn_id: Option<InputId>, message: AgentMessage) -> Arc<EventEnvelope> {
        self.last_seq += 1;
        Arc::new(EventEnvelope {
            session_id: self.session_id.clone(),
            seq: self.last_seq,
            turn_id,
            at: chrono::Utc::now(),
            message,
        })
    }

    async fn commit_and_publish(&mut self, mut batch: Vec<Arc<EventEnvelope>>) {
        let persisted: Vec<_> = batch
            .iter()
            .filter(|e| e.message.is_persisted())
            .cloned()
            .collect();
        if !persisted.is_empty() {
            let append = Append {
                id: self.session_id.clone(),
                events: persisted,
            };
            let failure = match self.store.ask(append).await {
                Ok(()) => None,
                Err(kameo::error::SendError::HandlerError(e)) => Some(e.to_string()),
                Err(e) => Some(format!("the store is not running ({e})")),
            };
            if let Some(failure) = failure {
                tracing::error!(session = %self.session_id, "could not save events: {failure}");
                let turn_id = batch.last().and_then(|e| e.turn_id);
                batch.push(self.stamp(
                    turn_id,
                    AgentMessage::Error(ErrorEvent {
                        kind: ErrorKind::Store,
                        message: format!(
                            "could not save this session's events, they are shown but not stored: {failure}"
                        ),
                    }),
                ));
            }
        }
        for event in batch {
            tracing::trace!(session = %self.session_id, seq = event.seq, kind = event.message.type_name(), "event");
            if let Err(refused) = self.topic.publish(event) {
                // Only this actor publishes on its topic, so this is a bug.
                tracing::error!(session = %self.session_id, seq = refused.seq, "event refused by the topic: out of order");
            }
        }
    }

    async fn perform(&mut self, effect: Effect) {
        match effect {
            Effect::Emit { turn_id, message } => {
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
        }
    }

    /// Run a session command (store work, files) on a task of its own; its
    /// reply comes back as a [`CommandSignal`].
    fn start_session_command(&mut self, input_id: InputId, command: SessionCommand) {
        let Some(me) = self.me.upgrade() else { return };
        let context = CommandContext {
            store: self.store.clone(),
            lifecycle: self.lifecycle.clone(),
            session_id: self.session_id.clone(),
            workspace: self.workspace.clone(),
            model: self
                .state
                .as_ref()
                .map(|s| s.model.clone())
                .unwrap_or_default(),
        };
        tokio::spawn(async move {
            let reply = session_commands::perform(command, context).await;
            let _ = me.tell(CommandSignal { input_id, reply }).await;
        });
    }

    fn start_model_call(&mut self, request_id: u64, request: ModelRequest) {
        let Some(me) = self.me.upgrade() else { return };
        let token = CancellationToken::new();
        self.model_calls.insert(request_id, token.clone());
        let mut stream = self.model.stream(request);
        tokio::spawn(async move {
            loop {
                let item = tokio::select! {
                    biased;
                    _ = token.cancelled() => return,
                    item = stream.next() => item,
                };
                let (signal, last) = match item {
                    Some(Ok(event)) => {
                        let finished = matches!(event, ModelEvent::Finished { .. });
                        (Ok(event), finished)
                    }
                    Some(Err(e)) => (Err(e.to_string()), true),
                    None => (
                        Err("the model stream ended without finishing".to_string()),
                        true,
                    ),
                };
                if me.tell(ModelSignal { request_id, signal }).await.is_err() || last {
                    return;
                }
            }
        });
    }

    fn start_tools(&mut self, batch_id: u64, calls: Vec<ToolCall>) {
        let Some(me) = self.me.upgrade() else { return };
        let token = CancellationToken::new();
        self.tool_batches.insert(batch_id, token.clone());
        for call in calls {
            let me = me.clone();
            let executor = self.tools.clone();
            let call_id = call.id.clone();
            let run = RunTool::new(call, self.workspace.clone(), token.clone());
            tokio::spawn(async move {
                let outcome = executor
                    .ask(run)
                    .await
                    .unwrap_or_else(ToolOutcome::executor_unavailable);
                let _ = me
                    .tell(ToolSignal {
                        batch_id,
                        call_id,
                        outcome,
                    })
                    .await;
            });
        }
    }
}

fn catalog_input(catalog: &ToolCatalog) -> Input {
    Input::CatalogChanged {
        tools: catalog.tools.clone(),
        servers: catalog.servers.clone(),
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Queue a query or control command; replies with its input id. Events it
/// causes carry that id as `turn_id`.
#[derive(Debug)]
pub struct Submit(pub UserInput);

/// Cancel the running turn now.
#[derive(Debug)]
pub struct Interrupt;

/// The process is stopping: cancel the running turn, answer queued inputs
/// without running them (all of it committed before this returns).
#[derive(Debug)]
pub struct ShutDown;

/// A copy of the session state.
#[derive(Debug)]
pub struct Snapshot;

/// How long the session has been idle (nothing running, nothing queued);
/// `None` while it is busy.
#[derive(Debug)]
pub struct IdleFor;

/// From a model-call task: one streamed event, or the call's failure.
#[derive(Debug)]
pub struct ModelSignal {
    pub request_id: u64,
    pub signal: Result<ModelEvent, String>,
}

/// The tool catalog changed.
pub struct CatalogSignal(pub Arc<ToolCatalog>);

/// From a session command's task: its reply.
pub struct CommandSignal {
    pub input_id: InputId,
    pub reply: SystemEvent,
}

impl Message<CommandSignal> for AgentLoop {
    type Reply = ();

    async fn handle(&mut self, msg: CommandSignal, _: &mut Context<Self, Self::Reply>) {
        self.apply(Input::CommandDone {
            input_id: msg.input_id,
            reply: msg.reply,
        })
        .await;
    }
}

/// From a tool task: one call finished.
#[derive(Debug)]
pub struct ToolSignal {
    pub batch_id: u64,
    pub call_id: String,
    pub outcome: ToolOutcome,
}

impl Message<Submit> for AgentLoop {
    type Reply = InputId;

    async fn handle(
        &mut self,
        Submit(input): Submit,
        _: &mut Context<Self, Self::Reply>,
    ) -> InputId {
        let input_id = self
            .state
            .as_ref()
            .map(|s| s.next_input_id())
            .unwrap_or_default();
        self.apply(Input::Submit { input_id, input }).await;
        input_id
    }
}

impl Message<Interrupt> for AgentLoop {
    type Reply = ();

    async fn handle(&mut self, _: Interrupt, _: &mut Context<Self, Self::Reply>) {
        self.apply(Input::Interrupt).await;
    }
}

impl Message<ShutDown> for AgentLoop {
    type Reply = ();

    async fn handle(&mut self, _: ShutDown, _: &mut Context<Self, Self::Reply>) {
        self.apply(Input::Shutdown).await;
    }
}

impl Message<Snapshot> for AgentLoop {
    type Reply = Option<SessionState>;

    async fn handle(&mut self, _: Snapshot, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.state.clone()
    }
}

impl Message<IdleFor> for AgentLoop {
    type Reply = Option<Duration>;

    async fn handle(&mut self, _: IdleFor, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        let idle = self.state.as_ref().is_some_and(|s| s.is_idle());
        idle.then(|| self.last_activity.elapsed())
    }
}

impl Message<CatalogSignal> for AgentLoop {
    type Reply = ();

    async fn handle(
        &mut self,
        CatalogSignal(catalog): CatalogSignal,
        _: &mut Context<Self, Self::Reply>,
    ) {
        self.apply(catalog_input(&catalog)).await;
    }
}

impl Message<ModelSignal> for AgentLoop {
    type Reply = ();

    async fn handle(&mut self, msg: ModelSignal, _: &mut Context<Self, Self::Reply>) {
        let input = match msg.signal {
            Ok(event) => {
                if matches!(event, ModelEvent::Finished { .. }) {
                    self.model_calls.remove(&msg.request_id);
                }
                Input::Model {
                    request_id: msg.request_id,
                    event,
                }
            }
            Err(error) => {
                self.model_calls.remove(&msg.request_id);
                Input::ModelFailed {
                    request_id: msg.request_id,
                    error,
                }
            }
        };
        self.apply(input).await;
    }
}

impl Message<ToolSignal> for AgentLoop {
    type Reply = ();

    async fn handle(&mut self, msg: ToolSignal, _: &mut Context<Self, Self::Reply>) {
        self.apply(Input::ToolFinished {
            batch_id: msg.batch_id,
            call_id: msg.call_id,
            outcome: msg.outcome,
        })
        .await;
        let running = self
            .state
            .as_ref()
            .and_then(SessionState::running_tool_batch);
        if running != Some(msg.batch_id) {
            self.tool_batches.remove(&msg.batch_id);
        }
    }
}
