//! McpServer actor: one per configured MCP server, and one per server given
//! to sessions (see `given.rs`).
//!
//! Owns the server's connection state and status. A supervisor task (spawned
//! at start, never awaited in a handler) starts the server — child process
//! or HTTP endpoint — within `startup_timeout_secs`, lists its tools, follows
//! `tools/list_changed`, notices when it dies and starts it again with
//! backoff. Every change is reported to the ToolExecutor
//! ([`ServerChanged`]), which owns the registry and tells the sessions.
//!
//! Accepts [`CallMcpTool`] (answered when the call ends: the executor's time
//! limit — this server's `tool_timeout_secs` — or an interrupt fires the
//! call's token, and dropping the call sends MCP `notifications/cancelled`) and
//! [`StopServer`] (stops the child and waits until it is reaped).
//!
//! Never blocks a session: calls made while the server is not ready are
//! answered at once with an error result.

use crate::mcp::connect::{self, Connection, StderrTail};
use crate::mcp::content::result_text;
use crate::mcp::tool::{CallMcpTool, McpTool};
use crate::model::{INTERRUPTED, ToolOrigin, ToolOutcome, ToolSpec};
use crate::protocol::McpServerStatus;
use crate::settings::{EnvironmentPolicy, McpServerConfig};
use crate::tools::Tool;
use crate::tools::executor::{ServerChanged, ToolExecutor};
use crate::tools::naming;
use crate::tools::registry::ServerId;
use kameo::Actor;
use kameo::actor::{ActorRef, WeakActorRef};
use kameo::error::{ActorStopReason, Infallible};
use kameo::message::{Context, Message};
use kameo::reply::DelegatedReply;
use rmcp::model::{CallToolRequestParams, CallToolResponse};
use rmcp::service::{Peer, RoleClient};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Consecutive failed starts after which the server is left failed.
const MAX_START_FAILURES: u32 = 5;

/// What a server actor starts from.
pub struct McpServerArgs {
    /// Its name, and whether it is configured or given to some sessions.
    pub id: ServerId,
    pub config: McpServerConfig,
    /// Working directory for stdio servers without `cwd`.
    pub workspace: PathBuf,
    /// The environment a stdio server process starts with (its own `env`
    /// on top).
    pub environment: EnvironmentPolicy,
    pub executor: ActorRef<ToolExecutor>,
}

/// The actor.
pub struct McpServer {
    id: ServerId,
    name: String,
    config: McpServerConfig,
    executor: ActorRef<ToolExecutor>,
    peer: Option<Peer<RoleClient>>,
    status: McpServerStatus,
    stop: CancellationToken,
    supervisor: Option<tokio::task::JoinHandle<()>>,
}

impl Actor for McpServer {
    type Args = McpServerArgs;
    type Error = Infallible;

    async fn on_start(args: Self::Args, me: ActorRef<Self>) -> Result<Self, Self::Error> {
        // Spawning is quick: a program that does not exist is reported
        // before any session starts. The handshake happens in the background.
        let stderr = StderrTail::default();
        let name = args.id.name.clone();
        let first = connect::prepare(
            &name,
            &args.config,
            (&args.workspace, &args.environment),
            &stderr,
        );
        let stop = CancellationToken::new();
        let (status, supervisor) = match first {
            Err(e) if e.is_permanent() => (
                McpServerStatus::Failed {
                    reason: e.to_string(),
                    stderr: stderr.lines(),
                },
                None,
            ),
            first => {
                let supervisor = tokio::spawn(supervise(
                    name.clone(),
                    args.config.clone(),
                    (args.workspace, args.environment),
                    me.downgrade(),
                    stop.clone(),
                    Some((first, stderr)),
                ));
                (McpServerStatus::Starting, Some(supervisor))
            }
        };
        let this = McpServer {
            id: args.id,
            name,
            config: args.config,
            executor: args.executor,
            peer: None,
            status,
            stop,
            supervisor,
        };
        this.report(None).await;
        Ok(this)
    }

    async fn on_stop(
        &mut self,
        _: WeakActorRef<Self>,
        _: ActorStopReason,
    ) -> Result<(), Self::Error> {
        self.stop.cancel();
        Ok(())
    }
}

impl McpServer {
    /// Tell the ToolExecutor the status (and the tools, when they changed).
    async fn report(&self, tools: Option<Vec<Arc<dyn Tool>>>) {
        let _ = self
            .executor
            .tell(ServerChanged {
                server: self.id.clone(),
                status: self.status.clone(),
                tools,
            })
            .await;
    }

