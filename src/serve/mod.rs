//! `agentbus serve`: the daemon. One runtime (sessions, MCP servers, store)
//! shared by every client of the HTTP API, the SSE and WebSocket streams
//! and the web page.
//!
//! Layers: [`auth`] guards everything under `/v1`, and `/metrics`
//! ([`metrics`], the Prometheus figures), and tells the handlers who calls;
//! [`access`] holds the roles' rules that the handlers apply; [`sessions`],
//! [`approvals`], [`stream`], [`ws`] and [`meta`] are the handlers, one per
//! operation, each reaching the runtime through [`AppState`]; [`crate::api`]
//! holds the request and answer bodies; [`web`] serves the page;
//! [`probes`] answers `/livez` and `/readyz` without the token. Handlers only
//! translate between HTTP and the runtime's handles — no conversation rule
//! lives here. A client's mistake is an error answer, never a crash.

mod access;
mod approvals;
mod auth;
mod connections;
mod error;
mod meta;
mod metrics;
mod openapi;
mod probes;
mod sessions;
mod state;
mod stream;
mod web;
mod ws;

pub use state::AppState;

use agentbus_engine::{Runtime, Settings};
use anyhow::Context as _;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use axum::serve::ListenerExt as _;
use openapi::BearerToken;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio_util::sync::CancellationToken;
use utoipa::OpenApi;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouterExt as _};
use utoipa_axum::routes;

/// Where `serve` listens when neither `--listen` nor `[server] listen` says.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

/// Largest request body accepted (bodies are text; 1 MiB is plenty).
const BODY_LIMIT: usize = 1024 * 1024;

/// Largest body of `POST /v1/sessions/{id}/input`, whose `images` are
/// base64: the text and four images of the largest size taken (5 MB each,
/// 6.7 MB as base64) fit.
const INPUT_BODY_LIMIT: usize = 32 * 1024 * 1024;

#[derive(OpenApi)]
#[openapi(
    info(title = "agentbus", description = "Sessions of LLM agents: create them, send input, follow their events."),
    modifiers(&BearerToken),
    security(("token" = [])),
    tags(
        (name = "sessions", description = "Create, list, fork, delete sessions; send input; read the conversation; rewind files and conversation to before a turn"),
        (name = "events", description = "Follow events: SSE and WebSocket"),
        (name = "server", description = "Health, model profiles, tools")
    )
)]
struct ApiDoc;

/// The API's routes and their OpenAPI description.
pub fn api_routes() -> (Router<AppState>, utoipa::openapi::OpenApi) {
    let parts = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(sessions::list, sessions::create))
        .routes(routes!(sessions::get, sessions::delete, sessions::rename))
        .routes(routes!(sessions::open_session))
        .routes(routes!(sessions::fork))
        .routes(routes!(sessions::rewind_turns, sessions::rewind))
        .routes(routes!(sessions::undo))
        .routes(routes!(sessions::export))
        .routes(routes!(sessions::input).layer(DefaultBodyLimit::max(INPUT_BODY_LIMIT)))
        .routes(routes!(sessions::interrupt))
        .routes(routes!(approvals::decide))
        .routes(routes!(sessions::messages))
        .routes(routes!(sessions::history))
        .routes(routes!(stream::session_events))
        .routes(routes!(ws::session_socket))
        .routes(routes!(stream::lifecycle_events))
        .routes(routes!(meta::health))
        .routes(routes!(meta::models))
        .routes(routes!(meta::agents))
        .routes(routes!(meta::tools))
        .split_for_parts();
    let (router, mut document) = parts;
    let limits = openapi::BodyLimits {
        input: INPUT_BODY_LIMIT,
        other: BODY_LIMIT,
    };
    openapi::complete(&mut document, &limits);
    (router, document)
}

/// The whole application: the page, and the API behind the token.
/// `agents` are the agents known at start, which the document names.
pub fn app(state: AppState, tokens: Arc<auth::Tokens>, agents: &[String]) -> Router {
    let (api, mut openapi) = api_routes();
    openapi.info.version = env!("CARGO_PKG_VERSION").to_string();
    openapi::name_choices(
        &mut openapi,
        &[
            ("CreateSession", "model"),
            ("ContextOptions", "compact_model"),
        ],
        state.runtime.settings().models.keys(),
    );
    openapi::name_choices(&mut openapi, &[("CreateSession", "agent")], agents);
    let openapi = Arc::new(openapi);
    let api = api
        // Outside /v1: no token (the auth layer lets them by).
        .route("/livez", get(probes::livez))
        .route("/readyz", get(probes::readyz))
        .route(
            "/v1/openapi.json",
            get(move || {
                let openapi = openapi.clone();
                async move { axum::Json(openapi.as_ref().clone()) }
            }),
        )
        .route("/metrics", get(metrics::metrics))
        .fallback(not_found)
        .layer(axum::middleware::from_fn_with_state(
            tokens.clone(),
            auth::require_token,
        ))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state);
    web::routes(tokens).merge(api)
}

async fn not_found(uri: axum::http::Uri) -> error::ApiError {
    error::ApiError::not_found(format!(
        "no route {}; the API is described at /v1/openapi.json",
        uri.path()
    ))
}

