//! The request guards of `/v1` (the connection guards are in `connections`): load shedding
//! (at most `serve.max_in_flight` requests handled at once; one more is answered 503
//! `overloaded` with `Retry-After` at once, never queued), per-token rate limits (a token
//! bucket per bearer token: 429 `rate_limited` with `Retry-After`), CORS (none unless
//! `serve.cors_origins` names origins) and the request body timeout (408 `request_timeout`).
//!
//! Rate-limit buckets refill on tokio's monotonic clock, not the injected `Clock`: a request
//! rate is a transport concern in real seconds, whatever time the memories are on.
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tower_http::cors::{AllowOrigin, CorsLayer};

use crate::error::{code, ApiError};
use crate::settings::ServeSettings;
use crate::AppState;

/// `Retry-After` of a shed request, in seconds: requests in flight finish in milliseconds to
/// seconds, so a client retries soon.
pub const OVERLOADED_RETRY_AFTER_SECS: u64 = 1;

/// The state of the request guards.
pub struct Guards {
    in_flight: Arc<Semaphore>,
    max_in_flight: usize,
    /// One bucket per `[[serve.tokens]]` entry, by its place (the set is fixed at start, so
    /// nothing grows with traffic).
    buckets: Vec<Mutex<Bucket>>,
}

impl Guards {
    /// Guards for `settings`.
    pub fn new(settings: &ServeSettings) -> Self {
        let now = Instant::now();
        Guards {
            in_flight: Arc::new(Semaphore::new(settings.max_in_flight)),
            max_in_flight: settings.max_in_flight,
            buckets: settings
                .tokens
                .iter()
                .map(|g| Mutex::new(Bucket::full(settings.rate_limit_of(g).unwrap_or(0), now)))
                .collect(),
        }
    }

    /// Take one request from the bucket of token `index`, whose limit is `limit` requests per
    /// `window`: Err(wait) when it is empty, `wait` being the time until it holds one again.
    pub fn take(&self, index: usize, limit: u32, window: Duration) -> Result<(), Duration> {
        let Some(bucket) = self.buckets.get(index) else { return Ok(()) };
        bucket.lock().unwrap_or_else(PoisonError::into_inner).take(limit, window, Instant::now())
    }
}

/// A token bucket: holds up to `limit` requests and refills at `limit` per window, so a burst
/// of the whole window's allowance is let through and then one request per window/limit.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(limit: u32, now: Instant) -> Self {
        Bucket { tokens: f64::from(limit), at: now }
    }

    fn take(&mut self, limit: u32, window: Duration, now: Instant) -> Result<(), Duration> {
        let limit = f64::from(limit);
        let per_sec = limit / window.as_secs_f64();
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * per_sec).min(limit);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            Ok(())
        } else {
            Err(Duration::from_secs_f64((1.0 - self.tokens) / per_sec))
        }
    }
}

/// Load shedding of `/v1`: a request above `serve.max_in_flight` gets 503 `overloaded` with
/// `Retry-After` at once. A request holds its place until its answer is sent (a streamed
/// export included).
pub async fn shed(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let Ok(permit) = st.guards.in_flight.clone().try_acquire_owned() else {
        st.metrics.shed();
        let mut e = ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            code::OVERLOADED,
            format!(
                "the server is handling {} requests (serve.max_in_flight); retry after {OVERLOADED_RETRY_AFTER_SECS} s",
                st.guards.max_in_flight
            ),
        );
        e.retry_after = Some(OVERLOADED_RETRY_AFTER_SECS);
        return e.into_response();
    };
    let counted = st.metrics.in_flight();
    let response = next.run(req).await;
    response.map(|body| crate::connections::hold_until_sent(body, (permit, counted)))
}

