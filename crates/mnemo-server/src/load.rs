//! The serve load benchmark's client side: N concurrent clients mixing remember, recall and
//! agent turns against a running server for a bounded time, then a check that every
//! acknowledged remember is in the store and recallable. A request the server sheds (503 or
//! 429 with Retry-After) is counted apart and retried after the time the server asked for, as
//! a well-behaved client does; it is neither an error nor a loss. A program drives it
//! (`mnemo bench serve`); figures never come from a test.
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use crate::ServerError;

/// What to run.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The server, e.g. `http://127.0.0.1:8080`.
    pub base: String,
    /// A bearer token reaching `namespace`.
    pub token: String,
    /// The namespace written and read.
    pub namespace: String,
    /// Concurrent clients.
    pub clients: usize,
    /// How long the load runs.
    pub duration: Duration,
    /// Every n-th operation of a client is a remember, the others recalls (2: half and half).
    pub remember_every: usize,
    /// Every n-th operation of a client is an agent turn (its message a fact to remember); 0:
    /// no turns.
    pub turn_every: usize,
    /// A pause after each operation of a client (None: none, as fast as answered): a paced
    /// load for a soak.
    pub pace: Option<Duration>,
    /// Whether a recall asks for the full result (`"detail": "full"`: the pack with its
    /// trace, the assessment and the verdict) instead of what an agent reads (the default
    /// view).
    pub full_recall: bool,
}

/// Figures of one operation kind.
#[derive(Clone, Debug, Serialize)]
pub struct OpFigures {
    /// remember | recall | turn.
    pub op: String,
    /// Completed with 200.
    pub ok: usize,
    /// Failed (an answer other than 200, 429 or 503, or a transport error).
    pub errors: usize,
    /// Shed by the server (503 or 429 with Retry-After), retried after the time it asked for.
    pub shed: usize,
    /// ok per second of the run.
    pub throughput_per_s: f64,
    /// Median latency of the successful calls.
    pub p50_ms: f64,
    /// 99th percentile latency.
    pub p99_ms: f64,
    /// Slowest.
    pub max_ms: f64,
}

/// What a run measured.
#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    /// Per operation.
    pub ops: Vec<OpFigures>,
    /// Wall time of the load phase, seconds.
    pub elapsed_s: f64,
    /// Remembers acknowledged with 200.
    pub acknowledged: usize,
    /// Acknowledged remembers read back from the store by their memory id.
    pub stored: usize,
    /// Acknowledged remembers recalled afterwards (every one up to [`MAX_RECALL_CHECKS`], an
    /// even sample beyond).
    pub recall_checked: usize,
    /// Of those, the ones leading the recall of their own entity.
    pub recallable: usize,
    /// Acknowledged remembers ABSENT from the store when read back by id: lost writes
    /// ("m42 Load3x5 | slot | V3-5", or why the id could not be read as that memory).
    pub lost: Vec<String>,
    /// Acknowledged remembers in the store that a recall of their own query did not lead
    /// with: retrieval misses, not lost writes.
    pub retrieval_misses: Vec<RetrievalMiss>,
    /// Check requests that failed (transport error, an answer other than 200 or 404, or shed
    /// more than [`CHECK_ATTEMPTS`] times): neither lost nor found.
    pub check_failures: Vec<String>,
    /// Check requests the server shed and the check retried after its Retry-After.
    pub check_retries: usize,
    /// Recalls during the load whose pack did not lead with the value asked for.
    pub recall_misses: usize,
    /// Up to 10 of them.
    pub recall_miss_samples: Vec<RetrievalMiss>,
    /// Up to 10 error messages.
    pub error_samples: Vec<String>,
    /// The model that extracted the remembers, as the server echoed it in their answers
    /// (`client / model`); None when no remember was answered.
    pub model_echoed: Option<String>,
}

/// A recall that did not lead with the value asked for.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RetrievalMiss {
    /// The query sent.
    pub query: String,
    /// The memory expected first.
    pub expected: String,
    /// What led the pack instead (None: the pack was empty).
    pub led: Option<String>,
}

