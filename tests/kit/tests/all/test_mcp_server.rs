//! The `test-mcp-server` binary, driven as a real child process by rmcp's own
//! client, so that agentbus's MCP tests can rely on it doing exactly what its
//! documentation says: the tools' answers, the list-changed notification, the
//! cancel file, the crash, the start-up failures, the pid file and `--http`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ContentBlock, ErrorCode, JsonObject, NumberOrString,
    ProgressNotificationParam, ProgressToken, RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientCacheConfig, ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

const SERVER: &str = env!("CARGO_BIN_EXE_test-mcp-server");
const PID_FILE_VAR: &str = "TEST_MCP_PID_FILE";
const CANCEL_FILE_VAR: &str = "TEST_MCP_CANCEL_FILE";
/// Every tool the server starts with, sorted.
const TOOLS: [&str; 9] = [
    "add",
    "add_tool",
    "crash",
    "echo",
    "fail",
    "hang",
    "image",
    "pid",
    "structured",
];

/// Upper bound for anything a test waits on; reaching it fails the test.
const PATIENCE: Duration = Duration::from_secs(60);

/// Awaits `future`, failing the test if it takes longer than [`PATIENCE`].
async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match tokio::time::timeout(PATIENCE, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out after {PATIENCE:?} waiting for {what}"),
    }
}

/// The client side: signals the notifications the tests wait for.
#[derive(Clone, Default)]
struct Probe {
    tool_list_changed: Arc<Notify>,
    progress: Arc<Notify>,
}

impl ClientHandler for Probe {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.tool_list_changed.notify_one();
    }

    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.notify_one();
    }
}

/// Reads `stderr` to its end on a task, so the child never blocks on it.
fn collect(stderr: impl AsyncRead + Unpin + Send + 'static) -> JoinHandle<String> {
    tokio::spawn(async move {
        let mut text = String::new();
        let mut stderr = stderr;
        // A read error just ends what we collected; the assertions say what is missing.
        let _ = stderr.read_to_string(&mut text).await;
        text
    })
}

/// The server started the way agentbus starts one, through rmcp's
/// `TokioChildProcess`, with its pid and cancel files in a fresh directory.
struct Session {
    client: RunningService<RoleClient, Probe>,
    probe: Probe,
    pid: u32,
    stderr: JoinHandle<String>,
    dir: tempfile::TempDir,
}

impl Session {
    async fn start() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut command = Command::new(SERVER);
        command
            .env(PID_FILE_VAR, dir.path().join("pid"))
            .env(CANCEL_FILE_VAR, dir.path().join("cancel"));
        let (transport, stderr) = TokioChildProcess::builder(command)
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn test-mcp-server");
        let pid = transport.id().expect("the child's pid");
        let stderr = collect(stderr.expect("the child's stderr"));
        let probe = Probe::default();
        let client = within("initialize", probe.clone().serve(transport))
            .await
            .expect("initialize");
        // Let every tools/list reach the server, so the tests see its list
        // rather than whatever rmcp's client cache would make of it.
        client
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        Self {
            client,
            probe,
            pid,
            stderr,
            dir,
        }
    }

    fn pid_file(&self) -> PathBuf {
        self.dir.path().join("pid")
    }

    fn cancel_file(&self) -> PathBuf {
        self.dir.path().join("cancel")
    }

    async fn try_call(&self, name: &str, arguments: Value) -> Result<CallToolResult, ServiceError> {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(object(arguments));
        within(
            &format!("the answer to {name}"),
            self.client.call_tool(params),
        )
        .await
    }

    async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        self.try_call(name, arguments)
            .await
            .unwrap_or_else(|error| panic!("calling {name}: {error}"))
    }

    async fn tool_names(&self) -> Vec<String> {
        let tools = within("tools/list", self.client.list_all_tools())
            .await
            .expect("tools/list");
        let mut names: Vec<String> = tools.iter().map(|tool| tool.name.to_string()).collect();
        names.sort();
        names
    }

    /// Closes the connection the way rmcp does (stdin first), waits for the
    /// server to exit, and returns what it wrote to stderr.
    async fn stop(self) -> String {
        within("the client to close", self.client.cancel())
            .await
            .expect("closing the client");
        within("the server's stderr to end", self.stderr)
            .await
            .expect("the stderr task")
    }
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        other => panic!("tool arguments must be an object, not {other}"),
    }
}

