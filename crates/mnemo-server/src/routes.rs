//! The handlers: each checks its input, calls the runtime, answers JSON. Authentication and
//! the namespace wall are checked before any of them runs (`auth`).
use std::collections::HashMap;
use std::sync::atomic::Ordering;

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, Path, Query, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};

use mnemo_agent::agent_view::UnknownDetail;
use mnemo_agent::door::{ForgetAnswer, ForgetInput, RecallAnswer, RecallInput, RememberInput, TurnInput};
use mnemo_agent::escalation::{BadEscalationId, EscalationId};
use mnemo_agent::Detail;
use mnemo_contract::{ForgetCommand, IdRef, MemoryId, Namespace};

use crate::api::*;
use crate::error::{code, ApiError, ErrorBody};
use crate::settings::TokenGrant;
use crate::AppState;

/// Who is calling, and on which namespace (set by `auth`).
#[derive(Clone, Debug)]
pub struct Caller {
    /// The token's principal.
    pub principal: String,
    /// The namespace of the path.
    pub namespace: Namespace,
    /// The token may answer and dismiss escalations (`answers = true`).
    pub answers: bool,
    /// The token has the `erase` scope (`erase = true`).
    pub erase: bool,
}

/// Default page size of `list`.
const DEFAULT_PAGE: usize = 100;

/// JSON body whose rejections are structured errors (413 for a body above the limit).
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(ApiJson(v)),
            Err(r) => Err(json_rejection(r)),
        }
    }
}

/// An optional JSON body: none when the body is empty (with or without a `Content-Type`:
/// generated clients send `application/json` with no body), else as [`ApiJson`] (so a body
/// not sent as `application/json` is 415, never ignored).
impl<S, T> axum::extract::OptionalFromRequest<S> for ApiJson<T>
where
    Json<T>: FromRequest<S, Rejection = JsonRejection>,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Option<Self>, Self::Rejection> {
        let (parts, body) = req.into_parts();
        let bytes = axum::body::Bytes::from_request(Request::from_parts(parts.clone(), body), state).await.map_err(
            |r| match r.status() {
                StatusCode::PAYLOAD_TOO_LARGE => json_rejection(JsonRejection::BytesRejection(r)),
                _ if crate::guard::is_body_timeout(&r) => crate::guard::body_timeout(),
                _ => ApiError::new(r.status(), code::BAD_REQUEST, r.body_text()),
            },
        )?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let req = Request::from_parts(parts, axum::body::Body::from(bytes));
        <ApiJson<T> as FromRequest<S>>::from_request(req, state).await.map(Some)
    }
}

/// A body the JSON extractor refused, as a structured error.
fn json_rejection(r: JsonRejection) -> ApiError {
    if crate::guard::is_body_timeout(&r) {
        return crate::guard::body_timeout();
    }
    if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            code::PAYLOAD_TOO_LARGE,
            "the request body is larger than this server accepts (serve.max_body_bytes)",
        );
    }
    ApiError::new(r.status(), code::BAD_REQUEST, r.body_text())
}

/// The grant of the request's bearer token (with its place in `[[serve.tokens]]`), if it
/// carries a known one.
fn bearer_grant<'a>(st: &'a AppState, req: &Request) -> Option<(usize, &'a TokenGrant)> {
    let token = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim);
    token.and_then(|t| st.settings.grant_at(t))
}

/// The 401 of a request without a known bearer token.
fn unauthorized() -> Response {
    let mut r = ApiError::new(
        StatusCode::UNAUTHORIZED,
        code::UNAUTHORIZED,
        "a valid bearer token is required (Authorization: Bearer …)",
    )
    .into_response();
    r.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// Bearer token → principal; the namespace in the path must be one the token reaches.
pub async fn auth(
    State(st): State<AppState>,
    params: Result<Path<HashMap<String, String>>, PathRejection>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some((index, grant)) = bearer_grant(&st, &req) else {
        return unauthorized();
    };
    if let Some(refused) = crate::guard::rate_limited(&st, index, &grant.principal) {
        return refused;
    }
    let params = match params {
        Ok(Path(p)) => p,
        Err(e) => return ApiError::bad_request(e.body_text()).into_response(),
    };
    let Some(ns) = params.get("ns") else {
        return ApiError::bad_request("the path names no namespace").into_response();
    };
    let namespace = match Namespace::new(ns) {
        Ok(n) => n,
        Err(e) => return ApiError::new(StatusCode::BAD_REQUEST, code::INVALID_INPUT, e.to_string()).into_response(),
    };
    if !grant.reaches(namespace.as_str()) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            code::FORBIDDEN,
            format!("the token of {} does not reach namespace {namespace}", grant.principal),
        )
        .into_response();
    }
    req.extensions_mut().insert(Caller {
        principal: grant.principal.clone(),
        namespace,
        answers: grant.answers,
        erase: grant.erase,
    });
    next.run(req).await
}

