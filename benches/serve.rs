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
//!    under the burst of (2), then every session at once with paced
//!    replies (`AGENTBUS_BENCH_PACED_ALL=0` leaves this last one out).
//!
//! For each phase the bench also reports the CPU time the daemon process
//! spent (its utime + stime from `/proc/PID/stat`) per event delivered to
//! the SSE clients, and what the bench process itself (the scripted model
//! and the clients) spent.

#[path = "../tests/all/support/mod.rs"]
#[allow(dead_code)] // the bench uses a part of the tests' support
mod support;

use agentbus_testkit::Script;
use serde_json::Value;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
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
    /// Events of the turn (its `turn_id`), the `result` included.
    events: u64,
    /// Microseconds from the model stamping each chunk to this client
    /// parsing the delta that carries it.
    delays_us: Vec<u64>,
}

fn main() {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("serve bench: no tokio runtime: {error}");
            std::process::exit(1);
        }
    };
    runtime.block_on(bench());
}

async fn bench() {
    let sessions = env_number("AGENTBUS_BENCH_SESSIONS", 1000);
    let bursts = env_number("AGENTBUS_BENCH_BURSTS", BURSTS);
    let paced_all = env_number("AGENTBUS_BENCH_PACED_ALL", 1) != 0;
    let fixture = Fixture::with_script(script(sessions, bursts, paced_all)).await;
    let server = Arc::new(fixture.serve_with_env(&[], &[("RUST_LOG", "warn")]).await);
    println!("agentbus serve bench: {sessions} sessions, {CHUNKS} text chunks per reply");

    // 1. Sessions held open, each with a client.
    let rss_before = rss_kib(server.pid());
    let started = Instant::now();
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel();
    let mut ids = Vec::with_capacity(sessions);
    for _ in 0..sessions {
        let id = server.create_session().await;
        let frames = open_sse(&server, &id).await;
        tokio::spawn(follow(frames, seen_tx.clone()));
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
    let cpu = CpuMeter::start(server.pid());
    let alone = run_turns(&server, &ids[..1], "paced", &mut seen_rx).await;
    report_delay("one session, paced reply", &alone.0);
    cpu.report("one session, paced reply", alone.1);

    // 3b. Many sessions with paced replies.
    let cpu = CpuMeter::start(server.pid());
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
        let cpu = CpuMeter::start(server.pid());
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
        let cpu = CpuMeter::start(server.pid());
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
    let paced = 1 + PACED_SESSIONS.min(sessions) + if paced_all { sessions } else { 0 };
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
    let sends = ids.iter().map(|id| {
        let server = server.clone();
        let id = id.clone();
        let text = format!("{word} please");
        tokio::spawn(async move { server.input(&id, &text).await })
    });
    for send in futures::future::join_all(sends).await {
        send.expect("input sent");
    }
    let mut delays = Vec::new();
    let mut events = 0;
    for _ in ids {
        let turn = seen.recv().await.expect("every client reports its turn");
        assert_eq!(turn.delays_us.len(), CHUNKS, "every chunk arrived once");
        delays.extend(turn.delays_us);
        events += turn.events;
    }
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
async fn follow(mut frames: Frames, seen: mpsc::UnboundedSender<TurnSeen>) {
    let mut turn = TurnSeen {
        events: 0,
        delays_us: Vec::new(),
    };
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
                turn.delays_us.push(now.saturating_sub(sent));
            }
        }
        if event.kind == "result" {
            let done = std::mem::replace(
                &mut turn,
                TurnSeen {
                    events: 0,
                    delays_us: Vec::new(),
                },
            );
            if seen.send(done).is_err() {
                return;
            }
        }
    }
}

fn report_delay(what: &str, delays: &[u64]) {
    let mut sorted = delays.to_vec();
    sorted.sort_unstable();
    let at = |q: f64| {
        let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
        Duration::from_micros(sorted.get(index).copied().unwrap_or(0))
    };
    println!(
        "delay model chunk -> SSE client, {what}: {} chunks, p50 {:?}, p99 {:?}, max {:?}",
        sorted.len(),
        at(0.50),
        at(0.99),
        at(1.0)
    );
}

fn unix_micros() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_micros() as u64)
}

/// CPU time spent by the daemon and by this process (the scripted model
/// and the clients) from one moment on.
struct CpuMeter {
    daemon: u32,
    daemon_at_start: CpuTime,
    bench_at_start: CpuTime,
}

/// A process's CPU time: in its own code and in the kernel on its behalf.
#[derive(Clone, Copy, Default)]
struct CpuTime {
    user: Duration,
    system: Duration,
}

impl CpuTime {
    fn total(self) -> Duration {
        self.user + self.system
    }

    fn since(self, start: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(start.user),
            system: self.system.saturating_sub(start.system),
        }
    }
}

impl CpuMeter {
    fn start(daemon: u32) -> CpuMeter {
        CpuMeter {
            daemon,
            daemon_at_start: cpu_time(daemon),
            bench_at_start: cpu_time(std::process::id()),
        }
    }

    /// Prints the CPU time spent since the start, in all and per event.
    fn report(self, what: &str, events: u64) {
        let daemon = cpu_time(self.daemon).since(self.daemon_at_start);
        let bench = cpu_time(std::process::id()).since(self.bench_at_start);
        let per_event = |spent: Duration| spent.as_secs_f64() * 1e6 / events.max(1) as f64;
        println!(
            "CPU, {what}: daemon {:.2} s = {:.1} us per event delivered ({events} events), \
             {:.1} of them in the kernel; model and clients {:.2} s = {:.1} us per event, \
             {:.1} in the kernel",
            daemon.total().as_secs_f64(),
            per_event(daemon.total()),
            per_event(daemon.system),
            bench.total().as_secs_f64(),
            per_event(bench.total()),
            per_event(bench.system),
        );
    }
}

/// A process's user and system CPU time so far, from `/proc/PID/stat`.
fn cpu_time(pid: u32) -> CpuTime {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return CpuTime::default();
    };
    // The fields after the command name (in parentheses, which may hold
    // spaces): state is field 3, utime 14 and stime 15.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return CpuTime::default();
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let time = |index: usize| -> Duration {
        let ticks: u64 = fields
            .get(index - 3)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        Duration::from_secs_f64(ticks as f64 / clock_ticks_per_second())
    };
    CpuTime {
        user: time(14),
        system: time(15),
    }
}

/// `getconf CLK_TCK`: the unit of the times in `/proc/PID/stat`.
fn clock_ticks_per_second() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// Resident memory of a process, from `/proc`.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
