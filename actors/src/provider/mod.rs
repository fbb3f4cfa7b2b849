//! Providers: model calls over HTTP, one wire format per module.
//!
//! [`ModelClient`] is what the AgentLoop needs: give it a [`ModelRequest`],
//! get a stream of [`ModelEvent`]s. [`Providers`] is the real client: it
//! picks the request's profile, makes one attempt with that profile's wire
//! module ([`openai`], [`responses`] or [`anthropic`]) and wraps the attempts in
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
pub mod responses;
pub mod retry;

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod replay_tests;
#[cfg(test)]
mod resilience_tests;

pub use client::{ModelClient, ModelStream};
pub use error::ProviderError;
pub use http::install_crypto_provider;
pub use profiles::Providers;

/// The history as `profile` may receive it: unchanged when it takes
/// images; else each image (sent while another profile was in use) becomes
/// a line of text naming it, so that the request stays valid after `/model`.
pub(crate) fn images_for<'a>(
    profile: &crate::settings::ModelProfile,
    messages: &'a [crate::protocol::Message],
) -> std::borrow::Cow<'a, [crate::protocol::Message]> {
    use crate::protocol::Message;
    let has_images = messages
        .iter()
        .any(|m| matches!(m, Message::User { images, .. } if !images.is_empty()));
    if profile.takes_images() || !has_images {
        return std::borrow::Cow::Borrowed(messages);
    }
    let stripped = messages
        .iter()
        .map(|message| match message {
            Message::User { text, images } if !images.is_empty() => {
                let mut text = text.clone();
                for image in images {
                    let name = if image.source.is_empty() {
                        image.media_type.as_str()
                    } else {
                        image.source.as_str()
                    };
                    text.push_str(&format!("\n\n[image left out: {name}]"));
                }
                Message::user(text)
            }
            other => other.clone(),
        })
        .collect();
    std::borrow::Cow::Owned(stripped)
}

/// The prompt cache key a request carries to OpenAI (`prompt_cache_key`):
/// the session's, unless the profile turns caching off (`cache = "off"`).
pub(crate) fn cache_key<'a>(
    profile: &crate::settings::ModelProfile,
    request: &'a crate::model::ModelRequest,
) -> Option<&'a str> {
    let off = profile.cache == Some(crate::settings::CacheSetting::Off);
    (!off && !request.cache_key.is_empty()).then_some(request.cache_key.as_str())
}
