//! Who may call the API: the holder of the token.
//!
//! The token comes from `[server] token` when configured; otherwise it is
//! made once, at random, and kept in `DATA_DIR/token` (mode 0600). Listening
//! on anything but loopback requires a configured token. Requests carry it
//! as `Authorization: Bearer TOKEN`, or `?token=TOKEN` where a browser
//! cannot set headers (EventSource, WebSocket).

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

/// The `?token=` of a request.
#[derive(serde::Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

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
    let bearer = request
        .headers()
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    // Percent-decoded, as a browser's URLSearchParams encodes it.
    let query = axum::extract::Query::<TokenQuery>::try_from_uri(request.uri())
        .ok()
        .and_then(|axum::extract::Query(q)| q.token);
    match bearer.or(query.as_deref()) {
        Some(given) if constant_time_eq(given.as_bytes(), token.as_bytes()) => {
            Ok(next.run(request).await)
        }
        Some(_) => Err(ApiError::new(StatusCode::UNAUTHORIZED, "wrong token")),
        None => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "missing token: send `Authorization: Bearer TOKEN` (or `?token=TOKEN`); `agentbus serve` printed where the token is",
        )),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
