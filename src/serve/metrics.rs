//! `GET /metrics`: the process's figures ([`agentbus_actors::metrics`]) in
//! the OpenMetrics text format, for Prometheus to scrape with the API token
//! (`authorization: {credentials: TOKEN}` in its scrape config).
//!
//! Outside `/v1` and the OpenAPI document, as Prometheus expects. Never
//! shows a session id, a key or a token: the figures' labels are names the
//! configuration bounds.

use super::state::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let figures = agentbus_actors::metrics::get();
    let loaded = state.runtime.loaded_sessions().await.len();
    figures
        .sessions_loaded
        .set(i64::try_from(loaded).unwrap_or(i64::MAX));
    (
        [(header::CONTENT_TYPE, agentbus_actors::metrics::CONTENT_TYPE)],
        figures.encode(),
    )
}
