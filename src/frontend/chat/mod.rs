//! `agentbus chat`: the terminal chat.
//!
//! On a terminal: a line editor with history ([`editor`]), streamed replies,
//! Esc or Ctrl-C to interrupt a turn, Ctrl-N for a new conversation, Ctrl-D
//! (or Ctrl-C at an empty prompt, or /quit) to leave ([`interactive`]).
//! Otherwise (piped stdin, or `--json`): one input per line, submitted as it
//! is read so inputs queue in the session like typed-ahead messages, exiting
//! at end of input once every submitted input has finished ([`piped`]).

mod editor;
mod interactive;
mod piped;

use super::DataDir;
use agentbus_actors::{Runtime, SessionOptions, Settings};
use std::io::IsTerminal;
use std::process::ExitCode;

pub async fn run(settings: Settings, data_dir: DataDir, json: bool) -> anyhow::Result<ExitCode> {
    let runtime = Runtime::start(settings).await?;
    let session = runtime.create_session(SessionOptions::default()).await?;
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal() && !json;
    let code = if interactive {
        interactive::run(session, data_dir).await
    } else {
        piped::run(session, json).await
    };
    runtime.shutdown().await;
    code
}
