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
    /// Acknowledged remembers found by a recall afterwards.
    pub recallable: usize,
    /// Acknowledged remembers NOT found afterwards (their text).
    pub lost: Vec<String>,
    /// Recalls during the load whose pack did not lead with the value asked for.
    pub recall_misses: usize,
    /// Up to 10 error messages.
    pub error_samples: Vec<String>,
}

#[derive(Default)]
struct ClientLog {
    remember_ms: Vec<f64>,
    recall_ms: Vec<f64>,
    remember_errors: usize,
    recall_errors: usize,
    recall_misses: usize,
    acked: Vec<(String, String)>,
    errors: Vec<String>,
}

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
    let r = http.post(url).bearer_auth(token).json(&body).send().await.map_err(|e| format!("{url}: {e}"))?;
    let status = r.status();
    let text = r.text().await.map_err(|e| format!("{url}: reading the answer: {e}"))?;
    if status.as_u16() != 200 {
        return Err(format!("{url}: {status}: {}", text.chars().take(300).collect::<String>()));
    }
    serde_json::from_str(&text).map_err(|e| format!("{url}: not JSON: {e}"))
}

fn leads_with(pack: &serde_json::Value, value: &str) -> bool {
    pack["items"][0]["memory"]["content"].as_str().is_some_and(|c| c.ends_with(&format!("| {value}")))
}

async fn client(http: reqwest::Client, o: LoadOptions, id: usize, deadline: Instant) -> ClientLog {
    let mut log = ClientLog::default();
    let remember_url = format!("{}/v1/namespaces/{}/remember", o.base, o.namespace);
    let recall_url = format!("{}/v1/namespaces/{}/recall", o.base, o.namespace);
    let mut i = 0usize;
    while Instant::now() < deadline {
        let started = Instant::now();
        if i.is_multiple_of(o.remember_every.max(1)) || log.acked.is_empty() {
            let (e, v) = fact(id, i);
            match post(&http, &remember_url, &o.token, json!({"text": format!("[SEM] {e} | slot | {v}")})).await {
                Ok(_) => {
                    log.remember_ms.push(started.elapsed().as_secs_f64() * 1e3);
                    log.acked.push((e, v));
                }
                Err(m) => {
                    log.remember_errors += 1;
                    log.errors.push(m);
                }
            }
        } else {
            // Recall something this client wrote (spread over its writes), fully assessed.
            let (e, v) = log.acked[(i.wrapping_mul(7919)) % log.acked.len()].clone();
            match post(
                &http,
                &recall_url,
                &o.token,
                // The full result, as the published figures were measured (the pack is read below).
                json!({"query": format!("{e} slot"), "about": {"entity": e, "attribute": "slot"}, "detail": "full"}),
            )
            .await
            {
                Ok(body) => {
                    log.recall_ms.push(started.elapsed().as_secs_f64() * 1e3);
                    if !leads_with(&body["pack"], &v) {
                        log.recall_misses += 1;
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

/// Run the load, then check every acknowledged remember with a raw recall (as many checks in
/// flight as there were clients).
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
    let acked: Vec<(String, String)> = logs.iter().flat_map(|l| l.acked.iter().cloned()).collect();
    let error_samples: Vec<String> = logs.iter().flat_map(|l| l.errors.iter().cloned()).take(10).collect();

    // Afterwards: every acknowledged remember must come back first for its own query.
    let recall_url = format!("{}/v1/namespaces/{}/recall", o.base, o.namespace);
    let chunk = acked.len().div_ceil(o.clients).max(1);
    let checks: Vec<_> = acked
        .chunks(chunk)
        .map(|part| {
            let part = part.to_vec();
            let (http, url, token) = (http.clone(), recall_url.clone(), o.token.clone());
            tokio::spawn(async move {
                let mut lost = Vec::new();
                for (e, v) in part {
                    let found =
                        post(&http, &url, &token, json!({"query": format!("{e} slot"), "raw": true, "detail": "full"}))
                            .await
                            .is_ok_and(|b| leads_with(&b["pack"], &v));
                    if !found {
                        lost.push(format!("{e} | slot | {v}"));
                    }
                }
                lost
            })
        })
        .collect();
    let mut lost = Vec::new();
    for c in checks {
        lost.extend(
            c.await.map_err(|e| ServerError::Io { action: "run a check".into(), source: std::io::Error::other(e) })?,
        );
    }
    Ok(LoadReport {
        ops,
        elapsed_s: elapsed,
        acknowledged: acked.len(),
        recallable: acked.len() - lost.len(),
        lost,
        recall_misses: logs.iter().map(|l| l.recall_misses).sum(),
        error_samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