/// Who is calling a route over the whole store (every namespace), set by `auth_store`.
#[derive(Clone, Debug)]
pub struct StoreCaller {
    /// The token's principal.
    pub principal: String,
}

/// Bearer token → principal, for routes over the whole store (a backup holds every
/// namespace): the token must reach every namespace (`namespaces = ["*"]`), else 403.
pub async fn auth_store(State(st): State<AppState>, mut req: Request, next: Next) -> Response {
    let caller = match store_wide_caller(&st, &req, "a backup holds every namespace") {
        Ok(c) => c,
        Err(refused) => return *refused,
    };
    req.extensions_mut().insert(caller);
    next.run(req).await
}

/// The caller of a route over the whole store (a backup, the metrics), or its refusal: 401
/// without a known token, 429 past the token's rate limit, 403 for a token that does not
/// reach every namespace (`why` says what makes the route store-wide).
pub fn store_wide_caller(st: &AppState, req: &Request, why: &str) -> Result<StoreCaller, Box<Response>> {
    let Some((index, grant)) = bearer_grant(st, req) else {
        return Err(Box::new(unauthorized()));
    };
    if let Some(refused) = crate::guard::rate_limited(st, index, &grant.principal) {
        return Err(Box::new(refused));
    }
    if !grant.namespaces.iter().any(|n| n == "*") {
        return Err(Box::new(
            ApiError::new(
                StatusCode::FORBIDDEN,
                code::FORBIDDEN,
                format!(
                    "{why}: the token of {} reaches only {}; it needs a token whose [[serve.tokens]] entry has \
                 namespaces = [\"*\"]",
                    grant.principal,
                    grant.namespaces.join(", ")
                ),
            )
            .into_response(),
        ));
    }
    Ok(StoreCaller { principal: grant.principal.clone() })
}

/// A payload as a tenant is shown it: no store-wide counters, no embedding vectors.
fn to_value<T: serde::Serialize>(v: &T) -> Result<serde_json::Value, ApiError> {
    mnemo_agent::json_view::tenant_json(v, false)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, code::INTERNAL, format!("cannot encode: {e}")))
}

/// The memory a path names (`m42`, or a stored id), found in the caller's namespace.
async fn memory_in_path(
    st: &AppState,
    c: &Caller,
    p: Result<Path<(String, String)>, PathRejection>,
) -> Result<MemoryId, ApiError> {
    let Path((_, id)) = p.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let r: IdRef = id.parse().map_err(|e: mnemo_contract::BadId| invalid(e.to_string()))?;
    Ok(st.rt.engine().memory_id(&c.namespace, r).await?)
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, code::INVALID_INPUT, message.into())
}

