//! `test-mcp-server`: a small MCP server for agentbus's tests of its MCP client.
//!
//! agentbus starts MCP servers as child processes and calls their tools on an
//! agent's behalf. To test that end to end without depending on some third-party
//! server, the kit ships this one: it speaks MCP over stdio (stdout carries only
//! the protocol, every log line goes to stderr), or over streamable HTTP with
//! `--http PORT`, and its tools exercise the cases a client must handle — plain
//! and structured results, images, tool errors, a crash mid-call, a call that
//! only ends when cancelled, and a tool list that changes at run time.
//!
//! On start it prints `test-mcp-server: starting (pid N)` to stderr and, if
//! `TEST_MCP_PID_FILE` is set, writes its pid (and a newline) to that file.
//! If `TEST_MCP_START_GATE` names a FIFO, it then opens it and reads it to
//! its end before doing anything else (`--fail-start` included): it is "still
//! starting" until the test opens the FIFO for writing and closes it, and
//! every start of the process (a restart too) waits at the gate again.
//!
//! Flags:
//! * `--fail-start`: print `test-mcp-server: failing at start as asked` to
//!   stderr and exit with code 3 before speaking MCP;
//! * `--hang-start`: read stdin without ever answering (so `initialize` times
//!   out), and exit 0 once stdin closes;
//! * `--http PORT`: serve at `http://127.0.0.1:PORT/mcp` instead of stdio (0
//!   picks a free port); prints `test-mcp-server: listening on URL` to stderr.
//!
//! Tools: `echo`, `add`, `fail`, `crash`, `hang`, `image`, `structured`,
//! `add_tool` and `pid`; see each tool's description below. A call to `hang`
//! sends one `notifications/progress` ("hanging until cancelled") if the
//! request carries a progress token, so a test knows the call has reached the
//! server; when the client then sends `notifications/cancelled` for it, the
//! server writes `cancelled` to the file named by `TEST_MCP_CANCEL_FILE`. That
//! file is written only on that notification, never when the client merely
//! disconnects, so a test can use it as proof that the client cancelled.

use std::collections::HashSet;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, RwLock, RwLockWriteGuard};
use std::task::Poll;

use anyhow::Context;
use clap::Parser;
use rmcp::handler::server::common::schema_for_empty_input;
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{
    CallToolResult, CancelledNotificationParam, ContentBlock, Implementation,
    ProgressNotificationParam, RequestId, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{
    ErrorData, Peer, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, ReadBuf};
use tokio_util::sync::CancellationToken;

/// Exit code for `--fail-start`.
const FAIL_START_EXIT_CODE: i32 = 3;
/// Exit code for the `crash` tool.
const CRASH_EXIT_CODE: i32 = 1;
/// Names the file `hang` writes `cancelled` to when its call is cancelled.
const CANCEL_FILE_VAR: &str = "TEST_MCP_CANCEL_FILE";
/// Names the file the server writes its pid to on start.
const PID_FILE_VAR: &str = "TEST_MCP_PID_FILE";
/// Names the FIFO the server waits at before it starts.
const START_GATE_VAR: &str = "TEST_MCP_START_GATE";
/// A 1×1 PNG (one half-transparent blue pixel), base64.
const TINY_PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// An MCP server with tools for testing MCP clients.
#[derive(Parser)]
#[command(name = "test-mcp-server")]
struct Args {
    /// Exit with code 3 at start, before speaking MCP.
    #[arg(long, conflicts_with_all = ["hang_start", "http"])]
    fail_start: bool,
    /// Never answer `initialize`: read stdin until it closes, then exit.
    #[arg(long, conflicts_with = "http")]
    hang_start: bool,
    /// Serve streamable HTTP at http://127.0.0.1:PORT/mcp instead of stdio.
    #[arg(long, value_name = "PORT")]
    http: Option<u16>,
}

fn log(message: impl std::fmt::Display) {
    eprintln!("test-mcp-server: {message}");
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let pid = std::process::id();
    log(format_args!("starting (pid {pid})"));
    if let Some(path) = std::env::var_os(PID_FILE_VAR) {
        let path = PathBuf::from(path);
        std::fs::write(&path, format!("{pid}\n"))
            .with_context(|| format!("writing the pid to {}", path.display()))?;
    }
    if let Some(gate) = std::env::var_os(START_GATE_VAR) {
        let gate = PathBuf::from(gate);
        log(format_args!("waiting at the start gate {}", gate.display()));
        let opened = gate.clone();
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            // Opening a FIFO for reading blocks until a writer opens it;
            // the read ends when the writer closes it.
            let mut fifo = std::fs::File::open(&opened)?;
            std::io::copy(&mut fifo, &mut std::io::sink())?;
            Ok(())
        })
        .await
        .context("waiting at the start gate")?
        .with_context(|| format!("reading the start gate {}", gate.display()))?;
        log("the start gate opened");
    }

    if args.fail_start {
        log("failing at start as asked");
        std::process::exit(FAIL_START_EXIT_CODE);
    }
    if args.hang_start {
        log("hanging at start as asked: initialize will never be answered");
        tokio::io::copy(&mut tokio::io::stdin(), &mut tokio::io::sink())
            .await
            .context("reading stdin")?;
        log("stdin closed; exiting");
        return Ok(());
    }

    let server = TestServer::new();
    match args.http {
        Some(port) => serve_http(server, port).await,
        None => {
            let (stdin, stdout) = rmcp::transport::stdio();
            let stdin = WatchedStdin {
                inner: stdin,
                closed: server.stdin_closed.clone(),
            };
            let running = server
                .serve((stdin, stdout))
                .await
                .context("MCP initialization over stdio")?;
            let reason = running.waiting().await.context("the MCP service")?;
            log(format_args!("stopped: {reason:?}"));
            Ok(())
        }
    }
}

