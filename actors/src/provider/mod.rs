//! Providers: model calls over HTTP, one wire format per module.
//!
//! [`ModelClient`] is what the AgentLoop needs: give it a [`ModelRequest`],
//! get a stream of [`ModelEvent`]s. [`Providers`] is the real client: it
//! picks the request's profile, makes one attempt with that profile's wire
//! module ([`openai`] or [`anthropic`]) and wraps the attempts in
//! [`retry::with_retries`]. Each wire module translates in both directions
//! and nothing else; [`http`] holds what they share on the way in (status
//! errors, `Retry-After`, SSE frames with an idle timeout). Nothing outside
//! this folder sees a wire format.

pub mod anthropic;
mod client;
mod error;
mod fields;
pub mod http;
pub mod openai;
mod profiles;
pub mod retry;

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod resilience_tests;

pub use client::{ModelClient, ModelStream};
pub use error::ProviderError;
pub use http::install_crypto_provider;
pub use profiles::Providers;
