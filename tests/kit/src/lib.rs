//! A scripted model server for agentbus's end-to-end tests.
//!
//! Real agent runs talk to real model providers over HTTP; to test them
//! deterministically we need a peer that speaks the same wire formats but
//! answers from a script. [`ScriptedModel`] is that peer: a real HTTP server on
//! `127.0.0.1` that serves
//!
//! * `POST /v1/chat/completions` — OpenAI Chat Completions, streamed as SSE,
//! * `POST /v1/responses` — OpenAI Responses, streamed as SSE with the real
//!   event sequence (reasoning items included),
//! * `POST /v1/messages` — Anthropic Messages, streamed as SSE,
//! * `GET /v1/models` — an OpenAI-style list holding one model, `scripted`,
//!
//! answers each model call with the next response of a [`Script`] (a TOML
//! file, see the [`script`] module for the format), records every request,
//! and checks each one against the protocol's rules so that tests can assert
//! agentbus never sent the provider something it would reject — nor got an
//! answer a real model could not give: a scripted call to a tool the
//! request did not offer is a violation too. Every body sent to an OpenAI
//! wire is also checked against OpenAI's published schema for it
//! ([`openapi`]). A model OpenAI serves on the Responses API alone is
//! refused on Chat Completions with OpenAI's 404. With a
//! script-level `context_window` it also counts each request's tokens
//! ([`count_request`]) and refuses oversize requests with the provider's own
//! error, as a real model does. With prompt caching (on with a
//! `context_window`, or `prompt_caching = true`) it caches prompts as
//! Anthropic (up to `cache_control` breakpoints) and OpenAI (by prefix and
//! `prompt_cache_key`) do, and reports cache reads and writes in the usage
//! ([`cache`]); its clock moves on demand
//! ([`ScriptedModel::advance_clock`]). It refuses what the providers refuse
//! about thinking and caching with their own 400s: a thinking budget for an
//! adaptive-only Claude model, adaptive thinking for an older one, more
//! than four `cache_control` blocks.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use agentbus_testkit::{ScriptedModel, Script, fixtures_dir};
//!
//! let script = Script::from_file(fixtures_dir().join("scripts/plain_reply.toml"))?;
//! let server = ScriptedModel::start(script).await?;
//! // point agentbus at server.openai_base_url() or server.anthropic_base_url() ...
//! server.wait_for_requests(1).await;
//! assert!(server.violations().is_empty(), "{:#?}", server.violations());
//! # Ok(()) }
//! ```
//!
//! It also starts a throwaway PostgreSQL server for the store's tests
//! ([`postgres`]: one server per test binary, a fresh database per test),
//! and a TCP proxy a test can cut ([`tcp_proxy`]). [`NatsServer`] runs a
//! real `nats-server` for the cluster tests (see the [`nats`] module).
//!
//! The crate deliberately does not depend on any agentbus crate: it is an
//! independent implementation of the providers' side of the protocol, so a
//! misunderstanding of the protocol in agentbus cannot be mirrored here.

pub mod cache;
pub mod nats;
pub mod openapi;
pub mod postgres;
pub mod prerequisite;
pub mod script;
pub mod tcp_proxy;

mod models;
mod playback;
mod record;
mod render_anthropic;
mod render_openai;
mod render_responses;
mod server;
mod stream;
mod thinking;
mod tokens;
mod turn;
mod validate;
mod wire;

use std::path::{Path, PathBuf};

pub use cache::CacheUsage;
pub use nats::NatsServer;
pub use openapi::{OpenAiSchema, schema_violations};
pub use record::RecordedRequest;
pub use script::Script;
pub use server::ScriptedModel;
pub use tokens::{count_request, count_text};
pub use wire::{Wire, last_user_text, offered_tools};

/// Absolute path of the repository's `tests/fixtures` directory, where test
/// scripts (`scripts/*.toml`) and raw stream fixtures (`openai/*.sse`, ...)
/// live. Script `fixture = "..."` paths are relative to it.
pub fn fixtures_dir() -> PathBuf {
    // This crate lives in `tests/kit`, so the fixtures are its sibling.
    let kit = Path::new(env!("CARGO_MANIFEST_DIR"));
    match kit.parent() {
        Some(tests) => tests.join("fixtures"),
        None => kit.join("..").join("fixtures"),
    }
}