    fn tools(&self, listed: Vec<rmcp::model::Tool>, me: ActorRef<McpServer>) -> Vec<Arc<dyn Tool>> {
        let time_limit = Duration::from_secs(self.config.tool_timeout_secs.max(1));
        listed
            .into_iter()
            .map(|t| {
                let spec = ToolSpec {
                    name: naming::tool_name(&self.name, &t.name),
                    description: t.description.map(|d| d.to_string()).unwrap_or_default(),
                    input_schema: std::sync::Arc::new(serde_json::Value::Object(
                        (*t.input_schema).clone(),
                    )),
                    origin: ToolOrigin::Mcp {
                        server: self.name.clone(),
                        writes: t.annotations.as_ref().is_some_and(|a| {
                            a.read_only_hint == Some(false) || a.destructive_hint == Some(true)
                        }),
                    },
                };
                Arc::new(McpTool::new(
                    spec,
                    t.name.to_string(),
                    me.clone().reply_recipient::<CallMcpTool>(),
                    time_limit,
                )) as Arc<dyn Tool>
            })
            .collect()
    }
}

/// Start the server, keep it running, start it again when it dies. The
/// first transport was prepared when the actor started.
async fn supervise(
    name: String,
    config: McpServerConfig,
    (workspace, environment): (PathBuf, EnvironmentPolicy),
    me: WeakActorRef<McpServer>,
    stop: CancellationToken,
    mut first: Option<(
        Result<connect::Transport, connect::ConnectError>,
        StderrTail,
    )>,
) {
    let tell = |signal: Supervision| {
        let me = me.clone();
        async move {
            if let Some(me) = me.upgrade() {
                let _ = me.tell(signal).await;
            }
        }
    };
    let startup = Duration::from_secs(config.startup_timeout_secs.max(1));
    let mut failures = 0u32;
    loop {
        let (prepared, stderr) = first.take().unwrap_or_else(|| {
            let stderr = StderrTail::default();
            (
                connect::prepare(&name, &config, (&workspace, &environment), &stderr),
                stderr,
            )
        });
        let child = match &prepared {
            Ok(connect::Transport::Stdio(process)) => process.id(),
            _ => None,
        };
        let (changed_tx, mut changed_rx) = mpsc::unbounded_channel();
        let start = async {
            let transport = prepared.map_err(|e| (e.to_string(), e.is_permanent()))?;
            let connection = connect::handshake(transport, changed_tx)
                .await
                .map_err(|e| (e.to_string(), e.is_permanent()))?;
            let tools = connection
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| (format!("listing its tools failed: {e}"), false))?;
            Ok::<(Connection, Vec<rmcp::model::Tool>), (String, bool)>((connection, tools))
        };
        let started = tokio::select! {
            _ = stop.cancelled() => {
                stop_and_reap(child).await;
                return;
            }
            started = tokio::time::timeout(startup, start) => started,
        };
        let (reason, permanent) = match started {
            Err(_) => {
                stop_and_reap(child).await;
                let reason = format!(
                    "it did not start within {} s (startup_timeout_secs)",
                    startup.as_secs()
                );
                (reason, false)
            }
            Ok(Err(failure)) => {
                stop_and_reap(child).await;
                failure
            }
            Ok(Ok((connection, tools))) => {
                failures = 0;
                let peer = connection.peer().clone();
                tell(Supervision::Ready {
                    peer: peer.clone(),
                    tools,
                })
                .await;
                let closer = connection.cancellation_token();
                let ended = connection.waiting();
                tokio::pin!(ended);
                loop {
                    tokio::select! {
                        _ = stop.cancelled() => {
                            closer.cancel();
                            let _ = ended.await; // the transport closes the child and reaps it
                            tell(Supervision::Stopped).await;
                            return;
                        }
                        Some(()) = changed_rx.recv() => match peer.list_all_tools().await {
                            Ok(tools) => tell(Supervision::ToolsChanged { tools }).await,
                            Err(e) => tracing::warn!(server = %name, "re-listing tools failed: {e}"),
                        },
                        _ = &mut ended => break,
                    }
                }
                ("the server exited".to_string(), false)
            }
        };
        failures += 1;
        let lines = stderr.final_lines().await;
        tracing::info!(server = %name, attempt = failures, "MCP server down: {reason}");
        if permanent || failures > MAX_START_FAILURES {
            tell(Supervision::Status(McpServerStatus::Failed {
                reason,
                stderr: lines,
            }))
            .await;
            return;
        }
        let delay = Duration::from_millis(500u64 << (failures - 1).min(6));
        tell(Supervision::Status(McpServerStatus::Restarting {
            attempt: failures,
            delay_ms: delay.as_millis() as u64,
            reason,
            stderr: lines,
        }))
        .await;
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(delay) => {}
        }
        tell(Supervision::Status(McpServerStatus::Starting)).await;
    }
}

