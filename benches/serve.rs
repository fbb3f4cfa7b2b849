//! The daemon under load, measured (not a test: it asserts only that the
//! work was done). Run with `cargo bench --bench serve`; the README reports
//! the figures.
//!
//! Everything is real and on this machine: the release `agentbus serve`
//! binary, the scripted model server speaking OpenAI's streaming format over
//! HTTP, and SSE clients over loopback — so clients, model and daemon share
//! the cores. The model writes into each text chunk the wall-clock time it
//! sent it (`stamped_chunks`), so each client sees how long the chunk took
//! to reach it through the daemon: HTTP in, provider parser, AgentLoop, bus,
//! the client's UiSink, SSE out.
//!
//! 1. Sessions held open at once: `AGENTBUS_BENCH_SESSIONS` (default 1,000)
//!    sessions created over the API, each with an SSE client attached; the
//!    daemon's resident memory before and after.
//! 2. Throughput: every held session gets a query at the same moment and the
//!    model streams each reply's chunks as fast as it can; events delivered
//!    to all SSE clients per second. Four rounds (`AGENTBUS_BENCH_BURSTS`),
//!    with the daemon's resident memory after each: what a session keeps per
//!    turn shows as growth from round to round.
//! 3. Delay from the model sending a chunk to the same text delta reaching
//!    an SSE client, p50/p99: one session alone, then 100 sessions at once
//!    with paced replies (a chunk every 20 ms, as a model generates), then
//!    under the burst of (2), then every session with paced replies:
//!    the queries sent at once, then spread evenly over one pace interval
//!    (`AGENTBUS_BENCH_PACED_ALL=0` leaves these two out).
//!
//! `cargo bench --bench loopback_floor` measures the floor under the paced
//! phases: a relay that only copies the model's bytes to the clients.
//!
//! The daemon runs on cores of its own and the load on the others
//! (`AGENTBUS_BENCH_DAEMON_CPUS`, `AGENTBUS_BENCH_LOAD_CPUS`; by default
//! half and half, one core each on two: [`measure::affinity`]); the output
//! says which.
//!
//! For each phase the bench also reports the CPU time the daemon process
//! spent (its utime + stime from `/proc/PID/stat`) per event delivered to
//! the SSE clients, and what the bench process itself (the scripted model
//! and the clients) spent.

#[path = "../tests/all/support/mod.rs"]
#[allow(dead_code)] // the bench uses a part of the tests' support
mod support;

mod measure;

use agentbus_testkit::Script;
use measure::{CpuMeter, report_delay, report_delay_of, rss_kib, unix_micros};
use serde_json::Value;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::Fixture;
use support::server::Server;
use tokio::sync::mpsc;

/// Text chunks per reply.
const CHUNKS: usize = 50;
/// Sessions that stream paced replies at once in the delay measurement.
const PACED_SESSIONS: usize = 100;
/// The pause between a paced reply's chunks.
const PACE_MS: u64 = 20;
/// Rounds of every session answering at once, unless
/// `AGENTBUS_BENCH_BURSTS` says otherwise.
const BURSTS: usize = 4;

/// What one SSE client saw of one turn.
struct TurnSeen {
    /// The session's place in the bench's list.
    session: usize,
    /// When the model stamped the reply's first chunk (Unix microseconds).
    first_stamp: Option<u64>,
    /// Events of the turn (its `turn_id`), the `result` included.
    events: u64,
    /// Microseconds from the model stamping each chunk to this client
    /// parsing the delta that carries it.
    delays_us: Vec<u64>,
}

fn main() {
    // Before the runtime: its threads inherit the load's cores.
    let affinity = measure::affinity::Affinity::from_env();
    affinity.pin_load();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("serve bench: no tokio runtime: {error}");
            std::process::exit(1);
        }
    };
    runtime.block_on(bench(affinity));
}