/// The texts of a result's text contents.
fn texts(result: &CallToolResult) -> Vec<&str> {
    result
        .content
        .iter()
        .filter_map(|content| content.as_text().map(|text| text.text.as_str()))
        .collect()
}

/// The one text content of a successful result.
fn text(result: &CallToolResult) -> &str {
    assert_ne!(result.is_error, Some(true), "{result:#?}");
    match texts(result).as_slice() {
        [text] if result.content.len() == 1 => text,
        _ => panic!("expected one text content: {result:#?}"),
    }
}

fn assert_invalid_params(result: Result<CallToolResult, ServiceError>, needle: &str) {
    match result {
        Err(ServiceError::McpError(error)) => {
            assert_eq!(error.code, ErrorCode::INVALID_PARAMS, "{error:?}");
            assert!(error.message.contains(needle), "{error:?}");
        }
        other => panic!("expected an invalid-params error mentioning {needle:?}: {other:?}"),
    }
}

/// Waits for `path` to have content and returns it. The server writes it from
/// its own task, so no answer on the connection can tell us it is done; a
/// bounded poll is the honest way to wait.
async fn wait_for_file(path: &Path, what: &str) -> String {
    let poll = async {
        loop {
            if let Ok(text) = tokio::fs::read_to_string(path).await
                && !text.is_empty()
            {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    within(&format!("{what} ({})", path.display()), poll).await
}

#[tokio::test]
async fn lists_every_tool_and_advertises_list_changed() {
    let session = Session::start().await;
    let info = session.client.peer_info().expect("the initialize result");
    let server = info.server_info.as_ref().expect("the server info");
    assert_eq!(server.name, "test-mcp-server");
    let tools = info
        .capabilities
        .tools
        .as_ref()
        .expect("the tools capability");
    assert_eq!(tools.list_changed, Some(true));

    assert_eq!(session.tool_names().await, TOOLS);

    let listed = session.client.list_all_tools().await.expect("tools/list");
    let echo = listed
        .iter()
        .find(|tool| tool.name == "echo")
        .expect("echo");
    let schema = Value::Object(echo.input_schema.as_ref().clone());
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["text"]["type"], "string");
    assert_eq!(schema["required"], json!(["text"]));
    session.stop().await;
}

#[tokio::test]
async fn tools_answer_as_documented() {
    let session = Session::start().await;

    let echo = session.call("echo", json!({"text": "hello there"})).await;
    assert_eq!(text(&echo), "hello there");

    assert_eq!(
        text(&session.call("add", json!({"a": 2, "b": 3})).await),
        "5"
    );
    assert_eq!(
        text(&session.call("add", json!({"a": 2.5, "b": -0.25})).await),
        "2.25"
    );

    let fail = session.call("fail", json!({})).await;
    assert_eq!(fail.is_error, Some(true));
    assert_eq!(texts(&fail), ["it failed as asked"]);

    let image = session.call("image", json!({})).await;
    assert_ne!(image.is_error, Some(true));
    let [ContentBlock::Text(caption), ContentBlock::Image(picture)] = image.content.as_slice()
    else {
        panic!("expected a text and an image: {image:#?}");
    };
    assert_eq!(caption.text, "here is an image");
    assert_eq!(picture.mime_type, "image/png");
    let png = base64::engine::general_purpose::STANDARD
        .decode(&picture.data)
        .expect("base64 image data");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&png[12..16], b"IHDR");
    assert_eq!(&png[16..24], [0, 0, 0, 1, 0, 0, 0, 1], "1x1 pixels");

    let structured = session.call("structured", json!({})).await;
    let expected = json!({"temperature": 21.5, "unit": "C"});
    assert_eq!(structured.structured_content, Some(expected.clone()));
    let as_text: Value = serde_json::from_str(text(&structured)).expect("the text is JSON");
    assert_eq!(as_text, expected);

    let pid = session.call("pid", json!({})).await;
    assert_eq!(text(&pid), session.pid.to_string());
    session.stop().await;
}

#[tokio::test]
async fn bad_arguments_get_errors_and_the_server_carries_on() {
    let session = Session::start().await;

    // rmcp answers arguments that do not fit the schema with a tool error.
    let wrong_type = session.call("echo", json!({"text": 5})).await;
    assert_eq!(wrong_type.is_error, Some(true), "{wrong_type:#?}");
    assert!(
        texts(&wrong_type)[0].contains("failed to deserialize parameters"),
        "{wrong_type:#?}"
    );
    let missing = session.call("add", json!({"a": 1})).await;
    assert_eq!(missing.is_error, Some(true), "{missing:#?}");

    assert_invalid_params(
        session
            .try_call("add_tool", json!({"name": "has space"}))
            .await,
        "invalid tool name",
    );
    assert_invalid_params(
        session.try_call("add_tool", json!({"name": "echo"})).await,
        "already is a tool called echo",
    );
    assert_invalid_params(
        session.try_call("no_such_tool", json!({})).await,
        "tool not found",
    );

    let echo = session.call("echo", json!({"text": "still here"})).await;
    assert_eq!(text(&echo), "still here");
    let stderr = session.stop().await;
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[tokio::test]
async fn add_tool_notifies_the_client_and_lists_the_new_tool() {
    let session = Session::start().await;

    let added = session.call("add_tool", json!({"name": "greet"})).await;
    assert_eq!(text(&added), "added greet");
    within(
        "notifications/tools/list_changed",
        session.probe.tool_list_changed.notified(),
    )
    .await;

    let mut expected: Vec<&str> = TOOLS.to_vec();
    expected.push("greet");
    expected.sort();
    assert_eq!(session.tool_names().await, expected);
    let greet = session.call("greet", json!({})).await;
    assert_eq!(text(&greet), "dynamic tool greet");

    assert_invalid_params(
        session.try_call("add_tool", json!({"name": "greet"})).await,
        "already is a tool called greet",
    );
    session.stop().await;
}

/// A `hang` call carrying a progress token, so that the server's progress
/// notification tells the test the call has reached it.
fn hang_params() -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new("hang");
    params.meta = Some(RequestMetaObject::with_progress_token(ProgressToken(
        NumberOrString::String("hang".into()),
    )));
    params
}

#[tokio::test]
async fn dropping_a_hang_call_cancels_it_and_writes_the_cancel_file() {
    let session = Session::start().await;

    let call = session.client.peer().call_tool_once(hang_params());
    tokio::select! {
        answer = call => panic!("hang answered: {answer:?}"),
        () = within("hang's progress notification", session.probe.progress.notified()) => {}
    }
    // `call` is dropped here: rmcp sends notifications/cancelled for it.

    let cancel_file = session.cancel_file();
    let written = wait_for_file(
        &cancel_file,
        "the cancel file (did the client send notifications/cancelled?)",
    )
    .await;
    assert_eq!(written, "cancelled");

    // The connection is still up and the server still answers.
    let echo = session.call("echo", json!({"text": "after"})).await;
    assert_eq!(text(&echo), "after");
    let stderr = session.stop().await;
    assert!(stderr.contains("cancelled; wrote"), "{stderr}");
}

#[tokio::test]
async fn closing_the_connection_during_hang_is_not_a_cancellation() {
    let session = Session::start().await;

    // The call runs on its own task, so nothing drops it before the
    // connection closes.
    let peer = session.client.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool_once(hang_params()).await });
    within(
        "hang's progress notification",
        session.probe.progress.notified(),
    )
    .await;

    let cancel_file = session.cancel_file();
    let stderr = session.stop().await;
    let answer = within("the hang call to end", call)
        .await
        .expect("the call task");
    assert!(
        matches!(answer, Err(ServiceError::TransportClosed)),
        "{answer:?}"
    );
    assert!(
        !cancel_file.exists(),
        "the cancel file was written without a cancellation"
    );
    // The server ended the call when stdin closed and exited by itself.
    assert!(
        stderr
            .lines()
            .any(|line| line.starts_with("test-mcp-server: hang: call ") && line.ends_with(" ends")),
        "{stderr}"
    );
    assert!(
        stderr.contains("test-mcp-server: stopped: Closed"),
        "{stderr}"
    );
}

