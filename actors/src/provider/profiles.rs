//! [`Providers`]: the real [`ModelClient`], one HTTP client per configured
//! model profile, each call an attempt of the profile's wire format
//! wrapped in retries.

use super::client::{ModelClient, ModelStream};
use super::http::{self, install_crypto_provider};
use super::{ProviderError, anthropic, openai, responses, retry};
use crate::metrics::{ModelCall, Outcome};
use crate::model::{ModelEvent, ModelRequest};
use crate::protocol::{Pricing, Usage};
use crate::settings::{ModelProfile, ProviderKind};
use futures::StreamExt;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
        let mut count = CallCount::new(
            request.profile.clone(),
            wire_name(profile.settings.provider),
            profile.settings.pricing(),
        );
        let attempt = move || match profile.settings.provider {
            ProviderKind::Openai => {
                openai::attempt(http.clone(), profile.settings.clone(), request.clone())
            }
            ProviderKind::Anthropic => {
                anthropic::attempt(http.clone(), profile.settings.clone(), request.clone())
            }
            ProviderKind::OpenaiResponses => {
                responses::attempt(http.clone(), profile.settings.clone(), request.clone())
            }
        };
        let stream = retry::with_retries(policy, attempt).map(move |item| {
            count.saw(&item);
            item
        });
        match hint {
            Some(hint) => {
                Box::pin(stream.map(move |item| item.map_err(|e| e.with_connect_hint(&hint))))
            }
            None => Box::pin(stream),
        }
    }
}

/// The `wire` label of a profile's calls.
fn wire_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "openai",
        ProviderKind::Anthropic => "anthropic",
        ProviderKind::OpenaiResponses => "openai-responses",
    }
}

/// One model call as the process's figures see it ([`crate::metrics`]):
/// recorded at its last event (before the session sees it) or, for a call
/// cancelled midway, when its stream is dropped (as `cancelled`).
struct CallCount {
    profile: String,
    wire: &'static str,
    started: Instant,
    first_event: Option<Duration>,
    usage: Usage,
    pricing: Option<Pricing>,
    recorded: bool,
}

impl CallCount {
    fn new(profile: String, wire: &'static str, pricing: Option<Pricing>) -> Self {
        CallCount {
            profile,
            wire,
            started: Instant::now(),
            first_event: None,
            usage: Usage::default(),
            pricing,
            recorded: false,
        }
    }

    fn saw(&mut self, item: &Result<ModelEvent, ProviderError>) {
        match item {
            Ok(ModelEvent::Retrying { .. }) => {}
            Ok(event) => {
                self.first_event
                    .get_or_insert_with(|| self.started.elapsed());
                match event {
                    ModelEvent::Usage(usage) => self.usage.overwrite_with(*usage),
                    ModelEvent::Finished { .. } => self.record(Outcome::Ok),
                    _ => {}
                }
            }
            Err(_) => self.record(Outcome::Error),
        }
    }

    /// The call ended: count it (once).
    fn record(&mut self, outcome: Outcome) {
        if std::mem::replace(&mut self.recorded, true) {
            return;
        }
        crate::metrics::get().model_call(ModelCall {
            profile: &self.profile,
            wire: self.wire,
            outcome,
            took: self.started.elapsed(),
            first_event: self.first_event,
            usage: self.usage,
            pricing: self.pricing,
        });
    }
}

impl Drop for CallCount {
    fn drop(&mut self) {
        self.record(Outcome::Cancelled);
    }
}