/// Serves `server` over streamable HTTP until interrupted. Every session
/// shares its tools.
async fn serve_http(server: TestServer, port: u16) -> anyhow::Result<()> {
    let service: StreamableHttpService<TestServer, LocalSessionManager> =
        StreamableHttpService::new(
            move || Ok(server.for_session()),
            Default::default(),
            StreamableHttpServerConfig::default(),
        );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .await
        .with_context(|| format!("listening on 127.0.0.1:{port}"))?;
    let addr = listener.local_addr().context("the listening address")?;
    log(format_args!("listening on http://{addr}/mcp"));
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            // If the signal handler cannot be installed, serve until killed.
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
        .await
        .context("serving HTTP")
}

/// The server: one over stdio, one per HTTP session.
struct TestServer {
    /// The static tools plus those `add_tool` added, shared by all sessions.
    tools: Arc<RwLock<ToolRouter<TestServer>>>,
    /// Matches this session's `hang` calls with the `notifications/cancelled`
    /// naming them (request ids are unique within a session only).
    hangs: Arc<Mutex<Hangs>>,
    /// Fires when stdin ends, so that `hang` calls end with the connection
    /// (rmcp waits a few seconds for unfinished calls before it stops).
    stdin_closed: CancellationToken,
}

/// Stdin, firing `closed` when it ends.
struct WatchedStdin {
    inner: tokio::io::Stdin,
    closed: CancellationToken,
}

impl AsyncRead for WatchedStdin {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &poll {
            Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended {
            self.closed.cancel();
        }
        poll
    }
}

/// `hang` calls and cancellations not matched up yet. Either can come first:
/// the call's handler runs on its own task, so a quick client can get its
/// cancellation in before the handler starts.
#[derive(Default)]
struct Hangs {
    /// Ids of `hang` calls still waiting for their cancellation.
    waiting: HashSet<RequestId>,
    /// Ids of cancelled requests that no `hang` call had claimed yet (most
    /// never will: they were other tools; a test server can afford to keep them).
    cancelled_early: HashSet<RequestId>,
}

impl Hangs {
    /// A `hang` call `id` started; true if it was already cancelled.
    fn started(&mut self, id: &RequestId) -> bool {
        if self.cancelled_early.remove(id) {
            return true;
        }
        self.waiting.insert(id.clone());
        false
    }

    /// Request `id` was cancelled; true if it is a `hang` call.
    fn cancelled(&mut self, id: &RequestId) -> bool {
        if self.waiting.remove(id) {
            return true;
        }
        self.cancelled_early.insert(id.clone());
        false
    }
}

