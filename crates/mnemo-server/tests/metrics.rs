//! `GET /metrics`: who may scrape it, and that its counters move with the requests served.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;
use std::time::Duration;

use reqwest::Method;
use serde_json::json;

mod serving;
use serving::*;

/// The value of the sample `series` (name with its labels, as written) in a scrape; 0 when it
/// is absent.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0.0)
}

async fn scrape(s: &Server) -> String {
    let r = s.send(Method::GET, "/metrics", Some(ADMIN), &[], None).await;
    assert_eq!(r.status(), 200);
    assert!(r.headers()["content-type"].to_str().unwrap().starts_with("text/plain; version=0.0.4"));
    r.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_need_a_store_wide_token_unless_public() {
    let s = Server::start(settings()).await;
    assert_eq!(s.send(Method::GET, "/metrics", None, &[], None).await.status(), 401);
    let r = s.send(Method::GET, "/metrics", Some(OPS), &[], None).await;
    assert_eq!(r.status(), 403, "the figures are store-wide: a tenant's token does not see them");
    let body: serde_json::Value = r.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("store-wide"), "{body}");
    s.stop().await;

    let mut settings = settings();
    settings.metrics_public = true;
    let s = Server::start(settings).await;
    assert_eq!(s.send(Method::GET, "/metrics", None, &[], None).await.status(), 200);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_move_with_the_requests_served() {
    let s = Server::start(settings()).await;
    let before = scrape(&s).await;
    assert_eq!(sample(&before, "mnemo_remembers_total"), 0.0);
    assert_eq!(sample(&before, "mnemo_store_figures_up"), 1.0);
    assert_eq!(sample(&before, "mnemo_memories{kind=\"semantic\",status=\"active\"}"), 0.0);

    for text in ["[SEM] Northwind Labs | owner | Ben", "[SEM] Northwind Labs | owner | Carla"] {
        let (st, v) = s.post("/v1/namespaces/a/remember", OPS, json!({"text": text})).await;
        assert_eq!(st, 200, "{v}");
    }
    let (st, v) = s
        .post(
            "/v1/namespaces/a/recall",
            OPS,
            json!({"query": "who owns Northwind Labs", "about": "Northwind Labs | owner"}),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    let (st, _) = s.post("/v1/namespaces/a/recall", OPS, json!({"query": "Northwind", "raw": true})).await;
    assert_eq!(st, 200);
    let (st, _) = s.post("/v1/namespaces/b/recall", OPS, json!({"query": "x"})).await;
    assert_eq!(st, 403);
    // The store figures are read again once the store moved and a second has passed.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let after = scrape(&s).await;

    assert_eq!(sample(&after, "mnemo_remembers_total"), 2.0, "{after}");
    assert_eq!(sample(&after, "mnemo_recalls_total{mode=\"assessed\"}"), 1.0);
    assert_eq!(sample(&after, "mnemo_recalls_total{mode=\"raw\"}"), 1.0);
    let decided = sample(&after, "mnemo_decisions_total{decision=\"act\"}")
        + sample(&after, "mnemo_decisions_total{decision=\"escalate\"}");
    assert_eq!(decided, 1.0, "one assessed recall, one decision");
    let remember = "{method=\"POST\",route=\"/v1/namespaces/{ns}/remember\",status=\"200\"}";
    assert_eq!(sample(&after, &format!("mnemo_http_requests_total{remember}")), 2.0, "{after}");
    assert_eq!(sample(&after, &format!("mnemo_http_request_duration_seconds_count{remember}")), 2.0);
    let forbidden = "{method=\"POST\",route=\"/v1/namespaces/{ns}/recall\",status=\"403\"}";
    assert_eq!(sample(&after, &format!("mnemo_http_requests_total{forbidden}")), 1.0);
    // The scrape before is counted too, under its route.
    assert_eq!(sample(&after, "mnemo_http_requests_total{method=\"GET\",route=\"/metrics\",status=\"200\"}"), 1.0);
    // Ben superseded by Carla: one active, one tombstoned; the index has applied every change.
    assert_eq!(sample(&after, "mnemo_memories{kind=\"semantic\",status=\"active\"}"), 1.0, "{after}");
    assert_eq!(sample(&after, "mnemo_memories{kind=\"semantic\",status=\"tombstoned\"}"), 1.0);
    assert_eq!(sample(&after, "mnemo_namespaces"), 1.0);
    assert!(sample(&after, "mnemo_store_revision") > sample(&before, "mnemo_store_revision"));
    assert_eq!(sample(&after, "mnemo_index_lag_revisions"), 0.0);
    assert!(sample(&after, "mnemo_data_dir_bytes") > 0.0);
    assert!(after.contains("mnemo_http_connections_open "), "{after}");
    // The model seam counts every call of the process (other tests' servers included: at least).
    let extract = "mnemo_model_calls_total{call=\"chat:extract\",tier=\"extraction\"}";
    assert!(sample(&after, extract) - sample(&before, extract) >= 2.0, "two turns extracted: {after}");
    s.stop().await;
}
