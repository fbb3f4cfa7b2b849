//! ToolExecutor actor: runs tool calls, and owns the tool registry.
//!
//! The [registry](super::registry) holds the built-in tools and the tools of
//! every MCP server (reported by McpServer actors with [`ServerChanged`]);
//! each change is published as a [`ToolCatalog`] on a watch channel that
//! sessions follow: the shared view, and the view of each session given
//! MCP servers of its own ([`GiveServer`] says which sessions a given
//! server is offered to).
//! Accepts [`RunTool`] (answered when the call ends), [`ListTools`],
//! [`ServerChanged`] and [`GiveServer`]. Every call runs on its own task,
//! so many run at once and the actor stays responsive; every failure —
//! unknown tool (a tool of a server not given to the calling session is
//! one), arguments that do not fit, an error, a panic, a timeout, a
//! cancellation — becomes an error [`ToolOutcome`] the model can read.
//! Outputs are cut to size. A call to a tool of an MCP server still on
//! its first start (its tools not listed yet) waits, on its own task, for
//! the server to finish starting.
//!
//! Never runs a tool inside its handler (that would serialise all calls) and
//! never talks to a session directly: the caller gets the outcome as a reply.

use crate::model::{Grant, GrantedCall, ToolCall, ToolOutcome, ToolSpec};
use crate::protocol::{McpServerStatus, SessionId};
use crate::settings::ToolSettings;
use crate::tools::naming;
use crate::tools::registry::{ServerId, ToolCatalog, ToolRegistry, ToolView};
use crate::tools::{BackgroundCommands, Files, Tool, ToolContext, ToolError, truncate_middle};
use kameo::Actor;
use kameo::error::Infallible;
use kameo::message::{Context, Message};
use kameo::reply::DelegatedReply;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// Run one tool call in `workspace` with what its permission check
/// granted; stop it when `cancel` fires.
#[derive(Debug)]
pub struct RunTool {
    pub call: ToolCall,
    pub grant: Grant,
    pub workspace: PathBuf,
    pub cancel: CancellationToken,
    /// Where the file tools read and write (the session's).
    pub files: Files,
    /// The session's background commands.
    pub background: BackgroundCommands,
    /// The session calling: it may call the shared tools and those of the
    /// servers given to it (`None`: the shared tools only).
    pub session: Option<SessionId>,
    /// The call's span (`crate::spans`): its outcome is recorded there,
    /// and an MCP request it makes is traced beneath it (`Span::none()`:
    /// not traced).
    pub span: tracing::Span,
}

impl RunTool {
    pub fn new(
        call: GrantedCall,
        workspace: PathBuf,
        cancel: CancellationToken,
        files: Files,
        background: BackgroundCommands,
    ) -> Self {
        RunTool {
            call: call.call,
            grant: call.grant,
            workspace,
            cancel,
            files,
            background,
            session: None,
            span: tracing::Span::none(),
        }
    }

    /// The call is made by session `session`.
    pub fn by(mut self, session: SessionId) -> Self {
        self.session = Some(session);
        self
    }

    /// The call is traced as `span`.
    pub fn traced(mut self, span: tracing::Span) -> Self {
        self.span = span;
        self
    }
}

/// A call that waited for its MCP server to finish starting, tried again.
#[derive(Debug)]
struct RetryAfterStart(RunTool);

/// The specs of every tool offered to every session.
#[derive(Debug)]
pub struct ListTools;

/// An MCP server's state changed; `tools` is set when its tool list did.
pub struct ServerChanged {
    pub server: ServerId,
    pub status: McpServerStatus,
    pub tools: Option<Vec<Arc<dyn Tool>>>,
}

/// Offer given MCP server `server` to `sessions` only, with `prompt` for
/// their system prompts. An empty set forgets the server: its tools and
/// status go, and what it reports afterwards (its stop) is ignored. Sent
/// before the server's actor starts, so its first report is not ignored.
pub struct GiveServer {
    pub server: ServerId,
    pub sessions: BTreeSet<SessionId>,
    pub prompt: Option<String>,
}

/// The actor.
#[derive(Actor)]
pub struct ToolExecutor {
    registry: ToolRegistry,
    settings: ToolSettings,
    servers: BTreeMap<ServerId, McpServerStatus>,
    /// Servers that have left their first start (reported anything but
    /// `starting` once): they are never on their first start again.
    started_once: BTreeSet<ServerId>,
    /// The `prompt` of each given server that has one.
    prompts: BTreeMap<ServerId, String>,
    catalog: watch::Sender<Arc<ToolCatalog>>,
}