async fn bench(affinity: measure::affinity::Affinity) {
    let sessions = env_number("AGENTBUS_BENCH_SESSIONS", 1000);
    let bursts = env_number("AGENTBUS_BENCH_BURSTS", BURSTS);
    let paced_all = env_number("AGENTBUS_BENCH_PACED_ALL", 1) != 0;
    let fixture = Fixture::with_script(script(sessions, bursts, paced_all)).await;
    let daemon_cpus = measure::affinity::set(&affinity.daemon);
    let server = Arc::new(
        fixture
            .serve_on(&[], &[("RUST_LOG", "warn")], Some(daemon_cpus))
            .await,
    );
    println!("agentbus serve bench: {sessions} sessions, {CHUNKS} text chunks per reply");
    println!("{}", affinity.describe());

    // 1. Sessions held open, each with a client.
    let rss_before = rss_kib(server.pid());
    let started = Instant::now();
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel();
    let mut ids = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let id = server.create_session().await;
        let frames = open_sse(&server, &id).await;
        tokio::spawn(follow(frames, ids.len(), seen_tx.clone()));
        ids.push(id);
    }
    drop(seen_tx);
    // Each stream answered 200 only after its client was attached.
    let health: Value = server
        .get("/v1/health")
        .send()
        .await
        .expect("health")
        .json()
        .await
        .expect("health JSON");
    let rss_after = rss_kib(server.pid());
    println!(
        "held open: {} sessions with an SSE client each, created and attached in {:.1} s; \
         daemon RSS {} KiB -> {} KiB, {:.1} KiB per session; health says {} loaded",
        sessions,
        started.elapsed().as_secs_f64(),
        rss_before,
        rss_after,
        (rss_after.saturating_sub(rss_before)) as f64 / sessions as f64,
        health["sessions_loaded"],
    );

    // 3a. One session alone.
    let cpu = CpuMeter::start(server.pid(), "daemon");
    let alone = run_turns(&server, &ids[..1], "paced", &mut seen_rx).await;
    report_delay("one session, paced reply", &alone.0);
    cpu.report("one session, paced reply", alone.1);

    // 3b. Many sessions with paced replies.
    let cpu = CpuMeter::start(server.pid(), "daemon");
    let paced = run_turns(
        &server,
        &ids[..PACED_SESSIONS.min(sessions)],
        "paced",
        &mut seen_rx,
    )
    .await;
    let what = format!(
        "{} sessions at once, paced replies",
        PACED_SESSIONS.min(sessions)
    );
    report_delay(&what, &paced.0);
    cpu.report(&what, paced.1);

    // 2 + 3c. Every session at once, as fast as the model can stream;
    // several times, to tell memory kept per turn from the high-water mark
    // of a burst.
    for round in 1..=bursts {
        let cpu = CpuMeter::start(server.pid(), "daemon");
        let started = Instant::now();
        let (delays, events) = run_turns(&server, &ids, "burst", &mut seen_rx).await;
        let elapsed = started.elapsed().as_secs_f64();
        println!(
            "burst {round}: {} turns, {} events delivered to SSE clients in {:.2} s = {:.0} events/s",
            ids.len(),
            events,
            elapsed,
            events as f64 / elapsed
        );
        let what = format!("{} sessions at once, burst {round}", ids.len());
        report_delay(&what, &delays);
        cpu.report(&what, events);
        println!(
            "daemon RSS after burst {round}: {} KiB",
            rss_kib(server.pid())
        );
    }

    // 3d. Every session at once, paced like a model generating: a chunk
    // every 20 ms in each session. The inputs go out together, so the
    // sessions' replies start as fast as the daemon takes them.
    if paced_all {
        let cpu = CpuMeter::start(server.pid(), "daemon");
        let (delays, events) = run_turns(&server, &ids, "paced", &mut seen_rx).await;
        // Where in the replies the delays are: while every session's turn
        // starts (the inputs stored, the model called), in the middle, and
        // while they end (the replies stored).
        for (name, chunks) in [
            ("chunks 1-5", 0..5),
            ("chunks 6-45", 5..CHUNKS - 5),
            ("chunks 46-50", CHUNKS - 5..CHUNKS),
        ] {
            let part: Vec<u64> = delays
                .chunks(CHUNKS)
                .flat_map(|turn| turn[chunks.clone()].iter().copied())
                .collect();
            report_delay(
                &format!("{} sessions, paced replies, {name}", ids.len()),
                &part,
            );
        }
        let what = format!("{} sessions at once, paced replies", ids.len());
        report_delay(&what, &delays);
        cpu.report(&what, events);

        // 3e. The same, with the queries spread evenly over one pace
        // interval, as users who do not all press Enter in the same
        // millisecond would send them.
        let cpu = CpuMeter::start(server.pid(), "daemon");
        let spread = Duration::from_millis(PACE_MS);
        let (delays, events) = run_turns_spread(&server, &ids, "paced", spread, &mut seen_rx).await;
        let what = format!(
            "{} sessions, paced replies, queries spread over {PACE_MS} ms",
            ids.len()
        );
        report_delay(&what, &delays);
        cpu.report(&what, events);
    }

    server.terminate();
    let server = Arc::into_inner(server).expect("the clients hold no server");
    let (status, log) = server.wait().await;
    if !status.success() {
        eprintln!("agentbus serve exited with {status}:\n{log}");
        std::process::exit(1);
    }
    let problems = fixture.server.violations();
    if !problems.is_empty() {
        eprintln!("the model saw invalid requests: {problems:#?}");
        std::process::exit(1);
    }
}

/// A whole number from the environment, or `default`.
fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

