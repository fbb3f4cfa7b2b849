//! `POST /v1/sessions/{id}/approvals/{request_id}`: answer a tool call's
//! `approval_request`. The decision bypasses the session's queue; the first
//! answer wins, and every client sees the `approval_resolved` event that
//! settles it on the session's stream.

use super::auth::Caller;
use super::error::{ApiError, ApiJson, ErrorBody};
use super::sessions::send;
use super::state::AppState;
use crate::api::{Decision, Settled};
use agentbus_engine::protocol::SessionInput;
use axum::Json;
use axum::extract::{Extension, Path, State};

/// A decision body from JSON: a 400 naming what was wrong and what was
/// expected when it is not one.
pub fn parse_decision(body: serde_json::Value) -> Result<Decision, ApiError> {
    serde_json::from_value(body).map_err(|e| {
        ApiError::bad_request(format!("invalid decision: {e}; {}", Decision::EXPECTED))
    })
}

#[utoipa::path(post, path = "/v1/sessions/{id}/approvals/{request_id}", tag = "sessions", request_body = Decision,
    params(("id" = String, Path, description = "Session id or a unique prefix"),
           ("request_id" = String, Path, description = "The `request_id` of the `approval_request` event")),
    responses((status = 200, description = "Settled: the `approval_resolved` event follows on the session's stream", body = Settled),
              (status = 400, description = "The body is not a decision; the error says what is expected", body = ErrorBody),
              (status = 404, description = "No such session, or no such request waiting (the error lists the waiting ones)", body = ErrorBody),
              (status = 409, description = "The request was already settled (the first answer wins)", body = ErrorBody)))]
pub async fn decide(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path((id, request_id)): Path<(String, String)>,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> Result<Json<Settled>, ApiError> {
    let decision = parse_decision(body)?;
    let input = SessionInput::Approval {
        request_id: request_id.clone(),
        decision: decision.into(),
    };
    send(&state, &caller, &id, input).await?;
    Ok(Json(Settled {
        settled: true,
        request_id,
    }))
}
