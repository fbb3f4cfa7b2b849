//! agentbus, the binary: command line, configuration, front ends.
//!
//! Everything agentbus *is* lives in the `agentbus-actors` crate; this crate
//! parses the command line, loads the configuration, starts the runtime and
//! plugs a front end into a session. Logs go to stderr (RUST_LOG filters
//! them); stdout belongs to the user's output and `--json` events.

mod admin;
mod api;
mod api_schemas;
mod cli;
mod config;
mod frontend;
mod remote;
mod serve;

use anyhow::Context as _;
use clap::Parser;
use cli::{Cli, Command, GlobalArgs, McpCommand, SessionArgs};
use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing();
    let runtime = match async_runtime(&cli.command) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agentbus: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(dispatch(cli));
    // Everything that matters was awaited by `dispatch`; what is left is at
    // most a read of stdin parked on a blocking thread, which would keep
    // the process alive until the next line.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("agentbus: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `run` is one turn of one session: one worker thread drives it
/// (commands, file searches and the store still get threads of their own),
/// which keeps a one-shot run small. Everything else gets a worker per
/// core. (A current-thread runtime would not do: the store's actor runs on
/// a thread of its own, which kameo spawns only from a multi-threaded one.)
fn async_runtime(command: &Command) -> std::io::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Command::Run(_) = command {
        builder.worker_threads(1);
    }
    builder.enable_all().build()
}

async fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    agentbus_actors::runtime::install_crypto_provider();
    match cli.command {
        Command::Chat(args) => {
            let attach = attach_options(&cli.global, &args.session, args.attach)?;
            let settings = load_settings(&cli.global, &local_part(&args.session, &attach))?;
            let flags = session_flags(&args.session);
            frontend::chat::run(settings, args.resume, args.json, attach, flags).await
        }
        Command::Run(args) => {
            let attach = attach_options(&cli.global, &args.session, args.attach)?;
            let settings = load_settings(&cli.global, &local_part(&args.session, &attach))?;
            let prompt = frontend::run::read_prompt(&args.prompt).await?;
            let flags = session_flags(&args.session);
            frontend::run::run(settings, args.resume, prompt, args.json, attach, flags).await
        }
        Command::Sessions(command) => {
            let settings = load_settings(&cli.global, &SessionArgs::default())?;
            admin::sessions::run(settings, command).await
        }
        Command::Serve(args) => {
            let settings = load_settings(&cli.global, &SessionArgs::default())?;
            serve::run(settings, args.listen).await
        }
        Command::Acp(args) => {
            let attach = attach_options(&cli.global, &args.session, args.attach)?;
            let settings = load_settings(&cli.global, &local_part(&args.session, &attach))?;
            frontend::acp::run(settings, attach, session_flags(&args.session)).await
        }
        Command::Mcp(McpCommand::List { json }) => {
            let settings = load_settings(&cli.global, &SessionArgs::default())?;
            admin::mcp::list(settings, json).await
        }
    }
}

/// The flags that say how the chosen session runs.
fn session_flags(session: &SessionArgs) -> frontend::backend::SessionFlags {
    frontend::backend::SessionFlags {
        permission_mode: session.permission_mode,
        agent: session.agent.clone(),
    }
}

/// What `--attach URL` carries to the server; flags the server's own
/// configuration decides are refused.
fn attach_options(
    global: &GlobalArgs,
    session: &SessionArgs,
    url: Option<String>,
) -> anyhow::Result<Option<frontend::backend::Attach>> {
    let Some(url) = url else { return Ok(None) };
    if session.max_steps.is_some() {
        anyhow::bail!(
            "--max-steps cannot be used with --attach: the server's configuration sets it"
        );
    }
    if !session.allow.is_empty() {
        anyhow::bail!(
            "--allow cannot be used with --attach: the server's configuration holds the rules (answer \"always\" to a request to add one to the session)"
        );
    }
    Ok(Some(frontend::backend::Attach {
        url,
        model: session.model.clone(),
        workspace: global.workspace.clone(),
        permission_mode: session.permission_mode,
    }))
}

/// The session flags the local configuration checks: attached, `--model`
/// names a profile of the server's configuration, not of this one.
fn local_part(session: &SessionArgs, attach: &Option<frontend::backend::Attach>) -> SessionArgs {
    let mut local = session.clone();
    if attach.is_some() {
        local.model = None;
    }
    local
}

fn load_settings(
    global: &GlobalArgs,
    session: &SessionArgs,
) -> anyhow::Result<agentbus_actors::Settings> {
    let options = config::LoadOptions {
        config_file: global.config.clone(),
        workspace: global.workspace.clone(),
        model: session.model.clone(),
        max_steps: session.max_steps,
        data_dir: global.data_dir.clone(),
        permission_mode: session.permission_mode,
        allow: session.allow.clone(),
    };
    config::load(&options).context("configuration")
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}