/// One acknowledged remember: the fact, and the memory id the server answered.
#[derive(Clone, Debug)]
struct Acked {
    entity: String,
    value: String,
    memory: Option<String>,
}

impl Acked {
    fn content(&self) -> String {
        format!("{} | slot | {}", self.entity, self.value)
    }
    fn query(&self) -> String {
        format!("{} slot", self.entity)
    }
}

/// Most acknowledged writes recalled by the check (each is read back by id all the same): a
/// recall costs what a search of the whole store costs, a read by id does not.
pub const MAX_RECALL_CHECKS: usize = 20_000;

/// Most attempts of one check request the server sheds before the check gives up on it.
pub const CHECK_ATTEMPTS: usize = 20;

/// Most check requests in flight at once (fewer when there were fewer clients): the check
/// reads back; it is not a second load.
pub const CHECK_CONCURRENCY: usize = 32;

/// The longest wait a Retry-After is honoured with (a server asking for more is waited on for
/// this long).
const MAX_RETRY_WAIT: Duration = Duration::from_secs(30);

/// The kinds of operation, in report order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Remember,
    Recall,
    Turn,
}

impl Op {
    const ALL: [Op; 3] = [Op::Remember, Op::Recall, Op::Turn];
    fn name(self) -> &'static str {
        match self {
            Op::Remember => "remember",
            Op::Recall => "recall",
            Op::Turn => "turn",
        }
    }
    fn index(self) -> usize {
        self as usize
    }
}

/// The kind of a client's `i`-th operation: a turn every `turn_every`-th (when set), else a
/// remember every `remember_every`-th, else a recall.
fn op_of(i: usize, remember_every: usize, turn_every: usize) -> Op {
    if turn_every > 0 && i % turn_every == turn_every - 1 {
        Op::Turn
    } else if i.is_multiple_of(remember_every.max(1)) {
        Op::Remember
    } else {
        Op::Recall
    }
}

/// One operation kind's record in a client.
#[derive(Default)]
struct OpLog {
    ms: Vec<f64>,
    errors: usize,
    shed: usize,
}

#[derive(Default)]
struct ClientLog {
    ops: [OpLog; 3],
    recall_misses: Vec<RetrievalMiss>,
    acked: Vec<Acked>,
    errors: Vec<String>,
    model: Option<String>,
}

/// The fact the `client`'s `i`-th operation remembers (entity, value).
fn fact(client: usize, i: usize) -> (String, String) {
    (format!("Load{client}x{i}"), format!("V{client}-{i}"))
}

/// Why a call did not answer 200.
#[derive(Debug)]
enum Failure {
    /// 503 or 429: the server shed the request and asked to retry after this long (1 s when
    /// it named no time).
    Shed(Duration),
    /// Anything else, naming the URL and the status or the transport error.
    Error(String),
}

/// One HTTP call; Ok(body) on 200.
async fn post(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    body: &serde_json::Value,
) -> Result<serde_json::Value, Failure> {
    answer(url, http.post(url).bearer_auth(token).json(body).send().await).await
}

/// The JSON body of a 200 answer; otherwise what went wrong, naming the URL and the status.
async fn answer(url: &str, sent: reqwest::Result<reqwest::Response>) -> Result<serde_json::Value, Failure> {
    let r = sent.map_err(|e| Failure::Error(format!("{url}: {e}")))?;
    let status = r.status();
    if matches!(status.as_u16(), 429 | 503) {
        return Err(Failure::Shed(retry_after(r.headers())));
    }
    let text = r.text().await.map_err(|e| Failure::Error(format!("{url}: reading the answer: {e}")))?;
    if status.as_u16() != 200 {
        return Err(Failure::Error(format!("{url}: {status}: {}", text.chars().take(300).collect::<String>())));
    }
    serde_json::from_str(&text).map_err(|e| Failure::Error(format!("{url}: not JSON: {e}")))
}

