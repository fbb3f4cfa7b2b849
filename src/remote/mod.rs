//! A client of `agentbus serve`: what `chat --attach` and `run --attach`
//! use in place of an in-process runtime.
//!
//! [`client`] makes the API's requests (with the token) and turns failures
//! into errors that say what to do; [`events`] follows a session's SSE
//! stream onto a mirror of its topic, reconnecting with `Last-Event-ID` so
//! the front end sees every event once, in order; [`door`] makes a
//! daemon's session the same door as a session of this process. Request and answer bodies are the server's own
//! types ([`crate::api`]). Nothing here knows about terminals.

pub mod client;
pub mod door;
pub mod events;
#[cfg(test)]
mod fuzz_tests;

pub use client::RemoteClient;