/// The 429 of a token past its rate limit, or None when it may go on. Called by the
/// authentication middlewares once the token is known.
pub fn rate_limited(st: &AppState, index: usize, principal: &str) -> Option<Response> {
    let grant = st.settings.tokens.get(index)?;
    let limit = st.settings.rate_limit_of(grant)?;
    let window = st.settings.rate_limit_window;
    let wait = st.guards.take(index, limit, window).err()?;
    st.metrics.rate_limited();
    // Whole seconds, rounded up: a client that waits this long finds a request in the bucket.
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let mut e = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        code::RATE_LIMITED,
        format!(
            "the token of {principal} made its {limit} requests of the last {} s (serve.rate_limit_requests); \
             retry after {secs} s",
            window.as_secs()
        ),
    );
    e.retry_after = Some(secs.max(1));
    Some(e.into_response())
}

/// The CORS layer for `serve.cors_origins`, or None when it names none (then no response
/// carries a CORS header, and a browser refuses every cross-origin call).
pub fn cors(settings: &ServeSettings) -> Option<CorsLayer> {
    if settings.cors_origins.is_empty() {
        return None;
    }
    // Checked when the settings were read; an origin that is not a header value is skipped.
    let origins: Vec<HeaderValue> =
        settings.cors_origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()).collect();
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST])
            .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
            .expose_headers([header::RETRY_AFTER])
            .max_age(Duration::from_secs(600)),
    )
}

/// Whether a body that could not be read failed because its next piece did not come in time
/// (`tower_http`'s request body timeout).
pub fn is_body_timeout(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut e = Some(error);
    while let Some(err) = e {
        if err.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        e = err.source();
    }
    false
}

/// The 408 of a request body that stopped coming.
pub fn body_timeout() -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        code::REQUEST_TIMEOUT,
        "the request body stopped coming for longer than the server waits (serve.request_body_timeout_secs)",
    )
}

/// Declares the guards' answers on every `/v1` operation of the OpenAPI document: 503
/// `overloaded` and 429 `rate_limited` on all, 408 `request_timeout` on those with a body (added
/// to a status already declared for another reason, e.g. 503 `busy`).
pub struct GuardResponses;

impl utoipa::Modify for GuardResponses {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (_, item) in openapi.paths.paths.iter_mut().filter(|(p, _)| p.starts_with("/v1/")) {
            for op in [&mut item.get, &mut item.post].into_iter().flatten() {
                declare(
                    op,
                    "503",
                    "overloaded: serve.max_in_flight requests are being handled (shed, not queued); Retry-After says \
                     when to try again",
                );
                declare(
                    op,
                    "429",
                    "rate_limited: the token made its serve.rate_limit_requests for the window; Retry-After says when \
                     to try again",
                );
                if op.request_body.is_some() {
                    declare(op, "408", "request_timeout: the body stopped coming for serve.request_body_timeout_secs");
                }
            }
        }
    }
}

/// `status` answered for `what` by `op`: a new error response, or `what` added to the one
/// declared.
fn declare(op: &mut utoipa::openapi::path::Operation, status: &str, what: &str) {
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
    match op.responses.responses.get_mut(status) {
        Some(RefOr::T(r)) => r.description = format!("{}; or {what}", r.description),
        Some(RefOr::Ref(_)) => {}
        None => {
            let body = ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build();
            let r = ResponseBuilder::new().description(what).content("application/json", body).build();
            op.responses.responses.insert(status.to_string(), RefOr::T(r));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_lets_its_limit_through_then_refills_at_its_rate() {
        let t0 = Instant::now();
        let window = Duration::from_secs(60);
        let mut b = Bucket::full(3, t0);
        for _ in 0..3 {
            assert_eq!(b.take(3, window, t0), Ok(()));
        }
        let wait = b.take(3, window, t0).unwrap_err();
        assert!((wait.as_secs_f64() - 20.0).abs() < 1e-6, "one request per 20 s: {wait:?}");
        assert!(b.take(3, window, t0 + Duration::from_secs(19)).is_err());
        assert_eq!(b.take(3, window, t0 + Duration::from_secs(21)), Ok(()));
        // Never above the limit however long it rests.
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert_eq!(b.take(3, window, later), Ok(()));
        }
        assert!(b.take(3, window, later).is_err());
    }
}
