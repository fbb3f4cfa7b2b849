//! Who may call the API: the holder of the token.
//!
//! The token comes from `[server] token` when configured; otherwise it is
//! made once, at random, and kept in `DATA_DIR/token` (mode 0600). Listening
//! on anything but loopback requires a configured token. Requests carry it
//! as `Authorization: Bearer TOKEN`, or in the web page's cookie
//! (`agentbus_token`, HttpOnly, SameSite=Strict), which `GET /?token=TOKEN`
//! (the printed link) sets once before it redirects to a clean `/`.
//!
//! Never: take the token from a URL of the API (it would land in browser
//! history, proxy logs and screenshots: `?token=` there is refused, with a
//! message saying how to send it), let a cross-site form use the cookie (a
//! state-changing request that the cookie authenticates must carry
//! `Content-Type: application/json` or `X-Agentbus-Page: 1`, which a form
//! cannot send), or write the token or the cookie into a log.

use super::error::ApiError;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the token came from, for the start-up message.
pub enum TokenSource {
    Configured,
    File(PathBuf),
}

/// The token to require.
pub fn token(
    configured: Option<String>,
    data_dir: &Path,
    listen: &SocketAddr,
) -> anyhow::Result<(String, TokenSource)> {
    if let Some(token) = configured.filter(|t| !t.trim().is_empty()) {
        return Ok((token, TokenSource::Configured));
    }
    if !listen.ip().is_loopback() {
        anyhow::bail!(
            "listening on {listen} (not loopback) needs a token set explicitly: `[server] token = \"${{AGENTBUS_TOKEN}}\"` in the configuration"
        );
    }
    let path = data_dir.join("token");
    if let Ok(existing) = std::fs::read_to_string(&path) {
        let existing = existing.trim().to_string();
        if !existing.is_empty() {
            return Ok((existing, TokenSource::File(path)));
        }
    }
    std::fs::create_dir_all(data_dir)?;
    let token = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let mut file = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| anyhow::anyhow!("cannot write the token to {}: {e}", path.display()))?
    };
    writeln!(file, "{token}")?;
    Ok((token, TokenSource::File(path)))
}

/// The web page's cookie: the token, hex-encoded (any configured token
/// fits a cookie's value that way).
pub const COOKIE: &str = "agentbus_token";

/// The header the web page sends with every API call: a cross-site form
/// cannot send it, so a state-changing request authenticated by the cookie
/// alone needs it (or a JSON body's content type).
pub const PAGE_HEADER: &str = "x-agentbus-page";

/// The value of the cookie that holds `token`.
pub fn cookie_value(token: &str) -> String {
    token.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Whether the query string of `uri` has a `token` parameter.
pub fn query_has_token(uri: &axum::http::Uri) -> bool {
    uri.query().is_some_and(|query| {
        query
            .split('&')
            .any(|pair| pair.split('=').next() == Some("token"))
    })
}

/// The value of the cookie `name` among the request's `Cookie` headers.
fn cookie<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
}

/// Whether a request the cookie authenticates shows it comes from the page
/// itself (or at least not from a cross-site form): a safe method, the
/// page's header, or a JSON body.
fn not_a_form(request: &Request) -> bool {
    use axum::http::Method;
    let headers = request.headers();
    matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    ) || headers.contains_key(PAGE_HEADER)
        || headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

/// What a request without the token is told.
const HOW_TO_SEND: &str = "send `Authorization: Bearer TOKEN` (a web browser: open the link `agentbus serve` printed, which sets the page's cookie); `agentbus serve` printed where the token is";

/// Refuse requests under `/v1`, and to `/metrics`, without the token
/// (401). Other paths reach this layer only when nothing serves them: they
/// get their 404 as they are.
pub async fn require_token(
    State(token): State<Arc<String>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let path = request.uri().path();
    if path != "/v1" && !path.starts_with("/v1/") && path != "/metrics" {
        return Ok(next.run(request).await);
    }
    if query_has_token(request.uri()) {
        // The path only: the query holds the token.
        tracing::debug!(path, "refused: the token in the address");
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            format!(
                "the API does not take the token in the address (`?token=`: it would land in history and logs): {HOW_TO_SEND}"
            ),
        ));
    }
    let bearer = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    if let Some(given) = bearer {
        return if constant_time_eq(given.as_bytes(), token.as_bytes()) {
            Ok(next.run(request).await)
        } else {
            tracing::debug!(path, "refused: a wrong token in the header");
            Err(ApiError::new(StatusCode::UNAUTHORIZED, "wrong token"))
        };
    }
    match cookie(request.headers(), COOKIE) {
        Some(given) if constant_time_eq(given.as_bytes(), cookie_value(&token).as_bytes()) => {
            if not_a_form(&request) {
                Ok(next.run(request).await)
            } else {
                tracing::debug!(path, "refused: the cookie alone on a form-like request");
                Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "a request that changes something and is authenticated by the page's cookie needs `Content-Type: application/json` or `X-Agentbus-Page: 1` (or send `Authorization: Bearer TOKEN`)",
                ))
            }
        }
        Some(_) => {
            tracing::debug!(path, "refused: a wrong token in the cookie");
            Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "wrong token (the page's cookie): open the link `agentbus serve` printed again",
            ))
        }
        None => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            format!("missing token: {HOW_TO_SEND}"),
        )),
    }
}

pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