/// The wait a shed answer asks for: its Retry-After in seconds (1 s when absent or not a
/// number of seconds), at most [`MAX_RETRY_WAIT`].
fn retry_after(headers: &reqwest::header::HeaderMap) -> Duration {
    let secs = headers
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(1);
    Duration::from_secs(secs).min(MAX_RETRY_WAIT)
}

/// Sleep for `wait`, but not past `deadline`.
async fn wait_until(wait: Duration, deadline: Instant) {
    let left = deadline.saturating_duration_since(Instant::now());
    tokio::time::sleep(wait.min(left)).await;
}

/// The content of the memory leading a recall's answer, the full result (its pack) or the
/// agent view (its memories); None: nothing was recalled.
fn leader(recalled: &serde_json::Value) -> Option<String> {
    let full = &recalled["pack"]["items"][0]["memory"]["content"];
    let agent = &recalled["memories"][0]["content"];
    full.as_str().or(agent.as_str()).map(str::to_string)
}

fn leads_with(recalled: &serde_json::Value, value: &str) -> bool {
    leader(recalled).is_some_and(|c| c.ends_with(&format!("| {value}")))
}

/// `client / model` of a remember's answer, as the server echoed it.
fn model_of(remembered: &serde_json::Value) -> Option<String> {
    let m = &remembered["report"]["model"];
    Some(format!("{} / {}", m["client"].as_str()?, m["model"].as_str()?))
}

/// The memory id a remember's answer (or a turn's compact answer) names for its first
/// outcome.
fn memory_of(answered: &serde_json::Value, op: Op) -> Option<String> {
    let m = match op {
        Op::Turn => &answered["remembered"]["outcomes"][0]["memory"],
        _ => &answered["report"]["outcomes"][0]["memory"],
    };
    m.as_str().map(str::to_string)
}

async fn client(http: reqwest::Client, o: LoadOptions, id: usize, deadline: Instant) -> ClientLog {
    let mut log = ClientLog::default();
    let url = |route: &str| format!("{}/v1/namespaces/{}/{route}", o.base, o.namespace);
    let (remember_url, recall_url, turn_url) = (url("remember"), url("recall"), url("turn"));
    let mut i = 0usize;
    while Instant::now() < deadline {
        let mut op = op_of(i, o.remember_every, o.turn_every);
        if op == Op::Recall && log.acked.is_empty() {
            op = Op::Remember;
        }
        let (entity, value) = fact(id, i);
        let recalled = (op == Op::Recall).then(|| log.acked[(i.wrapping_mul(7919)) % log.acked.len()].clone());
        let (target, body) = match (op, &recalled) {
            (Op::Recall, Some(a)) => {
                // Recall something this client wrote (spread over its writes), fully assessed.
                let mut asked = json!({"query": a.query(), "about": {"entity": a.entity, "attribute": "slot"}});
                if o.full_recall {
                    asked["detail"] = json!("full");
                }
                (&recall_url, asked)
            }
            (Op::Turn, _) => (&turn_url, json!({"text": format!("[SEM] {entity} | slot | {value}")})),
            _ => (&remember_url, json!({"text": format!("[SEM] {entity} | slot | {value}")})),
        };
        let started = Instant::now();
        let answered = post(&http, target, &o.token, &body).await;
        let took = started.elapsed().as_secs_f64() * 1e3;
        let rec = &mut log.ops[op.index()];
        match answered {
            Ok(answer) => {
                rec.ms.push(took);
                match &recalled {
                    Some(a) if !leads_with(&answer, &a.value) => log.recall_misses.push(RetrievalMiss {
                        query: a.query(),
                        expected: a.content(),
                        led: leader(&answer),
                    }),
                    Some(_) => {}
                    None => {
                        if op == Op::Remember && log.model.is_none() {
                            log.model = model_of(&answer);
                        }
                        let memory = memory_of(&answer, op);
                        log.acked.push(Acked { entity, value, memory });
                    }
                }
            }
            Err(Failure::Shed(wait)) => {
                // Shed, not failed: the same operation again after the wait the server asked for.
                rec.shed += 1;
                wait_until(wait, deadline).await;
                continue;
            }
            Err(Failure::Error(m)) => {
                rec.errors += 1;
                log.errors.push(m);
            }
        }
        i += 1;
        if let Some(p) = o.pace {
            wait_until(p, deadline).await;
        }
    }
    log
}

