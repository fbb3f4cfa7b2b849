//! AgentLoop actor: drives one session.
//!
//! Owns the session's [`SessionState`] and is the ONLY code that calls
//! [`step`]. Accepts [`Submit`] (queries and control commands; replies with
//! the input id), [`Interrupt`], [`Snapshot`], the signals its own tasks
//! send back ([`ModelSignal`], [`ToolSignal`]) and [`CatalogSignal`] when
//! the tools or MCP servers change. Performs the effects `step`
//! returns: stamps events with the next `seq` and publishes them on the
//! session's topic, starts model calls and tool batches as cancellable tasks,
//! cancels them.
//!
//! Never awaits a model stream or a tool inside a handler — those run on
//! tasks that report back by message — so an `Interrupt` is handled at once.

use crate::bus::SessionTopic;
use crate::model::{ModelEvent, ModelRequest, ToolCall, ToolOutcome};
use crate::protocol::{AgentMessage, EventEnvelope, InputId, SessionId, UserInput};
use crate::provider::ModelClient;
use crate::session::{Effect, Input, SessionState, step};
use crate::tool_executor::{RunTool, ToolCatalog, ToolExecutor};
use futures::StreamExt;
use kameo::Actor;
use kameo::actor::{ActorRef, WeakActorRef};
use kameo::error::Infallible;
use kameo::message::{Context, Message};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What an AgentLoop starts from.
pub struct AgentLoopArgs {
    pub state: SessionState,
    /// The tool catalog to follow (tools and MCP server statuses).
    pub catalog: watch::Receiver<Arc<ToolCatalog>>,
    pub topic: Arc<SessionTopic>,
    pub model: Arc<dyn ModelClient>,
    pub tools: ActorRef<ToolExecutor>,
    pub workspace: PathBuf,
}

/// The actor.
pub struct AgentLoop {
    session_id: SessionId,
    state: Option<SessionState>,
    topic: Arc<SessionTopic>,
    model: Arc<dyn ModelClient>,
    tools: ActorRef<ToolExecutor>,
    workspace: PathBuf,
    model_calls: HashMap<u64, CancellationToken>,
    tool_batches: HashMap<u64, CancellationToken>,
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
            model: args.model,
            tools: args.tools,
            workspace: args.workspace,
            model_calls: HashMap::new(),
            tool_batches: HashMap::new(),
            me: me.downgrade(),
        };
        this.apply(Input::Started).await;
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
        Ok(())
    }
}

impl AgentLoop {
    /// Feed one input through the core and perform what it asks.
    async fn apply(&mut self, input: Input) {
        let Some(state) = self.state.take() else {
            return;
        };
        let (state, effects) = step(state, input, now_ms());
        self.state = Some(state);
        for effect in effects {
            self.perform(effect);
        }
    }

    fn perform(&mut self, effect: Effect) {
        match effect {
            Effect::Emit { turn_id, message } => self.publish(turn_id, message),
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
        }
    }

    fn publish(&mut self, turn_id: Option<InputId>, message: AgentMessage) {
        let envelope = Arc::new(EventEnvelope {
            session_id: self.session_id.clone(),
            seq: self.topic.last_seq() + 1,
            turn_id,
            at: chrono::Utc::now(),
            message,
        });
        tracing::trace!(session = %self.session_id, seq = envelope.seq, kind = envelope.message.type_name(), "event");
        if let Err(refused) = self.topic.publish(envelope) {
            // Only this actor publishes on its topic, so this is a bug.
            tracing::error!(session = %self.session_id, seq = refused.seq, "event refused by the topic: out of order");
        }
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
            let run = RunTool {
                call,
                workspace: self.workspace.clone(),
                cancel: token.clone(),
            };
            tokio::spawn(async move {
                let outcome = executor.ask(run).await.unwrap_or_else(|e| ToolOutcome {
                    output: format!("the tool executor is unavailable: {e}"),
                    is_error: true,
                    duration_ms: 0,
                });
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

/// A copy of the session state.
#[derive(Debug)]
pub struct Snapshot;

/// From a model-call task: one streamed event, or the call's failure.
#[derive(Debug)]
pub struct ModelSignal {
    pub request_id: u64,
    pub signal: Result<ModelEvent, String>,
}

/// The tool catalog changed.
pub struct CatalogSignal(pub Arc<ToolCatalog>);

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

impl Message<Snapshot> for AgentLoop {
    type Reply = Option<SessionState>;

    async fn handle(&mut self, _: Snapshot, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.state.clone()
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
        let batch_done = self
            .state
            .as_ref()
            .map(|s| !matches!(&s.turn, Some(t) if matches!(&t.phase, crate::session::Phase::RunningTools { batch_id, .. } if *batch_id == msg.batch_id)))
            .unwrap_or(true);
        if batch_done {
            self.tool_batches.remove(&msg.batch_id);
        }
    }
}