#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    /// The first addend.
    a: f64,
    /// The second addend.
    b: f64,
}

#[derive(Deserialize, JsonSchema)]
struct AddToolArgs {
    /// The new tool's name: 1 to 128 of A-Z a-z 0-9 _ - .
    name: String,
}

/// The `structured` tool's result.
#[derive(Serialize, JsonSchema)]
struct Weather {
    temperature: f64,
    unit: String,
}

#[tool_router]
impl TestServer {
    fn new() -> Self {
        Self {
            tools: Arc::new(RwLock::new(Self::tool_router())),
            hangs: Arc::default(),
            stdin_closed: CancellationToken::new(),
        }
    }

    /// A server for a new HTTP session: the same tools, its own calls.
    fn for_session(&self) -> Self {
        Self {
            tools: self.tools.clone(),
            hangs: Arc::default(),
            stdin_closed: self.stdin_closed.clone(),
        }
    }

    /// The current tools, copied so that no lock is held while a tool runs
    /// (`hang` runs until cancelled; `add_tool` must still get in).
    fn router_snapshot(&self) -> ToolRouter<Self> {
        self.tools
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn router_mut(&self) -> RwLockWriteGuard<'_, ToolRouter<Self>> {
        self.tools.write().unwrap_or_else(PoisonError::into_inner)
    }

    #[tool(description = "Returns the given text")]
    fn echo(&self, Parameters(EchoArgs { text }): Parameters<EchoArgs>) -> String {
        text
    }

    #[tool(description = "Returns the sum of a and b")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Always fails, with a tool error result")]
    fn fail(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text("it failed as asked")])
    }

    #[tool(description = "Makes the server exit at once with code 1, without answering")]
    fn crash(&self) -> CallToolResult {
        log("crashing as asked");
        std::process::exit(CRASH_EXIT_CODE)
    }

    #[tool(
        description = "Never answers; when the call is cancelled, writes `cancelled` to $TEST_MCP_CANCEL_FILE"
    )]
    async fn hang(&self, context: RequestContext<RoleServer>) -> Result<CallToolResult, ErrorData> {
        let id = context.id.clone();
        log(format_args!("hang: call {id} waits to be cancelled"));
        if self.lock_hangs().started(&id) {
            write_cancel_file(&id).await;
        } else if let Some(token) = context.meta.get_progress_token() {
            let progress =
                ProgressNotificationParam::new(token, 0.0).with_message("hanging until cancelled");
            let sent = self.until_stdin_closes(context.peer.notify_progress(progress));
            if let Some(Err(error)) = sent.await {
                log(format_args!("hang: could not send progress: {error}"));
            }
        }
        // `ct` fires on `notifications/cancelled` for this call (`on_cancelled`
        // then writes the cancel file) and when the service stops; the end of
        // stdin ends the call too. Only the notification writes the file.
        tokio::select! {
            () = context.ct.cancelled() => {}
            () = self.stdin_closed.cancelled() => {}
        }
        log(format_args!("hang: call {id} ends"));
        // rmcp drops the answer to a cancelled request.
        Err(ErrorData::internal_error("the call was cancelled", None))
    }

    #[tool(description = "Returns a text and a 1x1 PNG image")]
    fn image(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::text("here is an image"),
            ContentBlock::image(TINY_PNG_BASE64, "image/png"),
        ])
    }

    #[tool(
        description = "Returns structured content {\"temperature\": 21.5, \"unit\": \"C\"} and the same JSON as text"
    )]
    fn structured(&self) -> Json<Weather> {
        Json(Weather {
            temperature: 21.5,
            unit: "C".to_owned(),
        })
    }

    #[tool(
        description = "Adds a tool called NAME (which returns `dynamic tool NAME`) and notifies the client that the tool list changed"
    )]
    async fn add_tool(
        &self,
        Parameters(AddToolArgs { name }): Parameters<AddToolArgs>,
        peer: Peer<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if !valid_tool_name(&name) {
            return Err(ErrorData::invalid_params(
                format!("invalid tool name {name:?}: use 1 to 128 of A-Z a-z 0-9 _ - ."),
                None,
            ));
        }
        {
            let mut tools = self.router_mut();
            if tools.has_route(&name) {
                return Err(ErrorData::invalid_params(
                    format!("there already is a tool called {name}"),
                    None,
                ));
            }
            tools.add_route(dynamic_tool(name.clone()));
        }
        log(format_args!("add_tool: added {name}"));
        let sent = self.until_stdin_closes(peer.notify_tool_list_changed());
        if let Some(Err(error)) = sent.await {
            log(format_args!(
                "add_tool: could not send list_changed: {error}"
            ));
        }
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "added {name}"
        ))]))
    }

    #[tool(description = "Returns the server's process id")]
    fn pid(&self) -> String {
        std::process::id().to_string()
    }
}