/// One response per turn the bench runs: the paced ones route by the word
/// "paced" in the query, the others answer the bursts.
fn script(sessions: usize, bursts: usize, paced_all: bool) -> Script {
    let mut toml = String::new();
    let paced = 1 + PACED_SESSIONS.min(sessions) + if paced_all { 2 * sessions } else { 0 };
    for _ in 0..paced {
        let _ = write!(
            toml,
            "[[response]]\nmatch = \"paced\"\nstamped_chunks = {CHUNKS}\nchunk_interval_ms = {PACE_MS}\n"
        );
    }
    for _ in 0..sessions * bursts {
        let _ = write!(toml, "[[response]]\nstamped_chunks = {CHUNKS}\n");
    }
    match Script::from_toml_str(&toml) {
        Ok(script) => script,
        Err(error) => panic!("bench script: {error:#}"),
    }
}

/// Sends `word` as a query to every session at once and waits for every
/// result; the delays of all chunks and the number of events delivered.
async fn run_turns(
    server: &Arc<Server>,
    ids: &[String],
    word: &str,
    seen: &mut mpsc::UnboundedReceiver<TurnSeen>,
) -> (Vec<u64>, u64) {
    run_turns_spread(server, ids, word, Duration::ZERO, seen).await
}

/// [`run_turns`] with the queries' sending spread evenly over `spread`.
async fn run_turns_spread(
    server: &Arc<Server>,
    ids: &[String],
    word: &str,
    spread: Duration,
    seen: &mut mpsc::UnboundedReceiver<TurnSeen>,
) -> (Vec<u64>, u64) {
    let count = ids.len() as u32;
    let sends = ids.iter().enumerate().map(|(index, id)| {
        let server = server.clone();
        let id = id.clone();
        let text = format!("{word} please");
        let after = spread * index as u32 / count;
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            let sent = unix_micros();
            server.input(&id, &text).await;
            sent
        })
    });
    let mut sent_at = Vec::with_capacity(ids.len());
    for send in futures::future::join_all(sends).await {
        sent_at.push(send.expect("input sent"));
    }
    let mut delays = Vec::new();
    let mut starts = Vec::new();
    let mut events = 0;
    for _ in ids {
        let turn = seen.recv().await.expect("every client reports its turn");
        if let (Some(first), Some(sent)) = (turn.first_stamp, sent_at.get(turn.session)) {
            starts.push(first.saturating_sub(*sent));
        }
        assert_eq!(turn.delays_us.len(), CHUNKS, "every chunk arrived once");
        delays.extend(turn.delays_us);
        events += turn.events;
    }
    report_delay_of(
        "query sent -> model's first chunk",
        &format!("{} sessions", ids.len()),
        &starts,
    );
    (delays, events)
}

/// One SSE client of a session: its stream of frames, opened (answered 200)
/// once the daemon attached it.
type Frames = std::pin::Pin<
    Box<dyn futures::Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>,
>;

async fn open_sse(server: &Server, id: &str) -> Frames {
    let response = server
        .get(&format!("/v1/sessions/{id}/events"))
        .send()
        .await
        .expect("GET events");
    assert_eq!(response.status(), 200, "GET events");
    Box::pin(sse_stream::SseStream::from_bytes_stream(
        response.bytes_stream(),
    ))
}

/// What the client reads of each event: only what it measures, so that the
/// clients, which share the cores with the daemon, parse as little as they
/// can.
#[derive(serde::Deserialize)]
struct Seen<'a> {
    seq: u64,
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    turn_id: Option<u64>,
    #[serde(borrow)]
    event: Option<SeenDelta<'a>>,
}

#[derive(serde::Deserialize)]
struct SeenDelta<'a> {
    #[serde(rename = "type", borrow)]
    kind: std::borrow::Cow<'a, str>,
    #[serde(borrow)]
    text: Option<std::borrow::Cow<'a, str>>,
}

/// Reads one session's events for ever (checking they come in seq order,
/// each once); reports each turn at its result.
async fn follow(mut frames: Frames, session: usize, seen: mpsc::UnboundedSender<TurnSeen>) {
    let fresh = || TurnSeen {
        session,
        first_stamp: None,
        events: 0,
        delays_us: Vec::new(),
    };
    let mut turn = fresh();
    let mut last_seq = 0;
    while let Some(Ok(frame)) = futures::StreamExt::next(&mut frames).await {
        let now = unix_micros();
        let Some(data) = frame.data else { continue };
        let event: Seen = serde_json::from_str(&data).expect("an event");
        assert!(
            last_seq == 0 || event.seq == last_seq + 1,
            "events in order, each once: {} after {last_seq}",
            event.seq
        );
        last_seq = event.seq;
        if event.turn_id.is_none() {
            continue;
        }
        turn.events += 1;
        if let Some(delta) = event.event.filter(|d| d.kind == "text_delta") {
            for stamp in delta.text.as_deref().unwrap_or_default().split_whitespace() {
                let sent: u64 = stamp.parse().expect("a stamped chunk");
                turn.first_stamp.get_or_insert(sent);
                turn.delays_us.push(now.saturating_sub(sent));
            }
        }
        if event.kind == "result" {
            let done = std::mem::replace(&mut turn, fresh());
            if seen.send(done).is_err() {
                return;
            }
        }
    }
}
