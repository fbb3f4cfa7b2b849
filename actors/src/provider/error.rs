//! Why a model call failed, and whether trying again could help.

use crate::settings::ApiKeyError;
use std::time::Duration;

/// A failed model call. Each message names the profile or URL involved and,
/// where there is one, what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("unknown model profile `{name}`; configured profiles: {available}")]
    UnknownProfile { name: String, available: String },
    #[error(transparent)]
    Key(#[from] ApiKeyError),
    #[error("could not build the HTTP client for model profile `{profile}`: {detail}")]
    Client { profile: String, detail: String },
    #[error("could not reach {url}: {detail}{}", suffix(hint))]
    Connect {
        url: String,
        detail: String,
        hint: Option<String>,
    },
    #[error("{url} answered HTTP {status}: {message}{}", suffix(hint))]
    Status {
        url: String,
        status: u16,
        message: String,
        hint: Option<String>,
        /// What the server's `Retry-After` asked for.
        retry_after: Option<Duration>,
    },
    #[error("the stream from {url} broke: {detail}")]
    Stream { url: String, detail: String },
    #[error("{url} sent something that is not a valid stream event: {detail}")]
    Garbage { url: String, detail: String },
    #[error("{url} reported {kind} mid-stream: {message}")]
    Remote {
        url: String,
        kind: String,
        message: String,
    },
    #[error("{url} sent nothing for {secs} s (stream_idle_timeout_secs)")]
    IdleTimeout { url: String, secs: u64 },
}

fn suffix(hint: &Option<String>) -> String {
    hint.as_deref()
        .map(|h| format!(" ({h})"))
        .unwrap_or_default()
}

/// HTTP statuses worth another attempt: timeouts, conflicts, rate limits,
/// server errors, and Anthropic's "overloaded".
pub const RETRYABLE_STATUSES: [u16; 8] = [408, 409, 429, 500, 502, 503, 504, 529];

impl ProviderError {
    /// Whether another attempt could succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Connect { .. }
            | ProviderError::Stream { .. }
            | ProviderError::Garbage { .. }
            | ProviderError::IdleTimeout { .. } => true,
            ProviderError::Status { status, .. } => RETRYABLE_STATUSES.contains(status),
            ProviderError::Remote { kind, .. } => !matches!(
                kind.as_str(),
                "invalid_request_error"
                    | "authentication_error"
                    | "permission_error"
                    | "not_found_error"
            ),
            ProviderError::UnknownProfile { .. }
            | ProviderError::Key(_)
            | ProviderError::Client { .. } => false,
        }
    }

    /// Whether the provider refused the request as longer than the model's
    /// context window (OpenAI's `context_length_exceeded`, Anthropic's
    /// "prompt is too long", llama.cpp's "exceeds the available context
    /// size").
    pub fn is_context_overflow(&self) -> bool {
        let message = match self {
            ProviderError::Status {
                status: 400 | 413 | 422,
                message,
                ..
            } => message,
            ProviderError::Remote { message, .. } => message,
            _ => return false,
        };
        let message = message.to_ascii_lowercase();
        [
            "context_length_exceeded",
            "maximum context length",
            "prompt is too long",
            "context window",
            "exceeds the available context size",
            "exceed_context_size",
            "too many tokens",
            "context length",
        ]
        .iter()
        .any(|needle| message.contains(needle))
    }

    /// The delay the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A short reason for a `retrying` notice.
    pub fn short_reason(&self) -> String {
        match self {
            ProviderError::Status {
                status, message, ..
            } => format!("HTTP {status}: {message}"),
            ProviderError::Connect { detail, .. } => format!("connection failed: {detail}"),
            ProviderError::Stream { detail, .. } => format!("stream broke: {detail}"),
            ProviderError::Garbage { detail, .. } => format!("garbage in stream: {detail}"),
            ProviderError::Remote { kind, message, .. } => format!("{kind}: {message}"),
            ProviderError::IdleTimeout { secs, .. } => format!("no data for {secs} s"),
            other => other.to_string(),
        }
    }

    /// Add advice to a connection failure (e.g. how to get a model at all).
    pub fn with_connect_hint(self, extra: &str) -> ProviderError {
        match self {
            ProviderError::Connect { url, detail, .. } => ProviderError::Connect {
                url,
                detail,
                hint: Some(extra.to_string()),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: u16) -> ProviderError {
        ProviderError::Status {
            url: "u".into(),
            status: code,
            message: "m".into(),
            hint: None,
            retry_after: None,
        }
    }

    #[test]
    fn retryable_statuses_are_retried_and_client_errors_are_not() {
        for code in RETRYABLE_STATUSES {
            assert!(status(code).is_retryable(), "{code}");
        }
        for code in [400, 401, 403, 404, 422] {
            assert!(!status(code).is_retryable(), "{code}");
        }
    }

    #[test]
    fn overloaded_mid_stream_is_retried_but_invalid_requests_are_not() {
        let remote = |kind: &str| ProviderError::Remote {
            url: "u".into(),
            kind: kind.into(),
            message: "m".into(),
        };
        assert!(remote("overloaded_error").is_retryable());
        assert!(remote("api_error").is_retryable());
        assert!(!remote("invalid_request_error").is_retryable());
    }
}
