//! `agentbus run`: one prompt, one turn, no questions asked.
//!
//! Plain: the final assistant text goes to stdout; retry notices, the
//! turn's notices (a compaction) and the reason for a failure to stderr.
//! `--json`: every event of this run as a JSON line. Exit 0 for `end_turn`; non-zero otherwise (see
//! [`InputEnd::exit_code`](super::common::input_ends::InputEnd::exit_code)), and 1 whenever the session could not be saved.
//! Nobody can answer an approval request here: a call that would ask is
//! rejected with a message naming the flag or rule that would allow it
//! (the model reads it; plain output prints it on stderr).
//! The first Ctrl-C interrupts the turn (its `cancelled` result is still
//! printed; exit 130); a second one exits at once. `--session ID` or
//! `--continue` add the turn to a stored session.
//!
//! Before a prompt that goes to the model, the session's model profile is
//! checked (its key, its local server): a profile that cannot answer is
//! said on stderr with the ways out, and the run exits
//! [`NO_MODEL`] having sent nothing. A run that only asks a command of a
//! session it made (`agentbus run /usage`) leaves no session behind.

use super::common::approval;
use super::common::attached::Start;
use super::common::backend::{Attach, Backend, SessionFlags};
use super::common::input_ends::{InputEnd, InputEnds};
use super::output::Output;
use super::output::answer::Answer;
use super::output::json::JsonLines;
use crate::cli::ResumeArgs;
use agentbus_engine::Settings;
use agentbus_engine::protocol::{AgentMessage, ControlCommand, ErrorKind, SystemSubtype};
use agentbus_engine::runtime::parse_command;
use anyhow::Context as _;
use std::io::IsTerminal;
use std::process::ExitCode;
use tokio::io::AsyncReadExt;

/// The exit code of a run whose model profile cannot answer: its key is
/// not set, or its server on this machine does not answer.
pub const NO_MODEL: u8 = 4;

/// The prompt: the command line's words, joined; without any (or with `-`
/// alone), what is piped on stdin. `None` when there is none at all: no
/// words, and stdin is a terminal.
pub async fn read_prompt(words: &[String]) -> anyhow::Result<Option<String>> {
    let dash = words.len() == 1 && words[0] == "-";
    if !words.is_empty() && !dash {
        return Ok(Some(words.join(" ")));
    }
    if words.is_empty() && std::io::stdin().is_terminal() {
        return Ok(None);
    }
    let mut text = String::new();
    tokio::io::stdin()
        .read_to_string(&mut text)
        .await
        .context("reading the prompt from stdin")?;
    if text.trim().is_empty() {
        anyhow::bail!("the prompt read from stdin is empty");
    }
    Ok(Some(text))
}

/// Whether `prompt` reaches the model: a query, `/init` (an ordinary turn)
/// or `/compact` (a summarising call). Other commands never do.
fn calls_model(prompt: &str) -> bool {
    match parse_command(prompt) {
        None => true,
        Some(Ok(ControlCommand::Init | ControlCommand::Compact { .. })) => true,
        Some(_) => false,
    }
}

/// What `run` sends: the prompt and its `--image`s.
pub struct Prompt {
    pub text: String,
    pub images: Vec<agentbus_engine::protocol::Image>,
}

/// The `--image` files (relative to the workspace, as `@` mentions are),
/// each read and checked (PNG, JPEG, GIF or WebP by its bytes, at most
/// 5 MB); the error names the file.
pub fn read_images(
    workspace: &std::path::Path,
    paths: &[std::path::PathBuf],
) -> anyhow::Result<Vec<agentbus_engine::protocol::Image>> {
    paths
        .iter()
        .map(|given| {
            let shown = given.display().to_string();
            let path = workspace.join(given);
            let size = std::fs::metadata(&path)
                .with_context(|| format!("{shown}: cannot read it"))?
                .len();
            if size > agentbus_engine::images::MAX_IMAGE_BYTES as u64 {
                anyhow::bail!(
                    "{shown} is {size} bytes; an image may be at most {} bytes (5 MB)",
                    agentbus_engine::images::MAX_IMAGE_BYTES
                );
            }
            let bytes = std::fs::read(path).with_context(|| format!("{shown}: cannot read it"))?;
            Ok(agentbus_engine::images::from_bytes(&shown, &bytes)?)
        })
        .collect()
}

pub async fn run(
    settings: Settings,
    resume: ResumeArgs,
    prompt: Prompt,
    json_output: bool,
    attach: Option<Attach>,
    flags: SessionFlags,
) -> anyhow::Result<ExitCode> {
    let mut interrupts = super::common::interrupt_signals()?;
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
    prompt: Prompt,
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
    let made_here = resume.session.is_none() && !resume.continue_;
    let Prompt {
        text: prompt,
        images,
    } = prompt;
    if calls_model(&prompt) && backend.say_model_problem(&attached).await {
        if made_here {
            backend.forget(attached.id()).await;
        }
        return Ok(ExitCode::from(NO_MODEL));
    }
    let id = if images.is_empty() {
        attached.submit_text(prompt).await?
    } else {
        attached.submit_query(prompt, images).await?
    };
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
                    let why = approval::reject_unattended(&attached, request, approval::Unattended::Run).await;
                    if !json_output {
                        eprintln!("agentbus: {why}");
                    }
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
    // A command answered in a session this run made: nothing to keep (a
    // `/new` session it switched to is as empty).
    if made_here && let InputEnd::Reply(reply) = &end {
        backend.forget(attached.id()).await;
        if reply.subtype == SystemSubtype::NewConversation
            && let Some(new) = reply.switch_to()
        {
            backend.forget(&new).await;
        }
    }
    if let Some(reason) = end.failure_reason() {
        eprintln!("agentbus: {reason}");
    }
    if not_saved && end.exit_code() == 0 {
        return Ok(ExitCode::FAILURE);
    }
    Ok(end.to_exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_queries_init_and_compact_reach_the_model() {
        assert!(calls_model("hello"));
        assert!(calls_model("/init"));
        assert!(calls_model("/compact keep the names"));
        assert!(calls_model("/etc/hosts is odd"));
        for command in [
            "/usage",
            "/models",
            "/model other",
            "/tools",
            "/debug",
            "/foo",
            "/new",
        ] {
            assert!(!calls_model(command), "{command}");
        }
    }
}