/// The server started as a plain child process, for the tests that need its
/// exit status, which `TokioChildProcess` keeps to itself.
struct Raw {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    stderr: ChildStderr,
}

fn spawn_raw(args: &[&str]) -> Raw {
    let mut child = Command::new(SERVER)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn test-mcp-server");
    Raw {
        stdin: child.stdin.take().expect("stdin"),
        stdout: child.stdout.take().expect("stdout"),
        stderr: child.stderr.take().expect("stderr"),
        child,
    }
}

#[tokio::test]
async fn crash_ends_the_connection_and_exits_1() {
    let Raw {
        mut child,
        stdin,
        stdout,
        stderr,
    } = spawn_raw(&[]);
    let stderr = collect(stderr);
    let client = within("initialize", Probe::default().serve((stdout, stdin)))
        .await
        .expect("initialize");

    let answer = within(
        "the crash call to end",
        client.call_tool(CallToolRequestParams::new("crash")),
    )
    .await;
    assert!(
        matches!(answer, Err(ServiceError::TransportClosed)),
        "{answer:?}"
    );
    let status = within("the server to exit", child.wait())
        .await
        .expect("wait");
    assert_eq!(status.code(), Some(1), "{status}");
    let stderr = within("stderr to end", stderr).await.expect("stderr task");
    assert!(
        stderr.contains("test-mcp-server: crashing as asked"),
        "{stderr}"
    );
}

