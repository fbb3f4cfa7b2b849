//! The library face ("embedded"): agentbus's agent, usable from Rust with
//! no daemon — the `Agent` a program embeds.
//!
//! The daemon hosts sessions behind actors, a store and an HTTP API. A
//! program that wants one agent — a model, some tools, a conversation —
//! needs none of that, but wants the same rules: every tool call paired
//! with its result, `max_steps`, the context window kept by pruning and
//! compaction, the same events. This module gives exactly that by driving
//! the pure session core (`step`) directly with a small async driver:
//!
//! ```no_run
//! # async fn demo() -> Result<(), agentbus_engine::embedded::AgentError> {
//! use agentbus_engine::embedded::{Agent, Provider};
//! let agent = Agent::builder()
//!     .provider(Provider::openai("http://127.0.0.1:8080/v1", "local")?)
//!     .context_window(8192)
//!     .builtin_tools(".")
//!     .build()?;
//! let state = agent.run("List the files here.").await?;
//! let state = agent.continue_conversation(&state, "Which is the largest?").await?;
//! state.save_to_file("conversation.json")?;
//! # Ok(()) }
//! ```
//!
//! - [`Agent`] (built with [`AgentBuilder`]) runs turns: [`Agent::run`],
//!   [`Agent::continue_conversation`], [`Agent::run_multi_turn`], and
//!   [`Agent::run_with_events`], an [`AgentRun`] stream of the
//!   [`EventEnvelope`]s the daemon would publish for the turn.
//! - [`AgentState`] is one conversation as a value: history, usage, the
//!   context summary, the events; saved as JSON and loaded by folding the
//!   events through the core again, as the daemon loads sessions.
//! - [`Provider`] is the daemon's real HTTP providers; any [`ModelClient`]
//!   will do, e.g. [`ScriptedProvider`] in tests.
//! - [`Tool`] is the trait every tool implements, built-in or yours.
//!
//! Runs need a Tokio runtime (tool calls run on tasks of their own, as in
//! the daemon). What it must never do: start an actor, open the store, or
//! need a running daemon. It may use the core, the providers, the tools (and the
//! executor's way of running a call) and the protocol — nothing that owns
//! a process-wide resource.

#![warn(missing_docs)]

mod builder;
mod driver;
mod error;
mod persist;
mod provider;
mod run;
mod runner;
mod scripted;
mod state;
mod tools;

#[cfg(test)]
mod tests;

pub use builder::{AgentBuilder, DEFAULT_MAX_STEPS};
pub use error::AgentError;
pub use provider::Provider;
pub use run::AgentRun;
pub use runner::Agent;
pub use scripted::{ScriptedProvider, ScriptedReply};
pub use state::AgentState;

pub use crate::model::{ModelEvent, ModelRequest, ToolCall, ToolOrigin, ToolOutcome, ToolSpec};
pub use crate::protocol::context::ContextReport;
pub use crate::protocol::{
    AgentMessage, ContentBlock, ContextConfig, ContextUsage, EventEnvelope, Message, ModelInfo,
    ResultEvent, StopReason, Strategy, Usage,
};
pub use crate::provider::{ModelClient, ModelStream, ProviderError};
pub use crate::session::core::context::custom::ContextStrategy;
pub use crate::settings::{ModelProfile, ProviderKind, Settings, ToolSettings};
pub use crate::tools::builtin::builtin_tools;
pub use crate::tools::{Tool, ToolContext, ToolError, ToolOutput};
