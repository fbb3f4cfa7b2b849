//! `scripted-model --script FILE [--port N] [-- COMMAND ARGS...]`: the
//! scripted model server as a separate process, for manual demos and for
//! tests that need the model in another process.
//!
//! Without a command it prints `listening on http://127.0.0.1:PORT` on one
//! line of stdout, then serves until killed, logging each request (with its
//! protocol violations, each line starting `  violation: `, and script
//! problems, `  problem: `) to stderr. When the script sets
//! `context_window` (or `prompt_caching = true`), each model call's line
//! also gives its counted input tokens — and, with prompt caching, what the
//! cache read and wrote of them — and requests refused as too long say so:
//!
//! ```text
//! request 0: POST /v1/messages -> response[0] (2412 input tokens: 0 read from the cache, 2412 written)
//! request 1: POST /v1/messages -> response[1] (3108 input tokens: 2412 read from the cache, 696 written)
//! request 2: POST /v1/messages -> refused for length (9120 input tokens)
//! ```
//!
//! With a command after `--` it serves for as long as the command runs:
//! the command gets the server's address as `SCRIPTED_MODEL_URL`
//! (`http://127.0.0.1:PORT`; a configuration reads it as
//! `base_url = "${SCRIPTED_MODEL_URL}/v1"`), its stdin, stdout and stderr
//! are this process's, and its exit status is this process's. The
//! `listening on` line then goes to stderr, and only the requests with a
//! violation or a problem are logged. This is the README's demo without a
//! model: one command, a fresh server each time, nothing left running.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use agentbus_testkit::{Script, ScriptedModel};
use anyhow::Context;
use clap::Parser;

/// Serve a scripted model (the OpenAI Chat Completions, OpenAI Responses and
/// Anthropic Messages streaming APIs) on 127.0.0.1.
#[derive(Parser)]
#[command(name = "scripted-model")]
struct Args {
    /// The script (TOML) to answer model calls from.
    #[arg(long)]
    script: PathBuf,
    /// Port to listen on; 0 (the default) picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// A command to run while serving, with SCRIPTED_MODEL_URL set to the
    /// server's address (http://127.0.0.1:PORT); the server stops when it
    /// exits, with its exit status.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// The variable that gives a command the server's address.
const URL_VAR: &str = "SCRIPTED_MODEL_URL";

#[tokio::main]
async fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let script = Script::from_file(&args.script)?;
    let server = ScriptedModel::start_on_port(script, args.port)
        .await
        .with_context(|| format!("listening on 127.0.0.1:{}", args.port))?;
    let Some((program, program_args)) = args.command.split_first() else {
        {
            let mut stdout = std::io::stdout().lock();
            writeln!(stdout, "listening on {}", server.anthropic_base_url())?;
            stdout.flush()?;
        }
        let mut logged = 0;
        loop {
            server.wait_for_requests(logged + 1).await;
            logged = log_requests(&server, logged, Log::Every);
        }
    };
    eprintln!(
        "scripted-model: listening on {}",
        server.anthropic_base_url()
    );
    let mut child = tokio::process::Command::new(program)
        .args(program_args)
        .env(URL_VAR, server.anthropic_base_url())
        .spawn()
        .with_context(|| format!("cannot run `{program}`"))?;
    let mut logged = 0;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.with_context(|| format!("waiting for `{program}`"))?,
            () = server.wait_for_requests(logged + 1) => {
                logged = log_requests(&server, logged, Log::Troubles);
            }
        }
    };
    log_requests(&server, logged, Log::Troubles);
    Ok(ExitCode::from(exit_code(status)))
}

/// Which requests are logged.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Log {
    Every,
    /// Those with a violation or a problem.
    Troubles,
}

/// Logs the requests after the first `logged` ones; returns how many have
/// been seen.
fn log_requests(server: &ScriptedModel, logged: usize, which: Log) -> usize {
    let requests = server.requests();
    for (index, request) in requests.iter().enumerate().skip(logged) {
        if which == Log::Troubles && request.violations.is_empty() && request.problems.is_empty() {
            continue;
        }
        let served = match request.response {
            Some(response) => format!("response[{response}]"),
            None if request.refused_for_length => "refused for length".to_owned(),
            None => "no response".to_owned(),
        };
        let counted = match (request.input_tokens, request.cache) {
            (Some(tokens), Some(cache)) => format!(
                " ({tokens} input tokens: {} read from the cache, {} written)",
                cache.read,
                cache.written()
            ),
            (Some(tokens), None) => format!(" ({tokens} input tokens)"),
            (None, _) => String::new(),
        };
        eprintln!(
            "request {index}: {} {} -> {served}{counted}",
            request.method, request.path
        );
        for line in &request.violations {
            eprintln!("  violation: {line}");
        }
        for line in &request.problems {
            eprintln!("  problem: {line}");
        }
    }
    requests.len()
}

/// The command's exit status as this process's: its code, or 128 + the
/// signal that ended it, as a shell reports it.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(1),
        (None, None) => 1,
    }
}
