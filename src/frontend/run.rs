//! `agentbus run`: one prompt, one turn, no questions asked.
//!
//! Plain: the final assistant text goes to stdout; retry notices, the
//! turn's notices (a compaction) and the reason for a failure to stderr.
//! `--json`: every event of this run as a JSON line. Exit 0 for `end_turn`; non-zero otherwise (see
//! [`InputEnd::exit_code`](super::InputEnd::exit_code)), and 1 whenever the session could not be saved.
//! Nobody can answer an approval request here: a call that would ask is
//! rejected with a message naming the flag or rule that would allow it
//! (the model reads it; plain output prints it on stderr).
//! The first Ctrl-C interrupts the turn (its `cancelled` result is still
//! printed; exit 130); a second one exits at once. `--session ID` or
//! `--continue` add the turn to a stored session.

use super::InputEnds;
use super::approval;
use super::attached::Start;
use super::backend::{Attach, Backend, SessionFlags};
use super::output::Output;
use super::output::answer::Answer;
use super::output::json::JsonLines;
use crate::cli::ResumeArgs;
use agentbus_actors::Settings;
use agentbus_actors::protocol::{AgentMessage, ApprovalDecision, ErrorKind};
use anyhow::Context as _;
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
    resume: ResumeArgs,
    prompt: String,
    json_output: bool,
    attach: Option<Attach>,
    flags: SessionFlags,
) -> anyhow::Result<ExitCode> {
    let mut interrupts = super::interrupt_signals()?;
    let backend = Backend::start(settings, attach).await?;
    let outcome = run_turn(
        &backend,
        &resume,
        prompt,
        json_output,
        flags,
        &mut interrupts,
    )
    .await;
    backend.shutdown().await;
    outcome
}

async fn run_turn(
    backend: &Backend,
    resume: &ResumeArgs,
    prompt: String,
    json_output: bool,
    flags: SessionFlags,
    interrupts: &mut tokio::signal::unix::Signal,
) -> anyhow::Result<ExitCode> {
    let mut output: Box<dyn Output> = if json_output {
        Box::new(JsonLines(std::io::stdout()))
    } else {
        Box::new(Answer::default())
    };
    let mut attached = backend.choose(resume, Start::ThisLoad, &flags).await?;
    let id = attached.submit_text(prompt).await?;
    let mut ends = InputEnds::default();
    let mut interrupted = false;
    let mut not_saved = false;
    let end = loop {
        tokio::select! {
            event = attached.events.recv() => {
                let Some(event) = event else {
                    anyhow::bail!("the session stopped before the turn ended");
                };
                output.event(&event).context("writing to stdout")?;
                if matches!(&event.message, AgentMessage::Error(e) if e.kind == ErrorKind::Store) {
                    not_saved = true;
                }
                // Nobody can answer here: reject, saying what would allow it.
                if let AgentMessage::ApprovalRequest(request) = &event.message
                    && event.turn_id == Some(id)
                {
                    let why = approval::unattended_rejection(request);
                    if !json_output {
                        eprintln!("agentbus: {why}");
                    }
                    // Another client may have answered first: that is fine.
                    let _ = attached.decide(&request.request_id, ApprovalDecision::reject(why)).await;
                }
                if let Some(end) = ends.end_of(&event, id) {
                    break end;
                }
            }
            _ = interrupts.recv() => {
                if interrupted {
                    return Ok(ExitCode::from(130));
                }
                interrupted = true;
                attached.interrupt().await?;
            }
        }
    };
    output.ended(&end).context("writing to stdout")?;
    if let Some(reason) = end.failure_reason() {
        eprintln!("agentbus: {reason}");
    }
    if not_saved && end.exit_code() == 0 {
        return Ok(ExitCode::FAILURE);
    }
    Ok(end.to_exit_code())
}
