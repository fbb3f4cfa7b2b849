//! The floor under the serve bench's paced phase: what any daemon pays to
//! pass a model's chunks on to its clients over loopback TCP on this
//! machine, measured with a relay that does nothing else. Run with
//! `cargo bench --bench loopback_floor`; the README compares its figures
//! with the serve bench's.
//!
//! The relay is this same binary started again with `--relay MODEL_ADDR`,
//! so that its CPU time is its own process's, as the daemon's is in the
//! serve bench. It runs on tokio's default runtime (a worker per core, as
//! `agentbus serve` does) and, for each client that connects, opens a
//! connection to the model and copies what it reads to the client: one
//! read and one write per chunk, no parsing, no state, no allocation. What
//! it costs per chunk is what the kernel and the runtime cost; a daemon
//! that parses the model's stream, keeps a conversation and serialises
//! events can only add to it.
//!
//! The model (in this process, like the serve bench's scripted model)
//! streams each session's reply as OpenAI-style SSE chunks stamped with the
//! wall-clock time they were sent, `CHUNKS` of them, one every `PACE_MS`;
//! the clients (in this process too) read them through the relay and
//! measure each chunk's delay. Two phases over `AGENTBUS_BENCH_SESSIONS`
//! (default 1,000) sessions: every reply starting at the same moment, as in
//! the serve bench's paced phase, then the starts spread evenly over one
//! pace interval, as users who do not all press Enter in the same
//! millisecond would spread them.

#[allow(dead_code)] // this bench reads no resident memory
mod measure;

use measure::{CpuMeter, report_delay, unix_micros};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};

/// Chunks per reply, and the pause between two of them: the serve bench's.
const CHUNKS: usize = 50;
const PACE_MS: u64 = 20;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("loopback floor bench: no tokio runtime: {error}");
            std::process::exit(1);
        }
    };
    match args.iter().position(|arg| arg == "--relay") {
        Some(at) => {
            let model = args.get(at + 1).cloned().unwrap_or_default();
            runtime.block_on(relay(model));
        }
        None => runtime.block_on(bench()),
    }
}

/// The relay's process: prints the port it listens on, then copies each
/// model connection to its client until the bench ends it.
async fn relay(model: String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("relay bind");
    let port = listener.local_addr().expect("relay address").port();
    println!("{port}");
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let model = model.clone();
        tokio::spawn(async move {
            let _ = client.set_nodelay(true);
            let Ok(upstream) = TcpStream::connect(&model).await else {
                return;
            };
            let _ = upstream.set_nodelay(true);
            copy(upstream, client).await;
        });
    }
}

/// One read, one write per chunk, the buffer reused.
async fn copy(mut from: TcpStream, mut to: TcpStream) {
    let mut buffer = vec![0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if to.write_all(&buffer[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

async fn bench() {
    let sessions: usize = std::env::var("AGENTBUS_BENCH_SESSIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1000);
    println!(
        "loopback floor bench: {sessions} sessions, {CHUNKS} chunks per reply, one every {PACE_MS} ms"
    );

    // The model: each connection it accepts is one session, which streams
    // a reply whenever the phase changes.
    let model = TcpListener::bind("127.0.0.1:0").await.expect("model bind");
    let model_addr = model.local_addr().expect("model address");
    // Each phase sends how the replies' starts are spread (zero: at once).
    let (phase_tx, phase_rx) = watch::channel(Duration::ZERO);
    let (accepted_tx, mut accepted_rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut index = 0usize;
        loop {
            let Ok((socket, _)) = model.accept().await else {
                continue;
            };
            let _ = socket.set_nodelay(true);
            tokio::spawn(stream_replies(socket, index, sessions, phase_rx.clone()));
            index += 1;
            let _ = accepted_tx.send(());
        }
    });

    // The relay, a process of its own.
    let exe = std::env::current_exe().expect("this bench's path");
    let mut child = tokio::process::Command::new(exe)
        .arg("--relay")
        .arg(model_addr.to_string())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the relay");
    let relay_pid = child.id().expect("the relay's pid");
    let mut lines = BufReader::new(child.stdout.take().expect("relay stdout")).lines();
    let port = lines
        .next_line()
        .await
        .expect("relay stdout")
        .expect("the relay's port");
    let relay_addr = format!("127.0.0.1:{port}");

    // The clients, each through the relay to a session of the model.
    let (seen_tx, mut seen_rx) = mpsc::unbounded_channel();
    for _ in 0..sessions {
        let socket = TcpStream::connect(&relay_addr).await.expect("connect");
        let _ = socket.set_nodelay(true);
        tokio::spawn(follow(socket, seen_tx.clone()));
    }
    for _ in 0..sessions {
        accepted_rx.recv().await.expect("the model accepts");
    }

    let pace = Duration::from_millis(PACE_MS);
    for (spread, what) in [
        (Duration::ZERO, "replies starting at once"),
        (pace, "starts spread over one pace interval"),
    ] {
        let cpu = CpuMeter::start(relay_pid, "relay");
        phase_tx.send_replace(spread);
        let mut delays = Vec::with_capacity(sessions * CHUNKS);
        for _ in 0..sessions {
            delays.extend(seen_rx.recv().await.expect("every client reports"));
        }
        let what = format!("{sessions} sessions paced, {what}");
        report_delay(&what, &delays);
        cpu.report(&what, delays.len() as u64);
    }
}

/// One session of the model: at each new phase, after its share of the
/// spread, `CHUNKS` stamped chunks `PACE_MS` apart.
async fn stream_replies(
    mut socket: TcpStream,
    index: usize,
    sessions: usize,
    mut phase: watch::Receiver<Duration>,
) {
    while phase.changed().await.is_ok() {
        let spread = *phase.borrow_and_update();
        tokio::time::sleep(spread * index as u32 / sessions as u32).await;
        for _ in 0..CHUNKS {
            let chunk = format!(
                "data: {{\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"{} \"}}}}]}}\n\n",
                unix_micros()
            );
            if socket.write_all(chunk.as_bytes()).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(PACE_MS)).await;
        }
    }
}

/// One client: reads frames, takes the stamp out of each, reports a
/// reply's delays once all its chunks arrived.
async fn follow(mut socket: TcpStream, seen: mpsc::UnboundedSender<Vec<u64>>) {
    let mut buffer = Vec::with_capacity(16 * 1024);
    let mut delays = Vec::with_capacity(CHUNKS);
    let marker = b"\"content\":\"";
    loop {
        let mut read = [0u8; 8 * 1024];
        let n = match socket.read(&mut read).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let now = unix_micros();
        buffer.extend_from_slice(&read[..n]);
        while let Some(end) = buffer.windows(2).position(|w| w == b"\n\n") {
            let frame: Vec<u8> = buffer.drain(..end + 2).collect();
            let Some(at) = frame.windows(marker.len()).position(|w| w == marker) else {
                continue;
            };
            let digits = frame[at + marker.len()..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'));
            delays.push(now.saturating_sub(digits));
            if delays.len() == CHUNKS {
                let done = std::mem::replace(&mut delays, Vec::with_capacity(CHUNKS));
                if seen.send(done).is_err() {
                    return;
                }
            }
        }
    }
}
