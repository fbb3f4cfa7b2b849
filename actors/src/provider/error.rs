//! Why a model call failed, and whether trying again could help.

use crate::model::ContextRefusal;
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
    /// The request could not even be made (reqwest's "builder error", e.g.
    /// a URL that does not parse): nothing was sent, and nothing would be
    /// on another attempt.
    #[error(
        "could not make a request to {url}: {detail} (nothing was sent; check the profile's `base_url`)"
    )]
    Request { url: String, detail: String },
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

/// The number right after `needle` in `text` (spaces, `=` and `(`
/// skipped).
fn number_after(text: &str, needle: &str) -> Option<u64> {
    let at = text.find(needle)? + needle.len();
    let rest = text[at..].trim_start_matches([' ', '(', '=', ':']);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The number right before `needle` in `text` (spaces skipped).
fn number_before(text: &str, needle: &str) -> Option<u64> {
    let at = text.find(needle)?;
    let before = text[..at].trim_end();
    let start = before
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    before[start..].parse().ok()
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
            | ProviderError::Client { .. }
            | ProviderError::Request { .. } => false,
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
            "exceed context limit",
            "input tokens exceed",
        ]
        .iter()
        .any(|needle| message.contains(needle))
    }

    /// The refusal as too long, with the sizes the provider's message
    /// states (OpenAI's "maximum context length is W tokens … (C in the
    /// messages, M in the completion)", "resulted in C tokens", "the
    /// configured limit of L tokens"; Anthropic's "prompt is too long: C
    /// tokens > W maximum" and "exceed context limit: C + M > W";
    /// llama.cpp's "request (C tokens) exceeds the available context size
    /// (W tokens)" or its `n_prompt_tokens`/`n_ctx`); `None` when the call
    /// failed for another reason.
    pub fn context_refusal(&self) -> Option<ContextRefusal> {
        if !self.is_context_overflow() {
            return None;
        }
        let message = match self {
            ProviderError::Status { message, .. } | ProviderError::Remote { message, .. } => {
                message.to_ascii_lowercase()
            }
            _ => String::new(),
        };
        let m = message.as_str();
        let mut refusal = ContextRefusal::default();
        if let Some(at) = m.find("exceed context limit:") {
            // Anthropic: "C + M > W".
            let rest = &m[at..];
            refusal.input_tokens = number_after(rest, ":");
            refusal.output_tokens = number_after(rest, "+");
            refusal.window = number_after(rest, ">");
            return Some(refusal);
        }
        refusal.window = number_after(m, "maximum context length is")
            .or_else(|| number_before(m, " maximum"))
            .or_else(|| number_after(m, "context size ("))
            .or_else(|| number_after(m, "n_ctx"));
        refusal.input_tokens = number_before(m, " in the messages")
            .or_else(|| number_after(m, "resulted in"))
            .or_else(|| number_after(m, "prompt is too long:"))
            .or_else(|| number_after(m, "request ("))
            .or_else(|| number_after(m, "n_prompt_tokens"));
        refusal.output_tokens = number_before(m, " in the completion");
        refusal.input_limit = number_after(m, "configured limit of");
        Some(refusal)
    }

    /// The delay the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// The class of the failure, for a span's `error.type` (low in
    /// cardinality, no text of the provider's): the HTTP status, else
    /// what kind of failure it was.
    pub fn error_type(&self) -> String {
        match self {
            ProviderError::Status { status, .. } => status.to_string(),
            ProviderError::UnknownProfile { .. } => "unknown_profile".into(),
            ProviderError::Key(_) => "missing_key".into(),
            ProviderError::Client { .. } | ProviderError::Request { .. } => "request".into(),
            ProviderError::Connect { .. } => "connect".into(),
            ProviderError::Stream { .. } => "stream".into(),
            ProviderError::Garbage { .. } => "invalid_stream".into(),
            ProviderError::Remote { .. } => "remote_error".into(),
            ProviderError::IdleTimeout { .. } => "timeout".into(),
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

    fn refused(status_code: u16, message: &str) -> Option<ContextRefusal> {
        ProviderError::Status {
            url: "u".into(),
            status: status_code,
            message: message.into(),
            hint: None,
            retry_after: None,
        }
        .context_refusal()
    }

    #[test]
    fn a_refusal_for_length_tells_the_sizes_it_states() {
        let openai = refused(
            400,
            "This model's maximum context length is 4000 tokens. However, you requested 4303 tokens (3903 in the messages, 400 in the completion). Please reduce the length of the messages or completion.",
        );
        assert_eq!(
            openai,
            Some(ContextRefusal {
                input_tokens: Some(3903),
                window: Some(4000),
                output_tokens: Some(400),
                input_limit: None,
            })
        );
        assert_eq!(openai.and_then(|r| r.input_budget(1000)), Some(3600));
        let functions = refused(
            400,
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens (including 230 in the functions). Please reduce the length of the messages or functions.",
        )
        .expect("a refusal");
        assert_eq!(
            (functions.input_tokens, functions.window),
            (Some(130512), Some(128000))
        );
        assert_eq!(functions.input_budget(1000), Some(127000));
        let configured = refused(
            400,
            "Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 290000 tokens. Please reduce the length of the messages.",
        )
        .expect("a refusal");
        assert_eq!(configured.input_budget(128000), Some(272000));
        assert_eq!(configured.input_tokens, Some(290000));
        let anthropic =
            refused(400, "prompt is too long: 210344 tokens > 200000 maximum").expect("a refusal");
        assert_eq!(
            (
                anthropic.input_tokens,
                anthropic.window,
                anthropic.output_tokens
            ),
            (Some(210344), Some(200000), None)
        );
        let with_output = refused(
            400,
            "input length and `max_tokens` exceed context limit: 178959 + 64000 > 200000, decrease input length or `max_tokens` and try again",
        )
        .expect("a refusal");
        assert_eq!(
            (
                with_output.input_tokens,
                with_output.output_tokens,
                with_output.window
            ),
            (Some(178959), Some(64000), Some(200000))
        );
        assert_eq!(with_output.input_budget(8192), Some(136000));
        let llama = refused(
            400,
            "request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it",
        )
        .expect("a refusal");
        assert_eq!(
            (llama.input_tokens, llama.window),
            (Some(13392), Some(8192))
        );
        let older_llama = refused(
            400,
            "the request exceeds the available context size, try increasing it (n_prompt_tokens 5012, n_ctx 4096)",
        )
        .expect("a refusal");
        assert_eq!(
            (older_llama.input_tokens, older_llama.window),
            (Some(5012), Some(4096))
        );
        // A refusal that states nothing is still one.
        assert_eq!(
            refused(
                400,
                "Your input exceeds the context window of this model. Please adjust your input and try again."
            ),
            Some(ContextRefusal::default())
        );
        assert_eq!(refused(400, "invalid tool schema"), None);
        assert_eq!(
            refused(500, "prompt is too long: 5 tokens > 4 maximum"),
            None
        );
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