impl TestServer {
    /// Awaits `future` unless stdin ends first. Sending a notification waits
    /// for rmcp's service loop to confirm it, which it never does once it has
    /// seen the end of stdin; and that loop waits for the tool call to finish.
    async fn until_stdin_closes<T>(&self, future: impl Future<Output = T>) -> Option<T> {
        tokio::select! {
            value = future => Some(value),
            () = self.stdin_closed.cancelled() => None,
        }
    }

    fn lock_hangs(&self) -> std::sync::MutexGuard<'_, Hangs> {
        self.hangs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[tool_handler(router = self.router_snapshot())]
impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            "test-mcp-server",
            env!("CARGO_PKG_VERSION"),
        ))
        .with_instructions("A test server for agentbus's MCP client; its tools do what they say.")
    }

    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        let Some(id) = notification.request_id else {
            return;
        };
        let reason = notification.reason.as_deref().unwrap_or("no reason given");
        log(format_args!("request {id} cancelled ({reason})"));
        if self.lock_hangs().cancelled(&id) {
            write_cancel_file(&id).await;
        }
    }
}

/// Records that `hang` call `id` was cancelled by the client.
async fn write_cancel_file(id: &RequestId) {
    let Some(path) = std::env::var_os(CANCEL_FILE_VAR) else {
        log(format_args!(
            "hang: call {id} cancelled; {CANCEL_FILE_VAR} is not set"
        ));
        return;
    };
    let path = PathBuf::from(path);
    match tokio::fs::write(&path, "cancelled").await {
        Ok(()) => log(format_args!(
            "hang: call {id} cancelled; wrote {}",
            path.display()
        )),
        Err(error) => log(format_args!("hang: writing {}: {error}", path.display())),
    }
}

/// Tool names as the MCP specification allows them.
fn valid_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// A tool added by `add_tool`: takes no arguments, returns `dynamic tool NAME`.
fn dynamic_tool(name: String) -> ToolRoute<TestServer> {
    let description = format!("Added by add_tool; returns `dynamic tool {name}`");
    let attr = Tool::new(name.clone(), description, schema_for_empty_input());
    let answer = format!("dynamic tool {name}");
    ToolRoute::new_dyn(attr, move |_context| {
        let result = CallToolResult::success(vec![ContentBlock::text(answer.clone())]);
        Box::pin(std::future::ready(Ok(result.into())))
    })
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    #[test]
    fn a_hang_call_and_its_cancellation_match_in_either_order() {
        let mut hangs = Hangs::default();
        let first = NumberOrString::Number(1);
        let second = NumberOrString::Number(2);
        let other = NumberOrString::Number(3);

        assert!(!hangs.started(&first));
        assert!(hangs.cancelled(&first), "cancelled after it started");

        assert!(!hangs.cancelled(&second));
        assert!(hangs.started(&second), "cancelled before it started");

        assert!(!hangs.cancelled(&other), "not a hang call");
        assert!(!hangs.cancelled(&first), "a second cancellation");
    }

    #[test]
    fn tool_names_follow_the_specification() {
        for name in [
            "greet",
            "a",
            "snake_case",
            "kebab-case",
            "dotted.name",
            "V2",
        ] {
            assert!(valid_tool_name(name), "{name}");
        }
        for name in ["", "has space", "slash/name", "émoji", &"x".repeat(129)] {
            assert!(!valid_tool_name(name), "{name}");
        }
    }
}
