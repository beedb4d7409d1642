//! Structured JSON errors: `{"error": {"code": "…", "message": "…"}}` with a stable code per
//! kind of failure (clients match on the code, people read the message).
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use mnemo_agent::AgentError;
use mnemo_core::CoreError;

/// The stable error codes.
pub mod code {
    /// No or an unknown bearer token (401).
    pub const UNAUTHORIZED: &str = "unauthorized";
    /// The token does not reach this namespace (403).
    pub const FORBIDDEN: &str = "forbidden";
    /// The request body is above the size limit (413).
    pub const PAYLOAD_TOO_LARGE: &str = "payload_too_large";
    /// The body is not the JSON this endpoint takes, or a parameter is malformed (400).
    pub const BAD_REQUEST: &str = "bad_request";
    /// The request is well-formed but its content is refused (400).
    pub const INVALID_INPUT: &str = "invalid_input";
    /// Above an item-count limit (400).
    pub const TOO_MANY_ITEMS: &str = "too_many_items";
    /// No such memory, namespace or route (404).
    pub const NOT_FOUND: &str = "not_found";
    /// The method is not served on this path (405).
    pub const METHOD_NOT_ALLOWED: &str = "method_not_allowed";
    /// An idempotency key used before with another text (409).
    pub const CONFLICT: &str = "conflict";
    /// The turn was recorded but not extracted (500; it is on the ledger of unextracted turns).
    pub const UNEXTRACTED: &str = "unextracted";
    /// The store cannot do what was asked (a store that makes no file backups: 501).
    pub const UNSUPPORTED: &str = "unsupported";
    /// The server is shutting down (503).
    pub const SHUTTING_DOWN: &str = "shutting_down";
    /// Anything else (500).
    pub const INTERNAL: &str = "internal";
}

/// The error document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable code (see the API docs): unauthorized, forbidden, payload_too_large,
    /// bad_request, invalid_input, too_many_items, not_found, method_not_allowed, conflict,
    /// unextracted, unsupported, shutting_down, internal.
    pub code: String,
    /// A human-readable message.
    pub message: String,
}

/// An error answered to a client.
#[derive(Debug)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The stable code.
    pub code: &'static str,
    /// The message.
    pub message: String,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into() }
    }
    /// 400 bad_request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code::BAD_REQUEST, message)
    }
}

impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> Self {
        match e {
            AgentError::Core(c) => c.into(),
            conflict @ (AgentError::IdempotencyConflict { .. } | AgentError::EscalationClosed(_)) => {
                ApiError::new(StatusCode::CONFLICT, code::CONFLICT, conflict.to_string())
            }
            other => {
                tracing::error!(error = %other, "request failed");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, code::INTERNAL, other.to_string())
            }
        }
    }
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> Self {
        match &e {
            CoreError::InvalidInput(_) | CoreError::InvalidUtf8 { .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, code::INVALID_INPUT, e.to_string())
            }
            CoreError::NotFound(_) => ApiError::new(StatusCode::NOT_FOUND, code::NOT_FOUND, e.to_string()),
            CoreError::Unextracted { .. } => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, code::UNEXTRACTED, e.to_string())
            }
            _ => {
                tracing::error!(error = %e, "request failed");
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, code::INTERNAL, e.to_string())
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody { error: ErrorDetail { code: self.code.to_string(), message: self.message } };
        (self.status, axum::Json(body)).into_response()
    }
}
