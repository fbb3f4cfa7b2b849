//! agentbus-engine: everything agentbus is, minus its front ends.
//!
//! Named for what it holds — the engine that runs sessions, whether its
//! actors drive them (`agentbus serve`, `chat`, `run`) or the library
//! face drives the same core without them — not for one way it runs
//! (it lives in the `actors/` folder, as it always has).
//!
//! The public face is small on purpose — front ends speak only the
//! protocol and go through the runtime:
//! - [`protocol`]: the typed inputs and events every front end speaks.
//! - [`settings`]: the resolved configuration.
//! - [`runtime`]: the actors of one process wired together, and the facade
//!   front ends and library users call (sessions, stored sessions, feeds,
//!   the model-client seam).
//! - [`text`]: how long text is shortened, the same in the core and in
//!   front ends.
//! - [`tokens`]: counting tokens locally (tiktoken ranks compiled in).
//! - [`images`]: images attached to a query, told by their bytes.
//! - [`metrics`]: the process's Prometheus figures, which `GET /metrics`
//!   serves.
//! - [`spans`]: the spans of a session's work (a turn, its model and tool
//!   calls, ...), which the binary sends as OpenTelemetry traces when told
//!   where.
//! - [`embedded`]: the library face — agentbus embedded in a program: an
//!   `Agent` driven by the pure session core in-process, with no daemon,
//!   no actors and no store.
//!
//! Three things are called "agent" and each has its own place: the
//! library face is `embedded` (its `Agent`); the actor that drives one
//! session is the AgentLoop (`session/actor.rs`); a named agent (`build`,
//! `plan`, an agent file) is data the session core keeps
//! (`session/core/agents.rs`), read from disk by `workspace_files`.
//! - [`permissions`]: permission rules (`bash(npm test:*)`,
//!   `edit_file(src/**)`, ...) as data, and the pure matcher that says
//!   which rule allows, asks about or denies a tool call.
//!
//! Inside (private to the crate, one concept per folder):
//! - `session`: one session — its pure core (`step`, no I/O), the
//!   AgentLoop actor that drives it, the handle front ends hold.
//! - `sessions`: the set of sessions — the SessionManager, loading, and
//!   stored sessions as a service (fork, export, import, ...).
//! - `model`: what the session core, the providers and the tools exchange
//!   (model requests and events, tool specs, calls and outcomes).
//! - `bus`: per-session topics with seq numbers and replay; feeds.
//! - `provider`: model calls over HTTP, one wire format per file.
//! - `tools`: the registry, the ToolExecutor, the built-in tools.
//! - `mcp`: MCP servers, one actor each.
//! - `hooks`: the user's hook programs, read, trusted and run.
//! - `checkpoint`: what tool calls changed in the workspace, kept so a
//!   turn can be taken back.
//! - `workspace_files`: the files a session is made from, as users keep
//!   them for Claude Code (named agents, custom commands, skills,
//!   instructions), read from disk.
//! - `store`: sessions and their event logs, behind one trait.
//! - `cluster`: `agentbus serve` as a node of a cluster — its lease and
//!   the sweeps that hand a gone node's sessions to the living
//!   (`cluster/ownership/`), and what the nodes say to each other over
//!   NATS (the live plane).

pub mod embedded;
pub mod images;
pub mod metrics;
pub mod permissions;
pub mod protocol;
pub mod runtime;
pub mod settings;
pub mod spans;
pub mod text;
pub mod tokens;

mod bus;
mod checkpoint;
mod cluster;
mod hooks;
mod mcp;
mod model;
mod provider;
mod session;
mod sessions;
mod store;
mod tools;
mod workspace_files;

pub use embedded::{Agent, AgentBuilder, AgentError, AgentRun, AgentState};
pub use runtime::{
    Runtime, RuntimeError, SessionError, SessionHandle, SessionOptions, StoredSessions,
};
pub use settings::Settings;
