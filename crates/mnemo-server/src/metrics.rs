//! `GET /metrics` in Prometheus' text format (the `prometheus` crate): what the HTTP door did
//! (requests and their latency by route, method and status; requests shed and rate-limited;
//! connections open, refused and closed by a timeout), what the runtime's doors did
//! ([`mnemo_agent::stats::DoorCounters`]: remembers, recalls, decisions, grounder lookups),
//! the model calls and tokens of the process by tier, and what the store holds ([`mnemo_agent::stats::StoreFigures`]: memories by kind and status,
//! index lag, open escalations, data directory bytes).
//!
//! The store figures read every memory, so a scrape reuses the last ones while the store's
//! revision has not moved and they are younger than [`STORE_FIGURES_MAX_AGE`], and reads them
//! at most once per [`STORE_FIGURES_MIN_AGE`] however often it is scraped. Who may scrape: a token reaching
//! every namespace (the figures are store-wide, like a backup), unless `serve.metrics_public`.
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use prometheus::{
    Encoder as _, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};
use tokio::time::Instant;

use mnemo_agent::stats::{DoorCounts, StoreFigures};
use mnemo_agent::Runtime;

use crate::connections::Closed;
use crate::error::{code, ApiError};
use crate::AppState;

/// The longest the store figures of a scrape may be old when the store did not change (the
/// open escalations and the bytes on disk may move without a store write).
pub const STORE_FIGURES_MAX_AGE: Duration = Duration::from_secs(15);
/// The shortest time between two reads of the store figures (each reads every memory).
pub const STORE_FIGURES_MIN_AGE: Duration = Duration::from_secs(1);

/// Latency buckets in seconds: a recall on the fake model takes milliseconds, a live model's
/// extraction seconds.
const LATENCY_BUCKETS: &[f64] = &[0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];

/// The HTTP door's own metrics, and the cache of the store figures.
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    latency: HistogramVec,
    shed: IntCounter,
    rate_limited: IntCounter,
    in_flight: IntGauge,
    connections_open: IntGauge,
    connections_refused: IntCounter,
    connections_closed: IntCounterVec,
    store_figures: tokio::sync::Mutex<Option<(Instant, StoreFigures)>>,
}

/// A metric could not be declared (two of the same name: a programming error, said at start).
#[derive(Debug, thiserror::Error)]
#[error("cannot declare the metrics: {0}")]
pub struct MetricsError(#[from] prometheus::Error);

impl Metrics {
    /// The metrics, registered.
    pub fn new() -> Result<Self, MetricsError> {
        let registry = Registry::new();
        let labels = &["route", "method", "status"];
        let requests = IntCounterVec::new(
            Opts::new("mnemo_http_requests_total", "HTTP requests answered, by route template, method and status"),
            labels,
        )?;
        let latency = HistogramVec::new(
            HistogramOpts::new(
                "mnemo_http_request_duration_seconds",
                "Time to answer an HTTP request (to the response head), by route template, method and status",
            )
            .buckets(LATENCY_BUCKETS.to_vec()),
            labels,
        )?;
        let shed = IntCounter::new(
            "mnemo_http_requests_shed_total",
            "Requests answered 503 overloaded: serve.max_in_flight requests were in flight",
        )?;
        let rate_limited = IntCounter::new(
            "mnemo_http_requests_rate_limited_total",
            "Requests answered 429 rate_limited: the token's serve.rate_limit_requests per window were used",
        )?;
        let in_flight = IntGauge::new("mnemo_http_requests_in_flight", "/v1 requests being handled now")?;
        let connections_open = IntGauge::new("mnemo_http_connections_open", "HTTP connections open now")?;
        let connections_refused = IntCounter::new(
            "mnemo_http_connections_refused_total",
            "Connections closed at accept: serve.max_connections were open",
        )?;
        let connections_closed = IntCounterVec::new(
            Opts::new(
                "mnemo_http_connections_timed_out_total",
                "Connections the server closed: header_timeout (a request head not whole in time), idle (kept alive \
                 with no request)",
            ),
            &["reason"],
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        registry.register(Box::new(shed.clone()))?;
        registry.register(Box::new(rate_limited.clone()))?;
        registry.register(Box::new(in_flight.clone()))?;
        registry.register(Box::new(connections_open.clone()))?;
        registry.register(Box::new(connections_refused.clone()))?;
        registry.register(Box::new(connections_closed.clone()))?;
        for why in [Closed::HeaderTimeout, Closed::Idle] {
            connections_closed.with_label_values(&[why.as_str()]);
        }
        Ok(Metrics {
            registry,
            requests,
            latency,
            shed,
            rate_limited,
            in_flight,
            connections_open,
            connections_refused,
            connections_closed,
            store_figures: tokio::sync::Mutex::new(None),
        })
    }

    /// A request shed (503 overloaded).
    pub fn shed(&self) {
        self.shed.inc();
    }
    /// A request refused by its token's rate limit (429).
    pub fn rate_limited(&self) {
        self.rate_limited.inc();
    }
    /// A `/v1` request is being handled until the guard is dropped.
    pub fn in_flight(&self) -> impl Drop + Send + Sync + 'static {
        GaugeHeld::new(self.in_flight.clone())
    }
    /// A connection is open until the guard is dropped.
    pub fn connection_opened(&self) -> impl Drop + Send + 'static {
        GaugeHeld::new(self.connections_open.clone())
    }
    /// A connection closed at accept (too many open).
    pub fn connection_refused(&self) {
        self.connections_refused.inc();
    }
    /// A connection the server closed, and why.
    pub fn connection_closed_by(&self, why: Closed) {
        self.connections_closed.with_label_values(&[why.as_str()]).inc();
    }

    /// The store figures: the last ones while they are fresh enough (see the module's doc),
    /// else read now. One scrape reads at a time; the others wait and take its result.
    async fn store_figures(&self, rt: &Runtime) -> Result<StoreFigures, mnemo_agent::AgentError> {
        let mut cached = self.store_figures.lock().await;
        if let Some((at, figures)) = cached.as_ref() {
            let age = at.elapsed();
            let moved = rt.engine().store_rev().await? != figures.store_rev;
            if age < STORE_FIGURES_MIN_AGE || (age < STORE_FIGURES_MAX_AGE && !moved) {
                return Ok(figures.clone());
            }
        }
        let figures = rt.store_figures().await?;
        *cached = Some((Instant::now(), figures.clone()));
        Ok(figures)
    }
}