impl ToolExecutor {
    /// An executor publishing its catalog on `catalog`.
    pub fn new(
        registry: ToolRegistry,
        settings: ToolSettings,
        catalog: watch::Sender<Arc<ToolCatalog>>,
    ) -> Self {
        let executor = ToolExecutor {
            registry,
            settings,
            servers: BTreeMap::new(),
            started_once: BTreeSet::new(),
            prompts: BTreeMap::new(),
            catalog,
        };
        executor.publish();
        executor
    }

    fn on_first_start(&self, server: &ServerId) -> bool {
        matches!(self.servers.get(server), Some(McpServerStatus::Starting))
            && !self.started_once.contains(server)
    }

    /// The statuses and first starts of `servers`, by name.
    fn statuses<'a>(&'a self, servers: impl Iterator<Item = &'a ServerId>, view: &mut ToolView) {
        for server in servers {
            if let Some(status) = self.servers.get(server) {
                view.servers.insert(server.name.clone(), status.clone());
            }
            if self.on_first_start(server) {
                view.first_start.insert(server.name.clone());
            }
        }
    }

    fn publish(&self) {
        let mut shared = ToolView {
            tools: self.registry.specs(),
            ..ToolView::default()
        };
        self.statuses(self.servers.keys().filter(|s| !s.is_given()), &mut shared);
        let sessions = self
            .registry
            .sessions_with_own_servers()
            .map(|session| {
                let mut view = ToolView {
                    tools: self.registry.specs_for(session),
                    servers: shared.servers.clone(),
                    first_start: shared.first_start.clone(),
                    prompts: String::new(),
                };
                self.statuses(self.registry.given_to(session), &mut view);
                for server in self.registry.given_to(session) {
                    if let Some(prompt) = self.prompts.get(server) {
                        view.prompts.push_str(&format!(
                            "\n\n# MCP server `{}`\n{}",
                            server.name,
                            prompt.trim()
                        ));
                    }
                }
                (session.clone(), view)
            })
            .collect();
        self.catalog
            .send_replace(Arc::new(ToolCatalog { shared, sessions }));
    }
}

impl Message<ServerChanged> for ToolExecutor {
    type Reply = ();

    async fn handle(&mut self, change: ServerChanged, _: &mut Context<Self, Self::Reply>) {
        if change.server.is_given() && !self.registry.is_given_to_anyone(&change.server) {
            // A given server no session has any more, reporting its stop.
            return;
        }
        match (&change.status, change.tools) {
            (McpServerStatus::Failed { .. } | McpServerStatus::Stopped, _) => {
                self.registry.remove_server(&change.server)
            }
            (_, Some(tools)) => self.registry.set_server_tools(&change.server, tools),
            (_, None) => {}
        }
        if !matches!(change.status, McpServerStatus::Starting) {
            self.started_once.insert(change.server.clone());
        }
        if !change.server.is_given() {
            // Only configured servers: a session's own servers are named
            // by each session.
            let state = match &change.status {
                McpServerStatus::Starting => "starting",
                McpServerStatus::Ready { .. } => "ready",
                McpServerStatus::Restarting { .. } => "restarting",
                McpServerStatus::Failed { .. } => "failed",
                McpServerStatus::Stopped => "stopped",
            };
            crate::metrics::get().mcp_server_state(&change.server.name, state);
        }
        self.servers.insert(change.server, change.status);
        self.publish();
    }
}

impl Message<GiveServer> for ToolExecutor {
    type Reply = ();

    async fn handle(&mut self, give: GiveServer, _: &mut Context<Self, Self::Reply>) {
        if give.sessions.is_empty() {
            self.servers.remove(&give.server);
            self.started_once.remove(&give.server);
            self.prompts.remove(&give.server);
        } else if let Some(prompt) = give.prompt.filter(|p| !p.trim().is_empty()) {
            self.prompts.insert(give.server.clone(), prompt);
        }
        self.registry.set_audience(&give.server, give.sessions);
        self.publish();
    }
}

/// How a call ended. (Never an error: every failure is an error outcome the
/// model reads; the `Result` only lets the actor reply with it.)
pub type Ran = Result<ToolOutcome, Infallible>;

