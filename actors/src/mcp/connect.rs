//! Opening an MCP connection (rmcp client) over stdio or streamable HTTP.
//!
//! A stdio server runs in its own process group, so that stopping it stops
//! everything it started (npx wrappers, shells); its stderr is read into a
//! short tail for status reports (a report of the server's end waits for
//! the pipe's last lines) and logged at debug level. The client's
//! handler only forwards `tools/list_changed` to whoever owns the connection.

use crate::settings::{EnvironmentPolicy, McpServerConfig};
use process_wrap::tokio::{CommandWrap, KillOnDrop, ProcessGroup};
use rmcp::ClientHandler;
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RoleClient, RunningService, ServiceExt};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Lines of stderr kept for status reports.
const STDERR_TAIL: usize = 20;

/// How long a report of a server's end waits for the last of its stderr:
/// the pipe can still hold lines when the process has been reaped.
const STDERR_DRAIN: std::time::Duration = std::time::Duration::from_secs(1);

/// The client side of a connection: forwards `tools/list_changed`.
pub struct Client {
    list_changed: mpsc::UnboundedSender<()>,
}

impl ClientHandler for Client {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        let _ = self.list_changed.send(());
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentbus", env!("CARGO_PKG_VERSION")),
        )
    }
}

/// The last lines a server wrote to stderr.
#[derive(Clone, Default)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    /// Set while a reader follows the server's stderr; cancelled when the
    /// reader reached the end of the pipe.
    drained: Arc<Mutex<Option<CancellationToken>>>,
}

impl StderrTail {
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .map(|l| l.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The lines once the server is gone: after its reader reached the end
    /// of the pipe (at most [`STDERR_DRAIN`]), so that a server's last words
    /// — often why it stopped — are in the report.
    pub async fn final_lines(&self) -> Vec<String> {
        let drained = self.drained.lock().ok().and_then(|token| token.clone());
        if let Some(drained) = drained {
            let _ = tokio::time::timeout(STDERR_DRAIN, drained.cancelled()).await;
        }
        self.lines()
    }

    /// A reader starts following a pipe: the token it cancels at the end.
    fn follow(&self) -> CancellationToken {
        let token = CancellationToken::new();
        if let Ok(mut drained) = self.drained.lock() {
            *drained = Some(token.clone());
        }
        token
    }

    fn push(&self, line: String) {
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() == STDERR_TAIL {
                lines.pop_front();
            }
            lines.push_back(line);
        }
    }
}

/// A live connection.
pub type Connection = RunningService<RoleClient, Client>;

/// Why a server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("server `{server}` has neither `command` nor `url`")]
    NoTransport { server: String },
    #[error("could not start `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid header `{name}`: {detail}")]
    Header { name: String, detail: String },
    #[error("the MCP handshake failed: {0}")]
    Initialize(String),
}

impl ConnectError {
    /// Whether trying again cannot help (a missing program, a bad header).
    pub fn is_permanent(&self) -> bool {
        match self {
            ConnectError::NoTransport { .. } | ConnectError::Header { .. } => true,
            ConnectError::Spawn { source, .. } => matches!(
                source.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
            ),
            ConnectError::Initialize(_) => false,
        }
    }
}

/// A server's transport, before the MCP handshake: a spawned child, or an
/// HTTP client for its endpoint.
pub enum Transport {
    Stdio(TokioChildProcess),
    Http(StreamableHttpClientTransport<reqwest::Client>),
}

/// Spawn the server (stdio) or prepare its HTTP client. Fast: a program that
/// does not exist is known here, before any handshake.
pub fn prepare(
    server: &str,
    config: &McpServerConfig,
    (workspace, environment): (&Path, &EnvironmentPolicy),
    stderr: &StderrTail,
) -> Result<Transport, ConnectError> {
    if let Some(command) = &config.command {
        return spawn_stdio(server, command, config, (workspace, environment), stderr)
            .map(Transport::Stdio);
    }
    if let Some(url) = &config.url {
        crate::provider::install_crypto_provider();
        let mut transport_config =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                url.clone(),
            );
        for (name, value) in &config.headers {
            let header = |detail: String| ConnectError::Header {
                name: name.clone(),
                detail,
            };
            let key = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| header(e.to_string()))?;
            let value =
                reqwest::header::HeaderValue::from_str(value).map_err(|e| header(e.to_string()))?;
            transport_config.custom_headers.insert(key, value);
        }
        return Ok(Transport::Http(StreamableHttpClientTransport::from_config(
            transport_config,
        )));
    }
    Err(ConnectError::NoTransport {
        server: server.to_string(),
    })
}

/// Complete the MCP handshake over a prepared transport.
pub async fn handshake(
    transport: Transport,
    list_changed: mpsc::UnboundedSender<()>,
) -> Result<Connection, ConnectError> {
    let client = Client { list_changed };
    let served = match transport {
        Transport::Stdio(t) => client.serve(t).await,
        Transport::Http(t) => client.serve(t).await,
    };
    served.map_err(|e| ConnectError::Initialize(e.to_string()))
}

fn spawn_stdio(
    server: &str,
    command: &str,
    config: &McpServerConfig,
    (workspace, environment): (&Path, &EnvironmentPolicy),
    stderr: &StderrTail,
) -> Result<TokioChildProcess, ConnectError> {
    let cwd = config
        .cwd
        .clone()
        .unwrap_or_else(|| workspace.to_path_buf());
    let mut wrapped = CommandWrap::with_new(command, |cmd| {
        // The server's own `env` is what it was configured with: set after
        // the filtered environment, secrets or not.
        cmd.args(&config.args)
            .env_clear()
            .envs(crate::tools::environment::from_process(environment))
            .envs(&config.env)
            .current_dir(&cwd);
    });
    wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
    let (transport, pipe) = TokioChildProcess::builder(wrapped)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ConnectError::Spawn {
            command: command.to_string(),
            source,
        })?;
    if let Some(pipe) = pipe {
        let tail = stderr.clone();
        let drained = stderr.follow();
        let server = server.to_string();
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(pipe).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(server = %server, "mcp stderr: {line}");
                tail.push(line);
            }
            drained.cancel();
        });
    }
    Ok(transport)
}