/// Kill the process group of a server whose start was abandoned and reap
/// it. (The SDK's transport, when dropped mid-handshake, only starts a kill
/// in the background; if agentbus exits first the child is orphaned.)
async fn stop_and_reap(child: Option<u32>) {
    use nix::sys::signal::{Signal, killpg};
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    use nix::unistd::Pid;
    let Some(pid) = child.and_then(|p| i32::try_from(p).ok()).map(Pid::from_raw) else {
        return;
    };
    let _ = killpg(pid, Signal::SIGKILL);
    let _ = tokio::task::spawn_blocking(move || {
        // SIGKILL is quick; give up after two seconds rather than hang.
        for _ in 0..200 {
            match waitpid(pid, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => std::thread::sleep(Duration::from_millis(10)),
                _ => return, // reaped, or already reaped by tokio
            }
        }
    })
    .await;
}

/// From the supervisor task.
enum Supervision {
    Ready {
        peer: Peer<RoleClient>,
        tools: Vec<rmcp::model::Tool>,
    },
    ToolsChanged {
        tools: Vec<rmcp::model::Tool>,
    },
    Status(McpServerStatus),
    Stopped,
}

impl Message<Supervision> for McpServer {
    type Reply = ();

    async fn handle(&mut self, signal: Supervision, ctx: &mut Context<Self, Self::Reply>) {
        let me = ctx.actor_ref().clone();
        match signal {
            Supervision::Ready { peer, tools } => {
                self.peer = Some(peer);
                self.status = McpServerStatus::Ready { tools: tools.len() };
                let tools = self.tools(tools, me);
                self.report(Some(tools)).await;
            }
            Supervision::ToolsChanged { tools } => {
                self.status = McpServerStatus::Ready { tools: tools.len() };
                let tools = self.tools(tools, me);
                self.report(Some(tools)).await;
            }
            Supervision::Status(status) => {
                self.peer = None;
                self.status = status;
                self.report(None).await;
            }
            Supervision::Stopped => {
                self.peer = None;
                self.status = McpServerStatus::Stopped;
                self.report(None).await;
            }
        }
    }
}

impl Message<CallMcpTool> for McpServer {
    type Reply = DelegatedReply<Result<ToolOutcome, Infallible>>;

    async fn handle(
        &mut self,
        call: CallMcpTool,
        ctx: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        let server = self.name.clone();
        let Some(peer) = self.peer.clone() else {
            return ctx.reply(Ok(ToolOutcome::error(format!(
                "MCP server `{server}` is not available ({}); try again later",
                self.status.describe()
            ))));
        };
        ctx.spawn(async move { Ok(call_tool(peer, server, call).await) })
    }
}

/// One call on the server's connection; the outcome the model reads.
async fn call_tool(peer: Peer<RoleClient>, server: String, call: CallMcpTool) -> ToolOutcome {
    let params = CallToolRequestParams::new(call.tool.clone()).with_arguments(call.arguments);
    // The time limit (`tool_timeout_secs`) is the executor's: it fires
    // `cancel`, and dropping the call cancels it on the server.
    let response = tokio::select! {
        _ = call.cancel.cancelled() => return ToolOutcome::error(INTERRUPTED),
        response = peer.call_tool_once(params) => response,
    };
    match response {
        Err(e) => ToolOutcome::error(format!("MCP server `{server}` failed during the call: {e}")),
        Ok(CallToolResponse::Complete(result)) => {
            let (output, is_error) =
                result_text(&serde_json::to_value(&result).unwrap_or_default());
            ToolOutcome {
                output,
                is_error,
                duration_ms: 0,
            }
        }
        Ok(_) => ToolOutcome::error(format!(
            "MCP server `{server}` answered `{}` with a kind of result agentbus does not support (input request or task)",
            call.tool
        )),
    }
}

/// Stop the server and wait until its process is gone.
#[derive(Debug)]
pub struct StopServer;

impl Message<StopServer> for McpServer {
    type Reply = ();

    async fn handle(&mut self, _: StopServer, _: &mut Context<Self, Self::Reply>) {
        self.stop.cancel();
        if let Some(supervisor) = self.supervisor.take() {
            let _ = supervisor.await;
        }
        self.peer = None;
        self.status = McpServerStatus::Stopped;
        self.report(None).await;
    }
}
