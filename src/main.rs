//! agentbus, the binary: command line, configuration, front ends.
//!
//! Everything agentbus *is* lives in the `agentbus-engine` crate; this crate
//! parses the command line, loads the configuration, starts the runtime and
//! plugs a front end into a session. Logs go to stderr or a file (never
//! stdout: it belongs to the user's output and `--json` events).

mod admin;
mod allocator;
mod api;
mod api_schemas;
mod cli;
mod config;
mod daemons;
mod frontend;
mod logging;
mod model_check;
mod remote;
mod serve;
mod telemetry;

use anyhow::Context as _;
use clap::{CommandFactory, Parser};
use cli::{Cli, Command, GlobalArgs, McpCommand, SessionArgs};
use std::process::ExitCode;

fn main() -> ExitCode {
    let (global, command) = Cli::parse().into_parts();
    if let Command::Serve(_) = command {
        allocator::return_freed_memory_at_once();
    }
    let runtime = match async_runtime(&command) {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agentbus: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        let outcome = dispatch(global, command).await;
        // The last turn's spans go out before the process does.
        telemetry::shutdown().await;
        outcome
    });
    // Everything that matters was awaited by `dispatch`; what is left is at
    // most a read of stdin parked on a blocking thread, which would keep
    // the process alive until the next line.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("agentbus: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

/// An error and its causes, each said once: a cause whose text its
/// error's message already holds (`cannot open X: no such file`) is left
/// out.
fn error_chain(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let said = cause.to_string();
        if text.contains(&said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&said);
    }
    text
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

async fn dispatch(global: GlobalArgs, command: Command) -> anyhow::Result<ExitCode> {
    agentbus_engine::runtime::install_crypto_provider();
    match command {
        Command::Chat(args) => {
            let attach = attach_options(&global, &args.session, args.attach)?;
            let settings = configure(&global, &local_part(&args.session, &attach))?;
            let flags = session_flags(&args.session);
            frontend::chat::run(settings, args.resume, args.json, attach, flags).await
        }
        Command::Run(args) => {
            let attach = attach_options(&global, &args.session, args.attach)?;
            let settings = configure(&global, &local_part(&args.session, &attach))?;
            let Some(prompt) = frontend::run::read_prompt(&args.prompt).await? else {
                eprintln!(
                    "agentbus: run needs a prompt: `agentbus run \"...\"`, or one piped on stdin (`echo ... | agentbus run`)"
                );
                return Ok(ExitCode::from(2));
            };
            let images = match frontend::run::read_images(&settings.workspace, &args.images) {
                Ok(images) => images,
                Err(e) => {
                    eprintln!("agentbus: --image {e}");
                    return Ok(ExitCode::from(2));
                }
            };
            let flags = session_flags(&args.session);
            let prompt = frontend::run::Prompt {
                text: prompt,
                images,
            };
            frontend::run::run(settings, args.resume, prompt, args.json, attach, flags).await
        }
        Command::Sessions(command) => {
            let settings = configure(&global, &SessionArgs::default())?;
            admin::sessions::run(settings, command).await
        }
        Command::Serve(args) => {
            let settings = configure_node(&global)?;
            say_model_problem(&settings).await;
            serve::run(settings, args.listen).await
        }
        Command::Acp(args) => {
            let attach = attach_options(&global, &args.session, args.attach)?;
            let settings = configure(&global, &local_part(&args.session, &attach))?;
            if attach.is_none() {
                say_model_problem(&settings).await;
            }
            frontend::acp::run(settings, attach, session_flags(&args.session)).await
        }
        Command::Hooks(command) => {
            let settings = configure(&global, &SessionArgs::default())?;
            admin::hooks::run(&settings, command)
        }
        Command::Mcp(McpCommand::List { json }) => {
            let settings = configure(&global, &SessionArgs::default())?;
            admin::mcp::list(settings, json).await
        }
        Command::Completions { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "agentbus",
                &mut std::io::stdout(),
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Say on stderr what keeps the default profile from answering, if
/// anything does (`serve` and `acp` go on: sessions may use another).
async fn say_model_problem(settings: &agentbus_engine::Settings) {
    if let Some(problem) = model_check::check(settings, &settings.model).await {
        frontend::common::backend::say_model_problem(&problem, settings);
    }
}

/// The flags that say how the chosen session runs.
fn session_flags(session: &SessionArgs) -> frontend::common::backend::SessionFlags {
    frontend::common::backend::SessionFlags {
        permission_mode: session.permission_mode,
        agent: session.agent.clone(),
        model: session.model.clone(),
    }
}

/// What `--attach URL` carries to the server; flags the server's own
/// configuration decides are refused.
fn attach_options(
    global: &GlobalArgs,
    session: &SessionArgs,
    url: Option<String>,
) -> anyhow::Result<Option<frontend::common::backend::Attach>> {
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
    Ok(Some(frontend::common::backend::Attach {
        url,
        model: session.model.clone(),
        workspace: global.workspace.clone(),
        permission_mode: session.permission_mode,
    }))
}

/// The session flags the local configuration checks: attached, `--model`
/// names a profile of the server's configuration, not of this one.
fn local_part(
    session: &SessionArgs,
    attach: &Option<frontend::common::backend::Attach>,
) -> SessionArgs {
    let mut local = session.clone();
    if attach.is_some() {
        local.model = None;
    }
    local
}

/// Load the configuration and start logging as it (and the flags) say.
/// Only `serve` runs as a node of a `[cluster]`: every other command
/// uses the cluster's database as a plain store (sessions a live node
/// drives are refused, naming the node).
fn configure(
    global: &GlobalArgs,
    session: &SessionArgs,
) -> anyhow::Result<agentbus_engine::Settings> {
    let mut settings = configure_with(global, session)?;
    settings.cluster = None;
    Ok(settings)
}

/// [`configure`], keeping `[cluster]` (for `serve`).
fn configure_node(global: &GlobalArgs) -> anyhow::Result<agentbus_engine::Settings> {
    configure_with(global, &SessionArgs::default())
}

fn configure_with(
    global: &GlobalArgs,
    session: &SessionArgs,
) -> anyhow::Result<agentbus_engine::Settings> {
    let options = config::LoadOptions {
        config_file: global.config.clone(),
        workspace: global.workspace.clone(),
        model: session.model.clone(),
        max_steps: session.max_steps,
        data_dir: global.data_dir.clone(),
        store: global.store.clone(),
        permission_mode: session.permission_mode,
        allow: session.allow.clone(),
    };
    let loaded = config::load(&options).context("configuration")?;
    let flags = logging::LogSettings {
        file: global.log_file.clone(),
        format: global.log_format,
        level: None,
    };
    let plan = telemetry::plan(&loaded.telemetry, |name| std::env::var(name).ok())?;
    let traces = match &plan {
        telemetry::Plan::To { endpoint } => Some(telemetry::start(endpoint, &loaded.telemetry)?),
        _ => None,
    };
    logging::init(&loaded.log.overridden_by(flags), traces)?;
    plan.announce();
    let mut settings = loaded.settings;
    // A turn that cannot reach a server on this machine says what to do.
    settings.unreachable_hint = model_check::connect_hint(&settings, &settings.model);
    Ok(settings)
}
