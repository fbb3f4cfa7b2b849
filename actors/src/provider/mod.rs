//! Providers: model calls over HTTP, one wire format per module.
//!
//! [`ModelClient`] is what the AgentLoop needs: give it a [`ModelRequest`],
//! get a stream of [`ModelEvent`]s. [`Providers`] is the real client: it
//! picks the request's profile and hands it to the module of that profile's
//! wire format ([`openai`]). Each wire module translates in both directions
//! and nothing else; nothing outside this folder sees a wire format.

pub mod openai;

use crate::model::{ModelEvent, ModelRequest};
use crate::settings::{ApiKeyError, ModelProfile, ProviderKind};
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

/// Why a model call failed. Each message names the profile or URL involved
/// and, where there is one, what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("unknown model profile `{name}`; configured profiles: {available}")]
    UnknownProfile { name: String, available: String },
    #[error(transparent)]
    Key(#[from] ApiKeyError),
    #[error("could not build the HTTP client: {0}")]
    Client(String),
    #[error("could not reach {url}: {detail}")]
    Connect { url: String, detail: String },
    #[error("{url} answered HTTP {status}: {message}{}", hint.as_deref().map(|h| format!(" ({h})")).unwrap_or_default())]
    Status {
        url: String,
        status: u16,
        message: String,
        hint: Option<String>,
    },
    #[error("the stream from {url} broke: {detail}")]
    Stream { url: String, detail: String },
    #[error("{url} sent something that is not a valid stream event: {detail}")]
    Garbage { url: String, detail: String },
    #[error("{url} reported an error mid-stream: {message}")]
    Remote { url: String, message: String },
}

/// The real model client: one HTTP connection pool, the configured profiles.
pub struct Providers {
    http: reqwest::Client,
    profiles: BTreeMap<String, ModelProfile>,
}

impl Providers {
    pub fn new(profiles: BTreeMap<String, ModelProfile>) -> Result<Self, ProviderError> {
        install_crypto_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("agentbus/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ProviderError::Client(e.to_string()))?;
        Ok(Providers { http, profiles })
    }

    fn profile(&self, name: &str) -> Result<&ModelProfile, ProviderError> {
        self.profiles
            .get(name)
            .ok_or_else(|| ProviderError::UnknownProfile {
                name: name.to_string(),
                available: self.profiles.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }
}

impl ModelClient for Providers {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        let profile = match self.profile(&request.profile) {
            Ok(p) => p.clone(),
            Err(e) => return Box::pin(futures::stream::once(async { Err(e) })),
        };
        match profile.provider {
            ProviderKind::Openai => openai::stream(self.http.clone(), profile, request),
        }
    }
}

impl<T: ModelClient> ModelClient for Arc<T> {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        (**self).stream(request)
    }
}

/// rustls needs one process-wide crypto provider; installing it twice is
/// harmless (the second attempt is refused and ignored).
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The `message` of a JSON error body (`{"error":{"message":..}}` or
/// `{"error":"..."}` or `{"message":..}`), else the body itself, shortened.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str())
            .map(String::from)
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_string());
    if text.is_empty() {
        "(empty body)".into()
    } else if text.chars().count() > 500 {
        format!("{}…", text.chars().take(500).collect::<String>())
    } else {
        text
    }
}
