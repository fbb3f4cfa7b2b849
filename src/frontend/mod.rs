//! Front ends: plug-ins that attach to a session's events (through a UiSink
//! in this process, or a server's SSE stream with `--attach`) and send it
//! user input.
//!
//! - [`common`]: what they all share — where sessions live and a front
//!   end's hold on one (the same for an in-process runtime and a server),
//!   when an input is over, how approvals are asked.
//! - [`run`]: one prompt, non-interactive (`agentbus run`).
//! - [`chat`]: the terminal chat (`agentbus chat`), line-by-line when piped.
//! - [`acp`]: the Agent Client Protocol on stdio, for editors
//!   (`agentbus acp`).
//! - [`output`]: how events are shown — as text for people or JSON lines,
//!   behind one trait.
//!
//! Front ends never look at provider formats: they only read
//! [`agentbus_engine::protocol`] events and send text or typed commands.
//! The session parses slash commands; the piped chat also reads each line
//! with the session's own parser, only to know when to wait for a command
//! that switches sessions and when `/quit` ends the input.

pub mod acp;
pub mod chat;
pub mod common;
pub mod output;
pub mod run;