/// What the check found of one acknowledged remember.
enum Checked {
    /// In the store (its recall not checked).
    Stored,
    /// In the store and leading the recall of its own entity.
    Recalled,
    /// In the store, not leading its recall.
    Missed(RetrievalMiss),
    /// Absent from the store (why).
    Lost(String),
    /// A check request failed (why).
    Failed(String),
}

/// A check request, sent again after each shed answer's Retry-After (at most
/// [`CHECK_ATTEMPTS`] times); the retries are counted in `retries`.
async fn patiently<T, F, Fut>(retries: &mut usize, url: &str, mut send: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Failure>>,
{
    for attempt in 1..=CHECK_ATTEMPTS {
        match send().await {
            Ok(answered) => return Ok(answered),
            Err(Failure::Error(m)) => return Err(m),
            Err(Failure::Shed(wait)) if attempt < CHECK_ATTEMPTS => {
                *retries += 1;
                tokio::time::sleep(wait).await;
            }
            Err(Failure::Shed(_)) => break,
        }
    }
    Err(format!("{url}: shed {CHECK_ATTEMPTS} times in a row"))
}

/// Read an acknowledged remember back from the store by its memory id, then (when `recall`)
/// recall it by its entity's name. Shed requests are retried after their Retry-After.
async fn check_one(
    http: &reqwest::Client,
    base: &str,
    token: &str,
    a: &Acked,
    recall: bool,
    retries: &mut usize,
) -> Checked {
    let Some(id) = &a.memory else {
        return Checked::Lost(format!("{}: the answer named no memory id", a.content()));
    };
    let url = format!("{base}/memories/{id}");
    // None: 404, not in the store.
    let read = patiently(retries, &url, || async {
        match http.get(&url).bearer_auth(token).send().await {
            Ok(r) if r.status().as_u16() == 404 => Ok(None),
            sent => answer(&url, sent).await.map(Some),
        }
    })
    .await;
    match read {
        Ok(None) => return Checked::Lost(format!("{id} {}: not in the store", a.content())),
        Ok(Some(body)) => {
            let stored = body["why"]["memory"]["content"].as_str().unwrap_or_default();
            if stored != a.content() {
                return Checked::Lost(format!("{id} {}: the store holds {stored:?} under that id", a.content()));
            }
        }
        Err(m) => return Checked::Failed(m),
    }
    if !recall {
        return Checked::Stored;
    }
    // Its entity's name alone: a word of every memory ("slot") would make each check a scan of
    // the whole store.
    let recall_url = format!("{base}/recall");
    let asked = json!({"query": a.entity, "raw": true});
    match patiently(retries, &recall_url, || post(http, &recall_url, token, &asked)).await {
        Ok(body) if leads_with(&body, &a.value) => Checked::Recalled,
        Ok(body) => {
            Checked::Missed(RetrievalMiss { query: a.entity.clone(), expected: a.content(), led: leader(&body) })
        }
        Err(m) => Checked::Failed(m),
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

fn figures(op: &str, mut ms: Vec<f64>, errors: usize, shed: usize, elapsed: f64) -> OpFigures {
    ms.sort_by(f64::total_cmp);
    OpFigures {
        op: op.to_string(),
        ok: ms.len(),
        shed,
        errors,
        throughput_per_s: if elapsed > 0.0 { ms.len() as f64 / elapsed } else { 0.0 },
        p50_ms: percentile(&ms, 50.0),
        p99_ms: percentile(&ms, 99.0),
        max_ms: ms.last().copied().unwrap_or(0.0),
    }
}

/// Run the load, then check every acknowledged remember: read back from the store by its
/// memory id (absent: lost), then recalled by its own query (not leading: a retrieval miss);
/// as many checks in flight as there were clients.
pub async fn run(o: &LoadOptions) -> Result<LoadReport, ServerError> {
    if o.clients == 0 {
        return Err(ServerError::Config { file: "bench serve".into(), message: "--clients must be at least 1".into() });
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .map_err(|e| ServerError::Io { action: "build the HTTP client".into(), source: std::io::Error::other(e) })?;
    let started = Instant::now();
    let deadline = started + o.duration;
    let tasks: Vec<_> = (0..o.clients).map(|c| tokio::spawn(client(http.clone(), o.clone(), c, deadline))).collect();
    let mut logs = Vec::new();
    for t in tasks {
        logs.push(
            t.await.map_err(|e| ServerError::Io { action: "run a client".into(), source: std::io::Error::other(e) })?,
        );
    }
    let elapsed = started.elapsed().as_secs_f64();
    // Every kind that ran (a turn row only when turns were asked for).
    let ops = Op::ALL
        .iter()
        .filter(|op| **op != Op::Turn || o.turn_every > 0)
        .map(|op| {
            let of = logs.iter().map(|l| &l.ops[op.index()]);
            let ms: Vec<f64> = of.clone().flat_map(|r| r.ms.iter().copied()).collect();
            let errors = of.clone().map(|r| r.errors).sum();
            let shed = of.map(|r| r.shed).sum();
            figures(op.name(), ms, errors, shed, elapsed)
        })
        .collect();
    let acked: Vec<Acked> = logs.iter().flat_map(|l| l.acked.iter().cloned()).collect();
    let error_samples: Vec<String> = logs.iter().flat_map(|l| l.errors.iter().cloned()).take(10).collect();
    let recall_misses: Vec<RetrievalMiss> = logs.iter().flat_map(|l| l.recall_misses.iter().cloned()).collect();
    let model_echoed = logs.iter().find_map(|l| l.model.clone());

    // Afterwards: every acknowledged remember must be in the store, and come back first for
    // its own query.
    let base = format!("{}/v1/namespaces/{}", o.base, o.namespace);
    let chunk = acked.len().div_ceil(o.clients.min(CHECK_CONCURRENCY)).max(1);
    let recall_every = acked.len().div_ceil(MAX_RECALL_CHECKS).max(1);
    let checks: Vec<_> = acked
        .chunks(chunk)
        .enumerate()
        .map(|(k, part)| {
            let part = part.to_vec();
            let (http, base, token) = (http.clone(), base.clone(), o.token.clone());
            tokio::spawn(async move {
                let (mut found, mut retries) = (Vec::with_capacity(part.len()), 0);
                for (i, a) in part.iter().enumerate() {
                    let recall = (k * chunk + i).is_multiple_of(recall_every);
                    found.push(check_one(&http, &base, &token, a, recall, &mut retries).await);
                }
                (found, retries)
            })
        })
        .collect();
    let mut report = LoadReport {
        ops,
        elapsed_s: elapsed,
        acknowledged: acked.len(),
        stored: 0,
        recall_checked: 0,
        recallable: 0,
        lost: Vec::new(),
        retrieval_misses: Vec::new(),
        check_failures: Vec::new(),
        check_retries: 0,
        recall_misses: recall_misses.len(),
        recall_miss_samples: recall_misses.into_iter().take(10).collect(),
        error_samples,
        model_echoed,
    };
    for c in checks {
        let (found, retries) =
            c.await.map_err(|e| ServerError::Io { action: "run a check".into(), source: std::io::Error::other(e) })?;
        report.check_retries += retries;
        for f in found {
            match f {
                Checked::Stored => report.stored += 1,
                Checked::Recalled => {
                    report.stored += 1;
                    report.recall_checked += 1;
                    report.recallable += 1;
                }
                Checked::Missed(m) => {
                    report.stored += 1;
                    report.recall_checked += 1;
                    report.retrieval_misses.push(m);
                }
                Checked::Lost(m) => report.lost.push(m),
                Checked::Failed(m) => report.check_failures.push(m),
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use axum::extract::Path;
    use axum::routing::{get, post};

    fn acked(entity: &str, memory: &str) -> Acked {
        Acked { entity: entity.into(), value: "V".into(), memory: Some(memory.into()) }
    }

    /// A stand-in server: m1 is absent (404), m2 is stored and recalled first, m3 is stored
    /// and another memory leads its recall, m4's read fails (500), m5's read is shed twice
    /// (503, Retry-After 0) and then answered, m6's read is always shed.
    async fn stand_in() -> String {
        let shed_m5 = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let why = get(move |Path((_, id)): Path<(String, String)>| {
            let shed_m5 = shed_m5.clone();
            async move {
                use axum::http::{header::RETRY_AFTER, StatusCode};
                use axum::response::IntoResponse;
                let content = |e: &str| json!({"why": {"memory": {"content": format!("{e} | slot | V")}}});
                let shed = (StatusCode::SERVICE_UNAVAILABLE, [(RETRY_AFTER, "0")], axum::Json(json!({})));
                match id.as_str() {
                    "m5" if shed_m5.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 2 => shed.into_response(),
                    "m5" | "m2" => (StatusCode::OK, axum::Json(content("A"))).into_response(),
                    "m6" => shed.into_response(),
                    "m3" => (StatusCode::OK, axum::Json(content("B"))).into_response(),
                    "m4" => (StatusCode::INTERNAL_SERVER_ERROR, axum::Json(json!({}))).into_response(),
                    _ => (StatusCode::NOT_FOUND, axum::Json(json!({}))).into_response(),
                }
            }
        });
        let recall = post(|axum::Json(q): axum::Json<serde_json::Value>| async move {
            let led = if q["query"] == "A" { "A | slot | V" } else { "Other | slot | W" };
            axum::Json(json!({"pack": {"items": [{"memory": {"content": led}}]}}))
        });
        let app = axum::Router::new()
            .route("/v1/namespaces/{ns}/memories/{id}", why)
            .route("/v1/namespaces/{ns}/recall", recall);
        format!("{}/v1/namespaces/x", on_loopback(app).await)
    }

    /// Serve `app` on a loopback port; its base URL.
    async fn on_loopback(app: axum::Router) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        base
    }

    #[tokio::test]
    async fn the_check_tells_a_lost_write_from_a_retrieval_miss_and_a_failed_request() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let base = stand_in().await;
        let http = reqwest::Client::new();
        let mut r = 0;
        let lost = check_one(&http, &base, "t", &acked("Z", "m1"), true, &mut r).await;
        assert!(matches!(&lost, Checked::Lost(m) if m.contains("m1") && m.contains("not in the store")));
        assert!(matches!(check_one(&http, &base, "t", &acked("A", "m2"), true, &mut r).await, Checked::Recalled));
        match check_one(&http, &base, "t", &acked("B", "m3"), true, &mut r).await {
            Checked::Missed(m) => assert_eq!(
                m,
                RetrievalMiss {
                    query: "B".into(),
                    expected: "B | slot | V".into(),
                    led: Some("Other | slot | W".into())
                }
            ),
            _ => panic!("a stored write its recall does not lead with is a retrieval miss"),
        }
        assert!(
            matches!(check_one(&http, &base, "t", &acked("C", "m4"), true, &mut r).await, Checked::Failed(m) if m.contains("500"))
        );
        assert!(matches!(check_one(&http, &base, "t", &acked("B", "m3"), false, &mut r).await, Checked::Stored));
        let no_id = Acked { entity: "D".into(), value: "V".into(), memory: None };
        assert!(matches!(check_one(&http, &base, "t", &no_id, true, &mut r).await, Checked::Lost(_)));
        assert_eq!(r, 0, "nothing was shed yet");
        // Shed twice, then answered: read back after honouring Retry-After, not a failure.
        assert!(matches!(check_one(&http, &base, "t", &acked("A", "m5"), true, &mut r).await, Checked::Recalled));
        assert_eq!(r, 2);
        // Shed every time: a failed check request after CHECK_ATTEMPTS, never a loss.
        match check_one(&http, &base, "t", &acked("A", "m6"), false, &mut r).await {
            Checked::Failed(m) => assert!(m.contains("shed") && m.contains("m6"), "{m}"),
            _ => panic!("a read shed every time is a failed check request"),
        }
        assert_eq!(r, 2 + CHECK_ATTEMPTS - 1);
    }

    /// A stand-in of the whole API the load uses, shedding every third request (503,
    /// Retry-After 0): remember and turn store the fact under a new id, recall leads with the
    /// fact of the entity asked about, a read by id answers what was stored.
    async fn shedding_stand_in() -> String {
        use axum::http::{header::RETRY_AFTER, StatusCode};
        use axum::response::IntoResponse;
        use std::sync::{Arc, Mutex};
        type Facts = Arc<Mutex<Vec<String>>>;
        let facts: Facts = Arc::default();
        // Every third request is shed, but never one whose previous request with the same body
        // was shed: a global count alone let concurrent checks in lockstep land on the shed
        // slot every time, until they gave up (a flaky failure in CI).
        let sheds: Arc<Mutex<(usize, std::collections::HashSet<String>)>> = Arc::default();
        let shed_now = move |key: &serde_json::Value| {
            let mut s = sheds.lock().unwrap();
            s.0 += 1;
            let key = key.to_string();
            if s.1.remove(&key) || !s.0.is_multiple_of(3) {
                return false;
            }
            s.1.insert(key);
            true
        };
        let shed = || (StatusCode::SERVICE_UNAVAILABLE, [(RETRY_AFTER, "0")], axum::Json(json!({}))).into_response();
        let write = |facts: &Facts, body: &serde_json::Value| {
            let text = body["text"].as_str().unwrap().trim_start_matches("[SEM] ").to_string();
            let mut f = facts.lock().unwrap();
            f.push(text);
            format!("m{}", f.len())
        };
        let (f1, f2, f3, f4) = (facts.clone(), facts.clone(), facts.clone(), facts);
        let (s1, s2, s3) = (shed_now.clone(), shed_now.clone(), shed_now);
        let remember = post(move |axum::Json(b): axum::Json<serde_json::Value>| async move {
            if s1(&b) {
                return shed();
            }
            let id = write(&f1, &b);
            axum::Json(
                json!({"report": {"model": {"client": "stand-in", "model": "echo"}, "outcomes": [{"memory": id}]}}),
            )
            .into_response()
        });
        let turn = post(move |axum::Json(b): axum::Json<serde_json::Value>| async move {
            if s2(&b) {
                return shed();
            }
            axum::Json(json!({"remembered": {"outcomes": [{"memory": write(&f2, &b)}]}})).into_response()
        });
        let recall = post(move |axum::Json(q): axum::Json<serde_json::Value>| async move {
            if s3(&q) {
                return shed();
            }
            let entity = q["about"]["entity"].as_str().or(q["query"].as_str()).unwrap_or_default().to_string();
            let led = f3.lock().unwrap().iter().find(|c| c.starts_with(&format!("{entity} |"))).cloned();
            axum::Json(json!({"memories": [{"content": led}]})).into_response()
        });
        let why = get(move |Path((_, id)): Path<(String, String)>| async move {
            let n: usize = id.trim_start_matches('m').parse().unwrap();
            match f4.lock().unwrap().get(n - 1) {
                Some(c) => axum::Json(json!({"why": {"memory": {"content": c}}})).into_response(),
                None => StatusCode::NOT_FOUND.into_response(),
            }
        });
        let app = axum::Router::new()
            .route("/v1/namespaces/{ns}/remember", remember)
            .route("/v1/namespaces/{ns}/turn", turn)
            .route("/v1/namespaces/{ns}/recall", recall)
            .route("/v1/namespaces/{ns}/memories/{id}", why);
        on_loopback(app).await
    }

    #[tokio::test]
    async fn shed_requests_are_retried_and_counted_apart_from_errors() {
        let o = LoadOptions {
            base: shedding_stand_in().await,
            token: "t".into(),
            namespace: "x".into(),
            clients: 3,
            duration: Duration::from_millis(400),
            remember_every: 2,
            turn_every: 3,
            pace: None,
            full_recall: false,
        };
        let r = run(&o).await.unwrap();
        let names: Vec<&str> = r.ops.iter().map(|o| o.op.as_str()).collect();
        assert_eq!(names, ["remember", "recall", "turn"]);
        for op in &r.ops {
            assert!(op.ok > 0 && op.shed > 0, "{op:?}");
            assert_eq!(op.errors, 0, "a shed request is not an error: {op:?} {:?}", r.error_samples);
        }
        assert!(r.acknowledged > 0);
        assert_eq!(r.acknowledged, r.ops[0].ok + r.ops[2].ok, "turns' writes are checked too");
        assert_eq!((r.stored, r.lost.len()), (r.acknowledged, 0), "{:?}", r.lost);
        assert!(r.check_failures.is_empty(), "{:?}", r.check_failures);
        assert!(r.check_retries > 0, "the check's shed requests were retried");
        assert_eq!(r.recall_misses, 0);
        assert_eq!(r.model_echoed.as_deref(), Some("stand-in / echo"));
    }

    #[tokio::test]
    async fn a_paced_client_pauses_between_operations() {
        let o = LoadOptions {
            base: shedding_stand_in().await,
            token: "t".into(),
            namespace: "x".into(),
            clients: 1,
            duration: Duration::from_millis(500),
            remember_every: 1,
            turn_every: 0,
            pace: Some(Duration::from_millis(100)),
            full_recall: false,
        };
        let r = run(&o).await.unwrap();
        let done = r.ops[0].ok;
        assert!((3..=6).contains(&done), "about one remember per 100 ms in 500 ms, not {done}");
        assert_eq!(r.ops.len(), 2, "no turn row without turns");
    }

    #[test]
    fn percentiles_pick_ranks() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 51.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
        let f = figures("x", vec![3.0, 1.0, 2.0], 1, 4, 2.0);
        assert_eq!((f.ok, f.errors, f.shed, f.p50_ms, f.max_ms, f.throughput_per_s), (3, 1, 4, 2.0, 3.0, 1.5));
    }

    #[test]
    fn the_mix_puts_turns_remembers_and_recalls_where_asked() {
        let kinds =
            |remember_every, turn_every| -> Vec<Op> { (0..6).map(|i| op_of(i, remember_every, turn_every)).collect() };
        use Op::{Recall as C, Remember as M, Turn as T};
        assert_eq!(kinds(2, 0), vec![M, C, M, C, M, C]);
        assert_eq!(kinds(1, 0), vec![M; 6]);
        assert_eq!(kinds(2, 3), vec![M, C, T, C, M, T]);
    }

    #[test]
    fn retry_after_is_read_in_seconds_with_a_default_and_a_cap() {
        let mut h = reqwest::header::HeaderMap::new();
        assert_eq!(retry_after(&h), Duration::from_secs(1));
        h.insert(reqwest::header::RETRY_AFTER, "3".parse().unwrap());
        assert_eq!(retry_after(&h), Duration::from_secs(3));
        h.insert(reqwest::header::RETRY_AFTER, "3600".parse().unwrap());
        assert_eq!(retry_after(&h), MAX_RETRY_WAIT);
        h.insert(reqwest::header::RETRY_AFTER, "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap());
        assert_eq!(retry_after(&h), Duration::from_secs(1));
    }
}
