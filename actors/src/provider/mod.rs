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
mod error;
pub mod http;
pub mod openai;
pub mod retry;

#[cfg(test)]
mod resilience_tests;

pub use error::ProviderError;

use crate::session::core::model::{ModelEvent, ModelRequest};
use crate::settings::{ModelProfile, ProviderKind};
use futures::StreamExt;
use futures::stream::BoxStream;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// A model's streamed answer. Ends after `ModelEvent::Finished` or an error.
pub type ModelStream = BoxStream<'static, Result<ModelEvent, ProviderError>>;

/// Anything that can answer model requests (the real providers, or a fake).
pub trait ModelClient: Send + Sync + 'static {
    fn stream(&self, request: ModelRequest) -> ModelStream;
}

impl<T: ModelClient> ModelClient for Arc<T> {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        (**self).stream(request)
    }
}

/// What can be wrong with one frame of a stream.
#[derive(Debug, PartialEq)]
pub enum FrameError {
    /// Not a valid event (bad JSON, wrong shape).
    Garbage(String),
    /// The server reported an error inside the stream.
    Remote { kind: String, message: String },
}

impl FrameError {
    fn into_provider(self, url: &str) -> ProviderError {
        match self {
            FrameError::Garbage(detail) => ProviderError::Garbage {
                url: url.to_string(),
                detail,
            },
            FrameError::Remote { kind, message } => ProviderError::Remote {
                url: url.to_string(),
                kind,
                message,
            },
        }
    }
}

/// Idle connections kept per provider host.
const IDLE_CONNECTIONS_PER_HOST: usize = 32;

/// One configured profile; its HTTP client is built on first use (building
/// one loads the system's root certificates, which takes a while).
struct Profile {
    name: String,
    settings: ModelProfile,
    http: std::sync::OnceLock<reqwest::Client>,
}

impl Profile {
    fn http(&self) -> Result<reqwest::Client, ProviderError> {
        if let Some(client) = self.http.get() {
            return Ok(client.clone());
        }
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(
                self.settings.connect_timeout_secs.max(1),
            ))
            .user_agent(concat!("agentbus/", env!("CARGO_PKG_VERSION")))
            // A burst of turns opens a connection each; keep a few for
            // reuse, not one per session that ever ran at once.
            .pool_max_idle_per_host(IDLE_CONNECTIONS_PER_HOST)
            .build()
            .map_err(|e| ProviderError::Client {
                profile: self.name.clone(),
                detail: http::describe(&e),
            })?;
        Ok(self.http.get_or_init(|| client).clone())
    }
}

/// The real model client: one HTTP client per profile (each has its own
/// connect timeout), the configured profiles.
pub struct Providers {
    profiles: BTreeMap<String, Arc<Profile>>,
    /// Added to a final connection failure of a profile (see
    /// `Settings::unreachable_hint`).
    connect_hints: BTreeMap<String, String>,
}

impl Providers {
    pub fn new(profiles: BTreeMap<String, ModelProfile>) -> Result<Self, ProviderError> {
        install_crypto_provider();
        let built = profiles
            .into_iter()
            .map(|(name, settings)| {
                let profile = Profile {
                    name: name.clone(),
                    settings,
                    http: std::sync::OnceLock::new(),
                };
                (name, Arc::new(profile))
            })
            .collect();
        Ok(Providers {
            profiles: built,
            connect_hints: BTreeMap::new(),
        })
    }

    /// Advice to add when `profile` cannot be reached at all.
    pub fn with_connect_hint(mut self, profile: &str, hint: String) -> Self {
        self.connect_hints.insert(profile.to_string(), hint);
        self
    }
}

impl ModelClient for Providers {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let Some(profile) = self.profiles.get(&request.profile).cloned() else {
            let error = ProviderError::UnknownProfile {
                name: request.profile.clone(),
                available: self.profiles.keys().cloned().collect::<Vec<_>>().join(", "),
            };
            return Box::pin(futures::stream::once(async { Err(error) }));
        };
        let http = match profile.http() {
            Ok(http) => http,
            Err(e) => return Box::pin(futures::stream::once(async { Err(e) })),
        };
        let policy = retry::RetryPolicy::of(&profile.settings);
        let hint = self.connect_hints.get(&request.profile).cloned();
        let attempt = move || match profile.settings.provider {
            ProviderKind::Openai => {
                openai::attempt(http.clone(), profile.settings.clone(), request.clone())
            }
            ProviderKind::Anthropic => {
                anthropic::attempt(http.clone(), profile.settings.clone(), request.clone())
            }
        };
        let stream = retry::with_retries(policy, attempt);
        match hint {
            Some(hint) => {
                Box::pin(stream.map(move |item| item.map_err(|e| e.with_connect_hint(&hint))))
            }
            None => stream,
        }
    }
}

/// Advice for an error status: which key to check, or which URL.
fn status_hint(status: u16, profile: &ModelProfile, profile_name: &str) -> Option<String> {
    match status {
        401 | 403 => Some(match profile.key_variable() {
            Some(var) => format!("check the API key in ${var} for model profile `{profile_name}`"),
            None => format!("model profile `{profile_name}` sends no API key; set api_key_env"),
        }),
        404 => Some(format!(
            "check base_url `{}` and model `{}` of model profile `{profile_name}`",
            profile.base_url, profile.model
        )),
        _ => None,
    }
}

/// rustls needs one process-wide crypto provider; installing it twice is
/// harmless (the second attempt is refused and ignored).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
