//! What the tests of sessions across nodes share: a real `nats-server`
//! (the test kit's), an owner node — a [`Runtime`] whose sessions are
//! driven by a fake model the test scripts call by call, with its own
//! connection to the live plane — and a second connection standing for
//! another node, which follows those sessions through the same store.
//!
//! Tests wait for events and states, never for time; [`GUARD`] only turns
//! a hang into a failure.

use super::link::LinkState;
use super::live::{LiveOptions, LivePlane};
use super::nats_url::NatsUrl;
use super::owner::{Epoch, NodeId, Owner};
use super::remote_session::{FollowOptions, RemoteSession};
use super::subjects::{ClusterName, Subjects};
use crate::bus::Subscription;
use crate::model::{ModelEvent, ModelRequest};
use crate::protocol::{AgentMessage, BlockKind, EventEnvelope, ResultEvent, SessionId};
use crate::provider::{ModelClient, ModelStream, ProviderError};
use crate::runtime::{Runtime, SessionOptions};
use crate::session::SessionHandle;
use crate::settings::{ModelProfile, ProviderKind, Settings, ToolSettings};
use crate::store::SessionStore;
use agentbus_testkit::NatsServer;
use agentbus_testkit::tcp_proxy::TcpProxy;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, mpsc, oneshot};

/// The longest anything may take before the test counts as hung.
pub const GUARD: Duration = Duration::from_secs(60);

pub async fn guarded<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(GUARD, future).await {
        Ok(value) => value,
        Err(_) => panic!("hung: {what}"),
    }
}

pub fn subjects() -> Subjects {
    Subjects::new(&ClusterName::new("test").unwrap())
}

/// A node's connection to `server`.
pub async fn connect(server: &NatsServer) -> LivePlane {
    connect_to(&server.url()).await
}

async fn connect_to(url: &str) -> LivePlane {
    let url = NatsUrl::parse(url).unwrap();
    LivePlane::connect(&url, subjects(), LiveOptions::default())
        .await
        .expect("connecting to the test's nats-server")
}

/// An owner at `epoch`, on a node of its own.
pub fn owner_at(epoch: u64) -> Owner {
    Owner {
        epoch: Epoch(epoch),
        node: NodeId::new(),
    }
}

type Item = Result<ModelEvent, ProviderError>;

/// One model call as the test sees it.
pub struct Call {
    pub request: ModelRequest,
    stream: mpsc::UnboundedSender<Item>,
    /// Fires when agentbus drops the stream (finished or cancelled).
    pub dropped: oneshot::Receiver<()>,
}

impl Call {
    pub fn send(&self, event: ModelEvent) {
        let _ = self.stream.send(Ok(event));
    }

    pub fn delta(&self, text: &str) {
        self.send(ModelEvent::TextDelta {
            index: 0,
            text: text.into(),
        });
    }

    pub fn finish(&self) {
        self.send(ModelEvent::Finished {
            finish_reason: "end_turn".into(),
        });
    }

    /// Streams a text answer and finishes.
    pub fn answer(&self, text: &str) {
        self.delta(text);
        self.finish();
    }

    /// Asks for `read_file` of `path` and finishes the step.
    pub fn read_file(&self, id: &str, path: &str) {
        self.send(ModelEvent::BlockStart {
            index: 0,
            block: BlockKind::ToolUse {
                id: id.to_string(),
                name: "read_file".to_string(),
            },
        });
        self.send(ModelEvent::ToolInputDelta {
            index: 0,
            partial_json: serde_json::json!({ "path": path }).to_string(),
        });
        self.send(ModelEvent::Finished {
            finish_reason: "tool_use".into(),
        });
    }
}

/// Fires its sender when dropped.
struct DropSignal(Option<oneshot::Sender<()>>);

impl Drop for DropSignal {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

struct FakeModel {
    calls: mpsc::UnboundedSender<Call>,
}

impl ModelClient for FakeModel {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let (tx, rx) = mpsc::unbounded_channel();
        let (dropped_tx, dropped) = oneshot::channel();
        let _ = self.calls.send(Call {
            request,
            stream: tx,
            dropped,
        });
        let state = (rx, DropSignal(Some(dropped_tx)));
        Box::pin(futures::stream::unfold(
            state,
            |(mut rx, guard)| async move { rx.recv().await.map(|item| (item, (rx, guard))) },
        ))
    }
}

/// Which node reaches NATS through a proxy the test can cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behind {
    Nothing,
    Owner,
    Follower,
}

/// A NATS server, the owner node and another node's connection.
pub struct Nodes {
    pub nats: NatsServer,
    /// Between one node and NATS, when asked for.
    pub proxy: Option<TcpProxy>,
    pub runtime: Runtime,
    calls: Mutex<mpsc::UnboundedReceiver<Call>>,
    /// The owner node's connection.
    pub owner_plane: LivePlane,
    /// Another node's connection.
    pub follower_plane: LivePlane,
    workspace: tempfile::TempDir,
}

impl Nodes {
    /// `None` when the NATS tests are skipped (said on stderr).
    pub async fn start() -> Option<Nodes> {
        Self::start_with(Behind::Nothing).await
    }