/// Remember a turn.
#[utoipa::path(post, path = "/v1/namespaces/{ns}/remember", tag = "memory",
    params(("ns" = String, Path, description = "namespace")),
    request_body = RememberRequest,
    responses((status = 200, description = "what the turn wrote", body = RememberResponse),
        (status = 400, description = "bad_request or invalid_input: malformed JSON or parameter, a value refused (an `at` that is not a time, further ahead of the server's clock than [time] max_future_skew_secs (default 5 minutes), or before the namespace's last turn), or above a limit (too_many_items)", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace", body = ErrorBody),
        (status = 409, description = "conflict: the idempotency key was used before with another text", body = ErrorBody),
        (status = 413, description = "payload_too_large: the body is above serve.max_body_bytes", body = ErrorBody),
        (status = 415, description = "bad_request: the body is not sent as application/json", body = ErrorBody),
        (status = 422, description = "bad_request: the JSON is not this endpoint's body (an unknown, missing or mistyped field)", body = ErrorBody),
        (status = 500, description = "internal, config (the server's configuration), or unextracted (the turn is recorded but was not extracted; `mnemo reextract` retries it)", body = ErrorBody),
        (status = 503, description = "busy (another writer holds the store or the index) or read_only (the store or the index cannot be written here); Retry-After says when to try again", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn remember(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    ApiJson(req): ApiJson<RememberRequest>,
) -> Result<Json<RememberResponse>, ApiError> {
    let label_note = req.source.as_deref().map(str::trim).filter(|l| !l.is_empty() && *l != c.principal).map(|l| {
        format!(
            "source label \"{l}\" is the word of principal \"{}\" and counts as \"{}\" (one source, however many labels)",
            c.principal, c.principal
        )
    });
    let at =
        req.at.as_deref().map(mnemo_agent::door::parse_time).transpose().map_err(|e| invalid(format!("at {e}")))?;
    let input = RememberInput { source: c.principal.clone(), text: req.text, idempotency_key: req.idempotency_key, at };
    let mut report = st.rt.remember_input(&c.namespace, &input).await?;
    report.notes.extend(label_note);
    Ok(Json(RememberResponse { principal: c.principal, report: to_value(&report)? }))
}

/// A query above the server's limit is refused before any work.
fn check_query(st: &AppState, query: &str) -> Result<(), ApiError> {
    if query.len() > st.settings.max_query_bytes {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            code::TOO_MANY_ITEMS,
            format!(
                "the query is {} bytes; at most {} are accepted (serve.max_query_bytes)",
                query.len(),
                st.settings.max_query_bytes
            ),
        ));
    }
    Ok(())
}

/// Recall a pack under a budget; unless raw, ground and grade it and decide ACT or ESCALATE.
/// The answer is the agent view unless the body asks for `"detail": "full"`.
#[utoipa::path(post, path = "/v1/namespaces/{ns}/recall", tag = "memory",
    params(("ns" = String, Path, description = "namespace")),
    request_body = RecallRequest,
    responses((status = 200, body = RecallResult,
            description = "detail compact (default): AgentRecall; detail full: RecallResponse"),
        (status = 400, description = "bad_request or invalid_input: malformed JSON or parameter, a value refused, or above a limit (too_many_items)", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace", body = ErrorBody),
        (status = 413, description = "payload_too_large: the body is above serve.max_body_bytes", body = ErrorBody),
        (status = 415, description = "bad_request: the body is not sent as application/json", body = ErrorBody),
        (status = 422, description = "bad_request: the JSON is not this endpoint's body (an unknown, missing or mistyped field)", body = ErrorBody),
        (status = 500, description = "internal, or config (the server's configuration)", body = ErrorBody),
        (status = 429, description = "rate_limited: the model endpoint asked to slow down; Retry-After says when to try again", body = ErrorBody),
        (status = 502, description = "model_failure: a model call failed (the endpoint, its answer, the embedder)", body = ErrorBody),
        (status = 503, description = "busy (another writer holds the store or the index) or read_only (the store or the index cannot be written here); Retry-After says when to try again", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn recall(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    ApiJson(req): ApiJson<RecallRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    check_query(&st, &req.query)?;
    let input = RecallInput {
        query: req.query,
        budget: req.budget,
        mode: req.mode.as_deref().map(str::parse).transpose()?,
        about: req.about,
        raw: req.raw,
        detail: detail(req.detail.as_deref())?,
        as_of: time_field("as_of", req.as_of.as_deref())?,
        since: time_field("since", req.since.as_deref())?,
        until: time_field("until", req.until.as_deref())?,
        valid_at: time_field("valid_at", req.valid_at.as_deref())?,
    };
    // Written as the tenant reads it (short ids) here: the declared body is RecallResult.
    Ok(Json(match st.rt.recall_input(&c.namespace, &input).await? {
        RecallAnswer::Compact(view) => to_value(&st.rt.with_text(*view))?,
        RecallAnswer::FullRaw(pack) => {
            to_value(&RecallResponse { pack: to_value(&pack)?, assessment: None, verdict: None, action: None })?
        }
        RecallAnswer::Full(t) => to_value(&RecallResponse {
            pack: to_value(&t.pack)?,
            assessment: Some(to_value(&t.assessment)?),
            verdict: Some(to_value(&t.verdict)?),
            action: Some(t.action),
        })?,
    }))
}

/// `detail` as a door takes it: `compact` (the default) or `full`; anything else is refused
/// naming both.
fn detail(given: Option<&str>) -> Result<Detail, ApiError> {
    Ok(given.map(str::parse).transpose().map_err(|e: UnknownDetail| invalid(e.to_string()))?.unwrap_or_default())
}

/// An agent turn: remember the message, recall, assess, then on ACT plan and check the plan
/// against the pack, or on ESCALATE record the escalation a human answers. The answer is what
/// an agent reads unless the body asks for `"detail": "full"`.
#[utoipa::path(post, path = "/v1/namespaces/{ns}/turn", tag = "agent",
    params(("ns" = String, Path, description = "namespace")),
    request_body = TurnRequest,
    responses((status = 200, body = TurnResult,
            description = "detail compact (default): TurnView, what the message wrote and the recall as an agent \
                reads it, with the checked plan (ACT) or the escalation and its id (ESCALATE); detail full: \
                TurnResponse, the whole turn"),
        (status = 400, description = "bad_request or invalid_input: malformed JSON or parameter, a value refused (an empty text, an unknown detail), or above a limit (too_many_items)", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace", body = ErrorBody),
        (status = 413, description = "payload_too_large: the body is above serve.max_body_bytes", body = ErrorBody),
        (status = 415, description = "bad_request: the body is not sent as application/json", body = ErrorBody),
        (status = 422, description = "bad_request: the JSON is not this endpoint's body (an unknown, missing or mistyped field)", body = ErrorBody),
        (status = 500, description = "internal, config (the server's configuration), or unextracted (the turn is recorded but was not extracted; `mnemo reextract` retries it)", body = ErrorBody),
        (status = 429, description = "rate_limited: the model endpoint asked to slow down; Retry-After says when to try again", body = ErrorBody),
        (status = 502, description = "model_failure: a model call failed (the endpoint, its answer, the embedder)", body = ErrorBody),
        (status = 503, description = "busy (another writer holds the store or the index) or read_only (the store or the index cannot be written here); Retry-After says when to try again", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn turn(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    ApiJson(req): ApiJson<TurnRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let detail = detail(req.detail.as_deref())?;
    let input = TurnInput { source: c.principal.clone(), text: req.text, about: req.about, budget: req.budget };
    let t = st.rt.turn_input(&c.namespace, &input).await?;
    // Written as the tenant reads it (short ids): the declared body is TurnResult.
    Ok(Json(match detail {
        Detail::Compact => {
            let view = st.rt.turn_view(&t);
            to_value(&TurnView {
                principal: c.principal,
                remembered: to_value(&view.remembered)?,
                text: st.rt.render_turn(&view),
                recall: st.rt.with_text(view.recall),
            })?
        }
        Detail::Full => to_value(&TurnResponse { principal: c.principal, turn: to_value(&t)? })?,
    }))
}

/// Forget exactly what a command designates.
#[utoipa::path(post, path = "/v1/namespaces/{ns}/forget", tag = "memory",
    params(("ns" = String, Path, description = "namespace")),
    request_body = ForgetRequest,
    responses((status = 200, description = "what the command tombstoned (`report`, the report of a remember), or with `dry_run` what it would tombstone and keep, and why (`preview`, `text`; nothing written)", body = ForgetResponse),
        (status = 400, description = "bad_request or invalid_input: malformed JSON or parameter, a value refused, or above a limit (too_many_items)", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace", body = ErrorBody),
        (status = 413, description = "payload_too_large: the body is above serve.max_body_bytes", body = ErrorBody),
        (status = 415, description = "bad_request: the body is not sent as application/json", body = ErrorBody),
        (status = 422, description = "bad_request: the JSON is not this endpoint's body (an unknown, missing or mistyped field)", body = ErrorBody),
        (status = 500, description = "internal, or config (the server's configuration)", body = ErrorBody),
        (status = 429, description = "rate_limited: the model endpoint asked to slow down; Retry-After says when to try again", body = ErrorBody),
        (status = 502, description = "model_failure: a model call failed (the endpoint, its answer, the embedder)", body = ErrorBody),
        (status = 503, description = "busy (another writer holds the store or the index) or read_only (the store or the index cannot be written here); Retry-After says when to try again", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn forget(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    ApiJson(req): ApiJson<ForgetRequest>,
) -> Result<Json<ForgetResponse>, ApiError> {
    let input = ForgetInput {
        source: c.principal.clone(),
        command: ForgetCommand::parse_arg(&req.command)
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, code::INVALID_INPUT, e))?,
        dry_run: req.dry_run,
        include_pinned: req.include_pinned,
    };
    Ok(Json(match st.rt.forget_input(&c.namespace, &input).await? {
        ForgetAnswer::Forgotten(r) => {
            ForgetResponse { principal: c.principal, report: Some(to_value(&r)?), preview: None, text: None }
        }
        ForgetAnswer::Preview(p) => ForgetResponse {
            principal: c.principal,
            report: None,
            text: Some(p.render()),
            preview: Some(to_value(&p)?),
        },
    }))
}

/// Erase for good (unlike forget, which tombstones): a memory, a turn, every version of a
/// claim, or every memory and turn of a subject; needs the token's `erase` scope. Irreversible:
/// try `dry_run` first. See docs/erasure.md.
#[utoipa::path(post, path = "/v1/namespaces/{ns}/erase", tag = "memory",
    params(("ns" = String, Path, description = "namespace")),
    request_body = EraseRequest,
    responses((status = 200, description = "what was erased (with `dry_run`: what would be, with the memories' content; nothing written)", body = EraseResponse),
        (status = 400, description = "bad_request or invalid_input: malformed JSON or parameter, no reason, a target that does not parse, or already erased", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace, or lacks the `erase` scope (erase = true in [[serve.tokens]])", body = ErrorBody),
        (status = 404, description = "not_found: no such memory, turn, claim or subject in this namespace", body = ErrorBody),
        (status = 413, description = "payload_too_large: the body is above serve.max_body_bytes", body = ErrorBody),
        (status = 415, description = "bad_request: the body is not sent as application/json", body = ErrorBody),
        (status = 422, description = "bad_request: the JSON is not this endpoint's body (an unknown, missing or mistyped field)", body = ErrorBody),
        (status = 500, description = "internal, or config (the server's configuration)", body = ErrorBody),
        (status = 503, description = "busy (another writer holds the store or the index) or read_only (the store or the index cannot be written here); Retry-After says when to try again", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn erase(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    ApiJson(req): ApiJson<EraseRequest>,
) -> Result<Json<EraseResponse>, ApiError> {
    if !c.erase {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            code::FORBIDDEN,
            format!(
                "the token of {} lacks the erase scope: erasure cannot be undone, so a token must be given it \
                 (erase = true in [[serve.tokens]])",
                c.principal
            ),
        ));
    }
    let input = mnemo_agent::door::EraseInput {
        what: mnemo_agent::door::EraseWhat::parse_arg(&req.what, req.subject)
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, code::INVALID_INPUT, e))?,
        reason: req.reason,
        dry_run: req.dry_run,
        by: c.principal.clone(),
    };
    let r = st.rt.erase_input(&c.namespace, &input).await?;
    Ok(Json(EraseResponse { principal: c.principal, text: r.render(), report: to_value(&r)? }))
}

/// A memory's history: created from which turn, reinforced by whom, tombstoned why.
#[utoipa::path(get, path = "/v1/namespaces/{ns}/memories/{id}", tag = "memory",
    params(("ns" = String, Path, description = "namespace"), ("id" = String, Path, description = "memory id: m42 as remember, recall and list show it")),
    responses((status = 200, description = "the memory's history", body = WhyResponse),
        (status = 400, description = "bad_request or invalid_input: malformed JSON or parameter, a value refused, or above a limit (too_many_items)", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace", body = ErrorBody),
        (status = 404, description = "not_found: no such memory in this namespace", body = ErrorBody),
        (status = 500, description = "internal, or config (the server's configuration)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn why(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    p: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<WhyResponse>, ApiError> {
    let id = memory_in_path(&st, &c, p).await?;
    let w = st.rt.why(&c.namespace, id).await?;
    Ok(Json(WhyResponse { why: to_value(&w)?, text: mnemo_agent::why_view::render_why(&w) }))
}

/// The values a claim has had, oldest first: when memory recorded each, when and why it
/// stopped holding it, and its sources.
#[utoipa::path(get, path = "/v1/namespaces/{ns}/history", tag = "memories",
    params(("ns" = String, Path, description = "namespace"), HistoryQuery),
    responses((status = 200, description = "the claim's values", body = HistoryResponse),
        (status = 400, description = "bad_request or invalid_input: malformed JSON or parameter, a value refused, or above a limit (too_many_items)", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace", body = ErrorBody),
        (status = 500, description = "internal, or config (the server's configuration)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn history(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    q: Result<Query<HistoryQuery>, QueryRejection>,
) -> Result<Json<HistoryResponse>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let key: mnemo_contract::ClaimKey =
        q.claim.parse().map_err(|e: mnemo_contract::CoreError| invalid(e.to_string()))?;
    let h = st.rt.history_input(&c.namespace, &key).await?;
    let text = h.text();
    Ok(Json(HistoryResponse { history: h, text }))
}

/// One page of the namespace's memories, by id.
#[utoipa::path(get, path = "/v1/namespaces/{ns}/memories", tag = "memories",
    params(("ns" = String, Path, description = "namespace"), ListQuery),
    responses((status = 200, description = "one page of memories", body = ListResponse),
        (status = 400, description = "bad_request or invalid_input: malformed JSON or parameter, a value refused, or above a limit (too_many_items)", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace", body = ErrorBody),
        (status = 500, description = "internal, or config (the server's configuration)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    q: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<ListResponse>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let limit = q.limit.unwrap_or(DEFAULT_PAGE.min(st.settings.max_page));
    if limit == 0 || limit > st.settings.max_page {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            code::TOO_MANY_ITEMS,
            format!("limit must be 1 to {} (serve.max_page), got {limit}", st.settings.max_page),
        ));
    }
    let after = q.after.as_deref().map(str::parse::<IdRef>).transpose().map_err(|e| invalid(e.to_string()))?;
    let p = st.rt.list_after(&c.namespace, after, limit, q.include_tombstoned).await?;
    Ok(Json(ListResponse {
        memories: p.memories.iter().map(to_value).collect::<Result<_, _>>()?,
        next_after: p.next_after.map(|i| i.short()),
    }))
}

/// Every memory of the namespace as JSON lines (application/x-ndjson), one memory per line;
/// the header `X-Mnemo-Chain-Head: SEQ HASH` names the namespace's history chain head.
#[utoipa::path(get, path = "/v1/namespaces/{ns}/export", tag = "memories",
    params(("ns" = String, Path, description = "namespace"), ExportQuery),
    responses((status = 200, description = "one MemoryRecord per line, as JSON (no embedding vectors)", content_type = "application/x-ndjson", body = String),
        (status = 400, description = "bad_request or invalid_input: malformed JSON or parameter, a value refused, or above a limit (too_many_items)", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace", body = ErrorBody),
        (status = 500, description = "internal, or config (the server's configuration)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn export(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    q: Result<Query<ExportQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let mut body = String::new();
    st.rt
        .export(&c.namespace, q.include_tombstoned, &mut |l: &str| {
            body.push_str(l);
            body.push('\n');
            Ok(())
        })
        .await?;
    // The namespace's history chain head after the export was read (see docs/history-chain.md).
    let head = st.rt.engine().chain_heads().await?.into_iter().find(|h| h.namespace == c.namespace.as_str());
    let mut response = ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response();
    if let Some(h) = head {
        if let Ok(v) = header::HeaderValue::from_str(&format!("{} {}", h.seq, mnemo_contract::chain::hex(&h.hash))) {
            response.headers_mut().insert(CHAIN_HEAD_HEADER, v);
        }
    }
    Ok(response)
}

/// The response header of an export naming the namespace's history chain head: `SEQ HASH`.
pub const CHAIN_HEAD_HEADER: &str = "x-mnemo-chain-head";

/// Restore a tombstoned memory as a new active memory ("restored from memory N").
#[utoipa::path(post, path = "/v1/namespaces/{ns}/memories/{id}/restore", tag = "memories",
    params(("ns" = String, Path, description = "namespace"), ("id" = String, Path, description = "the tombstoned memory: m42")),
    responses((status = 200, description = "the restored memory and what it superseded", body = RestoreResponse),
        (status = 400, description = "bad_request or invalid_input: malformed JSON or parameter, a value refused, or above a limit (too_many_items)", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace", body = ErrorBody),
        (status = 404, description = "not_found: no such memory in this namespace", body = ErrorBody),
        (status = 500, description = "internal, or config (the server's configuration)", body = ErrorBody),
        (status = 503, description = "busy (another writer holds the store or the index) or read_only (the store or the index cannot be written here); Retry-After says when to try again", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn restore(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    p: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<RestoreResponse>, ApiError> {
    let id = memory_in_path(&st, &c, p).await?;
    let r = st.rt.restore(&c.namespace, id).await?;
    Ok(Json(RestoreResponse {
        from: r.from.short(),
        restored: to_value(&mnemo_agent::memories::MemoryRecord::from(r.restored))?,
        superseded: r.superseded.iter().map(|i| i.short()).collect(),
    }))
}

/// A temporary directory removed off the async executor when dropped (after the last chunk of
/// a download is sent, or when the client goes away mid-way).
struct TempDirGuard(Option<tempfile::TempDir>);

impl Drop for TempDirGuard {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            match tokio::runtime::Handle::try_current() {
                Ok(h) => {
                    h.spawn_blocking(move || drop(dir));
                }
                Err(_) => drop(dir),
            }
        }
    }
}

fn io_error(action: &str, e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "backup: cannot {action}");
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, code::INTERNAL, format!("backup: cannot {action}: {e}"))
}

/// A backup of the whole store (every namespace), as `mnemo backup create` writes it, streamed
/// back as a file. The snapshot is written to a temporary directory under the system's temp
/// directory (`TMPDIR`), streamed, and removed once sent (or when the client goes away).
#[utoipa::path(post, path = "/v1/backup", tag = "store",
    responses((status = 200, description = "the backup file (for the SQLite store, a SQLite database of every namespace; \
            `mnemo backup restore FILE` restores it); the headers say what it holds",
            content_type = "application/octet-stream", body = BackupFile,
            headers(("x-mnemo-backup-memories" = u64, description = "memories in it (every namespace, tombstoned ones included)"),
                ("x-mnemo-backup-turns" = u64, description = "turns in it"),
                ("x-mnemo-backup-bytes" = u64, description = "its size in bytes"),
                ("content-disposition" = String, description = "attachment; filename=\"mnemo-backup-….db\""))),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach every namespace (a backup holds them all: namespaces = [\"*\"])", body = ErrorBody),
        (status = 500, description = "internal: the backup could not be written or read back", body = ErrorBody),
        (status = 501, description = "unsupported: this store makes no file backups (back it up with its own tools, e.g. pg_dump)", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn backup(State(st): State<AppState>, Extension(c): Extension<StoreCaller>) -> Result<Response, ApiError> {
    let dir = tokio::task::spawn_blocking(|| tempfile::Builder::new().prefix("mnemo-backup-").tempdir())
        .await
        .map_err(|e| io_error("make a temporary directory", e))?
        .map_err(|e| io_error("make a temporary directory", e))?;
    let path = dir.path().join("backup.db");
    let dir = TempDirGuard(Some(dir));
    let info = match st.rt.engine().backup(&path).await {
        Ok(i) => i,
        // The path is the server's own, new, in a directory that exists: what the store refuses
        // is making file backups at all.
        Err(mnemo_contract::CoreError::InvalidInput(m)) => {
            return Err(ApiError::new(StatusCode::NOT_IMPLEMENTED, code::UNSUPPORTED, m));
        }
        Err(e) => return Err(e.into()),
    };
    let file = tokio::fs::File::open(&path).await.map_err(|e| io_error("read the backup back", e))?;
    let bytes = file.metadata().await.map_err(|e| io_error("read the backup back", e))?.len();
    tracing::info!(principal = %c.principal, memories = info.memories, turns = info.turns, bytes, "backup sent");
    // Read in chunks as the client takes them; the directory goes with the stream.
    let chunks = futures_util::stream::unfold(Some((file, dir)), |state| async move {
        let (mut file, dir) = state?;
        let mut buf = vec![0u8; 64 * 1024];
        match tokio::io::AsyncReadExt::read(&mut file, &mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(buf), Some((file, dir))))
            }
            Err(e) => Some((Err(e), None)),
        }
    });
    let stamp = st.rt.engine().now().to_rfc3339().replace([':', '-'], "");
    let mut headers = vec![
        (header::CONTENT_TYPE, "application/octet-stream".to_string()),
        (header::CONTENT_LENGTH, bytes.to_string()),
        (header::CONTENT_DISPOSITION, format!("attachment; filename=\"mnemo-backup-{stamp}.db\"")),
        (header::HeaderName::from_static(backup_header::MEMORIES), info.memories.to_string()),
        (header::HeaderName::from_static(backup_header::TURNS), info.turns.to_string()),
        (header::HeaderName::from_static(backup_header::BYTES), bytes.to_string()),
    ];
    if let Some(id) = &info.identity {
        headers.push((header::HeaderName::from_static(backup_header::GENERATION), id.generation.to_string()));
    }
    let mut r = axum::body::Body::from_stream(chunks).into_response();
    for (name, value) in headers {
        let value = HeaderValue::from_str(&value).map_err(|e| io_error("write a header", e))?;
        r.headers_mut().insert(name, value);
    }
    Ok(r)
}

/// The escalation a path names (`e3`, or `3`).
fn escalation_in_path(p: Result<Path<(String, String)>, PathRejection>) -> Result<EscalationId, ApiError> {
    let Path((_, id)) = p.map_err(|e| ApiError::bad_request(e.body_text()))?;
    id.parse().map_err(|e: BadEscalationId| invalid(e.to_string()))
}

/// The name an answer or a dismissal is given by: the token's principal. A human's answer is
/// memory with the highest standing, so over HTTP it is the authenticated principal's word
/// (`human:PRINCIPAL`); `by` may only name that principal, never someone else.
fn by_or_principal(by: Option<String>, c: &Caller) -> Result<String, ApiError> {
    if !c.answers {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            code::FORBIDDEN,
            format!(
                "the token of {} may not answer or dismiss escalations: an answer is a human's word, which memory \
                 trusts most (give a person's token `answers = true` in [[serve.tokens]])",
                c.principal
            ),
        ));
    }
    mnemo_agent::door::answerer(by.as_deref(), &c.principal)
        .map_err(|m| ApiError::new(StatusCode::FORBIDDEN, code::FORBIDDEN, m))
}

/// The escalations of the namespace, oldest first: what the agent asked a human, and what
/// became of each (open, answered, dismissed).
#[utoipa::path(get, path = "/v1/namespaces/{ns}/escalations", tag = "escalations",
    params(("ns" = String, Path, description = "namespace"), EscalationsQuery),
    responses((status = 200, description = "the escalations, oldest first", body = EscalationList),
        (status = 400, description = "bad_request or invalid_input: a malformed parameter (open is true or false)", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace", body = ErrorBody),
        (status = 500, description = "internal: the ledger of escalations could not be read", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn escalations(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    q: Result<Query<EscalationsQuery>, QueryRejection>,
) -> Result<Json<EscalationList>, ApiError> {
    let Query(q) = q.map_err(|e| ApiError::bad_request(e.body_text()))?;
    let all = st.rt.escalations(&c.namespace, q.open).await?;
    Ok(Json(EscalationList { escalations: all.iter().map(to_value).collect::<Result<_, _>>()? }))
}

/// One escalation: the task, why, the pack's memories, where it was sent, its answer or
/// dismissal.
#[utoipa::path(get, path = "/v1/namespaces/{ns}/escalations/{id}", tag = "escalations",
    params(("ns" = String, Path, description = "namespace"), ("id" = String, Path, description = "escalation id: e3 as a turn and the list show it")),
    responses((status = 200, description = "the escalation", body = crate::schema::Escalation),
        (status = 400, description = "invalid_input: not an escalation id (e3)", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace", body = ErrorBody),
        (status = 404, description = "not_found: no such escalation in this namespace", body = ErrorBody),
        (status = 500, description = "internal: the ledger of escalations could not be read", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn escalation(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    p: Result<Path<(String, String)>, PathRejection>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let id = escalation_in_path(p)?;
    Ok(Json(to_value(&st.rt.escalation(&c.namespace, id).await?)?))
}

/// Answer an open escalation as a human: the answer is recorded as a turn from `human:NAME`
/// (extracted like any turn; a value alone or a short sentence stating it becomes the claim),
/// the escalation is closed, and the same task then acts on the answer.
#[utoipa::path(post, path = "/v1/namespaces/{ns}/escalations/{id}/answer", tag = "escalations",
    params(("ns" = String, Path, description = "namespace"), ("id" = String, Path, description = "escalation id: e3")),
    request_body = AnswerRequest,
    responses((status = 200, description = "the escalation, answered; what recording the answer did; notes", body = crate::schema::AnsweredEscalation),
        (status = 400, description = "bad_request or invalid_input: not an escalation id, an empty text, a name (by) that cannot be recorded", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace, may not answer escalations (answers = true), or `by` names someone other than the token's principal", body = ErrorBody),
        (status = 404, description = "not_found: no such escalation in this namespace", body = ErrorBody),
        (status = 409, description = "conflict: the escalation was already answered or dismissed", body = ErrorBody),
        (status = 413, description = "payload_too_large: the body is above serve.max_body_bytes", body = ErrorBody),
        (status = 415, description = "bad_request: the body is not sent as application/json", body = ErrorBody),
        (status = 422, description = "bad_request: the JSON is not this endpoint's body (an unknown, missing or mistyped field)", body = ErrorBody),
        (status = 500, description = "internal, config (the server's configuration), or unextracted (the turn is recorded but was not extracted; `mnemo reextract` retries it)", body = ErrorBody),
        (status = 503, description = "busy (another writer holds the store or the index) or read_only (the store or the index cannot be written here); Retry-After says when to try again", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn answer(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    p: Result<Path<(String, String)>, PathRejection>,
    ApiJson(req): ApiJson<AnswerRequest>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let id = escalation_in_path(p)?;
    let by = by_or_principal(req.by, &c)?;
    let done = st.rt.answer_escalation(&c.namespace, id, &req.text, &by).await?;
    Ok(Json(to_value(&done)?))
}

/// Dismiss an open escalation as a human: it is closed and nothing is recorded in memory (a new
/// turn on the task escalates anew). The body may be left out (or be `null`).
#[utoipa::path(post, path = "/v1/namespaces/{ns}/escalations/{id}/dismiss", tag = "escalations",
    params(("ns" = String, Path, description = "namespace"), ("id" = String, Path, description = "escalation id: e3")),
    request_body = Option<DismissRequest>,
    responses((status = 200, description = "the escalation, dismissed", body = crate::schema::Escalation),
        (status = 400, description = "bad_request or invalid_input: not an escalation id, a name (by) that cannot be recorded", body = ErrorBody),
        (status = 401, description = "unauthorized: no bearer token, or an unknown one", body = ErrorBody),
        (status = 403, description = "forbidden: the token does not reach this namespace, may not answer escalations (answers = true), or `by` names someone other than the token's principal", body = ErrorBody),
        (status = 404, description = "not_found: no such escalation in this namespace", body = ErrorBody),
        (status = 409, description = "conflict: the escalation was already answered or dismissed", body = ErrorBody),
        (status = 413, description = "payload_too_large: the body is above serve.max_body_bytes", body = ErrorBody),
        (status = 415, description = "bad_request: a body not sent as application/json", body = ErrorBody),
        (status = 422, description = "bad_request: the JSON is not this endpoint's body (an unknown or mistyped field)", body = ErrorBody),
        (status = 500, description = "internal, or config (the server's configuration)", body = ErrorBody),
        (status = 503, description = "busy (another writer holds the store or the index) or read_only (the store or the index cannot be written here); Retry-After says when to try again", body = ErrorBody)),
    security(("bearer" = [])))]
pub async fn dismiss(
    State(st): State<AppState>,
    Extension(c): Extension<Caller>,
    p: Result<Path<(String, String)>, PathRejection>,
    // No body, `null`, or `{"by": …}`.
    req: Option<ApiJson<Option<DismissRequest>>>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let id = escalation_in_path(p)?;
    let by = by_or_principal(req.and_then(|ApiJson(r)| r).and_then(|r| r.by), &c)?;
    let e = st.rt.dismiss_escalation(&c.namespace, id, &by).await?;
    Ok(Json(to_value(&e)?))
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/health", tag = "service",
    responses((status = 200, description = "the process answers", body = Health)))]
pub async fn health() -> Json<Health> {
    Json(Health { status: "ok".into(), store_rev: None })
}

/// Readiness: the store answers and the server is not shutting down.
#[utoipa::path(get, path = "/ready", tag = "service",
    responses((status = 200, description = "ready, with the store's revision", body = Health),
        (status = 500, description = "internal: the store does not answer", body = ErrorBody),
        (status = 503, description = "shutting_down: the server is shutting down; or busy (another writer holds the store)", body = ErrorBody)))]
pub async fn ready(State(st): State<AppState>) -> Result<Json<Health>, ApiError> {
    if st.shutting_down.load(Ordering::SeqCst) {
        return Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, code::SHUTTING_DOWN, "the server is shutting down"));
    }
    let rev = st.rt.engine().store_rev().await?;
    Ok(Json(Health { status: "ready".into(), store_rev: Some(rev) }))
}

/// Unknown paths.
pub async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, code::NOT_FOUND, "no such endpoint (see /openapi.json)")
}

/// Known paths, other methods.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, code::METHOD_NOT_ALLOWED, "this method is not served on this path")
}

/// A time field of a request body: RFC 3339 or a date, else 400 naming the field.
fn time_field(name: &str, t: Option<&str>) -> Result<Option<mnemo_contract::Timestamp>, ApiError> {
    t.map(mnemo_agent::door::parse_time).transpose().map_err(|e| invalid(format!("{name} {e}")))
}
