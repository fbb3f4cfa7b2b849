//! The chat without a terminal: inputs are lines of stdin, output is text
//! (or JSON lines with `--json`) on stdout.
//!
//! Each line is submitted as soon as it is read, so later lines queue behind
//! the running turn exactly as the session's FIFO defines. SIGINT interrupts
//! the running turn; with nothing running it exits. At end of input — or at
//! a `/quit` line, which ends the input like end of file — the chat waits for
//! every submitted input to finish, then exits.

use crate::frontend::render::{RenderOptions, Renderer};
use crate::frontend::{input_end, json};
use agentbus_actors::SessionHandle;
use agentbus_actors::commands;
use agentbus_actors::protocol::{ControlCommand, InputId};
use agentbus_actors::ui_sink::attach_channel;
use anyhow::Context as _;
use std::collections::BTreeSet;
use std::process::ExitCode;
use tokio::io::{AsyncBufReadExt, BufReader};

pub async fn run(session: SessionHandle, json_output: bool) -> anyhow::Result<ExitCode> {
    let mut interrupts = crate::frontend::interrupt_signals()?;
    let (_sink, mut events) = attach_channel(session.topic().clone(), 0);
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut renderer = Renderer::new(
        std::io::stdout(),
        RenderOptions {
            color: false,
            raw: false,
            echo_user: true,
        },
    );
    let mut pending: BTreeSet<InputId> = BTreeSet::new();
    let mut input_open = true;
    let mut failed = false;
    loop {
        if !input_open && pending.is_empty() {
            break;
        }
        tokio::select! {
            line = lines.next_line(), if input_open => {
                match line.context("reading stdin")? {
                    Some(line) if line.trim().is_empty() => {}
                    Some(line) => {
                        let text = line.trim().to_string();
                        input_open = !matches!(commands::parse(&text), Some(Ok(ControlCommand::Quit)));
                        pending.insert(session.submit_text(text).await?);
                    }
                    None => input_open = false,
                }
            }
            event = events.recv() => {
                let Some(event) = event else { anyhow::bail!("the session stopped unexpectedly") };
                if json_output {
                    json::print_event(&mut std::io::stdout(), &event).context("writing to stdout")?;
                } else {
                    renderer.event(&event);
                }
                let ended = pending.iter().copied().find_map(|id| input_end(&event, id).map(|end| (id, end)));
                if let Some((id, end)) = ended {
                    pending.remove(&id);
                    failed |= end.exit_code() != 0 && end.exit_code() != 130;
                }
            }
            _ = interrupts.recv() => {
                if pending.is_empty() {
                    break;
                }
                session.interrupt().await?;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