impl Message<RunTool> for ToolExecutor {
    type Reply = DelegatedReply<Ran>;

    async fn handle(&mut self, msg: RunTool, ctx: &mut Context<Self, Self::Reply>) -> Self::Reply {
        if self
            .registry
            .get(msg.session.as_ref(), &msg.call.name)
            .is_none()
            && let Some(server) = self.first_start_of(&msg.call.name, msg.session.as_ref())
        {
            // The tool's server has not listed its tools yet: this call (and
            // only this call) waits for it to finish starting.
            let me = ctx.actor_ref().clone();
            let mut catalog = self.catalog.subscribe();
            return ctx.spawn(async move {
                let session = msg.session.clone();
                let started = catalog.wait_for(|c| {
                    let view = match &session {
                        Some(session) => c.view(session),
                        None => &c.shared,
                    };
                    !matches!(view.servers.get(&server), Some(McpServerStatus::Starting))
                });
                tokio::select! {
                    _ = msg.cancel.cancelled() => {
                        crate::spans::record_tool_outcome(&msg.span, "cancelled", None);
                        return Ok(cancelled());
                    }
                    _ = started => {}
                }
                Ok(me
                    .ask(RetryAfterStart(msg))
                    .await
                    .unwrap_or_else(ToolOutcome::executor_unavailable))
            });
        }
        self.run(msg, ctx)
    }
}

impl Message<RetryAfterStart> for ToolExecutor {
    type Reply = DelegatedReply<Ran>;

    async fn handle(
        &mut self,
        RetryAfterStart(msg): RetryAfterStart,
        ctx: &mut Context<Self, Self::Reply>,
    ) -> Self::Reply {
        self.run(msg, ctx)
    }
}

impl ToolExecutor {
    /// Look the tool up and run it on a task of its own.
    fn run<R>(&self, msg: RunTool, ctx: &mut Context<Self, R>) -> DelegatedReply<Ran>
    where
        R: kameo::Reply<Value = Ran>,
    {
        let tool = self
            .registry
            .get(msg.session.as_ref(), &msg.call.name)
            .or_else(|| crate::tools::builtin::session_tool(&msg.call.name));
        let Some(tool) = tool else {
            crate::spans::record_tool_outcome(&msg.span, "error", Some("unknown_tool"));
            let names = self.registry.names(msg.session.as_ref()).join(", ");
            return ctx.reply(Ok(ToolOutcome::error(format!(
                "unknown tool `{}`; the available tools are: {names}",
                msg.call.name
            ))));
        };
        let settings = self.settings.clone();
        ctx.spawn(async move { Ok(run(tool, msg, settings).await) })
    }

    /// The name of the MCP server, offered to `session`, that owns `tool` by
    /// name and is still starting for the first time (it has listed no tools
    /// yet).
    fn first_start_of(&self, tool: &str, session: Option<&SessionId>) -> Option<String> {
        self.servers
            .iter()
            .find(|(server, status)| {
                matches!(status, McpServerStatus::Starting)
                    && self.registry.offers(server, session)
                    && !self.registry.has_server(server)
                    && tool.starts_with(&naming::server_prefix(&server.name))
            })
            .map(|(server, _)| server.name.clone())
    }
}

fn cancelled() -> ToolOutcome {
    ToolOutcome::error(crate::model::INTERRUPTED)
}

impl Message<ListTools> for ToolExecutor {
    type Reply = Vec<ToolSpec>;

    async fn handle(&mut self, _: ListTools, _: &mut Context<Self, Self::Reply>) -> Self::Reply {
        self.registry.specs().to_vec()
    }
}

