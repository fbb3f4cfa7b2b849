//! A running `agentbus serve` and clients of its API: plain HTTP requests,
//! SSE streams (parsed with `sse-stream`) and WebSockets.
//!
//! The server listens on a free port (`--listen 127.0.0.1:0`); its address
//! is read from the line it prints on stderr, and its token from the data
//! dir. Every wait is bounded by [`GUARD`] only to turn a hang into a
//! failure.

use super::{Fixture, GUARD};
use futures::{SinkExt, Stream, StreamExt};
use serde_json::Value;
use std::pin::Pin;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;
use tokio_tungstenite::tungstenite::Message;

pub struct Server {
    child: Child,
    pub url: String,
    pub token: String,
    stderr: Arc<Mutex<String>>,
    stderr_task: tokio::task::JoinHandle<()>,
    pub http: reqwest::Client,
}

impl Fixture {
    /// Start `agentbus serve` with this fixture's config and data dir.
    pub async fn serve(&self) -> Server {
        self.serve_with(&[]).await
    }

    /// Start `agentbus serve` with extra arguments after `serve`.
    pub async fn serve_with(&self, extra: &[&str]) -> Server {
        self.serve_with_env(extra, &[]).await
    }

    /// Start `agentbus serve` with extra arguments (`--listen` among them
    /// replaces 127.0.0.1:0) and environment variables (e.g. a quieter
    /// `RUST_LOG` for benchmarks). The token is read from the data dir; a
    /// server with `[server] token` configured has none there (`token` is
    /// then empty: set it).
    pub async fn serve_with_env(&self, extra: &[&str], env: &[(&str, &str)]) -> Server {
        self.serve_on(extra, env, None).await
    }

    /// [`serve_with_env`](Self::serve_with_env), the daemon (every thread
    /// of it) pinned to the cores `cpus` holds when given (a bench measures
    /// it apart from its load).
    pub async fn serve_on(
        &self,
        extra: &[&str],
        env: &[(&str, &str)],
        cpus: Option<nix::sched::CpuSet>,
    ) -> Server {
        let mut args = vec!["serve"];
        if !extra.contains(&"--listen") {
            args.extend(["--listen", "127.0.0.1:0"]);
        }
        args.extend_from_slice(extra);
        let mut command = self.command(&args);
        command.envs(env.iter().copied());
        if let Some(cpus) = cpus {
            // SAFETY: between fork and exec only a system call runs.
            unsafe {
                command.pre_exec(move || {
                    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &cpus)
                        .map_err(std::io::Error::from)
                });
            }
        }
        let mut child = command.spawn().expect("spawn agentbus serve");
        let stderr_pipe = child.stderr.take().expect("stderr");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (addr_tx, addr_rx) = tokio::sync::oneshot::channel();
        let collected = stderr.clone();
        let stderr_task = tokio::spawn(async move {
            let mut lines = BufReader::new(stderr_pipe).lines();
            let mut addr_tx = Some(addr_tx);
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("agentbus: listening on ")
                    && let Some(tx) = addr_tx.take()
                {
                    let _ = tx.send(url.trim().to_string());
                }
                let mut text = collected.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        });
        let url = match tokio::time::timeout(GUARD, addr_rx).await {
            Ok(Ok(url)) => url,
            _ => panic!(
                "agentbus serve did not say where it listens; stderr:\n{}",
                stderr.lock().unwrap()
            ),
        };
        let token_file = self.home.path().join("data").join("token");
        let token = std::fs::read_to_string(&token_file)
            .map(|text| text.trim().to_string())
            .unwrap_or_default();
        Server {
            child,
            url,
            token,
            stderr,
            stderr_task,
            http: {
                agentbus_engine::runtime::install_crypto_provider();
                reqwest::Client::new()
            },
        }
    }
}

