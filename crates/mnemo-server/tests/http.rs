//! The HTTP API through a real HTTP client (reqwest) against a server started on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use mnemo_llm as _;
use mnemo_store as _;
use mnemo_tools as _;
use std::sync::Arc;

use mnemo_agent::{Config, Runtime};
use mnemo_core::*;
use mnemo_server::{ServeSettings, TokenGrant};
use serde_json::{json, Value};

const OPS: &str = "ops-token-0123456789";
const CRM: &str = "crm-token-0123456789";
const OTHER: &str = "other-token-0123456789";

struct Server {
    base: String,
    client: reqwest::Client,
    stop: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    done: tokio::task::JoinHandle<Result<(), mnemo_server::ServerError>>,
}

impl Server {
    async fn start(dir: &std::path::Path, max_body: Option<usize>) -> Server {
        let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
        let rt = Runtime::build(&Config::embedded_default().unwrap(), dir, clock, vec![]).await.unwrap();
        let mut settings = ServeSettings::with_tokens(vec![
            TokenGrant::new("ops", OPS, &["a", "ctl"]),
            TokenGrant::new("crm", CRM, &["a", "ctl"]),
            TokenGrant::new("other", OTHER, &["b"]),
        ]);
        if let Some(m) = max_body {
            settings.max_body_bytes = m;
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let done = tokio::spawn(mnemo_server::serve(Arc::new(rt), settings, listener, async {
            let _ = rx.await;
        }));
        let _ = rustls::crypto::ring::default_provider().install_default();
        Server { base, client: reqwest::Client::new(), stop: std::sync::Mutex::new(Some(tx)), done }
    }

    async fn call(&self, method: &str, path: &str, token: Option<&str>, body: Option<Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.base);
        let mut req = match method {
            "GET" => self.client.get(url),
            _ => self.client.post(url),
        };
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let text = r.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    async fn remember(&self, ns: &str, token: &str, text: &str, source: Option<&str>) -> Value {
        let (s, v) = self
            .call(
                "POST",
                &format!("/v1/namespaces/{ns}/remember"),
                Some(token),
                Some(json!({"text": text, "source": source})),
            )
            .await;
        assert_eq!(s, 200, "{v}");
        v
    }

    /// Ask for a graceful shutdown (as ctrl-c or SIGTERM does).
    fn signal_stop(&self) {
        if let Some(tx) = self.stop.lock().unwrap().take() {
            let _ = tx.send(());
        }
    }

    async fn stop(self) {
        self.signal_stop();
        self.done.await.unwrap().unwrap();
    }
}

fn code(v: &Value) -> &str {
    v["error"]["code"].as_str().unwrap_or_else(|| panic!("not a structured error: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tokens_wall_off_namespaces() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    let (st, v) = s.call("POST", "/v1/namespaces/a/recall", None, Some(json!({"query": "x"}))).await;
    assert_eq!((st, code(&v)), (401, "unauthorized"));
    let (st, v) =
        s.call("POST", "/v1/namespaces/a/recall", Some("not-a-token-at-all"), Some(json!({"query": "x"}))).await;
    assert_eq!((st, code(&v)), (401, "unauthorized"));
    let (st, v) =
        s.call("POST", "/v1/namespaces/a/remember", Some(OTHER), Some(json!({"text": "[SEM] X | y | z"}))).await;
    assert_eq!((st, code(&v)), (403, "forbidden"));
    let (st, v) = s.call("GET", "/v1/namespaces/a/export", Some(OTHER), None).await;
    assert_eq!((st, code(&v)), (403, "forbidden"));
    // What A wrote is out of B's reach; B's own namespace works.
    s.remember("a", OPS, "[SEM] Secret | code | hunter2", None).await;
    let (st, v) = s.call("GET", "/v1/namespaces/b/memories", Some(OTHER), None).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["memories"].as_array().unwrap().len(), 0);
    let (st, _) = s.call("GET", "/health", None, None).await;
    assert_eq!(st, 200);
    let (st, v) = s.call("GET", "/ready", None, None).await;
    assert_eq!((st, v["status"].as_str()), (200, Some("ready")));
    let (st, v) = s.call("GET", "/nope", Some(OPS), None).await;
    assert_eq!((st, code(&v)), (404, "not_found"));
    let (st, v) = s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(json!({"quer": "x"}))).await;
    assert_eq!(st, 422, "{v}");
    assert_eq!(code(&v), "bad_request");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_oversized_body_is_413_with_a_json_error() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), Some(4096)).await;
    let text = "[EPI] ".to_string() + &"x".repeat(10_000);
    let (st, v) = s.call("POST", "/v1/namespaces/a/remember", Some(OPS), Some(json!({ "text": text }))).await;
    assert_eq!((st, code(&v)), (413, "payload_too_large"), "{v}");
    // Nothing was written.
    let (_, v) = s.call("GET", "/v1/namespaces/a/memories?include_tombstoned=true", Some(OPS), None).await;
    assert_eq!(v["memories"].as_array().unwrap().len(), 0);
    let (st, v) = s.call("GET", "/v1/namespaces/a/memories?limit=5000", Some(OPS), None).await;
    assert_eq!((st, code(&v)), (400, "too_many_items"), "{v}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_are_all_acknowledged_and_recallable() {
    let d = tempfile::tempdir().unwrap();
    let s = Arc::new(Server::start(d.path(), None).await);
    let mut tasks = Vec::new();
    for w in 0..8 {
        let s = s.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..20 {
                let v = s.remember("a", OPS, &format!("[SEM] Part{w}x{i} | bin | B{w}-{i}"), None).await;
                assert_eq!(v["report"]["outcomes"][0]["kind"], "inserted", "{v}");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let (st, v) = s.call("GET", "/v1/namespaces/a/memories?limit=1000", Some(OPS), None).await;
    assert_eq!(st, 200);
    let contents: Vec<&str> =
        v["memories"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(contents.len(), 160);
    for w in 0..8 {
        for i in [0, 7, 19] {
            let (st, v) = s
                .call(
                    "POST",
                    "/v1/namespaces/a/recall",
                    Some(OPS),
                    Some(json!({"query": format!("Part{w}x{i} bin"), "raw": true})),
                )
                .await;
            assert_eq!(st, 200);
            let first = v["memories"][0]["content"].as_str().unwrap().to_string();
            assert!(first.contains(&format!("B{w}-{i}")), "Part{w}x{i}: {first}");
        }
    }
    Arc::into_inner(s).unwrap().stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forget_why_restore_list_and_export() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    let v = s.remember("a", OPS, "[SEM] Acme | owner | Ben", None).await;
    let id = v["report"]["outcomes"][0]["memory"].as_i64().unwrap();
    let (st, v) = s.call("POST", "/v1/namespaces/a/forget", Some(OPS), Some(json!({"command": "Acme | owner"}))).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["report"]["outcomes"][0]["kind"], "forgotten");
    let (st, v) = s.call("GET", &format!("/v1/namespaces/a/memories/{id}"), Some(OPS), None).await;
    assert_eq!(st, 200);
    assert_eq!(v["why"]["memory"]["status"]["status"], "tombstoned", "{v}");
    let (st, v) = s.call("GET", &format!("/v1/namespaces/b/memories/{id}"), Some(OTHER), None).await;
    assert_eq!((st, code(&v)), (404, "not_found"), "another namespace's memory does not exist there");

    let (st, v) = s.call("POST", &format!("/v1/namespaces/a/memories/{id}/restore"), Some(OPS), None).await;
    assert_eq!(st, 200, "{v}");
    let new = v["restored"]["id"].as_i64().unwrap();
    assert_ne!(new, id);
    assert_eq!(v["restored"]["provenance"]["model"], format!("restored from memory {id}"));
    assert!(v["restored"].get("embedding").is_none());
    let (st, v) = s.call("POST", &format!("/v1/namespaces/a/memories/{new}/restore"), Some(OPS), None).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "restoring an active memory: {v}");
    let (st, v) = s.call("POST", "/v1/namespaces/a/memories/999999/restore", Some(OPS), None).await;
    assert_eq!((st, code(&v)), (404, "not_found"));

    let (_, v) = s.call("GET", "/v1/namespaces/a/memories", Some(OPS), None).await;
    assert_eq!(
        v["memories"].as_array().unwrap().iter().map(|m| m["id"].as_i64().unwrap()).collect::<Vec<_>>(),
        vec![new]
    );
    let r = s
        .client
        .get(format!("{}/v1/namespaces/a/export?include_tombstoned=true", s.base))
        .bearer_auth(OPS)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "application/x-ndjson");
    let body = r.text().await.unwrap();
    let lines: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.iter().map(|m| m["id"].as_i64().unwrap()).collect::<Vec<_>>(), vec![id, new]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_openapi_document_lists_the_paths() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    let (st, v) = s.call("GET", "/openapi.json", None, None).await;
    assert_eq!(st, 200);
    assert!(v["openapi"].as_str().unwrap().starts_with("3."));
    let paths = v["paths"].as_object().unwrap();
    for p in [
        "/v1/namespaces/{ns}/remember",
        "/v1/namespaces/{ns}/recall",
        "/v1/namespaces/{ns}/turn",
        "/v1/namespaces/{ns}/forget",
        "/v1/namespaces/{ns}/memories",
        "/v1/namespaces/{ns}/memories/{id}",
        "/v1/namespaces/{ns}/memories/{id}/restore",
        "/v1/namespaces/{ns}/export",
        "/health",
        "/ready",
    ] {
        assert!(paths.contains_key(p), "{p} missing from {:?}", paths.keys().collect::<Vec<_>>());
    }
    assert!(v["components"]["schemas"]["RememberRequest"]["properties"]["text"].is_object());
    assert!(v["components"]["securitySchemes"]["bearer"].is_object());
    s.stop().await;
}