#[tokio::test]
async fn fail_start_fails_initialize_and_exits_3() {
    let Raw {
        mut child,
        stdin,
        stdout,
        stderr,
    } = spawn_raw(&["--fail-start"]);
    let stderr = collect(stderr);

    let init = within("initialize", Probe::default().serve((stdout, stdin))).await;
    assert!(init.is_err(), "initialize succeeded");
    let status = within("the server to exit", child.wait())
        .await
        .expect("wait");
    assert_eq!(status.code(), Some(3), "{status}");
    let stderr = within("stderr to end", stderr).await.expect("stderr task");
    assert!(
        stderr.contains("test-mcp-server: failing at start as asked"),
        "{stderr}"
    );
}

#[tokio::test]
async fn hang_start_never_answers_initialize() {
    let Raw {
        mut child,
        mut stdin,
        mut stdout,
        stderr,
    } = spawn_raw(&["--hang-start"]);
    let stderr = collect(stderr);

    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    });
    stdin
        .write_all(format!("{initialize}\n").as_bytes())
        .await
        .expect("write initialize");
    drop(stdin); // the server ends when its stdin does

    let mut answer = String::new();
    within("stdout to end", stdout.read_to_string(&mut answer))
        .await
        .expect("read stdout");
    assert_eq!(answer, "", "the server answered");
    let status = within("the server to exit", child.wait())
        .await
        .expect("wait");
    assert_eq!(status.code(), Some(0), "{status}");
    let stderr = within("stderr to end", stderr).await.expect("stderr task");
    assert!(stderr.contains("hanging at start as asked"), "{stderr}");
}

/// One JSON-RPC message as a line of the stdio transport.
fn line(message: Value) -> Vec<u8> {
    format!("{message}\n").into_bytes()
}