impl Server {
    /// Run the browser test (`tests/browser/run.sh`, Chromium driven by
    /// playwright-core) against this server, with its URL and token and
    /// `env` (`PAGE_SUITE` and the suite's own variables); its stdout,
    /// once it passed and said that `checks` checks passed.
    pub async fn browser_test(
        &self,
        env: &[(&str, &dyn AsRef<std::ffi::OsStr>)],
        checks: usize,
    ) -> String {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/run.sh");
        let mut command = tokio::process::Command::new(&script);
        command
            .env("AGENTBUS_URL", &self.url)
            .env("AGENTBUS_TOKEN", &self.token);
        for (name, value) in env {
            command.env(name, value);
        }
        let output = command
            .output()
            .await
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "browser test failed:\n{stdout}\n{stderr}\nserver log:\n{}",
            self.stderr()
        );
        assert!(
            stdout.contains(&format!("{checks} passed, 0 failed")),
            "{stdout}"
        );
        stdout
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().expect("server is running")
    }

    /// What the server logged so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn get(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .get(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
    }

    /// `GET path` answered 200 with JSON; the JSON.
    pub async fn get_json(&self, path: &str) -> Value {
        let response = self.get(path).send().await.expect("GET");
        assert_eq!(response.status(), 200, "GET {path}");
        response.json().await.expect("a JSON answer")
    }

    pub fn post(&self, path: &str) -> reqwest::RequestBuilder {
        self.http
            .post(format!("{}{path}", self.url))
            .bearer_auth(&self.token)
    }

    /// `POST /v1/sessions` with `body`; the new id.
    pub async fn create_session_with(&self, body: Value) -> String {
        let response = self.post("/v1/sessions").json(&body).send().await.unwrap();
        assert_eq!(response.status(), 201, "{}", response.text().await.unwrap());
        let created: Value = response.json().await.unwrap();
        created["id"].as_str().expect("an id").to_string()
    }

    pub async fn create_session(&self) -> String {
        self.create_session_with(serde_json::json!({})).await
    }

    /// `POST .../input` with `{"text": text}`; the input id.
    pub async fn input(&self, id: &str, text: &str) -> u64 {
        let response = self
            .post(&format!("/v1/sessions/{id}/input"))
            .json(&serde_json::json!({ "text": text }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202, "{}", response.text().await.unwrap());
        let accepted: Value = response.json().await.unwrap();
        accepted["input_id"].as_u64().expect("an input id")
    }

    /// Follow a session's events over SSE, after `after` (sent as
    /// `Last-Event-ID` when given).
    pub async fn sse(&self, id: &str, last_event_id: Option<u64>) -> EventStream {
        let mut request = self.get(&format!("/v1/sessions/{id}/events"));
        if let Some(seq) = last_event_id {
            request = request.header("Last-Event-ID", seq.to_string());
        }
        EventStream::open(request).await
    }

    /// Follow `stream` to the `result` of turn `input_id` as a real client
    /// does: when the server cuts it off (a client that falls 1,024 events
    /// behind is), reconnect after the last seq it got. `stream.events`
    /// holds everything received, stitched.
    pub async fn result_of_resuming(
        &self,
        stream: &mut EventStream,
        id: &str,
        input_id: u64,
    ) -> Value {
        const MAX_RECONNECTS: usize = 1000;
        for _ in 0..MAX_RECONNECTS {
            while let Some(event) = stream.next().await {
                if event["type"] == "result" && event["turn_id"] == input_id {
                    return event;
                }
            }
            let last = stream.seqs().last().copied();
            stream.frames = self.sse(id, last).await.frames;
        }
        panic!("no result for turn {input_id} after {MAX_RECONNECTS} reconnects");
    }

    /// A WebSocket on a session, the token in its `Authorization` header.
    pub async fn ws(&self, id: &str) -> Socket {
        let bearer = format!("Bearer {}", self.token);
        self.ws_with(id, "authorization", &bearer)
            .await
            .expect("WebSocket connects")
    }

    /// A WebSocket on a session whose handshake carries the header
    /// `name: value` (and no other credential).
    pub async fn ws_with(
        &self,
        id: &str,
        name: &'static str,
        value: &str,
    ) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
        use tokio_tungstenite::tungstenite::client::IntoClientRequest;
        let url = format!(
            "{}/v1/sessions/{id}/ws",
            self.url.replacen("http://", "ws://", 1)
        );
        let mut request = url.into_client_request()?;
        let value = value.parse().map_err(
            |e: tokio_tungstenite::tungstenite::http::header::InvalidHeaderValue| {
                tokio_tungstenite::tungstenite::Error::HttpFormat(e.into())
            },
        )?;
        request.headers_mut().insert(name, value);
        let (stream, _) = tokio_tungstenite::connect_async(request).await?;
        Ok(Socket { stream })
    }

    /// Kill it outright (SIGKILL): no cleanup runs.
    pub fn kill9(&self) {
        let pid = self.pid() as i32;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        )
        .expect("send SIGKILL");
    }

    /// Send SIGTERM.
    pub fn terminate(&self) {
        let pid = self.pid() as i32;
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGTERM,
        )
        .expect("send SIGTERM");
    }

    /// Wait for the server to exit; its status and everything it logged.
    pub async fn wait(mut self) -> (ExitStatus, String) {
        let status = tokio::time::timeout(GUARD, self.child.wait())
            .await
            .expect("agentbus serve did not exit")
            .expect("wait for agentbus serve");
        let _ = tokio::time::timeout(GUARD, &mut self.stderr_task).await;
        let stderr = self.stderr();
        (status, stderr)
    }
}