/// The text an agent reads of a recall with budget 256 over 60 memories stays within the budget
/// plus the stated overhead; the body is the agent view; `"detail": "full"` is today's body.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn recall_answers_the_agent_view_by_default_and_the_full_result_on_request() {
    use mnemo_agent::agent_view::RENDER_OVERHEAD_TOKENS;
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    let colours = ["blue", "red", "green", "teal", "amber", "grey"];
    for i in 0..60 {
        s.remember("a", OPS, &format!("[SEM] Item {i} | colour | {}", colours[i % colours.len()]), None).await;
    }
    let ask = json!({"query": "what colour is Item 17", "budget": 256});
    let (st, v) = s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(ask.clone())).await;
    assert_eq!(st, 200, "{v}");
    let view: mnemo_agent::AgentRecall = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}: {v}"));
    assert_eq!((view.budget, view.token_counter.as_str()), (256, "chars/4"));
    assert!(!view.memories.is_empty() && view.tokens <= 256, "{v}");
    assert!(view.decision.is_some(), "an assessed recall decides: {v}");
    assert!(view.memories.iter().any(|m| m.content == "Item 17 | colour | grey"), "{v}");
    let text = view.render(&CharTokenCounter);
    assert!(CharTokenCounter.count(&text) <= 256 + RENDER_OVERHEAD_TOKENS, "{text}");
    assert!(v.get("pack").is_none() && v.get("assessment").is_none(), "no trace by default: {v}");

    let mut full = ask.clone();
    full["detail"] = json!("full");
    let (st, f) = s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(full)).await;
    assert_eq!(st, 200, "{f}");
    assert!(f["pack"]["trace"].as_array().is_some_and(|t| t.len() > view.memories.len()), "{f}");
    assert!(f["assessment"]["grades"].is_array() && f["verdict"]["decision"].is_string(), "{f}");

    let mut raw = ask.clone();
    raw["raw"] = json!(true);
    let (st, r) = s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(raw)).await;
    assert_eq!(st, 200, "{r}");
    assert!(r["decision"].is_null() && r["memories"][0]["trust"].is_null(), "raw: ungraded: {r}");

    let mut bad = ask;
    bad["detail"] = json!("verbose");
    let (st, e) = s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(bad)).await;
    assert_eq!((st, code(&e)), (400, "invalid_input"), "{e}");
    assert!(e["error"]["message"].as_str().unwrap().contains("compact"), "{e}");

    let (_, doc) = s.call("GET", "/openapi.json", None, None).await;
    assert!(doc["components"]["schemas"]["AgentRecall"]["properties"]["memories"].is_object(), "{doc}");
    assert!(doc["components"]["schemas"]["RecallRequest"]["properties"]["detail"].is_object());
    s.stop().await;
}

