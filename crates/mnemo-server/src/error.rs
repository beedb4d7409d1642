//! Structured JSON errors: `{"error": {"code": "…", "message": "…"}}` with a stable code per
//! kind of failure (clients match on the code, people read the message). A runtime error is
//! answered by its kind ([`mnemo_agent::AgentError::kind`], the one mapping every door uses):
//! the status and code below, and `Retry-After` (seconds) when waiting may help (busy,
//! read-only, rate-limited).
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use mnemo_agent::error::ErrorKind;
use mnemo_agent::AgentError;
use mnemo_contract::CoreError;

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
    /// The request body stopped coming for longer than `serve.request_body_timeout_secs` (408).
    pub const REQUEST_TIMEOUT: &str = "request_timeout";
    /// An idempotency key used before with another text, an escalation already closed (409).
    pub const CONFLICT: &str = "conflict";
    /// Slow down (429, with `Retry-After`): the token made its `serve.rate_limit_requests` for
    /// the window, or the model endpoint asked the server to slow down. Back off and retry.
    pub const RATE_LIMITED: &str = "rate_limited";
    /// The turn was recorded but not extracted (500; it is on the ledger of unextracted turns).
    pub const UNEXTRACTED: &str = "unextracted";
    /// The server's configuration is wrong (a setting, a kind, a plugin, a model client that
    /// cannot be had) (500).
    pub const CONFIG: &str = "config";
    /// The store or the model cannot do what was asked (a store that makes no file backups, a
    /// model without that feature) (501).
    pub const UNSUPPORTED: &str = "unsupported";
    /// A model call failed: the endpoint, its answer, the embedder (502).
    pub const MODEL_FAILURE: &str = "model_failure";
    /// Another writer holds the store or the index for now (503, with `Retry-After`).
    pub const BUSY: &str = "busy";
    /// The store or the index cannot be written here; reads still work (503, with
    /// `Retry-After`).
    pub const READ_ONLY: &str = "read_only";
    /// The server is shutting down (503).
    pub const SHUTTING_DOWN: &str = "shutting_down";
    /// `serve.max_in_flight` requests are being handled: this one is shed, not queued (503,
    /// with `Retry-After`).
    pub const OVERLOADED: &str = "overloaded";
    /// Anything else (500).
    pub const INTERNAL: &str = "internal";
}

/// `Retry-After` of a `busy` answer, in seconds: a writer's lock is held for one write.
pub const BUSY_RETRY_AFTER_SECS: u64 = 1;
/// `Retry-After` of a `read_only` answer, in seconds: the store or the index stays read-only
/// until someone makes it writable.
pub const READ_ONLY_RETRY_AFTER_SECS: u64 = 30;
/// `Retry-After` of a `rate_limited` answer, in seconds (the model client has already retried
/// as `[llm]` allows before giving up).
pub const RATE_LIMITED_RETRY_AFTER_SECS: u64 = 5;

/// The error document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ErrorDetail {
    /// A stable code (see the API docs): unauthorized (401), forbidden (403),
    /// payload_too_large (413), bad_request (400, 415, 422), invalid_input (400),
    /// too_many_items (400), not_found (404), method_not_allowed (405), request_timeout (408),
    /// conflict (409), rate_limited (429), unextracted (500), config (500), unsupported (501),
    /// model_failure (502), busy (503), read_only (503), overloaded (503), shutting_down (503),
    /// internal (500).
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
    /// `Retry-After`, in seconds, when waiting may help.
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into(), retry_after: None }
    }
    /// 400 bad_request.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code::BAD_REQUEST, message)
    }

    /// The answer to a runtime failure of `kind`: its status, code and, when waiting may help,
    /// `Retry-After`.
    pub fn of_kind(kind: ErrorKind, message: impl Into<String>) -> Self {
        let (status, code, retry) = match kind {
            ErrorKind::InvalidInput => (StatusCode::BAD_REQUEST, code::INVALID_INPUT, None),
            ErrorKind::NotFound => (StatusCode::NOT_FOUND, code::NOT_FOUND, None),
            ErrorKind::Conflict => (StatusCode::CONFLICT, code::CONFLICT, None),
            ErrorKind::Busy => (StatusCode::SERVICE_UNAVAILABLE, code::BUSY, Some(BUSY_RETRY_AFTER_SECS)),
            ErrorKind::ReadOnly => (StatusCode::SERVICE_UNAVAILABLE, code::READ_ONLY, Some(READ_ONLY_RETRY_AFTER_SECS)),
            ErrorKind::RateLimited => {
                (StatusCode::TOO_MANY_REQUESTS, code::RATE_LIMITED, Some(RATE_LIMITED_RETRY_AFTER_SECS))
            }
            ErrorKind::Model => (StatusCode::BAD_GATEWAY, code::MODEL_FAILURE, None),
            ErrorKind::Unextracted => (StatusCode::INTERNAL_SERVER_ERROR, code::UNEXTRACTED, None),
            ErrorKind::Config => (StatusCode::INTERNAL_SERVER_ERROR, code::CONFIG, None),
            ErrorKind::Unsupported => (StatusCode::NOT_IMPLEMENTED, code::UNSUPPORTED, None),
            ErrorKind::Internal => (StatusCode::INTERNAL_SERVER_ERROR, code::INTERNAL, None),
        };
        ApiError { status, code, message: message.into(), retry_after: retry }
    }
}

impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> Self {
        let kind = e.kind();
        let message = e.to_string();
        match kind {
            // The caller's to fix (or to wait for): not the server's failure.
            ErrorKind::InvalidInput | ErrorKind::NotFound | ErrorKind::Conflict => {}
            ErrorKind::Busy | ErrorKind::RateLimited => tracing::warn!(error = %message, %kind, "request failed"),
            _ => tracing::error!(error = %message, %kind, "request failed"),
        }
        ApiError::of_kind(kind, message)
    }
}

impl From<CoreError> for ApiError {
    fn from(e: CoreError) -> Self {
        AgentError::Core(e).into()
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody { error: ErrorDetail { code: self.code.to_string(), message: self.message } };
        let mut r = (self.status, axum::Json(body)).into_response();
        if let Some(s) = self.retry_after {
            r.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(s));
        }
        r
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mnemo_contract::{
        AssessorErrorKind, FailureMessage, GrounderErrorKind, IndexErrorKind, ModelErrorKind, ModelRole,
        StoreErrorKind, TurnId,
    };

    #[test]
    fn every_kind_has_its_status_code_and_retry_after() {
        let core = |c: CoreError| ApiError::from(c);
        let msg = |m: &str| FailureMessage(m.into());
        let cases: Vec<(ApiError, u16, &str, Option<u64>)> = vec![
            (core(CoreError::InvalidInput("x".into())), 400, "invalid_input", None),
            (core(CoreError::NotFound("m9".into())), 404, "not_found", None),
            (
                AgentError::IdempotencyConflict { key: "k".into(), turn: TurnId(1), at: mnemo_contract::Timestamp(0) }
                    .into(),
                409,
                "conflict",
                None,
            ),
            (AgentError::EscalationClosed("answered".into()).into(), 409, "conflict", None),
            (core(CoreError::store(StoreErrorKind::Busy, msg("locked"))), 503, "busy", Some(1)),
            (core(CoreError::index(IndexErrorKind::Busy, msg("locked"))), 503, "busy", Some(1)),
            (
                AgentError::LockTimeout {
                    path: "d/mnemo.lock".into(),
                    holder: "pid 1".into(),
                    waited: std::time::Duration::ZERO,
                }
                .into(),
                503,
                "busy",
                Some(1),
            ),
            (core(CoreError::store(StoreErrorKind::ReadOnly, msg("ro"))), 503, "read_only", Some(30)),
            (
                core(CoreError::model(ModelRole::Reasoner, ModelErrorKind::RateLimited, msg("429"))),
                429,
                "rate_limited",
                Some(5),
            ),
            (
                core(CoreError::model(ModelRole::Embedder, ModelErrorKind::Unavailable, msg("down"))),
                502,
                "model_failure",
                None,
            ),
            (
                core(CoreError::model_message(ModelRole::Reasoner, ModelErrorKind::BadAnswer, "not JSON")),
                502,
                "model_failure",
                None,
            ),
            (
                core(CoreError::model_message(ModelRole::Reasoner, ModelErrorKind::Other, "call failed")),
                502,
                "model_failure",
                None,
            ),
            (core(CoreError::model(ModelRole::Reasoner, ModelErrorKind::Config, msg("no key"))), 500, "config", None),
            (AgentError::Config { file: "f".into(), message: "m".into() }.into(), 500, "config", None),
            (
                core(CoreError::model(ModelRole::Reasoner, ModelErrorKind::Unsupported, msg("fake"))),
                501,
                "unsupported",
                None,
            ),
            (
                core(CoreError::Unextracted {
                    turn: TurnId(3),
                    error: Box::new(CoreError::model_message(ModelRole::Reasoner, ModelErrorKind::BadAnswer, "x")),
                }),
                500,
                "unextracted",
                None,
            ),
            (core(CoreError::store(StoreErrorKind::Damaged, msg("bad"))), 500, "internal", None),
            (
                core(CoreError::model(ModelRole::Embedder, ModelErrorKind::BadAnswer, msg("3 vectors for 2 texts"))),
                502,
                "model_failure",
                None,
            ),
            (
                core(CoreError::model_message(ModelRole::Embedder, ModelErrorKind::Other, "cache lost a vector")),
                502,
                "model_failure",
                None,
            ),
            (core(CoreError::store_message(StoreErrorKind::Other, "no id")), 500, "internal", None),
            (core(CoreError::grounder_message(GrounderErrorKind::Unavailable, "down")), 500, "internal", None),
            (core(CoreError::grounder_message(GrounderErrorKind::BadAnswer, "2 values")), 500, "internal", None),
            (core(CoreError::assessor_message(AssessorErrorKind::BadAnswer, "refused")), 500, "internal", None),
        ];
        for (e, status, code, after) in cases {
            let what = format!("{} {}", e.code, e.message);
            assert_eq!((e.status.as_u16(), e.code, e.retry_after), (status, code, after), "{what}");
            let r = e.into_response();
            let header = r.headers().get(header::RETRY_AFTER).map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
            assert_eq!(header, after, "{what}");
        }
    }
}
