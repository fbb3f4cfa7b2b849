//! The actors wired together, driven by a fake model the test controls:
//! every model call hands the test a sender for its stream, so each step
//! happens exactly when the test says. Real tools, real bus, no network.

use agentbus_engine::protocol::{
    AgentMessage, BlockKind, EventEnvelope, LifecycleEvent, LifecycleKind, Message, SessionId,
    StopReason, SystemSubtype,
};
use agentbus_engine::runtime::ListPage;
use agentbus_engine::runtime::SessionDoor;
use agentbus_engine::runtime::{ModelClient, ModelStream, ProviderError};
use agentbus_engine::runtime::{ModelEvent, ModelRequest};
use agentbus_engine::settings::{ModelProfile, ProviderKind, ToolSettings};
use agentbus_engine::{Runtime, SessionHandle, SessionOptions, Settings};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, mpsc, oneshot};

/// Only so a broken build fails instead of hanging.
const GUARD: Duration = Duration::from_secs(60);

type Item = Result<ModelEvent, ProviderError>;

/// One model call as the test sees it.
struct Call {
    request: ModelRequest,
    stream: mpsc::UnboundedSender<Item>,
    /// Fires when agentbus drops the stream (finished or cancelled).
    dropped: oneshot::Receiver<()>,
}

impl Call {
    fn send(&self, event: ModelEvent) {
        let _ = self.stream.send(Ok(event));
    }

    /// Stream a text answer and finish.
    fn answer(&self, text: &str) {
        self.send(ModelEvent::TextDelta {
            index: 0,
            text: text.into(),
        });
        self.send(ModelEvent::Finished {
            finish_reason: "end_turn".into(),
        });
    }

    /// Ask for tool calls `(id, name, json)` and finish.
    fn call_tools(&self, calls: &[(&str, &str, &str)]) {
        for (i, (id, name, json)) in calls.iter().enumerate() {
            self.send(ModelEvent::BlockStart {
                index: i,
                block: BlockKind::ToolUse {
                    id: id.to_string(),
                    name: name.to_string(),
                },
            });
            self.send(ModelEvent::ToolInputDelta {
                index: i,
                partial_json: json.to_string(),
            });
        }
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

struct Harness {
    runtime: Runtime,
    calls: Mutex<mpsc::UnboundedReceiver<Call>>,
    _workspace: tempfile::TempDir,
}

impl Harness {
    async fn new() -> Harness {
        Self::with_idle_unload(600).await
    }

    async fn with_idle_unload(idle_unload_secs: u64) -> Harness {
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
            sessions: agentbus_engine::settings::SessionSettings {
                idle_unload_secs,
                ..Default::default()
            },
            server: Default::default(),
            // These tests are about the loop, not about asking: every call runs.
            permissions: agentbus_engine::settings::PermissionSettings {
                mode: agentbus_engine::protocol::PermissionMode::Bypass,
                ..Default::default()
            },
            sandbox: Default::default(),
            agents: Vec::new(),
            subagents: Default::default(),
            hooks: Vec::new(),
            skills: Default::default(),
            checkpoints: Default::default(),
            context: Default::default(),
            compact_prompt: agentbus_engine::settings::DEFAULT_COMPACT_PROMPT.into(),
            unreachable_hint: None,
            cluster: None,
        };
        Harness {
            runtime: Runtime::with_model_client(settings, Arc::new(FakeModel { calls: tx }))
                .await
                .expect("runtime"),
            calls: Mutex::new(rx),
            _workspace: workspace,
        }
    }

    fn workspace(&self) -> &Path {
        &self.runtime.settings().workspace
    }

    async fn session(&self) -> SessionHandle {
        self.runtime
            .create_session(SessionOptions::default())
            .await
            .unwrap()
    }

    async fn next_call(&self) -> Call {
        tokio::time::timeout(GUARD, self.calls.lock().await.recv())
            .await
            .expect("a model call")
            .expect("model client alive")
    }
}

/// Events of a session, read from a subscription.
struct Events(agentbus_engine::runtime::Subscription<EventEnvelope>);

impl Events {
    fn of(session: &SessionHandle) -> Events {
        Events(session.subscribe(session.loaded_after()).unwrap())
    }

    async fn next(&mut self) -> Arc<EventEnvelope> {
        tokio::time::timeout(GUARD, self.0.recv())
            .await
            .expect("an event")
            .expect("subscription open")
    }