/// Run a call to its end on a task of its own, so that a panic inside the
/// tool is caught as a `JoinError` instead of taking anything down. (The
/// library's agent driver, `embedded/`, runs its calls through this too.)
pub async fn run(tool: Arc<dyn Tool>, msg: RunTool, settings: ToolSettings) -> ToolOutcome {
    let started = Instant::now();
    let name = msg.call.name.clone();
    let mut count = CallCount {
        name: name.clone(),
        started,
        outcome: crate::metrics::Outcome::Cancelled,
        error_type: None,
        span: msg.span.clone(),
    };
    let context = ToolContext {
        workspace: msg.workspace,
        cancel: msg.cancel.child_token(),
        max_output_bytes: settings.max_output_bytes,
        environment: settings.environment.clone(),
        sandbox: settings.sandbox.clone(),
        grant: msg.grant,
        files: msg.files,
        background: msg.background,
        max_background_commands: settings.max_background_commands,
        trace: crate::spans::CallTrace {
            span: msg.span,
            session: msg.session,
        },
    };
    let tool_cancel = context.cancel.clone();
    let mut task = tokio::spawn(tool.call(msg.call.input, context));
    let whole = tool.whole_output();
    let timeout = tool
        .time_limit()
        .unwrap_or(Duration::from_secs(settings.timeout_secs));
    let result = tokio::select! {
        joined = &mut task => joined,
        _ = tokio::time::sleep(timeout) => {
            tool_cancel.cancel();
            task.abort();
            count.outcome = crate::metrics::Outcome::Error;
            count.error_type = Some("timeout");
            return outcome(started, Err(format!("tool `{name}` timed out after {} s and was stopped", timeout.as_secs())), None);
        }
    };
    count.error_type = Some(match &result {
        Ok(Err(ToolError::InvalidArguments { .. })) => "invalid_arguments",
        Err(join) if join.is_panic() => "panic",
        Err(_) => "stopped",
        _ => "tool_error",
    });
    let text = match result {
        Ok(Ok(output)) if !output.is_error => Ok(output.text),
        Ok(Ok(output)) => Err(output.text),
        Ok(Err(ToolError::Cancelled)) => Err(crate::model::INTERRUPTED.to_string()),
        Ok(Err(e)) => Err(e.to_string()),
        Err(join) if join.is_panic() => Err(format!(
            "tool `{name}` crashed (panic: {}); this is a bug in the tool, not in your arguments",
            panic_message(join.into_panic())
        )),
        Err(_) => Err(format!("tool `{name}` was stopped")),
    };
    count.outcome = match &text {
        Ok(_) => crate::metrics::Outcome::Ok,
        Err(e) if e == crate::model::INTERRUPTED => crate::metrics::Outcome::Cancelled,
        Err(_) => crate::metrics::Outcome::Error,
    };
    let limit = (!whole).then_some(settings.max_output_bytes);
    outcome(started, text, limit)
}

/// Counts a call of `name` when it ends ([`crate::metrics`]) and records
/// how it ended on its span ([`crate::spans`]), however it ends: a call
/// whose task is dropped counts as cancelled.
struct CallCount {
    name: String,
    started: Instant,
    outcome: crate::metrics::Outcome,
    /// What kind of error, when it is one.
    error_type: Option<&'static str>,
    span: tracing::Span,
}

impl Drop for CallCount {
    fn drop(&mut self) {
        crate::metrics::get().tool_call(&self.name, self.outcome, self.started.elapsed());
        let (outcome, error_type) = match self.outcome {
            crate::metrics::Outcome::Ok => ("ok", None),
            crate::metrics::Outcome::Cancelled => ("cancelled", None),
            crate::metrics::Outcome::Error => ("error", self.error_type),
        };
        crate::spans::record_tool_outcome(&self.span, outcome, error_type);
    }
}

