//! Mnemo's HTTP JSON API: remember (a turn), recall (budget, trace, assessment), forget, why,
//! the agent turn (remember → recall → assess → plan and check, or escalate), the escalations a
//! human answers or dismisses (list, get, answer, dismiss), list/export/restore of a namespace's memories,
//! a backup of the whole store (`POST /v1/backup`), `/health`, `/ready` and `/openapi.json`
//! (generated from the request and response types).
//!
//! Every `/v1/namespaces/{ns}/…` call needs a bearer token from `[[serve.tokens]]`: none or an
//! unknown one → 401, a namespace the token does not reach → 403; `POST /v1/backup` holds every
//! namespace and needs a token that reaches them all (`namespaces = ["*"]`). A turn remembered
//! over HTTP is recorded under the token's principal (its authenticated source), so
//! corroboration counts distinct principals; a client's free `source` label changes nothing. Errors are
//! `{"error": {"code", "message"}}` with stable codes (see `error::code`).
//!
//! The server is the one writer of its data directory (the runtime holds the directory lock
//! for its life) and serves concurrent readers; writes are serialised by the engine. On
//! shutdown it stops accepting, lets in-flight requests finish (every acknowledged write is in
//! the store before its answer is sent), then saves the index.
//!
//! The server protects itself (`[serve]`, docs/serving.md): a request head must arrive whole
//! in time and an idle kept-alive connection is closed (`connections`); at most
//! `max_connections` connections and `max_in_flight` requests are held, more are refused at
//! once (503 `overloaded`, never queued); a token past its rate limit gets 429 (`guard`); a
//! request body that stops coming gets 408; CORS is off unless origins are named. `GET
//! /metrics` exports Prometheus figures (`metrics`).
#![deny(missing_docs)]

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use axum::Router;
use thiserror::Error;
use utoipa::OpenApi;

use guard::GuardResponses;
use mnemo_agent::{AgentError, Runtime};

pub mod api;
pub mod connections;
pub mod error;
pub mod guard;
pub mod load;
pub mod metrics;
pub mod routes;
pub mod schema;
pub mod settings;

pub use settings::{ServeSettings, TokenGrant};