#[tokio::test]
async fn a_cancellation_right_behind_the_call_still_writes_the_cancel_file() {
    // The cancellation may reach the server before the call's handler runs;
    // rmcp's client cannot send it that early, so speak the protocol by hand.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let cancel_file = dir.path().join("cancel");
    let mut child = Command::new(SERVER)
        .env(CANCEL_FILE_VAR, &cancel_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn test-mcp-server");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let stderr = collect(child.stderr.take().expect("stderr"));

    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    });
    stdin
        .write_all(&line(initialize))
        .await
        .expect("write initialize");
    let answer = within("the initialize answer", stdout.next_line())
        .await
        .expect("read stdout")
        .expect("an initialize answer");
    let answer: Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer.get("result").is_some(), "{answer}");

    let mut burst = line(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    burst.extend(line(json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "hang", "arguments": {}},
    })));
    burst.extend(line(json!({
        "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "changed my mind"},
    })));
    stdin.write_all(&burst).await.expect("write the burst");

    let written = wait_for_file(&cancel_file, "the cancel file").await;
    assert_eq!(written, "cancelled");

    drop(stdin);
    let mut rest = Vec::new();
    while let Some(line) = within("stdout to end", stdout.next_line())
        .await
        .expect("read stdout")
    {
        rest.push(line);
    }
    assert!(rest.is_empty(), "the cancelled call was answered: {rest:?}");
    let status = within("the server to exit", child.wait())
        .await
        .expect("wait");
    assert!(status.success(), "{status}");
    let stderr = within("stderr to end", stderr).await.expect("stderr task");
    assert!(
        stderr.contains("request 2 cancelled (changed my mind)"),
        "{stderr}"
    );
}

#[tokio::test]
async fn pid_file_and_stderr_name_the_childs_pid() {
    let session = Session::start().await;
    let pid = session.pid;
    let written = std::fs::read_to_string(session.pid_file()).expect("the pid file");
    assert_eq!(written, format!("{pid}\n"));
    let stderr = session.stop().await;
    assert!(
        stderr.starts_with(&format!("test-mcp-server: starting (pid {pid})\n")),
        "{stderr}"
    );
}

#[tokio::test]
async fn http_mode_serves_the_same_tools() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut child = Command::new(SERVER)
        .args(["--http", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn test-mcp-server --http 0");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = within("the listening line", async {
        while let Some(line) = lines.next_line().await.expect("read stderr") {
            if let Some(url) = line.strip_prefix("test-mcp-server: listening on ") {
                return url.to_owned();
            }
        }
        panic!("stderr ended before the listening line");
    })
    .await;
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    // Keep draining stderr so the server never blocks on it.
    let _stderr = tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    let probe = Probe::default();
    let transport = StreamableHttpClientTransport::from_uri(url);
    let client = within("initialize", probe.clone().serve(transport))
        .await
        .expect("initialize over HTTP");
    let tools = within("tools/list", client.list_all_tools())
        .await
        .expect("tools/list");
    let mut names: Vec<String> = tools.iter().map(|tool| tool.name.to_string()).collect();
    names.sort();
    assert_eq!(names, TOOLS);

    let params = CallToolRequestParams::new("echo").with_arguments(object(json!({"text": "web"})));
    let echo = within("echo", client.call_tool(params))
        .await
        .expect("echo");
    assert_eq!(text(&echo), "web");

    let params =
        CallToolRequestParams::new("add_tool").with_arguments(object(json!({"name": "net"})));
    let added = within("add_tool", client.call_tool(params))
        .await
        .expect("add_tool");
    assert_eq!(text(&added), "added net");
    within(
        "notifications/tools/list_changed",
        probe.tool_list_changed.notified(),
    )
    .await;
    let net = within("net", client.call_tool(CallToolRequestParams::new("net")))
        .await
        .expect("net");
    assert_eq!(text(&net), "dynamic tool net");

    within("the client to close", client.cancel())
        .await
        .expect("closing the client");
    child.kill().await.expect("kill our child");
}