/// The outcome of a call that began at `started`, its output cut to
/// `limit` bytes when there is one.
fn outcome(started: Instant, text: Result<String, String>, limit: Option<usize>) -> ToolOutcome {
    let (output, is_error) = match text {
        Ok(t) => (t, false),
        Err(t) => (t, true),
    };
    ToolOutcome {
        output: match limit {
            Some(limit) => truncate_middle(&output, limit),
            None => output,
        },
        is_error,
        duration_ms: started.elapsed().as_millis() as u64,
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown payload".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolOrigin;
    use crate::tools::ToolOutput;
    use futures::future::BoxFuture;
    use kameo::actor::Spawn;
    use serde_json::{Value, json};

    struct Panicky;
    impl Tool for Panicky {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "panicky".into(),
                description: "panics".into(),
                input_schema: std::sync::Arc::new(json!({"type": "object"})),
                origin: ToolOrigin::Builtin,
            }
        }
        fn call(
            &self,
            _: Value,
            _: ToolContext,
        ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
            Box::pin(async { panic!("boom") })
        }
    }

    use crate::tools::test_tools::Forever;

    fn executor(timeout_secs: u64) -> kameo::actor::ActorRef<ToolExecutor> {
        let mut tools = crate::tools::builtin::builtin_tools();
        tools.push(Arc::new(Panicky));
        tools.push(Arc::new(Forever));
        let registry = ToolRegistry::new(tools, &["grep".to_string()]);
        ToolExecutor::spawn(ToolExecutor::new(
            registry,
            ToolSettings {
                max_output_bytes: 1000,
                timeout_secs,
                ..Default::default()
            },
            watch::channel(Arc::new(ToolCatalog::default())).0,
        ))
    }

    fn call(name: &str, input: Value) -> RunTool {
        RunTool {
            call: ToolCall {
                id: "c".into(),
                name: name.into(),
                input,
            },
            grant: Grant::default(),
            workspace: std::env::temp_dir(),
            cancel: CancellationToken::new(),
            files: Files::Disk,
            background: Default::default(),
            session: None,
            span: tracing::Span::none(),
        }
    }

    /// A server's tool that never ends, with a time limit of its own.
    struct LimitedForever(Duration);
    impl Tool for LimitedForever {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                origin: ToolOrigin::Mcp {
                    server: "s".into(),
                    writes: false,
                },
                ..Forever.spec()
            }
        }
        fn time_limit(&self) -> Option<Duration> {
            Some(self.0)
        }
        fn call(
            &self,
            input: Value,
            ctx: ToolContext,
        ) -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
            Forever.call(input, ctx)
        }
    }

    #[tokio::test]
    async fn a_tool_renamed_in_a_name_clash_keeps_its_own_time_limit() {
        let mut registry = ToolRegistry::new(vec![Arc::new(Forever)], &[]);
        let limited: Arc<dyn Tool> = Arc::new(LimitedForever(Duration::from_secs(1)));
        registry.set_server_tools(&ServerId::configured("s"), vec![limited]);
        let renamed: Vec<String> = registry
            .specs()
            .iter()
            .map(|s| s.name.clone())
            .filter(|n| n != "forever")
            .collect();
        assert_eq!(renamed.len(), 1, "the server's `forever` was renamed");
        let ex = ToolExecutor::spawn(ToolExecutor::new(
            registry,
            ToolSettings {
                max_output_bytes: 1000,
                timeout_secs: 600,
                ..Default::default()
            },
            watch::channel(Arc::new(ToolCatalog::default())).0,
        ));
        // Without its own limit it would run for the 600 s of `[tools]`.
        let out = tokio::time::timeout(
            Duration::from_secs(60),
            ex.ask(call(&renamed[0], json!({}))),
        )
        .await
        .expect("stopped by its own limit, not the executor's")
        .unwrap();
        assert!(out.is_error);
        assert!(out.output.contains("timed out after 1 s"), "{}", out.output);
    }

    #[tokio::test]
    async fn only_a_servers_first_start_counts_as_one() {
        let (tx, catalog) = watch::channel(Arc::new(ToolCatalog::default()));
        let ex = ToolExecutor::spawn(ToolExecutor::new(
            ToolRegistry::new(vec![], &[]),
            ToolSettings::default(),
            tx,
        ));
        let report = |server: &str, status: McpServerStatus| ServerChanged {
            server: ServerId::configured(server),
            status,
            tools: None,
        };
        let first_start = || catalog.borrow().shared.first_start.clone();
        for server in ["a", "b"] {
            ex.ask(report(server, McpServerStatus::Starting))
                .await
                .unwrap();
        }
        assert_eq!(first_start(), ["a".to_string(), "b".to_string()].into());
        let gave_up = McpServerStatus::Restarting {
            attempt: 1,
            delay_ms: 500,
            reason: "it did not start within 1 s (startup_timeout_secs)".into(),
            stderr: vec![],
        };
        ex.ask(report("a", gave_up)).await.unwrap();
        ex.ask(report("b", McpServerStatus::Ready { tools: 0 }))
            .await
            .unwrap();
        assert!(first_start().is_empty());
        // Starting again after a restart, or after being ready: not a first start.
        for server in ["a", "b"] {
            ex.ask(report(server, McpServerStatus::Starting))
                .await
                .unwrap();
        }
        assert!(first_start().is_empty(), "{:?}", first_start());
        assert_eq!(
            catalog.borrow().shared.servers["a"],
            McpServerStatus::Starting
        );
    }

    #[tokio::test]
    async fn a_given_servers_tool_is_unknown_to_the_sessions_not_given_it() {
        let (tx, catalog) = watch::channel(Arc::new(ToolCatalog::default()));
        let ex = ToolExecutor::spawn(ToolExecutor::new(
            ToolRegistry::new(vec![], &[]),
            ToolSettings {
                max_output_bytes: 1000,
                timeout_secs: 1,
                ..Default::default()
            },
            tx,
        ));
        let (mine, other) = (SessionId::from("mine"), SessionId::from("other"));
        let server = ServerId::given("editor", 1);
        ex.ask(GiveServer {
            server: server.clone(),
            sessions: [mine.clone()].into(),
            prompt: Some("Use the editor's tools.".into()),
        })
        .await
        .unwrap();
        let limited: Arc<dyn Tool> = Arc::new(LimitedForever(Duration::from_millis(10)));
        let name = limited.spec().name;
        ex.ask(ServerChanged {
            server: server.clone(),
            status: McpServerStatus::Ready { tools: 1 },
            tools: Some(vec![limited]),
        })
        .await
        .unwrap();
        {
            let catalog = catalog.borrow();
            let offered = |s: &SessionId| -> Vec<String> {
                catalog
                    .view(s)
                    .tools
                    .iter()
                    .map(|t| t.name.clone())
                    .collect()
            };
            assert_eq!(offered(&mine), std::slice::from_ref(&name));
            assert!(offered(&other).is_empty());
            assert!(catalog.view(&mine).servers.contains_key("editor"));
            assert!(!catalog.view(&other).servers.contains_key("editor"));
            assert!(
                catalog
                    .view(&mine)
                    .prompts
                    .contains("Use the editor's tools.")
            );
            assert!(catalog.shared.tools.is_empty() && catalog.shared.servers.is_empty());
        }
        let refused = ex
            .ask(call(&name, json!({})).by(other.clone()))
            .await
            .unwrap();
        assert!(refused.is_error);
        assert!(
            refused.output.contains(&format!("unknown tool `{name}`")),
            "{}",
            refused.output
        );
        let ran = ex
            .ask(call(&name, json!({})).by(mine.clone()))
            .await
            .unwrap();
        assert!(
            ran.output.contains("timed out"),
            "it reached the tool: {}",
            ran.output
        );
        // No session has it any more: it is forgotten, and its last report
        // brings nothing back.
        ex.ask(GiveServer {
            server: server.clone(),
            sessions: BTreeSet::new(),
            prompt: None,
        })
        .await
        .unwrap();
        ex.ask(ServerChanged {
            server,
            status: McpServerStatus::Stopped,
            tools: None,
        })
        .await
        .unwrap();
        assert_eq!(**catalog.borrow(), ToolCatalog::default());
    }

    #[tokio::test]
    async fn unknown_tool_is_an_error_result_listing_the_tools() {
        let ex = executor(60);
        let out = ex.ask(call("nope", json!({}))).await.unwrap();
        assert!(out.is_error);
        assert!(out.output.contains("unknown tool `nope`") && out.output.contains("read_file"));
    }

    #[tokio::test]
    async fn disallowed_tools_are_not_registered() {
        let ex = executor(60);
        let names: Vec<String> = ex
            .ask(ListTools)
            .await
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert!(!names.contains(&"grep".to_string()));
        assert!(names.contains(&"bash".to_string()));
        let out = ex.ask(call("grep", json!({"pattern": "x"}))).await.unwrap();
        assert!(out.is_error);
    }

    #[tokio::test]
    async fn a_panicking_tool_becomes_an_error_result_and_the_executor_lives_on() {
        let ex = executor(60);
        let out = ex.ask(call("panicky", json!({}))).await.unwrap();
        assert!(out.is_error);
        assert!(out.output.contains("panic: boom"), "{}", out.output);
        let again = ex.ask(call("nope", json!({}))).await.unwrap();
        assert!(again.is_error);
    }

    #[tokio::test]
    async fn cancellation_stops_a_running_call() {
        let ex = executor(60);
        let msg = call("forever", json!({}));
        let cancel = msg.cancel.clone();
        let pending = tokio::spawn(async move { ex.ask(msg).await });
        cancel.cancel();
        let out = pending.await.unwrap().unwrap();
        assert!(out.is_error);
        assert!(out.output.contains("cancelled"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_past_the_timeout_is_stopped_with_an_error() {
        let ex = executor(5);
        let out = ex.ask(call("forever", json!({}))).await.unwrap();
        assert!(out.is_error);
        assert!(out.output.contains("timed out after 5 s"), "{}", out.output);
    }
}