type Frames = Pin<Box<dyn Stream<Item = Result<sse_stream::Sse, sse_stream::Error>> + Send>>;

/// Send `request` and check the answer is `status` with a JSON `{"error"}`
/// body that says something; returns the error text.
pub async fn error_of(request: reqwest::RequestBuilder, status: u16) -> String {
    let response = request.send().await.expect("the server answers");
    assert_eq!(response.status(), status, "{}", response.url());
    let body: Value = response.json().await.expect("a JSON error body");
    let error = body["error"].as_str().unwrap_or_default().to_string();
    assert!(
        !error.is_empty(),
        "an error that says what was wrong: {body}"
    );
    error
}

/// A session's SSE stream, parsed.
pub struct EventStream {
    frames: Frames,
    /// Every event received, in order.
    pub events: Vec<Value>,
}

impl EventStream {
    pub async fn open(request: reqwest::RequestBuilder) -> EventStream {
        let response = request.send().await.expect("GET events");
        assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
        let content_type = response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            content_type.starts_with("text/event-stream"),
            "{content_type}"
        );
        EventStream {
            frames: Box::pin(sse_stream::SseStream::from_bytes_stream(
                response.bytes_stream(),
            )),
            events: Vec::new(),
        }
    }

    /// The next event (`None` when the server ended the stream). Checks
    /// that each frame's `id:` is the event's `seq`.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            let frame = tokio::time::timeout(GUARD, self.frames.next())
                .await
                .unwrap_or_else(|_| {
                    let last = &self.events[self.events.len().saturating_sub(5)..];
                    panic!(
                        "no event for {GUARD:?}; got {} events, the last: {last:#?}",
                        self.events.len()
                    )
                })?
                .expect("a well-formed SSE frame");
            let Some(data) = frame.data else { continue };
            let event: Value = serde_json::from_str(&data).expect("data is JSON");
            assert_eq!(
                frame.id.as_deref(),
                Some(event["seq"].to_string().as_str()),
                "id: is the seq"
            );
            self.events.push(event.clone());
            return Some(event);
        }
    }

    /// Read until an event satisfies `pred`; returns it.
    pub async fn until(&mut self, mut pred: impl FnMut(&Value) -> bool) -> Value {
        loop {
            let event = self
                .next()
                .await
                .unwrap_or_else(|| panic!("the stream ended early; got {:#?}", self.events));
            if pred(&event) {
                return event;
            }
        }
    }

    /// Read until the `result` of turn `input_id`.
    pub async fn result_of(&mut self, input_id: u64) -> Value {
        self.until(|e| e["type"] == "result" && e["turn_id"] == input_id)
            .await
    }

    /// Hang up (the events received so far stay).
    pub fn disconnect(&mut self) {
        self.frames = Box::pin(futures::stream::empty());
    }

    /// The seqs received so far.
    pub fn seqs(&self) -> Vec<u64> {
        self.events
            .iter()
            .map(|e| e["seq"].as_u64().unwrap())
            .collect()
    }
}

/// A WebSocket client of one session.
pub struct Socket {
    stream: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
}

impl Socket {
    pub async fn send(&mut self, frame: Value) {
        self.stream
            .send(Message::text(frame.to_string()))
            .await
            .expect("send a frame");
    }

    pub async fn send_raw(&mut self, text: &str) {
        self.stream
            .send(Message::text(text.to_string()))
            .await
            .expect("send a frame");
    }

    /// The next JSON text frame (`None` when the socket closed).
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            let message = tokio::time::timeout(GUARD, self.stream.next())
                .await
                .expect("a WebSocket frame in time")?
                .ok()?;
            match message {
                Message::Text(text) => {
                    return Some(serde_json::from_str(&text).expect("JSON frame"));
                }
                Message::Close(_) => return None,
                _ => continue,
            }
        }
    }
}
