//! `GET /metrics`: the process's figures ([`agentbus_engine::metrics`]) in
//! the OpenMetrics text format when the scraper asks for it (`Accept:
//! application/openmetrics-text`, as Prometheus does), else in the classic
//! text format 0.0.4 (curl, `promtool check metrics`), for Prometheus to
//! scrape with an API token (`authorization: {credentials: TOKEN}` in its
//! scrape config).
//!
//! Outside `/v1` and the OpenAPI document, as Prometheus expects. Never
//! shows a session id, a key or a token: the figures' labels are names the
//! configuration bounds.

use super::state::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;

pub async fn metrics(State(state): State<AppState>, request: HeaderMap) -> impl IntoResponse {
    let figures = agentbus_engine::metrics::get();
    let loaded = state.runtime.loaded_sessions().await.len();
    figures
        .sessions_loaded
        .set(i64::try_from(loaded).unwrap_or(i64::MAX));
    let open_metrics = request
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .any(|value| value.contains("application/openmetrics-text"));
    if open_metrics {
        (
            [(header::CONTENT_TYPE, agentbus_engine::metrics::CONTENT_TYPE)],
            figures.encode(),
        )
    } else {
        (
            [(
                header::CONTENT_TYPE,
                agentbus_engine::metrics::CLASSIC_CONTENT_TYPE,
            )],
            figures.encode_classic(),
        )
    }
}