/// Run the daemon until SIGTERM or SIGINT.
pub async fn run(settings: Settings, listen: Option<String>) -> anyhow::Result<ExitCode> {
    let listen = listen
        .or_else(|| settings.server.listen.clone())
        .unwrap_or_else(|| DEFAULT_LISTEN.to_string());
    let addr: SocketAddr = tokio::net::lookup_host(&listen)
        .await
        .with_context(|| {
            format!("--listen {listen}: expected HOST:PORT, such as {DEFAULT_LISTEN}")
        })?
        .next()
        .with_context(|| format!("--listen {listen}: the name has no address"))?;
    let configured = match &settings.server.token {
        Some(secret) => Some(secret.expose("`[server] token`")?),
        None => None,
    };
    let admin = auth::token(
        configured,
        !settings.server.tokens.is_empty(),
        &settings.data_dir,
        &addr,
    )?;
    let tokens = Arc::new(auth::Tokens::new(
        admin.as_ref().map(|(token, _)| token.clone()),
        &settings.server.tokens,
    )?);
    let listener = bind_listener(addr).with_context(|| format!("cannot listen on {addr}"))?;
    let addr = listener.local_addr()?;
    let signals = TerminationSignals::listen()?;
    let data_dir = settings.data_dir.clone();
    let runtime = Arc::new(Runtime::start(settings).await?);
    let shutdown = CancellationToken::new();
    announce(&addr, admin.as_ref(), &tokens);
    if let Some((node, name)) = runtime.node() {
        let cluster = runtime.settings().cluster.as_ref();
        let store = cluster
            .map(|c| c.postgres_url.to_string())
            .unwrap_or_default();
        eprintln!("agentbus: cluster node `{name}` ({node}), sessions in {store}");
        if let Some(nats) = cluster.and_then(|c| c.nats_url.as_ref()) {
            eprintln!("agentbus: live plane on {nats}: any session can be followed from this node");
        }
    }
    // Front ends that find a session held by this daemon point at it.
    let owner = agentbus_engine::runtime::Owner::current().to_string();
    let _announced = crate::daemons::announce(&data_dir, &owner, &format!("http://{addr}"))
        .inspect_err(|e| {
            tracing::warn!(
                "could not leave this daemon's address in {}: {e}",
                data_dir.display()
            )
        })
        .ok();

    let state = AppState {
        runtime: runtime.clone(),
        shutdown: shutdown.clone(),
    };
    tokio::spawn(stop_on_signal(signals, runtime.clone(), shutdown.clone()));
    // Inputs accepted before a crash run now, not when someone next looks.
    let resuming = runtime.clone();
    tokio::spawn(async move { resuming.resume_waiting_sessions().await });
    // Each event is written as it comes: Nagle's algorithm would hold a
    // small frame back until the client acknowledged the previous one.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set on a connection: {e}");
        }
    });
    let (agents, _) = runtime.agents(None).await;
    let agents: Vec<String> = agents.into_iter().map(|agent| agent.name).collect();
    // Every route made into a service once, here: each connection gets a
    // clone of the finished router, an `Arc`'s. (`axum::serve` given a
    // plain `Router` made them again for each connection, copying the
    // whole route table: 15 KiB a connection, kept as long as it was open,
    // heaptrack under the serve bench.)
    let app = app(state, tokens, &agents).with_state(());
    connections::serve(listener, app, shutdown.clone()).await;
    runtime.shutdown().await;
    eprintln!("agentbus: stopped");
    Ok(ExitCode::SUCCESS)
}

/// Tell the user where the server is and how to get in. The token itself
/// is only shown on a terminal (never in a log file).
/// Connections the kernel holds for the daemon before it accepts them
/// (capped by `net.core.somaxconn`). A thousand clients connecting at once
/// overflow tokio's default of 1,024, and a connection whose SYN was
/// dropped is retried only after a second.
const ACCEPT_QUEUE: u32 = 8192;

/// The daemon's listening socket, with room for a burst of connections.
fn bind_listener(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(ACCEPT_QUEUE)
}

fn announce(addr: &SocketAddr, admin: Option<&(String, auth::TokenSource)>, tokens: &auth::Tokens) {
    let url = format!("http://{addr}");
    // Said before the address: whoever waits for that line has this one.
    let named: Vec<String> = tokens
        .names()
        .into_iter()
        .filter(|(name, _)| &**name != auth::ADMIN)
        .map(|(name, role)| format!("{name} ({})", role.as_str()))
        .collect();
    if !named.is_empty() {
        eprintln!(
            "agentbus: tokens from [server.tokens]: {}",
            named.join(", ")
        );
    }
    eprintln!("agentbus: listening on {url}");
    match admin.map(|(_, source)| source) {
        Some(auth::TokenSource::File(path)) => {
            eprintln!("agentbus: API token in {}", path.display())
        }
        Some(auth::TokenSource::Configured) => {
            eprintln!("agentbus: API token from [server] token")
        }
        None => {}
    }
    match admin {
        Some((token, _)) if std::io::IsTerminal::is_terminal(&std::io::stderr()) => {
            eprintln!("agentbus: web page: {url}/?token={token}")
        }
        _ => eprintln!("agentbus: web page: {url}/?token=TOKEN"),
    }
    eprintln!("agentbus: attach a terminal with `agentbus chat --attach {url}`");
}

/// On SIGTERM or SIGINT: end running turns (each stores its `result`,
/// which attached clients still see), then close the streams so the
/// server can stop.
async fn stop_on_signal(
    mut signals: TerminationSignals,
    runtime: Arc<Runtime>,
    shutdown: CancellationToken,
) {
    signals.next().await;
    eprintln!("agentbus: shutting down: ending running turns");
    runtime.stop_sessions().await;
    shutdown.cancel();
}

/// SIGTERM and SIGINT, listened for from the start so that one arriving
/// while the runtime starts is not lost.
struct TerminationSignals {
    terminate: Signal,
    interrupt: Signal,
}

impl TerminationSignals {
    fn listen() -> anyhow::Result<Self> {
        Ok(TerminationSignals {
            terminate: signal(SignalKind::terminate()).context("listening for SIGTERM")?,
            interrupt: signal(SignalKind::interrupt()).context("listening for SIGINT")?,
        })
    }

    async fn next(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}