/// Errors of starting or running the server.
#[derive(Debug, Error)]
pub enum ServerError {
    /// `[serve]` is wrong; names the file and the key.
    #[error("{file}: {message}")]
    Config {
        /// The config file.
        file: String,
        /// What is wrong.
        message: String,
    },
    /// The socket failed.
    #[error("cannot {action}: {source}")]
    Io {
        /// What was being done.
        action: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The runtime failed.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The metrics could not be declared.
    #[error(transparent)]
    Metrics(#[from] metrics::MetricsError),
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The wired runtime (engine, assessor).
    pub rt: Arc<Runtime>,
    /// Limits and tokens.
    pub settings: Arc<ServeSettings>,
    /// Set once shutdown begins (`/ready` answers 503).
    pub shutting_down: Arc<AtomicBool>,
    /// What `/metrics` exports of the HTTP door.
    pub metrics: Arc<metrics::Metrics>,
    /// Requests in flight and the rate-limit buckets.
    pub guards: Arc<guard::Guards>,
}

impl AppState {
    /// The state of a server of `rt` with `settings`.
    pub fn new(rt: Arc<Runtime>, settings: ServeSettings) -> Result<Self, ServerError> {
        Ok(AppState {
            rt,
            guards: Arc::new(guard::Guards::new(&settings)),
            settings: Arc::new(settings),
            shutting_down: Arc::new(AtomicBool::new(false)),
            metrics: Arc::new(metrics::Metrics::new()?),
        })
    }
}

/// The OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(title = "Mnemo HTTP API", description = "Long-term memory for AI agents that audits what it recalls."),
    paths(metrics::scrape, routes::remember, routes::recall, routes::turn, routes::forget, routes::erase, routes::why, routes::history, routes::list,
        routes::export, routes::restore, routes::escalations, routes::escalation, routes::answer, routes::dismiss,
        routes::backup, routes::health, routes::ready),
    components(schemas(api::RememberRequest, api::RememberResponse, api::About, api::AboutArg, api::RecallRequest,
        api::RecallResponse, api::RecallResult, mnemo_agent::AgentRecall, mnemo_agent::agent_view::RecallLine,
        mnemo_agent::agent_view::RecallDecision, mnemo_agent::agent_view::ActOnValue,
        mnemo_agent::agent_view::PlanView, mnemo_agent::agent_view::PlanUseView,
        mnemo_agent::agent_view::EscalationView, api::TurnRequest, api::TurnResult, api::TurnView,
        api::TurnResponse, api::ForgetRequest, api::ForgetResponse, api::EraseRequest, api::EraseResponse, api::WhyResponse, api::HistoryResponse,
        mnemo_agent::claim_history::ClaimHistory, mnemo_agent::claim_history::ClaimValue, api::ListResponse, api::RestoreResponse,
        api::EscalationList, api::AnswerRequest, api::DismissRequest,
        api::Health, api::BackupFile, error::ErrorBody, error::ErrorDetail, schema::RememberReport, schema::Pack,
        schema::Assessment, schema::Verdict, schema::AgentTurn, schema::CheckedPlan, schema::TurnEscalation,
        schema::ForgetPreview, schema::ForgetMatch, schema::EraseReport, schema::ErasedMemory, schema::ErasureRecord, schema::ErasedRow, schema::WhyReport, schema::Memory, schema::MemoryRecord, schema::Escalation, schema::EscalationClaim,
        schema::EscalationAnswer, schema::EscalationDismissal, schema::Delivery, schema::WeakMemory,
        schema::AnsweredEscalation)),
    modifiers(&BearerAuth, &GuardResponses)
)]
pub struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The router over `state`.
pub fn router(state: AppState) -> Router {
    let limit = state.settings.max_body_bytes;
    let v1 = Router::new()
        .route("/v1/namespaces/{ns}/remember", post(routes::remember))
        .route("/v1/namespaces/{ns}/recall", post(routes::recall))
        .route("/v1/namespaces/{ns}/turn", post(routes::turn))
        .route("/v1/namespaces/{ns}/forget", post(routes::forget))
        .route("/v1/namespaces/{ns}/erase", post(routes::erase))
        .route("/v1/namespaces/{ns}/memories", get(routes::list))
        .route("/v1/namespaces/{ns}/history", get(routes::history))
        .route("/v1/namespaces/{ns}/memories/{id}", get(routes::why))
        .route("/v1/namespaces/{ns}/memories/{id}/restore", post(routes::restore))
        .route("/v1/namespaces/{ns}/export", get(routes::export))
        .route("/v1/namespaces/{ns}/escalations", get(routes::escalations))
        .route("/v1/namespaces/{ns}/escalations/{id}", get(routes::escalation))
        .route("/v1/namespaces/{ns}/escalations/{id}/answer", post(routes::answer))
        .route("/v1/namespaces/{ns}/escalations/{id}/dismiss", post(routes::dismiss))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), routes::auth))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), guard::shed));
    // Over the whole store: a token that reaches every namespace.
    let store = Router::new()
        .route("/v1/backup", post(routes::backup))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), routes::auth_store))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), guard::shed));
    // Probes and /metrics are never shed: an orchestrator and a scraper must see an overloaded
    // server as it is.
    let router = Router::new()
        .route("/health", get(routes::health))
        .route("/ready", get(routes::ready))
        .route("/metrics", get(metrics::scrape))
        .route("/openapi.json", get(|| async { axum::Json(ApiDoc::openapi()) }))
        .merge(v1)
        .merge(store)
        .fallback(routes::not_found)
        .method_not_allowed_fallback(routes::method_not_allowed)
        .layer(DefaultBodyLimit::max(limit))
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(state.settings.request_body_timeout));
    // Outside the routes: a preflight carries no token and is answered by the CORS layer.
    let router = match guard::cors(&state.settings) {
        Some(cors) => router.layer(cors),
        None => router,
    };
    // Outermost: every answer is counted, a shed or refused one included.
    router.layer(axum::middleware::from_fn_with_state(state.clone(), metrics::track)).with_state(state)
}

/// Serve `rt` on `listener` until `shutdown` completes; then finish in-flight requests and
/// save the index. The caller drops the runtime afterwards (releasing the directory lock).
pub async fn serve(
    rt: Arc<Runtime>,
    settings: ServeSettings,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let limits = connections::ConnectionLimits {
        header_read_timeout: settings.header_read_timeout,
        idle_timeout: settings.idle_timeout,
        max_connections: settings.max_connections,
    };
    let state = AppState::new(rt.clone(), settings)?;
    let flag = state.shutting_down.clone();
    let metrics = state.metrics.clone();
    let app = router(state);
    connections::serve(listener, app, limits, metrics, async move {
        shutdown.await;
        flag.store(true, Ordering::SeqCst);
        tracing::info!("shutting down: no new connections; finishing requests in flight");
    })
    .await;
    rt.engine().flush_index().await.map_err(AgentError::from)?;
    Ok(())
}

/// Completes on ctrl-c or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::warn!("cannot listen for ctrl-c: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
