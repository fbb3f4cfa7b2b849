//! `agentbus run`: one prompt, one turn, no questions asked.
//!
//! Plain: the final assistant text goes to stdout, retry notices and the
//! reason for a failure to stderr. `--json`: every event as a JSON line.
//! Exit 0 for `end_turn`; non-zero otherwise (see [`InputEnd::exit_code`]).
//! The first Ctrl-C interrupts the turn (its `cancelled` result is still
//! printed; exit 130); a second one exits at once.

use super::{InputEnd, input_end, json};
use agentbus_actors::protocol::{AgentMessage, SystemSubtype};
use agentbus_actors::ui_sink::attach_channel;
use agentbus_actors::{Runtime, SessionOptions, Settings};
use anyhow::Context as _;
use std::io::Write;
use std::process::ExitCode;
use tokio::io::AsyncReadExt;

/// The prompt from the command line; `-` alone reads it from stdin.
pub async fn read_prompt(words: &[String]) -> anyhow::Result<String> {
    if words.len() == 1 && words[0] == "-" {
        let mut text = String::new();
        tokio::io::stdin()
            .read_to_string(&mut text)
            .await
            .context("reading the prompt from stdin")?;
        return Ok(text);
    }
    Ok(words.join(" "))
}

pub async fn run(
    settings: Settings,
    prompt: String,
    json_output: bool,
) -> anyhow::Result<ExitCode> {
    let mut interrupts = super::interrupt_signals()?;
    let runtime = Runtime::start(settings).await?;
    let session = runtime.create_session(SessionOptions::default()).await?;
    let (_sink, mut events) = attach_channel(session.topic().clone(), 0);
    let id = session.submit_text(prompt).await?;
    let mut interrupted = false;
    let end = loop {
        tokio::select! {
            event = events.recv() => {
                let Some(event) = event else {
                    anyhow::bail!("the session stopped before the turn ended");
                };
                if json_output {
                    json::print_event(&mut std::io::stdout(), &event).context("writing to stdout")?;
                } else if let AgentMessage::System(s) = &event.message
                    && s.subtype == SystemSubtype::Retrying
                {
                    eprintln!("agentbus: {}", s.message);
                }
                if let Some(end) = input_end(&event, id) {
                    break end;
                }
            }
            _ = interrupts.recv() => {
                if interrupted {
                    return Ok(ExitCode::from(130));
                }
                interrupted = true;
                session.interrupt().await?;
            }
        }
    };
    if !json_output {
        let text = match &end {
            InputEnd::Result(r) => r.text.clone(),
            InputEnd::Reply(s) if s.subtype != SystemSubtype::Notice => s.message.clone(),
            InputEnd::Reply(_) => String::new(),
        };
        if !text.is_empty() {
            let mut out = std::io::stdout();
            writeln!(out, "{}", text.trim_end()).context("writing to stdout")?;
        }
    }
    if let Some(reason) = end.failure_reason() {
        eprintln!("agentbus: {reason}");
    }
    runtime.shutdown().await;
    Ok(end.to_exit_code())
}
