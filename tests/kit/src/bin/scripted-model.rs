//! `scripted-model --script FILE [--port N]`: the scripted model server as a
//! separate process, for manual demos and for tests that need the model in
//! another process. Prints `listening on http://127.0.0.1:PORT` on one line
//! of stdout, then serves until killed, logging each request (with its
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

use std::io::Write;
use std::path::PathBuf;

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
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let script = Script::from_file(&args.script)?;
    let server = ScriptedModel::start_on_port(script, args.port)
        .await
        .with_context(|| format!("listening on 127.0.0.1:{}", args.port))?;
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on {}", server.anthropic_base_url())?;
        stdout.flush()?;
    }
    let mut logged = 0;
    loop {
        server.wait_for_requests(logged + 1).await;
        let requests = server.requests();
        for (index, request) in requests.iter().enumerate().skip(logged) {
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
        logged = requests.len();
    }
}
