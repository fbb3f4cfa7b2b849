//! What every wire format shares on the way in: sending the request with a
//! deadline for the response to start, turning an error status into a
//! [`ProviderError`] (with the server's message, `Retry-After` and a hint),
//! reading SSE frames with an idle timeout, and running a wire format's
//! [`FrameDecoder`] over them until the answer is complete.

use super::ProviderError;
use super::client::ModelStream;
use crate::model::ModelEvent;
use crate::settings::ModelProfile;
use futures::{Stream, StreamExt};
use std::time::{Duration, SystemTime};

/// What one `data:` frame meant, in either wire format.
#[derive(Debug, Default, PartialEq)]
pub struct Decoded {
    pub events: Vec<ModelEvent>,
    /// The frame ended the answer (OpenAI's `[DONE]`, Anthropic's
    /// `message_stop`).
    pub done: bool,
}

/// A wire format's reading of stream frames into [`ModelEvent`]s.
pub trait FrameDecoder: Default + Send + 'static {
    /// The error when the stream ends before the answer is complete.
    const CUT_SHORT: &'static str;
    /// Decode the data of one frame.
    fn decode(&mut self, data: &str) -> Result<Decoded, FrameError>;
    /// Whether the answer's finish reason arrived: a stream that then ends
    /// without its last frame is still complete.
    fn saw_finish(&self) -> bool;
    /// Close open blocks and report the finish.
    fn finish(&mut self) -> Vec<ModelEvent>;
}

/// A POST of `body` to `url`: `wire` adds the wire format's own headers
/// and places the key (if the profile has one) where the format wants it;
/// then the profile's extra headers, which replace any of the same name. A
/// key that cannot be read, or a header that is not valid HTTP, is the
/// error.
pub fn post(
    http: &reqwest::Client,
    url: &str,
    profile: &ModelProfile,
    requested: &str,
    body: &serde_json::Value,
    wire: impl FnOnce(reqwest::RequestBuilder, Option<String>) -> reqwest::RequestBuilder,
) -> Result<reqwest::RequestBuilder, ProviderError> {
    let key = profile.api_key(requested)?;
    let mut extra = reqwest::header::HeaderMap::new();
    for (name, value) in &profile.headers {
        let invalid = |what: &str| ProviderError::Client {
            profile: requested.to_string(),
            detail: format!("the header `{name}` has an invalid {what}"),
        };
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid("name"))?;
        let value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| invalid("value (it is not shown)"))?;
        extra.insert(name, value);
    }
    Ok(wire(http.post(url).json(body), key).headers(extra))
}

/// One call to the model: send `request` (an error building it, such as a
/// missing key, is the stream's error) and stream the answer as `D` decodes
/// it, until the answer is complete. No retries here.
pub fn answer<D: FrameDecoder>(
    request: Result<reqwest::RequestBuilder, ProviderError>,
    url: String,
    idle: Duration,
    hint: impl Fn(u16) -> Option<String> + Send + 'static,
) -> ModelStream {
    Box::pin(async_stream::try_stream! {
        let response = send(request?, &url, idle, hint).await?;
        let mut frames = std::pin::pin!(frames(response, url.clone(), idle));
        let mut decoder = D::default();
        let mut done = false;
        while let Some(frame) = frames.next().await {
            let Some(data) = frame?.data else { continue };
            let decoded = decoder.decode(&data).map_err(|e| e.into_provider(&url))?;
            for event in decoded.events {
                yield event;
            }
            if decoded.done {
                done = true;
                break;
            }
        }
        if !done {
            if !decoder.saw_finish() {
                Err(ProviderError::Stream {
                    url: url.clone(),
                    detail: D::CUT_SHORT.into(),
                })?;
            }
            for event in decoder.finish() {
                yield event;
            }
        }
    })
}

/// Send `request`; wait at most `idle` for the response to begin.
pub async fn send(
    request: reqwest::RequestBuilder,
    url: &str,
    idle: Duration,
    hint: impl Fn(u16) -> Option<String>,
) -> Result<reqwest::Response, ProviderError> {
    let response = match tokio::time::timeout(idle, request.send()).await {
        Err(_) => {
            return Err(ProviderError::IdleTimeout {
                url: url.to_string(),
                secs: idle.as_secs(),
            });
        }
        Ok(Err(e)) if e.is_builder() => {
            return Err(ProviderError::Request {
                url: url.to_string(),
                detail: causes(&e),
            });
        }
        Ok(Err(e)) => {
            return Err(ProviderError::Connect {
                url: url.to_string(),
                detail: describe(&e),
                hint: None,
            });
        }
        Ok(Ok(r)) => r,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let retry_after = retry_after(response.headers(), SystemTime::now());
    let body = match tokio::time::timeout(idle, response.text()).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    };
    Err(ProviderError::Status {
        url: url.to_string(),
        status: status.as_u16(),
        message: error_message(&body),
        hint: hint(status.as_u16()),
        retry_after,
    })
}

