//! Health probes for load balancers and orchestrators, without the token:
//! `GET /livez` (the process answers) and `GET /readyz` (it can take work:
//! the store answers; on a node of a cluster, its lease is held and NATS
//! is connected).
//!
//! Never: say anything in a body beyond "ok", "ready" or "not ready" (the
//! probes need no token, so they must not tell a stranger the version,
//! the sessions or why a node is not ready — `/v1/health` says that,
//! behind the token, and the log says why).

use super::state::AppState;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use std::sync::atomic::{AtomicBool, Ordering};

/// The probes' headers: plain text, never cached.
const HEADERS: [(header::HeaderName, &str); 2] = [
    (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
    (header::CACHE_CONTROL, "no-store"),
];

/// `GET /livez`: 200 while the process serves requests.
pub async fn livez() -> impl IntoResponse {
    (HEADERS, "ok\n")
}

/// Whether the last `/readyz` found the process ready: a change is logged
/// once, with the reason, rather than at every probe.
static WAS_READY: AtomicBool = AtomicBool::new(true);

/// `GET /readyz`: 200 when [`Runtime::ready`](agentbus_engine::runtime::Runtime::ready),
/// else 503.
pub async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    match state.runtime.ready().await {
        Ok(()) => {
            if !WAS_READY.swap(true, Ordering::Relaxed) {
                tracing::info!("ready again (/readyz)");
            }
            (StatusCode::OK, HEADERS, "ready\n")
        }
        Err(why) => {
            if WAS_READY.swap(false, Ordering::Relaxed) {
                tracing::warn!("not ready (/readyz): {why}");
            }
            (StatusCode::SERVICE_UNAVAILABLE, HEADERS, "not ready\n")
        }
    }
}
