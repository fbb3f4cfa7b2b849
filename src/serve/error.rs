//! API errors: a status and a JSON body `{"error": "..."}` that says what was
//! wrong and what was expected.

use agentbus_actors::runtime::{Failure, SessionError};
use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, FromRequestParts, OptionalFromRequest, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// What every error answer looks like.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// What was wrong, and what was expected.
    pub error: String,
}

/// An error answer.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(ErrorBody {
                error: self.message,
            }),
        )
            .into_response()
    }
}

impl From<SessionError> for ApiError {
    fn from(e: SessionError) -> Self {
        let status = match e.failure() {
            Failure::NotFound => StatusCode::NOT_FOUND,
            Failure::Invalid => StatusCode::BAD_REQUEST,
            Failure::Conflict => StatusCode::CONFLICT,
            Failure::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Failure::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.to_string())
    }
}

/// `Json<T>`, but a body that is not valid JSON, or not the expected
/// shape, is a 400 naming the problem (axum's own rejection is plain text).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        match <Json<T> as FromRequest<S>>::from_request(req, state).await {
            Ok(Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(rejection_error(rejection)),
        }
    }
}

/// An optional JSON body: none when the request has no JSON content type.
impl<S: Send + Sync, T: serde::de::DeserializeOwned> OptionalFromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(
        req: axum::extract::Request,
        state: &S,
    ) -> Result<Option<Self>, Self::Rejection> {
        match <Json<T> as OptionalFromRequest<S>>::from_request(req, state).await {
            Ok(value) => Ok(value.map(|Json(value)| ApiJson(value))),
            Err(rejection) => Err(rejection_error(rejection)),
        }
    }
}

fn rejection_error(rejection: JsonRejection) -> ApiError {
    let status = match &rejection {
        JsonRejection::MissingJsonContentType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        JsonRejection::BytesRejection(_) => StatusCode::PAYLOAD_TOO_LARGE,
        _ => StatusCode::BAD_REQUEST,
    };
    ApiError::new(
        status,
        format!("invalid request body: {}", rejection.body_text()),
    )
}

/// A query string parsed into `T`; a malformed one is a JSON 400 naming the
/// parameter, like every other error.
pub struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        match <Query<T> as FromRequestParts<S>>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(ApiError::bad_request(format!(
                "invalid query string: {}",
                rejection.body_text()
            ))),
        }
    }
}
