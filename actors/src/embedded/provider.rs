//! [`Provider`]: the daemon's real HTTP providers (OpenAI Chat Completions,
//! Anthropic Messages; streaming, retries with backoff) for one or more
//! model profiles, as a [`ModelClient`] an agent can use.

use super::error::AgentError;
use crate::model::ModelRequest;
use crate::protocol::ModelInfo;
use crate::provider::{ModelClient, ModelStream, Providers};
use crate::settings::{ModelProfile, ProviderKind, Settings};
use std::collections::BTreeMap;
use std::fmt;

/// The real model providers over HTTP, built from model profiles: what the
/// daemon calls models with, retries and all. Requests are answered by the
/// profile they name; an agent built with a `Provider` names its default
/// profile.
pub struct Provider {
    name: String,
    models: Vec<ModelInfo>,
    client: Providers,
}

impl Provider {
    /// An OpenAI-compatible server (OpenAI, llama.cpp, Ollama, vLLM, LM
    /// Studio, ...) at `base_url` (e.g. `https://api.openai.com/v1`),
    /// serving `model`. The key, if any, is read from `OPENAI_API_KEY` when
    /// a request is made (none is sent when it is unset). The profile is
    /// named after the model.
    pub fn openai(
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<Provider, AgentError> {
        let model = model.into();
        let mut profile = ModelProfile::new(ProviderKind::Openai, model.clone(), base_url);
        profile.api_key_env = Some("OPENAI_API_KEY".into());
        profile.key_optional = true;
        Provider::from_profile(model, profile)
    }

    /// An Anthropic Messages server at `base_url` (e.g.
    /// `https://api.anthropic.com`), serving `model`; the key is read from
    /// `ANTHROPIC_API_KEY` when a request is made (none is sent when it is
    /// unset, as for a local server). The profile is named after the model.
    pub fn anthropic(
        base_url: impl Into<String>,
        model: impl Into<String>,
    ) -> Result<Provider, AgentError> {
        let model = model.into();
        let mut profile = ModelProfile::new(ProviderKind::Anthropic, model.clone(), base_url);
        profile.api_key_env = Some("ANTHROPIC_API_KEY".into());
        profile.key_optional = true;
        Provider::from_profile(model, profile)
    }

    /// One model profile, as the daemon's configuration describes it
    /// (`[models.NAME]`): wire format, URL, key, context window, output
    /// cap, retries, timeouts, prices.
    pub fn from_profile(
        name: impl Into<String>,
        profile: ModelProfile,
    ) -> Result<Provider, AgentError> {
        let name = name.into();
        checked(&name, &profile)?;
        let models = vec![profile.info(&name)];
        let client = Providers::new(BTreeMap::from([(name.clone(), profile)]))
            .map_err(AgentError::Provider)?;
        Ok(Provider {
            name,
            models,
            client,
        })
    }

    /// Every profile of `settings`, answering for its default model
    /// (`settings.model`); the others can be switched to with `/model`.
    pub fn from_settings(settings: &Settings) -> Result<Provider, AgentError> {
        if !settings.models.contains_key(&settings.model) {
            let known: Vec<&str> = settings.models.keys().map(String::as_str).collect();
            return Err(AgentError::InvalidConfig(format!(
                "the default model profile `{}` is not configured (configured: {})",
                settings.model,
                known.join(", ")
            )));
        }
        for (name, profile) in &settings.models {
            checked(name, profile)?;
        }
        let mut client = Providers::new(settings.models.clone()).map_err(AgentError::Provider)?;
        if let Some(hint) = &settings.unreachable_hint {
            client = client.with_connect_hint(&settings.model, hint.clone());
        }
        Ok(Provider {
            name: settings.model.clone(),
            models: settings.model_infos(),
            client,
        })
    }

    /// The profile an agent using this provider names by default.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What is known of each profile (never its key).
    pub fn models(&self) -> &[ModelInfo] {
        &self.models
    }

    /// What is known of the default profile.
    pub fn info(&self) -> Option<&ModelInfo> {
        self.models.iter().find(|m| m.name == self.name)
    }
}

/// A profile's settings that its provider would refuse, as the builder's
/// error (the configuration file reports the same through its own loader).
fn checked(name: &str, profile: &ModelProfile) -> Result<(), AgentError> {
    profile.check().map_err(|(key, why)| {
        AgentError::InvalidConfig(format!("model profile `{name}`: `{key}`: {why}"))
    })
}

impl ModelClient for Provider {
    fn stream(&self, request: ModelRequest) -> ModelStream {
        self.client.stream(request)
    }
}

impl fmt::Debug for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Provider")
            .field("name", &self.name)
            .field("models", &self.models)
            .finish()
    }
}
