//! Front ends: plug-ins that attach to a session's events (through a UiSink
//! in this process, or a server's SSE stream with `--attach`) and send it
//! user input.
//!
//! - [`backend`] and [`attached`]: where sessions live, and a front end's
//!   hold on one — the same for an in-process runtime and a server.
//! - [`run`]: one prompt, non-interactive (`agentbus run`).
//! - [`chat`]: the terminal chat (`agentbus chat`), line-by-line when piped.
//! - [`output`]: how events are shown — as text for people or JSON lines,
//!   behind one trait.
//!
//! Front ends never look at provider formats: they only read
//! [`agentbus_actors::protocol`] events and send text or typed commands.
//! The session parses slash commands; the piped chat also reads each line
//! with the session's own parser, only to know when to wait for a command
//! that switches sessions and when `/quit` ends the input.

pub mod attached;
pub mod backend;
pub mod chat;
pub mod output;
pub mod run;

use agentbus_actors::protocol::{
    AgentMessage, EventEnvelope, InputId, ResultEvent, StopReason, SystemEvent, SystemSubtype,
};
use std::path::PathBuf;
use std::process::ExitCode;

/// How one submitted input ended, as its events show it.
#[derive(Clone, Debug)]
pub enum InputEnd {
    /// A query's turn ended.
    Result(ResultEvent),
    /// A control command (or an unknown one) was answered.
    Reply(SystemEvent),
}

/// `Some` when `event` is the last event of input `id`: its `result`, or the
/// `system` reply of a command (retry notices do not end anything).
pub fn input_end(event: &EventEnvelope, id: InputId) -> Option<InputEnd> {
    if event.turn_id != Some(id) {
        return None;
    }
    match &event.message {
        AgentMessage::Result(r) => Some(InputEnd::Result(r.clone())),
        AgentMessage::System(s) if s.subtype != SystemSubtype::Retrying => {
            Some(InputEnd::Reply(s.clone()))
        }
        _ => None,
    }
}

impl InputEnd {
    /// The process exit code for a one-shot run that ended this way:
    /// 0 for `end_turn` and answered commands, 130 for an interrupt, 2 for
    /// a command that was refused, 3 for `max_steps`, 1 for errors.
    pub fn exit_code(&self) -> u8 {
        match self {
            InputEnd::Result(r) => match r.stop_reason {
                StopReason::EndTurn => 0,
                StopReason::Cancelled => 130,
                StopReason::MaxSteps => 3,
                StopReason::Error => 1,
            },
            InputEnd::Reply(s) if s.subtype == SystemSubtype::Notice => 2,
            InputEnd::Reply(_) => 0,
        }
    }

    /// Why a run ended badly, for stderr; `None` when it ended well.
    pub fn failure_reason(&self) -> Option<String> {
        match self {
            InputEnd::Result(r) => match r.stop_reason {
                StopReason::EndTurn => None,
                StopReason::Cancelled => Some("interrupted (stop_reason: cancelled)".into()),
                StopReason::MaxSteps => Some(format!(
                    "stopped after {} model calls (stop_reason: max_steps)",
                    r.steps
                )),
                StopReason::Error => Some(format!(
                    "the turn failed (stop_reason: error): {}",
                    r.error.as_deref().unwrap_or("unknown error")
                )),
            },
            InputEnd::Reply(s) if s.subtype == SystemSubtype::Notice => Some(s.message.clone()),
            InputEnd::Reply(_) => None,
        }
    }

    pub fn to_exit_code(&self) -> ExitCode {
        ExitCode::from(self.exit_code())
    }
}

/// SIGINT as a stream. Made once, before the loop that waits for it: a
/// signal that arrives while the loop is busy elsewhere is kept, where a
/// fresh `ctrl_c()` future per iteration would miss it.
pub fn interrupt_signals() -> anyhow::Result<tokio::signal::unix::Signal> {
    use anyhow::Context as _;
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("listening for Ctrl-C")
}

/// The chat's line-editor history file in the data directory (created).
pub fn chat_history(data_dir: &std::path::Path) -> Option<PathBuf> {
    std::fs::create_dir_all(data_dir).ok()?;
    Some(data_dir.join("chat_history.txt"))
}