    async fn until(&mut self, pred: impl Fn(&AgentMessage) -> bool) -> Arc<EventEnvelope> {
        loop {
            let e = self.next().await;
            if pred(&e.message) {
                return e;
            }
        }
    }

    async fn result(&mut self) -> agentbus_engine::protocol::ResultEvent {
        match &self
            .until(|m| matches!(m, AgentMessage::Result(_)))
            .await
            .message
        {
            AgentMessage::Result(r) => r.clone(),
            _ => unreachable!(),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_during_stream_drops_the_model_stream() {
    let h = Harness::new().await;
    let session = h.session().await;
    let mut events = Events::of(&session);
    session.submit_text("tell me a story").await.unwrap();
    let call = h.next_call().await;
    call.send(ModelEvent::TextDelta {
        index: 0,
        text: "Once".into(),
    });
    events
        .until(|m| matches!(m, AgentMessage::StreamEvent(_)))
        .await;
    session.interrupt().await.unwrap();
    let result = events.result().await;
    assert_eq!(result.stop_reason, StopReason::Cancelled);
    assert_eq!(result.text, "Once");
    tokio::time::timeout(GUARD, call.dropped)
        .await
        .expect("the model stream was dropped")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_waits_behind_running_query_and_applies_before_the_next() {
    let h = Harness::new().await;
    let session = h.session().await;
    let mut events = Events::of(&session);
    let first = session.submit_text("first").await.unwrap();
    let call = h.next_call().await;
    // The turn is running (its model call is open): these are queued.
    let clear = session.submit_text("/clear").await.unwrap();
    let second = session.submit_text("second").await.unwrap();
    assert!(first < clear && clear < second);
    assert!(session.snapshot().await.unwrap().queue.len() == 2);

    call.answer("one");
    let r1 = events.until(|m| matches!(m, AgentMessage::Result(_))).await;
    assert_eq!(r1.turn_id, Some(first));
    let cleared = events.next().await;
    assert_eq!(cleared.turn_id, Some(clear));
    assert!(
        matches!(&cleared.message, AgentMessage::System(s) if s.subtype == SystemSubtype::Cleared)
    );

    let call2 = h.next_call().await;
    assert_eq!(call2.request.messages, vec![Message::user("second")]);
    call2.answer("two");
    assert_eq!(events.result().await.stop_reason, StopReason::EndTurn);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_subscriber_replays_the_session_then_follows_live() {
    let h = Harness::new().await;
    let session = h.session().await;
    let mut early = Events::of(&session);
    session.submit_text("hi").await.unwrap();
    h.next_call().await.answer("hello");
    early.result().await;

    let mut late = Events::of(&session);
    let mut replayed = Vec::new();
    loop {
        let e = late.next().await;
        replayed.push(e.seq);
        if matches!(e.message, AgentMessage::Result(_)) {
            break;
        }
    }
    assert_eq!(replayed, (1..=replayed.len() as u64).collect::<Vec<_>>());

    session.submit_text("again").await.unwrap();
    h.next_call().await.answer("hello again");
    let live = late.result().await;
    assert_eq!(live.text, "hello again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_run_concurrently_and_never_share_history() {
    let h = Harness::new().await;
    let a = h.session().await;
    let b = h.session().await;
    assert_ne!(a.id(), b.id());
    a.submit_text("question for a").await.unwrap();
    let call_a = h.next_call().await;
    b.submit_text("question for b").await.unwrap();
    let call_b = h.next_call().await;
    // Both turns are open at once; answer b first.
    let mut events_b = Events::of(&b);
    call_b.answer("answer b");
    assert_eq!(events_b.result().await.text, "answer b");
    let mut events_a = Events::of(&a);
    call_a.answer("answer a");
    assert_eq!(events_a.result().await.text, "answer a");

    let history_a = a.snapshot().await.unwrap().history;
    assert_eq!(history_a.len(), 2);
    assert_eq!(history_a[0], Message::user("question for a"));
    assert_eq!(
        call_b.request.messages,
        vec![Message::user("question for b")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_of_one_message_run_concurrently() {
    let h = Harness::new().await;
    let session = h.session().await;
    let mut events = Events::of(&session);
    session.submit_text("go").await.unwrap();
    // Each command waits for the other's file: they can only both finish
    // if they run at the same time.
    h.next_call().await.call_tools(&[
        (
            "a",
            "bash",
            r#"{"command":"touch a.flag; while [ ! -f b.flag ]; do sleep 0.01; done; echo a done"}"#,
        ),
        (
            "b",
            "bash",
            r#"{"command":"touch b.flag; while [ ! -f a.flag ]; do sleep 0.01; done; echo b done"}"#,
        ),
    ]);
    let second = h.next_call().await;
    let outputs: Vec<String> = second
        .request
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { output, .. } => Some(output.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs, ["a done\n", "b done\n"]);
    assert!(h.workspace().join("a.flag").exists());
    second.answer("both ran");
    assert_eq!(events.result().await.stop_reason, StopReason::EndTurn);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_failure_ends_the_turn_with_an_error_and_the_session_lives_on() {
    let h = Harness::new().await;
    let session = h.session().await;
    let mut events = Events::of(&session);
    session.submit_text("hi").await.unwrap();
    let call = h.next_call().await;
    let _ = call.stream.send(Err(ProviderError::Stream {
        url: "http://x".into(),
        detail: "connection reset".into(),
    }));
    let error = events.until(|m| matches!(m, AgentMessage::Error(_))).await;
    assert!(
        matches!(&error.message, AgentMessage::Error(e) if e.message.contains("connection reset"))
    );
    assert_eq!(events.result().await.stop_reason, StopReason::Error);

    session.submit_text("again").await.unwrap();
    h.next_call().await.answer("fine now");
    assert_eq!(events.result().await.text, "fine now");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_ends_without_finishing_is_an_error() {
    let h = Harness::new().await;
    let session = h.session().await;
    let mut events = Events::of(&session);
    session.submit_text("hi").await.unwrap();
    let call = h.next_call().await;
    call.send(ModelEvent::TextDelta {
        index: 0,
        text: "partial".into(),
    });
    drop(call);
    let result = events.result().await;
    assert_eq!(result.stop_reason, StopReason::Error);
    assert!(result.error.unwrap().contains("ended without finishing"));
    assert_eq!(
        session.snapshot().await.unwrap().history,
        vec![Message::user("hi")]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_session_is_unloaded_and_comes_back_whole() {
    let h = Harness::with_idle_unload(0).await;
    let id = stored_session(&h, "remember me", "I will.").await;
    let again = h.runtime.open_session(&id).await.unwrap();
    let history = again.snapshot().await.unwrap().history;
    assert_eq!(history.len(), 2);
    assert_eq!(history[0], Message::user("remember me"));
    let mut events = Events::of(&again);
    again.submit_text("still there?").await.unwrap();
    let call = h.next_call().await;
    assert_eq!(
        call.request.messages.len(),
        3,
        "the reloaded history reaches the model"
    );
    call.answer("yes");
    assert_eq!(events.result().await.text, "yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_or_watched_session_is_not_unloaded() {
    let h = Harness::with_idle_unload(0).await;
    let session = h.session().await;
    let _watching = Events::of(&session);
    assert_eq!(h.runtime.sweep_idle().await, 0, "someone is watching");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_reaching_past_the_ring_gets_the_stored_events_then_live_ones() {
    let h = Harness::with_idle_unload(0).await;
    let id = stored_session(&h, "first", "one").await;
    // Loaded again, the topic's ring holds only this load's events.
    let again = h.runtime.open_session(&id).await.unwrap();
    assert!(again.loaded_after() > 0);
    let (_sink, mut events) = agentbus_engine::runtime::attach_channel(&again, 0);
    again.submit_text("second").await.unwrap();
    h.next_call().await.answer("two");
    let mut seen = Vec::new();
    loop {
        let event = tokio::time::timeout(GUARD, events.recv())
            .await
            .unwrap()
            .unwrap();
        seen.push(event.clone());
        if matches!(&event.message, AgentMessage::Result(r) if r.text == "two") {
            break;
        }
    }
    let users: Vec<String> = seen
        .iter()
        .filter_map(|e| match &e.message {
            AgentMessage::User(u) => Some(u.text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        users,
        ["first", "second"],
        "stored history first, then live"
    );
    assert!(seen.windows(2).all(|w| w[0].seq < w[1].seq), "in seq order");
    assert!(
        seen.iter()
            .take_while(|e| e.seq <= again.loaded_after())
            .all(|e| e.message.is_persisted())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_network_client_too_slow_is_cut_off_and_resumes_from_its_last_seq() {
    let h = Harness::new().await;
    let session = h.session().await;
    let start = session.loaded_after();
    // A client with room for 4 events that reads nothing for now.
    let (slow_sink, mut slow) = agentbus_engine::runtime::attach_until_full(&session, start, 4);
    let mut events = Events::of(&session);
    session.submit_text("talk a lot").await.unwrap();
    let call = h.next_call().await;
    for i in 0..20 {
        call.send(ModelEvent::TextDelta {
            index: 0,
            text: format!("{i} "),
        });
    }
    call.send(ModelEvent::Finished {
        finish_reason: "end_turn".into(),
    });
    let result = events.until(|m| matches!(m, AgentMessage::Result(_))).await;

    // The sink pumps on a task of its own and may still be behind the
    // result: it detaches once it finds the client's buffer full.
    tokio::time::timeout(GUARD, slow_sink.wait_for_shutdown())
        .await
        .expect("the slow client is cut off");
    // The slow client got what fitted, then its stream ended.
    let mut got = Vec::new();
    while let Some(event) = tokio::time::timeout(GUARD, slow.recv()).await.unwrap() {
        got.push(event.seq);
    }
    let expected: Vec<u64> = (start + 1..=start + 4).collect();
    assert_eq!(
        got, expected,
        "the events that fitted, in order, then the end"
    );

    // Resuming from its last seq gets the rest: no gap, no duplicate.
    let last = *got.last().unwrap();
    let (_sink, mut resumed) = agentbus_engine::runtime::attach_until_full(&session, last, 1024);
    let mut rest = Vec::new();
    loop {
        let event = tokio::time::timeout(GUARD, resumed.recv())
            .await
            .unwrap()
            .unwrap();
        rest.push(event.seq);
        if event.seq == result.seq {
            break;
        }
    }
    let expected: Vec<u64> = (last + 1..=result.seq).collect();
    assert_eq!(rest, expected);
}

/// A session that answered `query` with `answer` once, then was unloaded
/// (nobody held or watched it): stored, not in memory.
async fn stored_session(
    h: &Harness,
    query: &str,
    answer: &str,
) -> agentbus_engine::protocol::SessionId {
    let session = h.session().await;
    let id = session.id().clone();
    {
        let mut events = Events::of(&session);
        session.submit_text(query).await.unwrap();
        h.next_call().await.answer(answer);
        events.result().await;
    } // the subscription is gone: nobody watches the session
    drop(session);
    // The SessionManager sweeps on its own too (every second here, as
    // idle_unload_secs is 0), so this sweep or one just before it unloads
    // the session: what counts is that it is gone.
    h.runtime.sweep_idle().await;
    assert!(h.runtime.session(&id).await.is_none(), "unloaded");
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_requests_for_one_stored_session_load_it_once() {
    let h = Harness::with_idle_unload(0).await;
    let id = stored_session(&h, "remember me", "I will.").await;
    let opened = futures::future::join_all((0..8).map(|_| h.runtime.open_session(&id))).await;
    let handles: Vec<SessionHandle> = opened.into_iter().map(|o| o.unwrap()).collect();
    assert!(
        handles.iter().all(|h| h == &handles[0]),
        "every request got the same load (one topic, one AgentLoop)"
    );
    assert_eq!(h.runtime.loaded_sessions().await, vec![id.clone()]);
    // The one loaded session works and holds its history.
    let mut events = Events::of(&handles[3]);
    handles[5].submit_text("still there?").await.unwrap();
    let call = h.next_call().await;
    assert_eq!(call.request.messages.len(), 3);
    call.answer("yes");
    assert_eq!(events.result().await.text, "yes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_deleted_while_it_loads_is_not_left_loaded() {
    let h = Harness::with_idle_unload(0).await;
    let id = stored_session(&h, "remember me", "I will.").await;
    // However the delete and the loads interleave, the session ends up
    // neither loaded nor stored, and every load has an answer.
    let opens = futures::future::join_all((0..4).map(|_| h.runtime.open_session(&id)));
    let (opened, deleted) = tokio::join!(opens, h.runtime.delete_session(&id, None));
    deleted.unwrap();
    assert_eq!(opened.len(), 4);
    assert!(h.runtime.loaded_sessions().await.is_empty());
    assert!(h.runtime.open_session(&id).await.is_err(), "deleted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loads_called_off_by_a_shutdown_say_it_is_shutting_down() {
    let h = Harness::with_idle_unload(0).await;
    let id = stored_session(&h, "remember me", "I will.").await;
    // However the stop and the loads interleave, a load either finished
    // first or is told agentbus is shutting down (not "not running").
    let opens = futures::future::join_all((0..4).map(|_| h.runtime.open_session(&id)));
    let (opened, ()) = tokio::join!(opens, h.runtime.stop_sessions());
    for answer in opened {
        assert!(
            matches!(
                answer,
                Ok(_) | Err(agentbus_engine::SessionError::ShuttingDown)
            ),
            "{:?}",
            answer.err()
        );
    }
    assert!(h.runtime.loaded_sessions().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_stopping_every_session_nothing_is_started_or_loaded() {
    let h = Harness::with_idle_unload(0).await;
    let id = stored_session(&h, "remember me", "I will.").await;
    h.runtime.stop_sessions().await;
    let opened = h.runtime.open_session(&id).await;
    assert!(
        matches!(opened, Err(agentbus_engine::SessionError::ShuttingDown)),
        "{:?}",
        opened.err()
    );
    let created = h.runtime.create_session(SessionOptions::default()).await;
    assert!(matches!(
        created,
        Err(agentbus_engine::SessionError::ShuttingDown)
    ));
    assert!(h.runtime.loaded_sessions().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unloaded_session_ends_its_background_commands_and_says_so() {
    let h = Harness::with_idle_unload(0).await;
    let session = h.session().await;
    let id = session.id().clone();
    {
        let mut events = Events::of(&session);
        session.submit_text("serve").await.unwrap();
        h.next_call().await.call_tools(&[(
            "s",
            "bash",
            r#"{"command":"echo $$ > server.pid; exec sleep 600","run_in_background":true}"#,
        )]);
        h.next_call().await.answer("started");
        events.result().await;
    }
    // The command has written its pid (polled, with a deadline).
    let pid_file = h.workspace().join("server.pid");
    let deadline = std::time::Instant::now() + GUARD;
    let pid: u32 = loop {
        if let Ok(text) = std::fs::read_to_string(&pid_file)
            && let Ok(pid) = text.trim().parse()
        {
            break pid;
        }
        assert!(std::time::Instant::now() < deadline, "no pid written");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
    assert!(proc.exists(), "the background command runs");
    drop(session);
    h.runtime.sweep_idle().await;
    assert!(h.runtime.session(&id).await.is_none(), "unloaded");
    // Killed and reaped by the unload; /proc may lag behind the reaping
    // for a moment (polled, with a deadline).
    let deadline = std::time::Instant::now() + GUARD;
    while proc.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the background command outlived the unload"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let again = h.runtime.open_session(&id).await.unwrap();
    let stored = again.stored_events(0, None).await.unwrap();
    let notice = stored.iter().find_map(|e| match &e.message {
        AgentMessage::System(s) if s.subtype == SystemSubtype::Notice => Some(s.message.clone()),
        _ => None,
    });
    assert_eq!(
        notice.as_deref(),
        Some(
            "The session stopped, so its background command was ended: bash_1 (`echo $$ > \
             server.pid; exec sleep 600`)."
        )
    );
}

// ------------------------------------------------- who made a session

/// A session made by the API token `token`.
async fn session_by(h: &Harness, token: &str) -> SessionHandle {
    let options = SessionOptions {
        created_by: Some(token.to_string()),
        ..SessionOptions::default()
    };
    h.runtime.create_session(options).await.unwrap()
}

/// The lifecycle events from now on.
fn lifecycle(h: &Harness) -> agentbus_engine::runtime::Subscription<LifecycleEvent> {
    let topic = h.runtime.lifecycle();
    topic.subscribe(topic.last_seq()).unwrap()
}

/// The next lifecycle event of `kind`.
async fn next_of(
    events: &mut agentbus_engine::runtime::Subscription<LifecycleEvent>,
    kind: LifecycleKind,
) -> Arc<LifecycleEvent> {
    loop {
        let event = tokio::time::timeout(GUARD, events.recv())
            .await
            .expect("a lifecycle event")
            .expect("the topic is open");
        if event.kind == kind {
            return event;
        }
    }
}

async fn creator_of(h: &Harness, id: &SessionId) -> Option<String> {
    let record = h.runtime.stored().get(id).await.unwrap();
    record.expect("stored").created_by
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn who_created_renamed_forked_and_deleted_a_session_is_kept_and_said() {
    let h = Harness::new().await;
    let mut events = lifecycle(&h);
    let session = session_by(&h, "alice").await;
    let id = session.id().clone();
    let created = next_of(&mut events, LifecycleKind::Created).await;
    assert_eq!(
        (&created.session_id, created.by.as_deref()),
        (&id, Some("alice"))
    );
    assert_eq!(creator_of(&h, &id).await.as_deref(), Some("alice"));

    let stored = h.runtime.stored();
    stored
        .rename(&id, "named", Some("bob".into()))
        .await
        .unwrap();
    let renamed = next_of(&mut events, LifecycleKind::Renamed).await;
    assert_eq!(renamed.by.as_deref(), Some("bob"));

    stored
        .set_viewers(&id, vec!["dave".into(), "carol".into(), "dave".into()])
        .await
        .unwrap();
    let record = stored.get(&id).await.unwrap().expect("stored");
    assert_eq!(record.viewers, ["carol", "dave"]);

    let fork = stored.fork(&id, None, Some("carol".into())).await.unwrap();
    assert_eq!(fork.created_by.as_deref(), Some("carol"));
    assert!(fork.viewers.is_empty(), "{:?}", fork.viewers);
    let created = next_of(&mut events, LifecycleKind::Created).await;
    assert_eq!(
        (&created.session_id, created.by.as_deref()),
        (&fork.id, Some("carol"))
    );
    let page = ListPage {
        visible_to: Some("carol".into()),
        ..ListPage::default()
    };
    let seen: Vec<SessionId> = stored
        .list(page)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(
        seen,
        [fork.id.clone(), id.clone()],
        "her fork, and a viewer"
    );

    h.runtime
        .delete_session(&fork.id, Some("erin".into()))
        .await
        .unwrap();
    let deleted = next_of(&mut events, LifecycleKind::Deleted).await;
    assert_eq!(
        (&deleted.session_id, deleted.by.as_deref()),
        (&fork.id, Some("erin"))
    );

    // Without a token, nobody is named.
    let cli = h.session().await;
    let created = next_of(&mut events, LifecycleKind::Created).await;
    assert_eq!(
        (&created.session_id, created.by.as_deref()),
        (cli.id(), None)
    );
    assert_eq!(creator_of(&h, cli.id()).await, None);
    h.runtime.delete_session(cli.id(), None).await.unwrap();
    let deleted = next_of(&mut events, LifecycleKind::Deleted).await;
    assert_eq!(deleted.by, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agents_session_works_for_whoever_made_its_parent() {
    let h = Harness::new().await;
    let parent = session_by(&h, "alice").await;
    let mut events = Events::of(&parent);
    parent.submit_text("delegate").await.unwrap();
    h.next_call().await.call_tools(&[(
        "t1",
        "task",
        r#"{"description":"look","prompt":"look around","agent":"build"}"#,
    )]);
    h.next_call().await.answer("looked");
    h.next_call().await.answer("done");
    events.result().await;

    let records = h.runtime.stored().list(ListPage::default()).await.unwrap();
    let child = records
        .iter()
        .find(|r| r.parent_call.as_deref() == Some("t1"))
        .expect("the child's session");
    assert_eq!(child.created_by.as_deref(), Some("alice"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_made_by_new_and_fork_are_the_sessions_creators() {
    let h = Harness::new().await;
    let session = session_by(&h, "alice").await;
    let mut events = Events::of(&session);
    let replies = [
        ("/new", SystemSubtype::NewConversation),
        ("/fork", SystemSubtype::Forked),
    ];
    for (command, reply) in replies {
        session.submit_text(command).await.unwrap();
        events
            .until(|m| matches!(m, AgentMessage::System(s) if s.subtype == reply))
            .await;
    }
    let records = h.runtime.stored().list(ListPage::default()).await.unwrap();
    assert_eq!(records.len(), 3, "{records:#?}");
    for record in &records {
        assert_eq!(record.created_by.as_deref(), Some("alice"), "{record:#?}");
    }
}