    /// With one node's connection through a proxy the test can cut.
    pub async fn start_with(behind: Behind) -> Option<Nodes> {
        let nats = NatsServer::start().await.expect("starting nats-server")?;
        let workspace = tempfile::tempdir().unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let mut models = BTreeMap::new();
        models.insert(
            "fake".to_string(),
            ModelProfile::new(ProviderKind::Openai, "fake-model", "http://unused"),
        );
        let settings = Settings {
            model: "fake".into(),
            system_prompt: "test".into(),
            max_steps: 10,
            include_partial_messages: true,
            disallowed_tools: vec![],
            workspace: workspace.path().to_path_buf(),
            models,
            tools: ToolSettings::default(),
            mcp_servers: Default::default(),
            mcp: Default::default(),
            data_dir: workspace.path().join("data"),
            config_dir: None,
            sessions: Default::default(),
            server: Default::default(),
            permissions: crate::settings::PermissionSettings {
                mode: crate::protocol::PermissionMode::Bypass,
                ..Default::default()
            },
            sandbox: Default::default(),
            agents: Vec::new(),
            subagents: Default::default(),
            hooks: Vec::new(),
            skills: Default::default(),
            checkpoints: Default::default(),
            context: Default::default(),
            compact_prompt: crate::settings::DEFAULT_COMPACT_PROMPT.into(),
            unreachable_hint: None,
            cluster: None,
        };
        let runtime = Runtime::with_model_client(settings, Arc::new(FakeModel { calls: tx }))
            .await
            .expect("runtime");
        let proxy = match behind {
            Behind::Nothing => None,
            Behind::Owner | Behind::Follower => {
                let target = format!("127.0.0.1:{}", nats.port()).parse().unwrap();
                Some(TcpProxy::start(target).await.expect("a proxy to NATS"))
            }
        };
        let through_proxy = |side| match (&proxy, behind == side) {
            (Some(proxy), true) => format!("nats://{}", proxy.address()),
            _ => nats.url(),
        };
        let owner_plane = connect_to(&through_proxy(Behind::Owner)).await;
        let follower_plane = connect_to(&through_proxy(Behind::Follower)).await;
        Some(Nodes {
            nats,
            proxy,
            runtime,
            calls: Mutex::new(rx),
            owner_plane,
            follower_plane,
            workspace,
        })
    }

    pub fn workspace(&self) -> &std::path::Path {
        self.workspace.path()
    }

    /// The store both nodes share.
    pub fn store(&self) -> Arc<dyn SessionStore> {
        self.runtime.stored().store().clone()
    }

    /// A new session on the owner node.
    pub async fn session(&self) -> SessionHandle {
        self.runtime
            .create_session(SessionOptions::default())
            .await
            .unwrap()
    }

    /// The proxy's connections cut until [`restore`](Self::restore), and
    /// the node behind it aware of it.
    pub async fn cut(&self, plane: &LivePlane) {
        self.proxy.as_ref().expect("a proxy").cut();
        guarded(
            "the node to notice it is cut off",
            plane
                .link()
                .wait_for(|s| matches!(s, LinkState::Disconnected { .. })),
        )
        .await;
    }

    pub fn restore(&self) {
        self.proxy.as_ref().expect("a proxy").restore();
    }

    pub async fn next_call(&self) -> Call {
        guarded("a model call", self.calls.lock().await.recv())
            .await
            .expect("model client alive")
    }

    /// Session `id` followed from the other node, after `after`.
    pub async fn follow(&self, id: &SessionId, after: u64) -> RemoteSession {
        self.follow_with(id, after, FollowOptions::default()).await
    }

    pub async fn follow_with(
        &self,
        id: &SessionId,
        after: u64,
        options: FollowOptions,
    ) -> RemoteSession {
        RemoteSession::start(
            &self.follower_plane,
            self.store(),
            id.clone(),
            after,
            options,
        )
        .await
        .expect("following a session")
    }
}

/// A subscription's events, read with a guard.
pub struct Events(pub Subscription<EventEnvelope>);

impl Events {
    pub async fn next(&mut self) -> Arc<EventEnvelope> {
        guarded("an event", self.0.recv())
            .await
            .expect("subscription open")
    }

    /// Events up to and including the first that `stop` accepts.
    pub async fn until(&mut self, stop: impl Fn(&AgentMessage) -> bool) -> Vec<Arc<EventEnvelope>> {
        let mut got = Vec::new();
        loop {
            let event = self.next().await;
            let done = stop(&event.message);
            got.push(event);
            if done {
                return got;
            }
        }
    }

    /// The next `n` events.
    pub async fn take(&mut self, n: usize) -> Vec<Arc<EventEnvelope>> {
        let mut got = Vec::new();
        for _ in 0..n {
            got.push(self.next().await);
        }
        got
    }

    /// Events up to and including the turn's result.
    pub async fn turn(&mut self) -> Vec<Arc<EventEnvelope>> {
        self.until(|m| matches!(m, AgentMessage::Result(_))).await
    }
}

pub fn is_delta(message: &AgentMessage) -> bool {
    matches!(message, AgentMessage::StreamEvent(_))
}

pub fn result_of(events: &[Arc<EventEnvelope>]) -> ResultEvent {
    match events.last().map(|e| &e.message) {
        Some(AgentMessage::Result(result)) => result.clone(),
        other => panic!("the last event is not a result: {other:?}"),
    }
}

/// What a follower must agree on with the owner: seq, turn and event
/// (the instant is the store's rendering of it, not compared).
pub fn shape(events: &[Arc<EventEnvelope>]) -> Vec<(u64, Option<u64>, AgentMessage)> {
    events
        .iter()
        .map(|e| (e.seq, e.turn_id, e.message.clone()))
        .collect()
}

pub fn seqs(events: &[Arc<EventEnvelope>]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}