/// Trust of the answer to `Acme | owner` in `ns`.
async fn trust(s: &Server, ns: &str) -> f64 {
    let (st, v) = s
        .call(
            "POST",
            &format!("/v1/namespaces/{ns}/recall"),
            Some(OPS),
            Some(json!({"query": "Acme owner", "about": {"entity": "Acme", "attribute": "owner"}})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    v["decision"]["trust"].as_f64().unwrap()
}

async fn sources(s: &Server, ns: &str) -> Vec<String> {
    let (_, v) = s.call("GET", &format!("/v1/namespaces/{ns}/memories"), Some(OPS), None).await;
    let m = &v["memories"][0];
    m["sources"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn corroboration_counts_principals_not_labels() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    let fact = "[SEM] Acme | owner | Ben";
    // Three remembers by one principal under three made-up labels...
    for label in ["s1", "s2", "s3"] {
        let v = s.remember("a", OPS, fact, Some(label)).await;
        assert_eq!(v["principal"], "ops");
    }
    assert_eq!(sources(&s, "a").await, vec!["ops"], "labels are not sources");
    // ...weigh exactly what three unlabelled remembers by that principal weigh.
    for _ in 0..3 {
        s.remember("ctl", OPS, fact, None).await;
    }
    let one_principal = trust(&s, "a").await;
    assert_eq!(one_principal, trust(&s, "ctl").await);
    // A second principal corroborates; a fourth restatement by the first does not as much.
    s.remember("a", CRM, fact, None).await;
    s.remember("ctl", OPS, fact, None).await;
    assert_eq!(sources(&s, "a").await, vec!["ops", "crm"]);
    let two_principals = trust(&s, "a").await;
    let restated = trust(&s, "ctl").await;
    assert!(two_principals > restated + 0.05, "two principals {two_principals} vs one restating {restated}");
    assert!(two_principals > one_principal);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn shutdown_loses_no_acknowledged_write_and_releases_the_directory() {
    let d = tempfile::tempdir().unwrap();
    let s = Arc::new(Server::start(d.path(), None).await);
    let mut writers = Vec::new();
    for w in 0..4 {
        let s = s.clone();
        writers.push(tokio::spawn(async move {
            let mut acked = Vec::new();
            for i in 0..1000 {
                let r = s
                    .client
                    .post(format!("{}/v1/namespaces/a/remember", s.base))
                    .bearer_auth(OPS)
                    .json(&json!({"text": format!("[SEM] Bolt{w}x{i} | size | M{w}-{i}")}))
                    .send()
                    .await;
                match r {
                    Ok(r) if r.status() == 200 => acked.push(format!("Bolt{w}x{i} | size | M{w}-{i}")),
                    _ => break, // refused or cut off by the shutdown: not acknowledged
                }
            }
            acked
        }));
    }
    // Let some writes land, then shut down while writers are still sending.
    loop {
        let (_, v) = s.call("GET", "/v1/namespaces/a/memories?limit=1000", Some(OPS), None).await;
        if v["memories"].as_array().unwrap().len() >= 20 {
            break;
        }
        tokio::task::yield_now().await;
    }
    s.signal_stop();
    let mut acked = Vec::new();
    for w in writers {
        acked.extend(w.await.unwrap());
    }
    let s = Arc::into_inner(s).unwrap_or_else(|| panic!("server still shared"));
    s.done.await.unwrap().unwrap();
    assert!(acked.len() >= 20);
    // The directory lock is free again and every acknowledged write is there.
    let rt =
        Runtime::build(&Config::embedded_default().unwrap(), d.path(), Arc::new(SystemClock), vec![]).await.unwrap();
    let all = rt.engine().active_memories(&Namespace::new("a").unwrap()).await.unwrap();
    for a in &acked {
        assert!(all.iter().any(|m| &m.content == a), "acknowledged {a} is missing");
    }
    let pack = rt.engine().recall(&Namespace::new("a").unwrap(), "Bolt0x0 size", &Default::default()).await.unwrap();
    assert!(pack.items[0].memory.content.contains("M0-0"), "the index serves it after the restart");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_agent_turn_remembers_under_the_principal_then_decides() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    s.remember("a", CRM, "[SEM] Acme | owner | Ben", None).await;
    let (st, v) = s
        .call(
            "POST",
            "/v1/namespaces/a/turn",
            Some(OPS),
            Some(json!({"message": "[SEM] Acme | owner | Ben", "about": {"entity": "Acme", "attribute": "owner"}})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["principal"], "ops");
    assert_eq!(v["turn"]["remembered"]["turn"]["source"], "ops");
    assert_eq!(v["turn"]["verdict"]["decision"], "act", "two principals agree: {v}");
    assert_eq!(v["turn"]["verdict"]["act_on"][0]["value"], "Ben", "{v}");
    let (st, v) = s.call("POST", "/v1/namespaces/a/turn", Some(OTHER), Some(json!({"message": "hi"}))).await;
    assert_eq!((st, code(&v)), (403, "forbidden"));
    s.stop().await;
}
