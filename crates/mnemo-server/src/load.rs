//! The serve load benchmark's client side: N concurrent clients mixing remember and recall
//! against a running server for a bounded time, then a check that every acknowledged remember
//! is recallable. A program drives it (`mnemo bench serve`); figures never come from a test.
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
    /// Whether a recall asks for the full result (`"detail": "full"`: the pack with its
    /// trace, the assessment and the verdict) instead of what an agent reads (the default
    /// view).
    pub full_recall: bool,
}

/// Figures of one operation kind.
#[derive(Clone, Debug, Serialize)]
pub struct OpFigures {
    /// remember | recall.
    pub op: String,
    /// Completed with 200.
    pub ok: usize,
    /// Failed (non-200 or transport error).
    pub errors: usize,
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
    /// Check requests that failed (transport error, an answer other than 200 or 404): neither
    /// lost nor found.
    pub check_failures: Vec<String>,
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

#[derive(Default)]
struct ClientLog {
    remember_ms: Vec<f64>,
    recall_ms: Vec<f64>,
    remember_errors: usize,
    recall_errors: usize,
    recall_misses: Vec<RetrievalMiss>,
    acked: Vec<Acked>,
    errors: Vec<String>,
    model: Option<String>,
}

/// The fact the `client`'s `i`-th operation remembers (entity, value).
fn fact(client: usize, i: usize) -> (String, String) {
    (format!("Load{client}x{i}"), format!("V{client}-{i}"))
}

/// One HTTP call; Ok(body) on 200.
async fn post(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    body: serde_json::Value,
) -> Result<serde_json::Value, String> {
    answer(url, http.post(url).bearer_auth(token).json(&body).send().await).await
}

/// The JSON body of a 200 answer; otherwise what went wrong, naming the URL and the status.
async fn answer(url: &str, sent: reqwest::Result<reqwest::Response>) -> Result<serde_json::Value, String> {
    let r = sent.map_err(|e| format!("{url}: {e}"))?;
    let status = r.status();
    let text = r.text().await.map_err(|e| format!("{url}: reading the answer: {e}"))?;
    if status.as_u16() != 200 {
        return Err(format!("{url}: {status}: {}", text.chars().take(300).collect::<String>()));
    }
    serde_json::from_str(&text).map_err(|e| format!("{url}: not JSON: {e}"))
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

async fn client(http: reqwest::Client, o: LoadOptions, id: usize, deadline: Instant) -> ClientLog {
    let mut log = ClientLog::default();
    let remember_url = format!("{}/v1/namespaces/{}/remember", o.base, o.namespace);
    let recall_url = format!("{}/v1/namespaces/{}/recall", o.base, o.namespace);
    let mut i = 0usize;
    while Instant::now() < deadline {
        let started = Instant::now();
        if i.is_multiple_of(o.remember_every.max(1)) || log.acked.is_empty() {
            let (entity, value) = fact(id, i);
            let text = format!("[SEM] {entity} | slot | {value}");
            match post(&http, &remember_url, &o.token, json!({"text": text})).await {
                Ok(body) => {
                    log.remember_ms.push(started.elapsed().as_secs_f64() * 1e3);
                    if log.model.is_none() {
                        log.model = model_of(&body);
                    }
                    let memory = body["report"]["outcomes"][0]["memory"].as_str().map(str::to_string);
                    log.acked.push(Acked { entity, value, memory });
                }
                Err(m) => {
                    log.remember_errors += 1;
                    log.errors.push(m);
                }
            }
        } else {
            // Recall something this client wrote (spread over its writes), fully assessed.
            let a = log.acked[(i.wrapping_mul(7919)) % log.acked.len()].clone();
            let mut asked = json!({"query": a.query(), "about": {"entity": a.entity, "attribute": "slot"}});
            if o.full_recall {
                asked["detail"] = json!("full");
            }
            match post(&http, &recall_url, &o.token, asked).await {
                Ok(body) => {
                    log.recall_ms.push(started.elapsed().as_secs_f64() * 1e3);
                    if !leads_with(&body, &a.value) {
                        log.recall_misses.push(RetrievalMiss {
                            query: a.query(),
                            expected: a.content(),
                            led: leader(&body),
                        });
                    }
                }
                Err(m) => {
                    log.recall_errors += 1;
                    log.errors.push(m);
                }
            }
        }
        i += 1;
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

/// Read an acknowledged remember back from the store by its memory id, then (when `recall`)
/// recall it by its entity's name.
async fn check_one(http: &reqwest::Client, base: &str, token: &str, a: &Acked, recall: bool) -> Checked {
    let Some(id) = &a.memory else {
        return Checked::Lost(format!("{}: the answer named no memory id", a.content()));
    };
    let url = format!("{base}/memories/{id}");
    match http.get(&url).bearer_auth(token).send().await {
        Ok(r) if r.status().as_u16() == 404 => return Checked::Lost(format!("{id} {}: not in the store", a.content())),
        sent => match answer(&url, sent).await {
            Ok(body) => {
                let stored = body["why"]["memory"]["content"].as_str().unwrap_or_default();
                if stored != a.content() {
                    return Checked::Lost(format!("{id} {}: the store holds {stored:?} under that id", a.content()));
                }
            }
            Err(m) => return Checked::Failed(m),
        },
    }
    if !recall {
        return Checked::Stored;
    }
    // Its entity's name alone: a word of every memory ("slot") would make each check a scan of
    // the whole store.
    let recall_url = format!("{base}/recall");
    match post(http, &recall_url, token, json!({"query": a.entity, "raw": true})).await {
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

fn figures(op: &str, mut ms: Vec<f64>, errors: usize, elapsed: f64) -> OpFigures {
    ms.sort_by(f64::total_cmp);
    OpFigures {
        op: op.to_string(),
        ok: ms.len(),
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
    let remember_ms: Vec<f64> = logs.iter().flat_map(|l| l.remember_ms.iter().copied()).collect();
    let recall_ms: Vec<f64> = logs.iter().flat_map(|l| l.recall_ms.iter().copied()).collect();
    let ops = vec![
        figures("remember", remember_ms, logs.iter().map(|l| l.remember_errors).sum(), elapsed),
        figures("recall", recall_ms, logs.iter().map(|l| l.recall_errors).sum(), elapsed),
    ];
    let acked: Vec<Acked> = logs.iter().flat_map(|l| l.acked.iter().cloned()).collect();
    let error_samples: Vec<String> = logs.iter().flat_map(|l| l.errors.iter().cloned()).take(10).collect();
    let recall_misses: Vec<RetrievalMiss> = logs.iter().flat_map(|l| l.recall_misses.iter().cloned()).collect();
    let model_echoed = logs.iter().find_map(|l| l.model.clone());

    // Afterwards: every acknowledged remember must be in the store, and come back first for
    // its own query.
    let base = format!("{}/v1/namespaces/{}", o.base, o.namespace);
    let chunk = acked.len().div_ceil(o.clients).max(1);
    let recall_every = acked.len().div_ceil(MAX_RECALL_CHECKS).max(1);
    let checks: Vec<_> = acked
        .chunks(chunk)
        .enumerate()
        .map(|(k, part)| {
            let part = part.to_vec();
            let (http, base, token) = (http.clone(), base.clone(), o.token.clone());
            tokio::spawn(async move {
                let mut found = Vec::with_capacity(part.len());
                for (i, a) in part.iter().enumerate() {
                    let recall = (k * chunk + i).is_multiple_of(recall_every);
                    found.push(check_one(&http, &base, &token, a, recall).await);
                }
                found
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
        recall_misses: recall_misses.len(),
        recall_miss_samples: recall_misses.into_iter().take(10).collect(),
        error_samples,
        model_echoed,
    };
    for c in checks {
        let found =
            c.await.map_err(|e| ServerError::Io { action: "run a check".into(), source: std::io::Error::other(e) })?;
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
    /// and another memory leads its recall, m4's read fails (500).
    async fn stand_in() -> String {
        let why = get(|Path((_, id)): Path<(String, String)>| async move {
            let content = |e: &str| json!({"why": {"memory": {"content": format!("{e} | slot | V")}}});
            match id.as_str() {
                "m2" => (axum::http::StatusCode::OK, axum::Json(content("A"))),
                "m3" => (axum::http::StatusCode::OK, axum::Json(content("B"))),
                "m4" => (axum::http::StatusCode::INTERNAL_SERVER_ERROR, axum::Json(json!({}))),
                _ => (axum::http::StatusCode::NOT_FOUND, axum::Json(json!({}))),
            }
        });
        let recall = post(|axum::Json(q): axum::Json<serde_json::Value>| async move {
            let led = if q["query"] == "A" { "A | slot | V" } else { "Other | slot | W" };
            axum::Json(json!({"pack": {"items": [{"memory": {"content": led}}]}}))
        });
        let app = axum::Router::new()
            .route("/v1/namespaces/{ns}/memories/{id}", why)
            .route("/v1/namespaces/{ns}/recall", recall);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/v1/namespaces/x", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        base
    }

    #[tokio::test]
    async fn the_check_tells_a_lost_write_from_a_retrieval_miss_and_a_failed_request() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let base = stand_in().await;
        let http = reqwest::Client::new();
        let lost = check_one(&http, &base, "t", &acked("Z", "m1"), true).await;
        assert!(matches!(&lost, Checked::Lost(m) if m.contains("m1") && m.contains("not in the store")));
        assert!(matches!(check_one(&http, &base, "t", &acked("A", "m2"), true).await, Checked::Recalled));
        match check_one(&http, &base, "t", &acked("B", "m3"), true).await {
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
            matches!(check_one(&http, &base, "t", &acked("C", "m4"), true).await, Checked::Failed(m) if m.contains("500"))
        );
        assert!(matches!(check_one(&http, &base, "t", &acked("B", "m3"), false).await, Checked::Stored));
        let no_id = Acked { entity: "D".into(), value: "V".into(), memory: None };
        assert!(matches!(check_one(&http, &base, "t", &no_id, true).await, Checked::Lost(_)));
    }

    #[test]
    fn percentiles_pick_ranks() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 51.0);
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
        let f = figures("x", vec![3.0, 1.0, 2.0], 1, 2.0);
        assert_eq!((f.ok, f.errors, f.p50_ms, f.max_ms, f.throughput_per_s), (3, 1, 2.0, 3.0, 1.5));
    }
}
