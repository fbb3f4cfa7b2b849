//! API errors: a status and a JSON body `{"error": "..."}` that says what was
//! wrong and what was expected.

use agentbus_engine::runtime::{Failure, SessionError};
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
    /// Seconds to wait before trying again (`Retry-After`), with a 429.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// A 429: a limit of the caller's token was reached; try again after
    /// `seconds`.
    pub fn too_many(message: impl Into<String>, seconds: u64) -> Self {
        ApiError {
            retry_after: Some(seconds.max(1)),
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, message)
        }
    }

    /// A 403: the caller's token may not do this; `message` says which
    /// role would be needed, never more.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, message)
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
        let mut response = (
            self.status,
            Json(ErrorBody {
                error: self.message,
            }),
        )
            .into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        response
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

/// `Json<T>`, but a body that is not valid JSON, not a JSON object, or not
/// the expected shape, is a 400 naming the problem (axum's own rejection is
/// plain text, and serde would read a struct from an array).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        match <Json<serde_json::Value> as FromRequest<S>>::from_request(req, state).await {
            Ok(Json(value)) => object_body(value).map(ApiJson),
            Err(rejection) => Err(rejection_error(rejection)),
        }
    }
}

/// An optional JSON body: none when the request has no JSON content type,
/// or when the body is `null`.
impl<S: Send + Sync, T: serde::de::DeserializeOwned> OptionalFromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(
        req: axum::extract::Request,
        state: &S,
    ) -> Result<Option<Self>, Self::Rejection> {
        match <Json<serde_json::Value> as OptionalFromRequest<S>>::from_request(req, state).await {
            Ok(None | Some(Json(serde_json::Value::Null))) => Ok(None),
            Ok(Some(Json(value))) => object_body(value).map(|value| Some(ApiJson(value))),
            Err(rejection) => Err(rejection_error(rejection)),
        }
    }
}

/// Every body of the API is a JSON object: read `T` from one, naming the
/// field that does not fit.
fn object_body<T: serde::de::DeserializeOwned>(
    mut value: serde_json::Value,
) -> Result<T, ApiError> {
    integral_numbers(&mut value);
    let kind = match &value {
        serde_json::Value::Object(_) => None,
        serde_json::Value::Null => Some("null"),
        serde_json::Value::Bool(_) => Some("a boolean"),
        serde_json::Value::Number(_) => Some("a number"),
        serde_json::Value::String(_) => Some("a string"),
        serde_json::Value::Array(_) => Some("an array"),
    };
    if let Some(kind) = kind {
        return Err(ApiError::bad_request(format!(
            "invalid request body: it is {kind}; expected a JSON object"
        )));
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!("{path}: ")
        };
        ApiError::bad_request(format!("invalid request body: {at}{}", e.into_inner()))
    })
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

/// JSON has one number type: `5.0` is the integer 5 to JSON Schema (and to
/// a JavaScript client), while serde refuses it for an integer field. Such
/// numbers become integers before the body is read; fractions stay as
/// they are (and are refused where an integer is expected).
fn integral_numbers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) {
                // 2^64 and -2^63 are exact as floats; `as` would saturate
                // 2^64 (which serde_json reads as a float) to u64::MAX.
                const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;
                if (0.0..TWO_TO_64).contains(&f) {
                    *value = Value::from(f as u64);
                } else if (-(TWO_TO_64 / 2.0)..0.0).contains(&f) {
                    *value = Value::from(f as i64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(fields) => fields.values_mut().for_each(integral_numbers),
        _ => {}
    }
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