/// The SSE frames of a response; a frame that takes longer than `idle` to
/// arrive ends the stream with [`ProviderError::IdleTimeout`].
pub fn frames(
    response: reqwest::Response,
    url: String,
    idle: Duration,
) -> impl Stream<Item = Result<sse_stream::Sse, ProviderError>> + Send {
    let mut parsed = sse_stream::SseStream::from_bytes_stream(response.bytes_stream());
    async_stream::stream! {
        loop {
            match tokio::time::timeout(idle, parsed.next()).await {
                Err(_) => {
                    yield Err(ProviderError::IdleTimeout { url: url.clone(), secs: idle.as_secs() });
                    return;
                }
                Ok(None) => return,
                Ok(Some(Ok(frame))) => yield Ok(frame),
                Ok(Some(Err(e))) => {
                    yield Err(ProviderError::Stream { url: url.clone(), detail: causes(&e) });
                    return;
                }
            }
        }
    }
}

/// How long the server asked us to wait: `retry-after-ms`, or `Retry-After`
/// in seconds or as an HTTP date.
pub fn retry_after(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    // `try_from_secs_f64`: a negative, infinite, NaN or absurdly large
    // number from the server is no wait at all, never a panic.
    if let Some(ms) = text("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return Duration::try_from_secs_f64(ms / 1000.0).ok();
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The `message` of a JSON error body (`{"error":{"message":..}}`,
/// `{"error":"..."}` or `{"message":..}`), else the body itself, shortened.
pub fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("error").filter(|e| e.is_string()))
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str())
            .map(String::from)
    });
    // llama.cpp states the sizes of a refusal for length beside its
    // message: keep them, so the session can learn from them.
    let sizes = parsed.as_ref().and_then(|v| {
        let field = |name: &str| v.pointer(&format!("/error/{name}"))?.as_u64();
        Some(format!(
            " (n_prompt_tokens {}, n_ctx {})",
            field("n_prompt_tokens")?,
            field("n_ctx")?
        ))
    });
    let text = from_json.map_or_else(
        || body.trim().to_string(),
        |message| message + sizes.as_deref().unwrap_or_default(),
    );
    if text.is_empty() {
        "(empty body)".into()
    } else {
        crate::text::ellipsize(&text, 500)
    }
}

/// reqwest's errors hide their cause: for a failed connection the innermost
/// cause says it all ("Connection refused"); otherwise show the chain.
pub fn describe(e: &reqwest::Error) -> String {
    if e.is_connect() || e.is_timeout() {
        let mut innermost: &dyn std::error::Error = e;
        while let Some(next) = innermost.source() {
            innermost = next;
        }
        return innermost.to_string();
    }
    causes(e)
}

/// An error and its causes, joined with ": ".
fn causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// Frame data as quoted in error messages: at most 200 characters.
pub fn short(s: &str) -> String {
    crate::text::ellipsize(s, 200)
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
    pub(super) fn into_provider(self, url: &str) -> ProviderError {
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

/// Advice for an error status: which key to check, or which URL.
pub(super) fn status_hint(
    status: u16,
    profile: &ModelProfile,
    profile_name: &str,
) -> Option<String> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")]), now),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(
                &headers(&[("retry-after-ms", "1500"), ("retry-after", "9")]),
                now
            ),
            Some(Duration::from_millis(1500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &later)]), now),
            Some(Duration::from_secs(30))
        );
        let past = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(
            retry_after(&headers(&[("retry-after", &past)]), now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")]), now), None);
        assert_eq!(retry_after(&headers(&[]), now), None);
    }

    #[test]
    fn error_bodies_yield_their_message() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","type":"x"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(error_message("plain text"), "plain text");
        assert_eq!(
            error_message(
                r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5012,"n_ctx":4096}}"#
            ),
            "the request exceeds the available context size, try increasing it (n_prompt_tokens 5012, n_ctx 4096)"
        );
        assert_eq!(error_message(""), "(empty body)");
    }

    #[tokio::test]
    async fn a_request_that_cannot_be_made_is_not_retried() {
        install_crypto_provider();
        let url = "http://127.0.0.1:PORT/v1/chat/completions";
        let http = reqwest::Client::new();
        let error = send(http.post(url), url, Duration::from_secs(5), |_| None)
            .await
            .expect_err("no request can be made");
        assert!(matches!(error, ProviderError::Request { .. }), "{error:?}");
        assert!(!error.is_retryable(), "{error}");
        assert!(error.to_string().contains("invalid port number"), "{error}");
    }
}
