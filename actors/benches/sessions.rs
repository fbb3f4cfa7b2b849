//! Session persistence and memory, measured (not a test: it asserts only
//! that the work was done). Run with
//! `cargo bench -p agentbus-engine --bench sessions`; the README reports it.
//!
//! 1. Resident memory with 10,000 sessions stored but not loaded.
//! 2. Resident memory per idle loaded session (each has had one turn).
//! 3. Load time of a 10,000-event session: take the lease, read and parse
//!    the log, fold it through the session core.
//!
//! Stored sessions are made as a user makes them, by importing export
//! documents (through the runtime, which is all a program outside the crate
//! may use). Append throughput, one event per transaction, is the store's
//! own report: `cargo test --release -p agentbus-engine --lib
//! store::tests::append_throughput_report -- --ignored --nocapture`.

use agentbus_engine::protocol::{
    AgentMessage, AssistantEvent, ContentBlock, EventEnvelope, SessionId, ToolResultEvent, Usage,
};
use agentbus_engine::runtime::{
    ModelClient, ModelEvent, ModelRequest, ModelStream, SessionDocument, SessionDoor,
};
use agentbus_engine::settings::{ModelProfile, ProviderKind, SessionSettings, ToolSettings};
use agentbus_engine::{Runtime, SessionOptions, Settings};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// A model that answers every request at once.
struct InstantModel;

impl ModelClient for InstantModel {
    fn stream(&self, _: ModelRequest) -> ModelStream {
        Box::pin(futures::stream::iter([
            Ok(ModelEvent::TextDelta {
                index: 0,
                text: "ok".into(),
            }),
            Ok(ModelEvent::Finished {
                finish_reason: "end_turn".into(),
            }),
        ]))
    }
}

fn settings(dir: &std::path::Path) -> Settings {
    Settings {
        model: "m".into(),
        system_prompt: "bench".into(),
        max_steps: 5,
        include_partial_messages: true,
        disallowed_tools: vec![],
        workspace: dir.to_path_buf(),
        models: BTreeMap::from([(
            "m".to_string(),
            ModelProfile::new(ProviderKind::Openai, "m", "http://unused"),
        )]),
        tools: ToolSettings::default(),
        mcp_servers: BTreeMap::new(),
        mcp: Default::default(),
        data_dir: dir.join("data"),
        config_dir: None,
        sessions: SessionSettings {
            idle_unload_secs: 0,
            ..Default::default()
        },
        server: Default::default(),
        context: Default::default(),
        permissions: Default::default(),
        sandbox: Default::default(),
        agents: Vec::new(),
        subagents: Default::default(),
        hooks: Vec::new(),
        skills: Default::default(),
        checkpoints: Default::default(),
        compact_prompt: agentbus_engine::settings::DEFAULT_COMPACT_PROMPT.into(),
        unreachable_hint: None,
        cluster: None,
    }
}

/// A realistic persisted event: an assistant message with a tool call, or
/// the tool's result.
fn event(session: &SessionId, seq: u64) -> Arc<EventEnvelope> {
    let message = if seq % 2 == 1 {
        AgentMessage::Assistant(AssistantEvent {
            content: vec![
                ContentBlock::Text {
                    text: "Let me look at the file that holds the configuration first.".into(),
                },
                ContentBlock::ToolUse {
                    id: format!("call_{seq}"),
                    name: "read_file".into(),
                    input: serde_json::json!({"path": "src/config/mod.rs", "offset": 1, "limit": 200}),
                },
            ],
            model: "m".into(),
            usage: Usage {
                input_tokens: 1200,
                output_tokens: 40,
                ..Default::default()
            },
            finish_reason: "tool_use".into(),
            interrupted: false,
            context: None,
        })
    } else {
        AgentMessage::ToolResult(ToolResultEvent {
            checkpoint: None,
            call_id: format!("call_{}", seq - 1),
            name: "read_file".into(),
            is_error: false,
            output: "     1\t//! Loading the configuration.\n     2\tuse std::path::Path;\n"
                .repeat(4),
            duration_ms: 1,
            cancelled: false,
        })
    };
    Arc::new(EventEnvelope {
        session_id: session.clone(),
        seq,
        turn_id: Some(1),
        at: chrono::Utc::now(),
        message,
    })
}

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// An export document of a session with `events` events, as `sessions
/// export` writes them.
fn document(events: u64) -> SessionDocument {
    let id = SessionId::new();
    let log: Vec<_> = (1..=events).map(|seq| event(&id, seq)).collect();
    let json = serde_json::json!({
        "format": "agentbus-session",
        "version": 1,
        "exported_at": chrono::Utc::now(),
        "session": {"id": id, "created_at": chrono::Utc::now(), "model": "m", "workspace": "/bench"},
        "events": log,
    });
    SessionDocument::from_json(&json.to_string()).expect("a valid document")
}

async fn one_turn(runtime: &Runtime) -> SessionId {
    let session = runtime
        .create_session(SessionOptions::default())
        .await
        .expect("session");
    let mut events = session.subscribe(0).expect("subscribe");
    session.submit_text("hello").await.expect("submit");
    while let Ok(e) = events.recv().await {
        if matches!(e.message, AgentMessage::Result(_)) {
            break;
        }
    }
    session.id().clone()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let runtime = Runtime::with_model_client(settings(dir.path()), Arc::new(InstantModel))
        .await
        .expect("runtime");

    // 1. Memory with 10,000 sessions stored but not loaded: measured before
    // any session is loaded (freed memory is not given back to the system,
    // so measuring after unloading would show the high-water mark).
    let stored = 10_000u64;
    let before = rss_kib();
    let small = document(4);
    for _ in 0..stored {
        runtime
            .stored()
            .import(small.clone())
            .await
            .expect("import");
    }
    let after = rss_kib();
    let listed = runtime
        .stored()
        .list(Default::default())
        .await
        .expect("list")
        .len();
    println!(
        "memory: {listed} sessions stored, none loaded: {after} KiB resident ({:+} KiB for the {stored} new ones)",
        after as i64 - before as i64
    );

    // 2. Memory per idle loaded session (each has had one turn), before the
    // large session below raises the allocator's high-water mark.
    let loaded = 2_000;
    let before = rss_kib();
    let mut handles = Vec::new();
    for _ in 0..loaded {
        let id = one_turn(&runtime).await;
        handles.push(runtime.session(&id).await.expect("loaded"));
    }
    let after = rss_kib();
    println!(
        "memory: {loaded} idle loaded sessions (one turn each): {:.1} KiB each ({before} KiB -> {after} KiB)",
        (after - before) as f64 / loaded as f64,
    );
    drop(handles);

    // 3. Load time of a 10,000-event session (lease, read, parse, fold).
    let n = 10_000u64;
    let big = runtime.stored().import(document(n)).await.expect("import");
    let id = big.id;
    let mut loads = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let session = runtime.open_session(&id).await.expect("open");
        let state = session.snapshot().await.expect("loaded");
        loads.push(started.elapsed());
        assert_eq!(state.history.len(), n as usize);
        drop(session);
        runtime.sweep_idle().await;
    }
    loads.sort();
    println!(
        "load: a {n}-event session: median {:.1} ms (min {:.1}, max {:.1})",
        loads[2].as_secs_f64() * 1e3,
        loads[0].as_secs_f64() * 1e3,
        loads[4].as_secs_f64() * 1e3
    );

    runtime.shutdown().await;
}