/// A gauge raised while held.
struct GaugeHeld(IntGauge);

impl GaugeHeld {
    fn new(g: IntGauge) -> Self {
        g.inc();
        GaugeHeld(g)
    }
}

impl Drop for GaugeHeld {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Counts every request by route template (never the raw path: ids and namespaces would make
/// a series per value), method and status, and times it to its response head.
pub async fn track(State(st): State<AppState>, req: Request, next: Next) -> Response {
    let route = req.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string());
    let method = match *req.method() {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::OPTIONS => "OPTIONS",
        Method::HEAD => "HEAD",
        _ => "other",
    };
    let started = Instant::now();
    let response = next.run(req).await;
    let status = response.status();
    let labels = [route.as_deref().unwrap_or("unmatched"), method, status.as_str()];
    st.metrics.requests.with_label_values(&labels).inc();
    st.metrics.latency.with_label_values(&labels).observe(started.elapsed().as_secs_f64());
    response
}

/// `GET /metrics`: Prometheus' text format.
#[utoipa::path(get, path = "/metrics", tag = "service",
    responses((status = 200, description = "Prometheus text format (version 0.0.4): HTTP requests and latency by \
            route and status, requests shed and rate-limited, connections, remembers, recalls, decisions, grounder \
            lookups, model calls and tokens by tier, memories by kind and status, index lag, open escalations, data \
            directory bytes",
            body = String, content_type = "text/plain"),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one (unless serve.metrics_public)", body = crate::error::ErrorBody),
        (status = 403, description = "forbidden: the token does not reach every namespace (the figures are store-wide)", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn scrape(State(st): State<AppState>, req: Request) -> Response {
    if !st.settings.metrics_public {
        if let Err(refused) = crate::routes::store_wide_caller(&st, &req, "the metrics are store-wide") {
            return *refused;
        }
    }
    let local = Registry::new();
    let door = st.rt.door_counters().snapshot();
    let figures = match st.metrics.store_figures(&st.rt).await {
        Ok(f) => Some(f),
        Err(e) => {
            // The door's own figures are still worth a scrape; `mnemo_store_figures_up 0` says
            // the store's are missing.
            tracing::warn!(error = %e, "cannot read the store figures for /metrics");
            None
        }
    };
    if let Err(e) = runtime_families(&local, &door, figures.as_ref()) {
        return ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, code::INTERNAL, e.to_string()).into_response();
    }
    let mut families = st.metrics.registry.gather();
    families.extend(local.gather());
    let encoder = TextEncoder::new();
    let mut text = Vec::new();
    if let Err(e) = encoder.encode(&families, &mut text) {
        return ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, code::INTERNAL, e.to_string()).into_response();
    }
    let mut r = text.into_response();
    r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"));
    r
}

/// The runtime's counters and the store figures, declared afresh in `registry` with their
/// values now (they are kept by the runtime, not by this registry).
fn runtime_families(
    registry: &Registry,
    door: &DoorCounts,
    figures: Option<&StoreFigures>,
) -> Result<(), MetricsError> {
    let counter = |name: &str, help: &str, value: u64| -> Result<(), MetricsError> {
        let c = IntCounter::new(name, help)?;
        c.inc_by(value);
        registry.register(Box::new(c))?;
        Ok(())
    };
    counter("mnemo_remembers_total", "Turns remembered (recorded and extracted) by this process", door.remembered)?;
    counter("mnemo_forgets_total", "Forget commands carried out by this process (not dry runs)", door.forgotten)?;
    let recalls = IntCounterVec::new(
        Opts::new("mnemo_recalls_total", "Recalls by this process: assessed (graded, decided) or raw"),
        &["mode"],
    )?;
    recalls.with_label_values(&["assessed"]).inc_by(door.recalled_assessed);
    recalls.with_label_values(&["raw"]).inc_by(door.recalled_raw);
    registry.register(Box::new(recalls))?;
    let decisions = IntCounterVec::new(
        Opts::new("mnemo_decisions_total", "Decisions of assessed recalls by this process: act or escalate"),
        &["decision"],
    )?;
    decisions.with_label_values(&["act"]).inc_by(door.acted);
    decisions.with_label_values(&["escalate"]).inc_by(door.escalated);
    registry.register(Box::new(decisions))?;
    let lookups = IntCounterVec::new(
        Opts::new("mnemo_grounder_lookups_total", "Grounder lookups of assessed recalls by this process, by outcome"),
        &["outcome"],
    )?;
    for (label, n) in &door.lookups {
        lookups.with_label_values(&[label.as_str()]).inc_by(*n);
    }
    registry.register(Box::new(lookups))?;
    let calls = IntCounterVec::new(
        Opts::new(
            "mnemo_model_calls_total",
            "Model calls answered in this process, by tier (extraction, reasoning, embedding) and kind of call",
        ),
        &["tier", "call"],
    )?;
    let tokens = IntCounterVec::new(
        Opts::new(
            "mnemo_model_tokens_total",
            "Tokens the model reported for this process's calls, by tier, kind of call and direction (prompt, \
             completion); the fake reports none",
        ),
        &["tier", "call", "direction"],
    )?;
    for (call, tier, used) in mnemo_agent::stats::model_calls() {
        calls.with_label_values(&[tier, call.as_str()]).inc_by(used.calls);
        tokens.with_label_values(&[tier, call.as_str(), "prompt"]).inc_by(used.prompt_tokens);
        tokens.with_label_values(&[tier, call.as_str(), "completion"]).inc_by(used.completion_tokens);
    }
    registry.register(Box::new(calls))?;
    registry.register(Box::new(tokens))?;
    let gauge = |name: &str, help: &str, value: u64| -> Result<(), MetricsError> {
        let g = IntGauge::new(name, help)?;
        g.set(i64::try_from(value).unwrap_or(i64::MAX));
        registry.register(Box::new(g))?;
        Ok(())
    };
    gauge("mnemo_store_figures_up", "1 when the store figures below could be read", u64::from(figures.is_some()))?;
    let Some(f) = figures else { return Ok(()) };
    let memories = IntGaugeVec::new(
        Opts::new("mnemo_memories", "Memories in the store over every namespace, by kind and status"),
        &["kind", "status"],
    )?;
    for k in &f.memories {
        let set = |status: &str, n: u64| {
            memories.with_label_values(&[k.kind.as_str(), status]).set(i64::try_from(n).unwrap_or(i64::MAX))
        };
        set("active", k.active);
        set("tombstoned", k.tombstoned);
    }
    registry.register(Box::new(memories))?;
    gauge("mnemo_namespaces", "Namespaces in the store", f.namespaces)?;
    gauge("mnemo_store_revision", "The store's newest revision", f.store_rev)?;
    gauge("mnemo_index_lag_revisions", "Store revisions the index has not applied yet", f.index_lag)?;
    gauge("mnemo_escalations_open", "Escalations waiting for a human, over every namespace", f.escalations_open)?;
    gauge("mnemo_data_dir_bytes", "Bytes of the files in the data directory", f.data_dir_bytes)?;
    Ok(())
}

/// Shared by the server's state.
pub type SharedMetrics = Arc<Metrics>;
