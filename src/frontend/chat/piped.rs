//! The chat without a terminal: inputs are lines of stdin, output is text
//! (or JSON lines with `--json`) on stdout.
//!
//! Each line is submitted as soon as it is read, so later lines queue behind
//! the running turn exactly as the session's FIFO defines. A line that
//! switches sessions (`/new`, `/resume`, `/fork`, `/load`) is a barrier:
//! reading waits until it is answered, then the lines after it go to the new
//! session. SIGINT interrupts the running turn; with nothing running it
//! exits. At end of input — or at a `/quit` line, which ends the input like
//! end of file — the chat waits for every submitted input to finish, then
//! exits (1 if any of them failed).
//!
//! A line read while an approval request of one of its inputs waits is the
//! answer (`y`, `a`, `s`, `n`, `n: why`), not a query: a script answers
//! after it sees the request (the line `Allow? …` on stdout). Once the
//! input has ended nobody can answer: a request then waiting, or coming
//! later, is rejected as `run` rejects it, with what would allow the call
//! (`--allow RULE`, `--permission-mode MODE`), so the turn goes on and the
//! chat exits instead of waiting forever.
//!
//! To know which lines are barriers or the end, each line is read with the
//! session's own slash-command parser (`runtime::parse_command`, the one
//! the session uses); the line is still sent as typed, and the session
//! parses and runs it.

use crate::frontend::common::approval;
use crate::frontend::common::attached::{Attached, Start, switch_target};
use crate::frontend::common::backend::Backend;
use crate::frontend::common::input_ends::{InputEnd, InputEnds};
use crate::frontend::output::Output;
use crate::frontend::output::json::JsonLines;
use crate::frontend::output::render::{RenderOptions, Renderer};
use agentbus_engine::protocol::{AgentMessage, ControlCommand, InputId, SystemSubtype};
use agentbus_engine::runtime::parse_command;
use anyhow::Context as _;
use std::collections::BTreeSet;
use std::process::ExitCode;
use tokio::io::{AsyncBufReadExt, BufReader};

/// What a line of input is, as far as reading goes on.
enum LineKind {
    Plain,
    /// Ends the input.
    Quit,
    /// Switches sessions: wait for its answer before reading on.
    Switch,
}

fn kind(text: &str) -> LineKind {
    match parse_command(text) {
        Some(Ok(ControlCommand::Quit)) => LineKind::Quit,
        Some(Ok(command)) if command.switches_session() => LineKind::Switch,
        _ => LineKind::Plain,
    }
}

/// `made_here`: the chat made the session (it resumed none), so it is
/// deleted if the input leaves it without a turn (`echo /usage | agentbus
/// chat`).
pub async fn run(
    backend: &Backend,
    mut attached: Attached,
    json_output: bool,
    made_here: bool,
) -> anyhow::Result<ExitCode> {
    let mut made_here = made_here;
    let mut used = false;
    let mut interrupts = crate::frontend::common::interrupt_signals()?;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut output: Box<dyn Output> = if json_output {
        Box::new(JsonLines(std::io::stdout()))
    } else {
        Box::new(Renderer::new(
            std::io::stdout(),
            RenderOptions {
                color: false,
                raw: false,
                echo_user: true,
            },
        ))
    };
    let mut pending: BTreeSet<InputId> = BTreeSet::new();
    let mut ends = InputEnds::default();
    let mut barrier: Option<InputId> = None;
    let mut input_open = true;
    let mut failed = false;
    let mut asking = approval::Asking::default();
    loop {
        if !input_open && pending.is_empty() {
            break;
        }
        tokio::select! {
            line = lines.next_line(), if input_open && barrier.is_none() => {
                match line.context("reading stdin")? {
                    Some(line) if line.trim().is_empty() => {}
                    Some(line) if asking.is_open() => {
                        if let Err(why) = asking.answer(&attached, &line).await {
                            output.note(&format!("● {why}")).context("writing to stdout")?;
                        }
                    }
                    Some(line) => {
                        let text = line.trim().to_string();
                        let kind = kind(&text);
                        let id = attached.submit_text(text).await?;
                        pending.insert(id);
                        match kind {
                            LineKind::Quit => input_open = false,
                            LineKind::Switch => barrier = Some(id),
                            LineKind::Plain => {}
                        }
                    }
                    None => input_open = false,
                }
                if !input_open {
                    reject_unanswerable(&mut asking, &attached).await;
                }
            }
            event = attached.events.recv() => {
                let Some(event) = event else { anyhow::bail!("the session stopped unexpectedly") };
                output.event(&event).context("writing to stdout")?;
                used |= matches!(event.message, AgentMessage::User(_));
                ends.observe(&event);
                let ours = event.turn_id.is_some_and(|id| pending.contains(&id));
                if let Some(request) = asking.observe(&event, ours) {
                    if input_open {
                        output.note(&approval::keys(request)).context("writing to stdout")?;
                    } else {
                        reject_unanswerable(&mut asking, &attached).await;
                    }
                }
                let ended = pending.iter().copied().find_map(|id| ends.ended(&event, id).map(|end| (id, end)));
                if let Some((id, end)) = ended {
                    pending.remove(&id);
                    failed |= end.exit_code() != 0 && end.exit_code() != 130;
                    if barrier == Some(id) {
                        barrier = None;
                        if let Some(target) = switch_target(&end) {
                            if made_here && !used {
                                backend.forget(attached.id()).await;
                            }
                            made_here = matches!(&end, InputEnd::Reply(r) if r.subtype == SystemSubtype::NewConversation);
                            used = false;
                            attached = backend.open(&target, Start::ThisLoad).await?;
                            ends = InputEnds::default(); // input ids are the session's own
                        }
                    }
                }
            }
            _ = interrupts.recv() => {
                if pending.is_empty() {
                    break;
                }
                attached.interrupt().await?;
            }
        }
    }
    if made_here && !used {
        backend.forget(attached.id()).await;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Once the input has ended nobody can answer an approval request: reject
/// the waiting one, as `run` does, saying what would allow the call (the
/// session's `approval_resolved` shows it: `Rejected NAME: why`).
async fn reject_unanswerable(asking: &mut approval::Asking, attached: &Attached) {
    asking
        .reject_unattended(attached, approval::Unattended::InputEnded)
        .await;
}
