//! The HTTP API through a real HTTP client (reqwest) against a server started on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;
use std::sync::Arc;

use mnemo_agent::{Config, Runtime};
use mnemo_contract::*;
use mnemo_server::{ServeSettings, TokenGrant};
use serde_json::{json, Value};

const OPS: &str = "ops-token-0123456789";
const CRM: &str = "crm-token-0123456789";
const OTHER: &str = "other-token-0123456789";
/// Reaches every namespace (`"*"`): the one token a backup is given to.
const ADMIN: &str = "admin-token-0123456789";

struct Server {
    base: String,
    client: reqwest::Client,
    stop: std::sync::Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    done: tokio::task::JoinHandle<Result<(), mnemo_server::ServerError>>,
}

impl Server {
    async fn start(dir: &std::path::Path, max_body: Option<usize>) -> Server {
        Self::start_with(dir, max_body, vec![]).await
    }

    /// With these systems of record besides the config's.
    async fn start_with(dir: &std::path::Path, max_body: Option<usize>, grounders: Vec<Arc<dyn Grounder>>) -> Server {
        let rt = Runtime::build(&Config::embedded_default().unwrap(), dir, clock(), grounders).await.unwrap();
        Self::serve(rt, max_body).await
    }

    /// Serving this runtime.
    async fn serve(rt: Runtime, max_body: Option<usize>) -> Server {
        // As `mnemo serve` does: concurrent remembers are written as group commits.
        rt.start_group_commit().unwrap();
        let mut settings = ServeSettings::with_tokens(vec![
            TokenGrant::new("ops", OPS, &["a", "ctl"]).answering().erasing(),
            TokenGrant::new("crm", CRM, &["a", "ctl"]),
            TokenGrant::new("other", OTHER, &["b"]).answering(),
            TokenGrant::new("admin", ADMIN, &["*"]),
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

fn clock() -> Arc<SimClock> {
    Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()))
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

/// `dry_run` previews what a forget would take and keep, and why, writing nothing; a free-text
/// forget keeps a pinned memory and one that only mentions its word in a URL (issue 41).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forget_dry_run_previews_and_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    s.remember(
        "a",
        OPS,
        "[SEM] Northwind Labs | owner | Ben\n[PROC] Order parts at https://northwind.example/orders\n[SEM pin] Ben | role | buyer",
        None,
    )
    .await;
    let (st, v) = s
        .call("POST", "/v1/namespaces/a/forget", Some(OPS), Some(json!({"command": "Northwind", "dry_run": true})))
        .await;
    assert_eq!(st, 200, "{v}");
    assert!(v.get("report").is_none(), "a dry run reports no turn: {v}");
    assert_eq!(v["preview"]["forget"][0]["id"], "m1", "{v}");
    assert_eq!(v["preview"]["forget"][0]["why"], "claim entity matches", "{v}");
    assert_eq!(v["preview"]["forget"].as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v["preview"]["kept"][0]["id"], "m2", "{v}");
    assert!(v["text"].as_str().unwrap().contains("only mentioned inside a web address"), "{v}");
    let (st, v) =
        s.call("POST", "/v1/namespaces/a/forget", Some(OPS), Some(json!({"command": "Ben", "dry_run": true}))).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["preview"]["kept"][0]["id"], "m3", "the pinned memory is kept: {v}");
    assert!(v["preview"]["kept"][0]["why"].as_str().unwrap().starts_with("pinned"), "{v}");
    let body = json!({"command": "Ben", "dry_run": true, "include_pinned": true});
    let (_, v) = s.call("POST", "/v1/namespaces/a/forget", Some(OPS), Some(body)).await;
    assert_eq!(v["preview"]["forget"].as_array().unwrap().len(), 2, "{v}");
    // Nothing written: every memory active, and the real forget's turn is the second.
    let (_, v) = s.call("GET", "/v1/namespaces/a/memories", Some(OPS), None).await;
    assert_eq!(v["memories"].as_array().unwrap().len(), 3, "{v}");
    let (st, v) = s.call("POST", "/v1/namespaces/a/forget", Some(OPS), Some(json!({"command": "Ben"}))).await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["report"]["turn"]["id"], "t2", "{v}");
    assert_eq!(v["report"]["outcomes"][0]["tombstoned"], json!(["m1"]), "{v}");
    assert!(v.get("preview").is_none(), "{v}");
}

/// Erasure over HTTP needs the token's `erase` scope (403 naming it otherwise); a dry run
/// lists what would go; an erasure leaves the value nowhere the API shows, and `why` says
/// "erased" with the time and reason (issue 41).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn erase_needs_its_scope_and_leaves_the_value_nowhere() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    s.remember("a", OPS, "[SEM] Ben | phone | +1 555 0100\n[SEM] Ann | drink | tea", None).await;
    let body = json!({"what": "Ben | phone", "reason": "GDPR request 7"});
    let (st, v) = s.call("POST", "/v1/namespaces/a/erase", Some(CRM), Some(body.clone())).await;
    assert_eq!(st, 403, "{v}");
    assert!(v.to_string().contains("erase scope"), "names the missing scope: {v}");
    let (st, v) = s.call("POST", "/v1/namespaces/a/erase", Some(OPS), Some(json!({"what": "m9", "reason": "x"}))).await;
    assert_eq!(st, 404, "{v}");
    let (st, v) = s.call("POST", "/v1/namespaces/a/erase", Some(OPS), Some(json!({"what": "m1", "reason": " "}))).await;
    assert_eq!(st, 400, "{v}");
    let dry = json!({"what": "Ben | phone", "reason": "GDPR request 7", "dry_run": true});
    let (st, v) = s.call("POST", "/v1/namespaces/a/erase", Some(OPS), Some(dry)).await;
    assert_eq!(st, 200, "{v}");
    typed::<mnemo_server::api::EraseResponse>(&v);
    typed::<mnemo_server::schema::EraseReport>(&v["report"]);
    assert_eq!(v["report"]["memories"][0]["content"], "Ben | phone | +1 555 0100", "{v}");
    assert!(v["report"]["erasure"].is_null(), "{v}");
    let (st, v) = s.call("POST", "/v1/namespaces/a/erase", Some(OPS), Some(body)).await;
    assert_eq!(st, 200, "{v}");
    typed::<mnemo_server::schema::EraseReport>(&v["report"]);
    assert_eq!(v["report"]["erasure"]["by"], "ops", "{v}");
    assert!(!v.to_string().contains("555 0100"), "{v}");
    let (st, v) = s.call("GET", "/v1/namespaces/a/memories/m1", Some(OPS), None).await;
    assert_eq!(st, 200, "{v}");
    typed::<mnemo_server::schema::WhyReport>(&v["why"]);
    assert!(v["text"].as_str().unwrap().contains("ERASED at "), "{v}");
    assert!(v["text"].as_str().unwrap().contains("GDPR request 7"), "{v}");
    for path in
        ["/v1/namespaces/a/memories?include_tombstoned=true", "/v1/namespaces/a/export", "/v1/namespaces/a/memories/m1"]
    {
        let (st, v) = s.call("GET", path, Some(OPS), None).await;
        assert_eq!(st, 200, "{path}: {v}");
        assert!(!v.to_string().contains("555 0100"), "{path}: {v}");
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn forget_why_restore_list_and_export() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    let v = s.remember("a", OPS, "[SEM] Acme | owner | Ben", None).await;
    let id = v["report"]["outcomes"][0]["memory"].as_str().unwrap().to_string();
    assert_eq!(id, "m1", "the namespace's first memory: {v}");
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
    let new = v["restored"]["id"].as_str().unwrap().to_string();
    assert_ne!(new, id);
    assert_eq!(v["restored"]["provenance"]["model"], format!("restored from memory {id}"));
    assert!(v["restored"].get("embedding").is_none());
    let (st, v) = s.call("POST", &format!("/v1/namespaces/a/memories/{new}/restore"), Some(OPS), None).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "restoring an active memory: {v}");
    let (st, v) = s.call("POST", "/v1/namespaces/a/memories/m999999/restore", Some(OPS), None).await;
    assert_eq!((st, code(&v)), (404, "not_found"));
    let (st, v) = s.call("GET", "/v1/namespaces/a/memories/t1", Some(OPS), None).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "a turn's id where a memory's is asked: {v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("t1 is a turn id"), "{v}");
    let (st, v) = s.call("GET", "/v1/namespaces/a/memories/bogus", Some(OPS), None).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "{v}");

    let (_, v) = s.call("GET", "/v1/namespaces/a/memories", Some(OPS), None).await;
    assert_eq!(
        v["memories"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect::<Vec<_>>(),
        vec![new.as_str()]
    );
    let r = s
        .client
        .get(format!("{}/v1/namespaces/a/export?include_tombstoned=true", s.base))
        .bearer_auth(OPS)
        .send()
        .await
        .unwrap();
    assert_eq!(r.headers()["content-type"], "application/x-ndjson");
    // The history chain head: at least the remember's turn and event, the forget's tombstone
    // and the restore's new memory.
    let head = r.headers()["x-mnemo-chain-head"].to_str().unwrap().to_string();
    let (seq, hash) = head.split_once(' ').unwrap();
    assert!(seq.parse::<i64>().unwrap() >= 4 && hash.len() == 64, "{head}");
    let body = r.text().await.unwrap();
    let lines: Vec<Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.iter().map(|m| m["id"].as_str().unwrap()).collect::<Vec<_>>(), vec![id.as_str(), new.as_str()]);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_remember_at_a_stated_time_is_recorded_then_and_a_bad_time_is_400() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    let body = json!({"text": "[SEM] Acme | owner | Ben", "at": "2026-05-01T09:30:00Z"});
    let (st, v) = s.call("POST", "/v1/namespaces/a/remember", Some(OPS), Some(body)).await;
    assert_eq!(st, 200, "{v}");
    let at = |t: &str| Timestamp::parse_rfc3339(t).unwrap().millis();
    assert_eq!(v["report"]["turn"]["at"], at("2026-05-01T09:30:00Z"), "{v}");
    let (_, why) = s.call("GET", "/v1/namespaces/a/memories/m1", Some(OPS), None).await;
    assert_eq!(why["why"]["memory"]["created_at"], at("2026-05-01T09:30:00Z"), "{why}");
    // A date alone is that day's midnight UTC.
    let body = json!({"text": "[SEM] Acme | city | Oslo", "at": "2026-05-02"});
    let (st, v) = s.call("POST", "/v1/namespaces/a/remember", Some(OPS), Some(body)).await;
    assert_eq!((st, v["report"]["turn"]["at"].as_i64()), (200, Some(at("2026-05-02T00:00:00Z"))), "{v}");
    // Not a time: 400 invalid_input naming it, and nothing written.
    let body = json!({"text": "[SEM] Acme | owner | Carla", "at": "yesterday"});
    let (st, v) = s.call("POST", "/v1/namespaces/a/remember", Some(OPS), Some(body)).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("at \"yesterday\"") && msg.contains("YYYY-MM-DD"), "{msg}");
    // Far ahead of the server's clock: refused naming the time and the clock.
    let body = json!({"text": "[SEM] Acme | owner | Carla", "at": "2027-01-01"});
    let (st, v) = s.call("POST", "/v1/namespaces/a/remember", Some(OPS), Some(body)).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "{v}");
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains("2027-01-01T00:00:00Z") && msg.contains("2026-07-01T09:00:00Z"), "{msg}");
    let (_, v) = s.call("GET", "/v1/namespaces/a/memories?include_tombstoned=true", Some(OPS), None).await;
    assert_eq!(v["memories"].as_array().unwrap().len(), 2, "{v}");
    s.stop().await;
}

/// `as_of` recalls what memory held then, and `GET history` lists a claim's values with their
/// times (issue 38), as the CLI does.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn recall_as_of_a_past_time_and_a_claims_history() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    for (text, at) in
        [("[SEM] Acme | lead time | 21 days", "2026-05-01"), ("[SEM] Acme | lead time | 35 days", "2026-05-21")]
    {
        let (st, v) =
            s.call("POST", "/v1/namespaces/a/remember", Some(OPS), Some(json!({"text": text, "at": at}))).await;
        assert_eq!(st, 200, "{v}");
    }
    let recall = |as_of: &'static str| {
        let body = json!({"query": "Acme lead time", "as_of": as_of});
        s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(body))
    };
    let (st, v) = recall("2026-05-10").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["memories"][0]["content"], "Acme | lead time | 21 days", "{v}");
    assert_eq!(v["memories"].as_array().unwrap().len(), 1, "{v}");
    let (_, v) = recall("2026-06-01").await;
    assert_eq!(v["memories"][0]["content"], "Acme | lead time | 35 days", "{v}");
    let (st, v) = recall("soon").await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("as_of"), "{v}");
    let (st, v) = s.call("GET", "/v1/namespaces/a/history?claim=Acme%20%7C%20lead%20time", Some(OPS), None).await;
    assert_eq!(st, 200, "{v}");
    let values = v["history"]["values"].as_array().unwrap();
    assert_eq!(values.len(), 2, "{v}");
    assert_eq!(
        (values[0]["value"].as_str(), values[0]["superseded_by"].as_str()),
        (Some("21 days"), Some("m2")),
        "{v}"
    );
    assert_eq!(values[0]["ended_at"], "2026-05-21T00:00:00Z", "{v}");
    assert!(v["text"].as_str().unwrap().contains("m2 \"35 days\""), "{v}");
    let (st, v) = s.call("GET", "/v1/namespaces/a/history?claim=Acme", Some(OPS), None).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "a claim without its attribute: {v}");
    // An episode window: the episode of May 25 only in a window holding it.
    let body = json!({"text": "[EPI] Shipped 5 crates to Acme", "at": "2026-05-25"});
    let (st, v) = s.call("POST", "/v1/namespaces/a/remember", Some(OPS), Some(body)).await;
    assert_eq!(st, 200, "{v}");
    let shipped =
        |v: &Value| v["memories"].as_array().unwrap().iter().any(|m| m["content"] == "Shipped 5 crates to Acme");
    let body = json!({"query": "Acme crates shipped", "raw": true, "since": "2026-05-24", "until": "2026-05-26"});
    let (st, v) = s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(body)).await;
    assert!(st == 200 && shipped(&v), "{v}");
    let body = json!({"query": "Acme crates shipped", "raw": true, "since": "2026-05-26"});
    let (_, v) = s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(body)).await;
    assert!(!shipped(&v), "{v}");
    let body = json!({"query": "Acme", "until": "whenever"});
    let (st, v) = s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(body)).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().starts_with("until"), "{v}");
    // World time: Ben lived in Lisbon from 2019 to 2021, then Porto from 2022.
    for (text, at) in [
        ("[SEM from=2019 to=2021] Ben | city | Lisbon", "2026-05-26"),
        ("[SEM from=2022] Ben | city | Porto", "2026-05-27"),
    ] {
        let (st, v) =
            s.call("POST", "/v1/namespaces/a/remember", Some(OPS), Some(json!({"text": text, "at": at}))).await;
        assert_eq!(st, 200, "{v}");
    }
    let city = |valid_at: &'static str| {
        let body = json!({"query": "Ben city", "raw": true, "valid_at": valid_at});
        s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(body))
    };
    let (st, v) = city("2020-06-01").await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["memories"][0]["content"], "Ben | city | Lisbon", "{v}");
    let (_, v) = city("2023-06-01").await;
    assert_eq!(v["memories"][0]["content"], "Ben | city | Porto", "{v}");
    let (st, v) = city("never").await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().starts_with("valid_at"), "{v}");
    let (_, v) = s.call("GET", "/v1/namespaces/a/history?claim=Ben%20%7C%20city", Some(OPS), None).await;
    assert_eq!(v["history"]["values"][0]["valid_to"], "2022-01-01", "{v}");
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
        "/v1/namespaces/{ns}/erase",
        "/v1/namespaces/{ns}/memories",
        "/v1/namespaces/{ns}/memories/{id}",
        "/v1/namespaces/{ns}/memories/{id}/restore",
        "/v1/namespaces/{ns}/history",
        "/v1/namespaces/{ns}/export",
        "/v1/namespaces/{ns}/escalations",
        "/v1/namespaces/{ns}/escalations/{id}",
        "/v1/namespaces/{ns}/escalations/{id}/answer",
        "/v1/namespaces/{ns}/escalations/{id}/dismiss",
        "/v1/backup",
        "/health",
        "/ready",
        "/metrics",
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
    assert!(view.memories.iter().all(|m| m.id.starts_with('m')), "short ids: {v}");
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
    // What an agent reads by default: what the message wrote, then the recall's compact view
    // with the checked plan.
    assert_eq!(v["principal"], "ops");
    assert_eq!(v["remembered"]["turn"]["source"], "ops", "{v}");
    assert_eq!(v["recall"]["decision"]["decision"], "act", "two principals agree: {v}");
    assert_eq!(v["recall"]["decision"]["act_on"][0]["value"], "Ben", "{v}");
    assert_eq!(v["recall"]["plan"]["faithful"], true, "{v}");
    assert!(v["recall"]["plan"]["uses"][0]["memory"].as_str().unwrap().starts_with('m'), "{v}");
    assert!(v.get("turn").is_none() && !v.to_string().contains("\"trace\""), "compact: {v}");
    // The turn's text, and the nested recall's own text as `recall` answers it.
    let turn_text = v["text"].as_str().unwrap_or_else(|| panic!("the turn's text: {v}"));
    let recall_text = v["recall"]["text"].as_str().unwrap_or_else(|| panic!("the recall's text: {v}"));
    assert!(recall_text.contains("Ben") && turn_text.contains(recall_text), "{v}");
    // The whole turn on request.
    let (st, v) = s
        .call(
            "POST",
            "/v1/namespaces/a/turn",
            Some(OPS),
            Some(json!({"text": "who owns Acme?", "about": "Acme | owner", "detail": "full"})),
        )
        .await;
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["turn"]["verdict"]["decision"], "act", "{v}");
    assert!(v["turn"]["pack"]["trace"].is_array() && v["turn"]["plan"]["plan"]["answer"].is_string(), "{v}");
    let (st, v) =
        s.call("POST", "/v1/namespaces/a/turn", Some(OPS), Some(json!({"text": "hi", "detail": "verbose"}))).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("compact"), "{v}");
    let (st, v) = s.call("POST", "/v1/namespaces/a/turn", Some(OTHER), Some(json!({"message": "hi"}))).await;
    assert_eq!((st, code(&v)), (403, "forbidden"));
    s.stop().await;
}

const APPROVER_Q: &str = "Who signs off purchase orders at Northwind Labs?";

/// An agent turn that escalates records an escalation a human answers over HTTP; the same turn
/// then acts on the human's value. The namespace wall holds; unknown ids are 404, bad ones 400,
/// a closed escalation 409; a dismissal records nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_escalation_answered_over_http_and_the_same_turn_then_acts_on_it() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    s.remember("a", CRM, "[SEM] Northwind Labs | owner | Ben", None).await;
    let ask = json!({"text": APPROVER_Q, "about": "Northwind Labs | approver", "budget": 256});
    let turn = |token| s.call("POST", "/v1/namespaces/a/turn", Some(token), Some(ask.clone()));

    // Memory holds no approver: ESCALATE, and the compact answer names the escalation.
    let (st, v) = turn(OPS).await;
    assert_eq!(st, 200, "{v}");
    let recall = &v["recall"];
    assert_eq!(recall["decision"]["decision"], "escalate", "{v}");
    assert_eq!(
        (recall["escalation"]["id"].as_str(), recall["escalation"]["reused"].as_bool()),
        (Some("e1"), Some(false))
    );
    assert!(recall["plan"].is_null(), "no plan on ESCALATE: {v}");
    // Again: the open one is reused.
    let (_, v) = turn(OPS).await;
    assert_eq!(
        (v["recall"]["escalation"]["id"].as_str(), v["recall"]["escalation"]["reused"].as_bool()),
        (Some("e1"), Some(true))
    );

    let (st, v) = s.call("GET", "/v1/namespaces/a/escalations?open=true", Some(OPS), None).await;
    assert_eq!(st, 200, "{v}");
    let open = v["escalations"].as_array().unwrap();
    assert_eq!(open.len(), 1, "{v}");
    assert_eq!(
        (open[0]["id"].as_str(), open[0]["status"].as_str(), open[0]["raised"].as_u64()),
        (Some("e1"), Some("open"), Some(2))
    );
    assert_eq!(open[0]["claim"], json!({"entity": "Northwind Labs", "attribute": "approver"}));
    assert!(open[0]["pack"].as_array().unwrap().iter().all(|m| m.as_str().unwrap().starts_with('m')), "{v}");
    let (st, one) = s.call("GET", "/v1/namespaces/a/escalations/e1", Some(OPS), None).await;
    assert_eq!((st, &one), (200, &open[0]));
    let (st, same) = s.call("GET", "/v1/namespaces/a/escalations/1", Some(OPS), None).await;
    assert_eq!((st, &same), (200, &one), "a bare number names it too");

    // The wall: another token is refused the namespace; in its own, e1 is unknown.
    for path in ["/v1/namespaces/a/escalations", "/v1/namespaces/a/escalations/e1"] {
        let (st, v) = s.call("GET", path, Some(OTHER), None).await;
        assert_eq!((st, code(&v)), (403, "forbidden"), "{path}: {v}");
    }
    let (st, v) =
        s.call("POST", "/v1/namespaces/a/escalations/e1/answer", Some(OTHER), Some(json!({"text": "Mallory"}))).await;
    assert_eq!((st, code(&v)), (403, "forbidden"), "{v}");
    let (st, v) = s.call("GET", "/v1/namespaces/b/escalations", Some(OTHER), None).await;
    assert_eq!((st, &v["escalations"]), (200, &json!([])), "{v}");
    let (st, v) = s.call("GET", "/v1/namespaces/b/escalations/e1", Some(OTHER), None).await;
    assert_eq!((st, code(&v)), (404, "not_found"), "{v}");
    let (st, v) =
        s.call("POST", "/v1/namespaces/b/escalations/e1/answer", Some(OTHER), Some(json!({"text": "Mallory"}))).await;
    assert_eq!((st, code(&v)), (404, "not_found"), "{v}");

    // Mistakes: unknown 404, not an id 400, an empty text 400; nothing recorded.
    let (st, v) = s.call("GET", "/v1/namespaces/a/escalations/e9", Some(OPS), None).await;
    assert_eq!((st, code(&v)), (404, "not_found"), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("holds e1 only"), "{v}");
    for bad in ["m1", "x", "e0"] {
        let (st, v) = s.call("GET", &format!("/v1/namespaces/a/escalations/{bad}"), Some(OPS), None).await;
        assert_eq!((st, code(&v)), (400, "invalid_input"), "{bad}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("not an escalation id"), "{v}");
    }
    let (st, v) =
        s.call("POST", "/v1/namespaces/a/escalations/e1/answer", Some(OPS), Some(json!({"text": "  "}))).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "{v}");
    let (st, v) = s
        .call("POST", "/v1/namespaces/a/escalations/e1/answer", Some(OPS), Some(json!({"text": "Carla", "by": "ceo"})))
        .await;
    assert_eq!((st, code(&v)), (403, "forbidden"), "an answer is the token principal's word, never another's: {v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("names someone else"), "{v}");
    let (st, v) =
        s.call("POST", "/v1/namespaces/a/escalations/e1/answer", Some(OPS), Some(json!({"answer": "Carla"}))).await;
    assert_eq!((st, code(&v)), (422, "bad_request"), "{v}");

    // The answer, the value alone, by the token's principal: memory from human:ops.
    let (st, a) =
        s.call("POST", "/v1/namespaces/a/escalations/e1/answer", Some(OPS), Some(json!({"text": "Carla"}))).await;
    assert_eq!(st, 200, "{a}");
    assert_eq!(a["escalation"]["status"], "answered", "{a}");
    assert_eq!(a["escalation"]["answer"]["by"], "human:ops", "{a}");
    assert_eq!(a["escalation"]["answer"]["form"], "value", "{a}");
    assert_eq!(a["escalation"]["answer"]["recorded"], "[SEM] Northwind Labs | approver | Carla", "{a}");
    assert_eq!(a["remembered"]["turn"]["source"], "human:ops", "{a}");
    assert!(a["escalation"]["answer"]["turn"].as_str().unwrap().starts_with('t'), "{a}");

    // Closed: answering or dismissing it again is a conflict, said so.
    let (st, v) =
        s.call("POST", "/v1/namespaces/a/escalations/e1/answer", Some(OPS), Some(json!({"text": "Dana"}))).await;
    assert_eq!((st, code(&v)), (409, "conflict"), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("already answered by human:ops"), "{v}");
    let (st, v) = s.call("POST", "/v1/namespaces/a/escalations/e1/dismiss", Some(OPS), None).await;
    assert_eq!((st, code(&v)), (409, "conflict"), "{v}");
    // No body as generated clients send it (JSON content type, empty) is no body; a body not
    // sent as JSON is refused, never ignored.
    let post = |content_type: &'static str, body: &'static str| {
        s.client
            .post(format!("{}/v1/namespaces/a/escalations/e1/dismiss", s.base))
            .bearer_auth(OPS)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    assert_eq!(post("application/json", "").await.unwrap().status().as_u16(), 409);
    assert_eq!(post("text/plain", "by=carla").await.unwrap().status().as_u16(), 415);
    assert_eq!(post("application/json", "{\"by\": 3}").await.unwrap().status().as_u16(), 422);
    let (_, v) = s.call("GET", "/v1/namespaces/a/escalations?open=true", Some(OPS), None).await;
    assert_eq!(v["escalations"], json!([]), "{v}");

    // The same turn now acts on the human's value, planned and checked.
    let (st, v) = turn(OPS).await;
    assert_eq!(st, 200, "{v}");
    let recall = &v["recall"];
    assert_eq!(recall["decision"]["decision"], "act", "{v}");
    let on = &recall["decision"]["act_on"][0];
    assert_eq!(on["value"], "Carla", "{v}");
    assert_eq!(recall["plan"]["faithful"], true, "{v}");
    assert!(recall["plan"]["uses"].as_array().unwrap().iter().any(|u| u["memory"] == on["memory"]), "{v}");
    assert!(recall["escalation"].is_null(), "{v}");
    let (_, why) =
        s.call("GET", &format!("/v1/namespaces/a/memories/{}", on["memory"].as_str().unwrap()), Some(OPS), None).await;
    assert_eq!(why["why"]["memory"]["sources"], json!(["human:ops"]), "{why}");

    // Dismissed (no body, or a name): closed, nothing recorded.
    let other = json!({"text": "Who buys for Contoso?", "about": "Contoso | buyer"});
    let (_, v) = s.call("POST", "/v1/namespaces/a/turn", Some(OPS), Some(other)).await;
    assert_eq!(v["recall"]["escalation"]["id"], "e2", "{v}");
    let (_, before) = s.call("GET", "/v1/namespaces/a/memories?include_tombstoned=true", Some(OPS), None).await;
    let (st, e) = s.call("POST", "/v1/namespaces/a/escalations/e2/dismiss", Some(OPS), Some(Value::Null)).await;
    assert_eq!(st, 200, "{e}");
    assert_eq!((e["status"].as_str(), e["dismissal"]["by"].as_str()), (Some("dismissed"), Some("human:ops")), "{e}");
    let (_, after) = s.call("GET", "/v1/namespaces/a/memories?include_tombstoned=true", Some(OPS), None).await;
    assert_eq!(before, after, "a dismissal records nothing");
    let (st, v) = s
        .call("POST", "/v1/namespaces/a/escalations/e2/answer", Some(OPS), Some(json!({"text": "x", "by": "ops"})))
        .await;
    assert_eq!((st, code(&v)), (409, "conflict"), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("e2 was dismissed by human:ops"), "{v}");
    let (_, all) = s.call("GET", "/v1/namespaces/a/escalations", Some(OPS), None).await;
    let statuses: Vec<&str> =
        all["escalations"].as_array().unwrap().iter().map(|e| e["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["answered", "dismissed"], "{all}");
    let (st, v) = s.call("GET", "/v1/namespaces/a/escalations?open=maybe", Some(OPS), None).await;
    assert_eq!((st, code(&v)), (400, "bad_request"), "{v}");
    s.stop().await;
}

/// The document as served: a JSON value.
fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
        Some(name) => &doc["components"]["schemas"][name],
        None => schema,
    }
}

/// Whether a schema admits null.
fn nullable(s: &Value) -> bool {
    s["type"] == "null"
        || s["type"].as_array().is_some_and(|t| t.iter().any(|x| x == "null"))
        || ["oneOf", "anyOf"].iter().any(|k| s[*k].as_array().is_some_and(|a| a.iter().any(nullable)))
}

/// Every untyped object (no properties, no composition, no typed additionalProperties) and
/// every required property that may be null, anywhere under `s`, as `at: what`.
fn untyped_or_required_null(s: &Value, at: &str, out: &mut Vec<String>) {
    let Value::Object(m) = s else { return };
    let is_object = s["type"] == "object" || s["type"].as_array().is_some_and(|t| t.iter().any(|x| x == "object"));
    let composed = ["$ref", "oneOf", "anyOf", "allOf", "properties"].iter().any(|k| m.contains_key(*k))
        || s["additionalProperties"].is_object();
    if (is_object || m.keys().all(|k| k == "description")) && !composed {
        out.push(format!("{at}: an untyped object"));
    }
    if let Some(props) = s["properties"].as_object() {
        for r in s["required"].as_array().into_iter().flatten().filter_map(Value::as_str) {
            if props.get(r).is_some_and(nullable) {
                out.push(format!("{at}.{r}: required, yet it may be null"));
            }
        }
        for (k, p) in props {
            untyped_or_required_null(p, &format!("{at}.{k}"), out);
        }
    }
    for k in ["items", "additionalProperties"] {
        untyped_or_required_null(&s[k], &format!("{at}.{k}"), out);
    }
    for k in ["oneOf", "anyOf", "allOf"] {
        for (i, x) in s[k].as_array().into_iter().flatten().enumerate() {
            untyped_or_required_null(x, &format!("{at}.{k}[{i}]"), out);
        }
    }
}

/// The document types every operation: list's and export's options are query parameters, every
/// operation has a typed 200 body, no schema anywhere is an untyped object or requires a field
/// that may be null, and the error statuses the routes answer are declared.
#[test]
fn the_document_declares_query_parameters_typed_bodies_and_error_statuses() {
    use utoipa::OpenApi as _;
    let doc = serde_json::to_value(mnemo_server::ApiDoc::openapi()).unwrap();
    let op = |path: &str, method: &str| doc["paths"][path][method].clone();

    let params = |path: &str, method: &str| -> Vec<(String, String, bool)> {
        op(path, method)["parameters"]
            .as_array()
            .unwrap_or_else(|| panic!("{method} {path} has no parameters"))
            .iter()
            .map(|p| {
                (p["name"].as_str().unwrap().to_string(), p["in"].as_str().unwrap().to_string(), p["required"] == true)
            })
            .collect()
    };
    let list = params("/v1/namespaces/{ns}/memories", "get");
    for name in ["after", "limit", "include_tombstoned"] {
        assert!(list.contains(&(name.to_string(), "query".to_string(), false)), "list's {name}: {list:?}");
    }
    let export = params("/v1/namespaces/{ns}/export", "get");
    assert!(export.contains(&("include_tombstoned".into(), "query".into(), false)), "{export:?}");

    let mut found = Vec::new();
    let mut operations = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, o) in item.as_object().unwrap() {
            operations += 1;
            let at = format!("{} {path}", method.to_uppercase());
            // Path parameters are exactly the path's template names, each required.
            for p in o["parameters"].as_array().into_iter().flatten().filter(|p| p["in"] == "path") {
                let name = p["name"].as_str().unwrap();
                assert!(path.contains(&format!("{{{name}}}")) && p["required"] == true, "{at}: path parameter {p}");
            }
            let content = o["responses"]["200"]["content"].as_object().unwrap_or_else(|| panic!("{at}: no 200 body"));
            assert_eq!(content.len(), 1, "{at}: {content:?}");
            let (media, body) = content.iter().next().unwrap();
            let schema = resolve(&doc, &body["schema"]);
            match media.as_str() {
                "application/json" => assert!(
                    schema["properties"].is_object() || schema["oneOf"].is_array(),
                    "{at}: the 200 body is not typed: {schema}"
                ),
                "application/x-ndjson" | "text/plain" => assert_eq!(schema["type"], "string", "{at}"),
                "application/octet-stream" => {
                    assert_eq!((&schema["type"], &schema["format"]), (&json!("string"), &json!("binary")), "{at}")
                }
                other => panic!("{at}: unexpected media type {other}"),
            }
            let declared: Vec<&str> = o["responses"].as_object().unwrap().keys().map(String::as_str).collect();
            let mut wanted = Vec::new();
            if path.starts_with("/v1/namespaces/") {
                wanted.extend(["400", "401", "403", "500"]);
            }
            if path.starts_with("/v1/") {
                // The guards: shed above max_in_flight, a token past its rate limit.
                wanted.extend(["429", "503"]);
            }
            if path == "/v1/backup" {
                wanted.extend(["401", "403", "500", "501"]);
            }
            if o["requestBody"].is_object() {
                wanted.extend(["408", "413", "415", "422"]);
            }
            if path.contains("{id}") {
                wanted.push("404");
            }
            if path == "/ready" {
                wanted.extend(["500", "503"]);
            }
            for w in wanted {
                assert!(declared.contains(&w), "{at} does not declare {w}: {declared:?}");
                let e = resolve(&doc, &o["responses"][w]["content"]["application/json"]["schema"]);
                assert!(e["properties"]["error"].is_object(), "{at} {w}: not the error body: {e}");
            }
            untyped_or_required_null(&body["schema"], &format!("{at} 200"), &mut found);
        }
    }
    assert_eq!(operations, 18, "every route is in the document");
    for path in ["/v1/namespaces/{ns}/escalations/{id}/answer", "/v1/namespaces/{ns}/escalations/{id}/dismiss"] {
        assert!(doc["paths"][path]["post"]["responses"]["409"].is_object(), "{path}: a closed escalation is 409");
    }
    let dismiss = &doc["paths"]["/v1/namespaces/{ns}/escalations/{id}/dismiss"]["post"];
    assert_ne!(dismiss["requestBody"]["required"], json!(true), "dismiss takes no body: {dismiss}");
    let open = params("/v1/namespaces/{ns}/escalations", "get");
    assert!(open.contains(&("open".into(), "query".into(), false)), "{open:?}");
    for (name, s) in doc["components"]["schemas"].as_object().unwrap() {
        untyped_or_required_null(s, name, &mut found);
    }
    assert!(found.is_empty(), "{found:#?}");
    // The shapes the brief names are there, typed.
    let schemas = &doc["components"]["schemas"];
    for name in [
        "RecallLine",
        "AgentRecall",
        "Assessment",
        "Verdict",
        "Memory",
        "MemoryRecord",
        "WhyReport",
        "RememberReport",
        "ListResponse",
        "ErrorBody",
        "TurnView",
        "TurnResponse",
        "PlanView",
        "EscalationView",
        "CheckedPlan",
        "TurnEscalation",
        "Escalation",
        "AnsweredEscalation",
        "EscalationList",
    ] {
        assert!(schemas[name]["properties"].is_object(), "{name} is not a typed schema");
    }
    let full = &schemas["RecallResponse"];
    assert_eq!(full["required"], json!(["pack"]), "assessment, verdict and action are null when raw");
    assert!(nullable(&full["properties"]["assessment"]) && nullable(&full["properties"]["verdict"]));
    let recall = &schemas["AgentRecall"]["properties"];
    assert!(recall["plan"].is_object() && recall["escalation"].is_object(), "the compact view's plan: {recall}");
    let turn = &schemas["AgentTurn"]["properties"];
    assert!(turn["plan"].is_object() && turn["escalation"].is_object(), "{turn}");
    assert!(schemas["TurnResult"]["oneOf"].as_array().is_some_and(|o| o.len() == 2), "{}", schemas["TurnResult"]);
}

/// Whether the document declares `status` for `method template`.
fn declares(doc: &Value, method: &str, template: &str, status: u16) -> bool {
    doc["paths"][template][method.to_lowercase()]["responses"][status.to_string()].is_object()
}

/// `v` is exactly what `T` says (see `schema::conforms`).
#[track_caller]
fn typed<T: serde::de::DeserializeOwned + serde::Serialize>(v: &Value) {
    if let Err(e) = mnemo_server::schema::conforms::<T>(v) {
        panic!("{e}\nin {v}");
    }
}

/// Every route's real answers, success and error, read exactly as the document types them
/// (nothing served that the type lacks, nothing the type requires that is not served), with a
/// status the document declares for that operation.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_route_answers_what_the_document_types() {
    use mnemo_server::api::*;
    use mnemo_server::error::ErrorBody;
    use mnemo_server::schema;
    let d = tempfile::tempdir().unwrap();
    let erp = mnemo_grounders::TableGrounder::new("erp");
    erp.set("Acme", "site", "Paris");
    let s = Server::start_with(d.path(), None, vec![Arc::new(erp)]).await;
    let (_, doc) = s.call("GET", "/openapi.json", None, None).await;
    let ns = "/v1/namespaces/{ns}";
    let call =
        |method: &'static str, template: String, path: String, token: Option<&'static str>, body: Option<Value>| {
            let (s, doc) = (&s, &doc);
            async move {
                let (st, v) = s.call(method, &path, token, body).await;
                assert!(declares(doc, method, &template, st), "{method} {template} answered {st}, undeclared: {v}");
                if st != 200 {
                    typed::<ErrorBody>(&v);
                }
                (st, v)
            }
        };

    let text = "[SEM] Acme | owner | Ben\n[SEM] Acme | site | Lyon\n[EPI] We met Ben at the fair";
    let body = json!({"text": text, "source": "crm", "idempotency_key": "k1"});
    let (st, v) =
        call("POST", format!("{ns}/remember"), "/v1/namespaces/a/remember".into(), Some(OPS), Some(body.clone())).await;
    assert_eq!(st, 200, "{v}");
    typed::<RememberResponse>(&v);
    typed::<schema::RememberReport>(&v["report"]);
    let ben = v["report"]["outcomes"][0]["memory"].as_str().unwrap().to_string();
    let (_, again) =
        call("POST", format!("{ns}/remember"), "/v1/namespaces/a/remember".into(), Some(OPS), Some(body)).await;
    typed::<schema::RememberReport>(&again["report"]);
    assert_eq!(again["report"]["outcomes"], json!([]), "the key was used: {again}");
    let (st, v) = call(
        "POST",
        format!("{ns}/remember"),
        "/v1/namespaces/a/remember".into(),
        Some(CRM),
        Some(json!({"text": "[SEM] Acme | owner | Carl"})),
    )
    .await;
    assert_eq!((st, v["report"]["outcomes"][0]["kind"].as_str()), (200, Some("superseded")), "{v}");
    typed::<schema::RememberReport>(&v["report"]);

    let recall =
        |body: Value| call("POST", format!("{ns}/recall"), "/v1/namespaces/a/recall".into(), Some(OPS), Some(body));
    let about = json!({"entity": "Acme", "attribute": "site"});
    // The first assessed recall finds erp holding Paris where memory says Lyon: a lookup, a
    // correction and a substitution, all typed.
    let (st, v) =
        recall(json!({"query": "where is Acme's site", "about": about, "detail": "full", "mode": "hybrid"})).await;
    assert_eq!(st, 200, "{v}");
    typed::<RecallResponse>(&v);
    typed::<schema::Pack>(&v["pack"]);
    typed::<schema::Assessment>(&v["assessment"]);
    typed::<schema::Verdict>(&v["verdict"]);
    for part in ["lookups", "corrections", "substitutions"] {
        assert!(!v["assessment"][part].as_array().unwrap().is_empty(), "erp says Paris, so {part} are typed too: {v}");
    }
    let (st, v) = recall(json!({"query": "where is Acme's site", "about": about})).await;
    assert_eq!(st, 200, "{v}");
    typed::<mnemo_agent::AgentRecall>(&v);
    assert!(v["decision"].is_object(), "{v}");
    let (_, v) = recall(json!({"query": "where is Acme's site", "raw": true})).await;
    typed::<mnemo_agent::AgentRecall>(&v);
    assert!(v["decision"].is_null(), "{v}");
    let (_, v) = recall(json!({"query": "Acme", "raw": true, "detail": "full"})).await;
    typed::<RecallResponse>(&v);
    typed::<schema::Pack>(&v["pack"]);
    assert!(v["assessment"].is_null() && v["verdict"].is_null() && v["action"].is_null(), "{v}");

    let (st, v) = call(
        "POST",
        format!("{ns}/turn"),
        "/v1/namespaces/a/turn".into(),
        Some(OPS),
        Some(json!({"message": "[SEM] Acme | owner | Carl", "about": {"entity": "Acme", "attribute": "owner"}})),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    typed::<TurnView>(&v);
    typed::<schema::RememberReport>(&v["remembered"]);
    assert!(v["recall"]["plan"].is_object(), "ACT carries the checked plan: {v}");
    let turn = |body: Value| call("POST", format!("{ns}/turn"), "/v1/namespaces/a/turn".into(), Some(OPS), Some(body));
    let (st, v) = turn(json!({"text": "who owns Acme?", "about": "Acme | owner", "detail": "full"})).await;
    assert_eq!(st, 200, "{v}");
    typed::<TurnResponse>(&v);
    typed::<schema::AgentTurn>(&v["turn"]);
    assert!(v["turn"]["plan"].is_object(), "{v}");
    // An escalating turn: the escalation typed in both views.
    let approver = json!({"text": "Who approves orders at Acme?", "about": "Acme | approver"});
    let (_, v) = turn(approver.clone()).await;
    typed::<TurnView>(&v);
    assert_eq!(v["recall"]["escalation"]["id"], "e1", "{v}");
    let mut full = approver;
    full["detail"] = json!("full");
    let (_, v) = turn(full).await;
    typed::<TurnResponse>(&v);
    typed::<schema::AgentTurn>(&v["turn"]);
    assert_eq!(v["turn"]["escalation"]["id"], "e1", "{v}");
    let (st, _) = turn(json!({"text": "x", "detail": "huge"})).await;
    assert_eq!(st, 400);

    // Escalations: listed, read, answered; a second one dismissed.
    let (st, v) =
        call("GET", format!("{ns}/escalations"), "/v1/namespaces/a/escalations?open=true".into(), Some(OPS), None)
            .await;
    assert_eq!(st, 200, "{v}");
    typed::<EscalationList>(&v);
    for e in v["escalations"].as_array().unwrap() {
        typed::<schema::Escalation>(e);
    }
    let escalation = |id: &str, token| {
        call("GET", format!("{ns}/escalations/{{id}}"), format!("/v1/namespaces/a/escalations/{id}"), token, None)
    };
    let (st, v) = escalation("e1", Some(OPS)).await;
    assert_eq!(st, 200, "{v}");
    typed::<schema::Escalation>(&v);
    let answer = |id: &str, body: Value| {
        call(
            "POST",
            format!("{ns}/escalations/{{id}}/answer"),
            format!("/v1/namespaces/a/escalations/{id}/answer"),
            Some(OPS),
            Some(body),
        )
    };
    let (st, v) = answer("e1", json!({"text": "Dana", "by": "ops"})).await;
    assert_eq!(st, 200, "{v}");
    typed::<schema::AnsweredEscalation>(&v);
    typed::<schema::Escalation>(&v["escalation"]);
    let (_, v) = turn(json!({"text": "Who buys for Acme?", "about": "Acme | buyer"})).await;
    assert_eq!(v["recall"]["escalation"]["id"], "e2", "{v}");
    let dismiss = |id: &str, body: Option<Value>| {
        call(
            "POST",
            format!("{ns}/escalations/{{id}}/dismiss"),
            format!("/v1/namespaces/a/escalations/{id}/dismiss"),
            Some(OPS),
            body,
        )
    };
    let (st, v) = dismiss("e2", Some(json!({"by": "human:ops"}))).await;
    assert_eq!(st, 200, "{v}");
    typed::<schema::Escalation>(&v);
    let (st, v) =
        call("GET", format!("{ns}/escalations"), "/v1/namespaces/a/escalations".into(), Some(OPS), None).await;
    assert_eq!(st, 200, "{v}");
    for e in v["escalations"].as_array().unwrap() {
        typed::<schema::Escalation>(e);
    }
    assert_eq!(v["escalations"].as_array().unwrap().len(), 2, "{v}");
    // Their errors, each declared.
    assert_eq!(escalation("e9", Some(OPS)).await.0, 404);
    assert_eq!(escalation("m1", Some(OPS)).await.0, 400);
    assert_eq!(escalation("e1", Some(OTHER)).await.0, 403);
    assert_eq!(escalation("e1", None).await.0, 401);
    assert_eq!(answer("e1", json!({"text": "Eve"})).await.0, 409);
    assert_eq!(answer("e9", json!({"text": "Eve"})).await.0, 404);
    assert_eq!(answer("e1", json!({"txt": "Eve"})).await.0, 422);
    assert_eq!(dismiss("e2", None).await.0, 409);
    assert_eq!(dismiss("e2", Some(json!({"who": "x"}))).await.0, 422);
    assert_eq!(
        call("GET", format!("{ns}/escalations"), "/v1/namespaces/a/escalations?open=2".into(), Some(OPS), None).await.0,
        400
    );

    let (st, v) = call(
        "POST",
        format!("{ns}/forget"),
        "/v1/namespaces/a/forget".into(),
        Some(OPS),
        Some(json!({"command": "We met Ben at the fair"})),
    )
    .await;
    assert_eq!(st, 200, "{v}");
    typed::<RememberResponse>(&v);
    typed::<schema::RememberReport>(&v["report"]);

    let why = |id: &str, token| {
        call("GET", format!("{ns}/memories/{{id}}"), format!("/v1/namespaces/a/memories/{id}"), token, None)
    };
    let (st, v) = why(&ben, Some(OPS)).await;
    assert_eq!(st, 200, "{v}");
    typed::<WhyResponse>(&v);
    typed::<schema::WhyReport>(&v["why"]);
    assert!(v["why"]["superseded_by"].is_object(), "Carl superseded Ben: {v}");

    let list = |query: String| {
        call("GET", format!("{ns}/memories"), format!("/v1/namespaces/a/memories{query}"), Some(OPS), None)
    };
    let (st, v) = list("?include_tombstoned=true&limit=1".into()).await;
    assert_eq!(st, 200, "{v}");
    typed::<ListResponse>(&v);
    let after = v["next_after"].as_str().unwrap_or_else(|| panic!("one of several, so a next page: {v}")).to_string();
    let (_, v) = list(format!("?include_tombstoned=true&after={after}&limit=1000")).await;
    typed::<ListResponse>(&v);
    let records = v["memories"].as_array().unwrap();
    assert!(records.iter().any(|m| m["status"] == "tombstoned") && v["next_after"].is_null(), "{v}");
    for m in records {
        typed::<schema::MemoryRecord>(m);
    }

    let r = s
        .client
        .get(format!("{}/v1/namespaces/a/export?include_tombstoned=true", s.base))
        .bearer_auth(OPS)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let lines = r.text().await.unwrap();
    assert!(lines.lines().count() >= 4, "{lines}");
    for l in lines.lines() {
        typed::<schema::MemoryRecord>(&serde_json::from_str(l).unwrap());
    }

    let restore = |id: &str| {
        call(
            "POST",
            format!("{ns}/memories/{{id}}/restore"),
            format!("/v1/namespaces/a/memories/{id}/restore"),
            Some(OPS),
            None,
        )
    };
    let (st, v) = restore(&ben).await;
    assert_eq!(st, 200, "{v}");
    typed::<RestoreResponse>(&v);
    typed::<schema::MemoryRecord>(&v["restored"]);

    for (path, status) in [("/health", "ok"), ("/ready", "ready")] {
        let (st, v) = call("GET", path.into(), path.into(), None, None).await;
        assert_eq!((st, v["status"].as_str()), (200, Some(status)), "{v}");
        typed::<Health>(&v);
    }

    // Errors: each status declared for its operation, each body the error document.
    let (st, _) = why(&ben, None).await;
    assert_eq!(st, 401);
    let (st, _) = call("GET", format!("{ns}/memories"), "/v1/namespaces/a/memories".into(), Some(OTHER), None).await;
    assert_eq!(st, 403);
    let (st, _) = why("m999999", Some(OPS)).await;
    assert_eq!(st, 404);
    let (st, _) = list("?limit=0".into()).await;
    assert_eq!(st, 400);
    let (st, _) = restore(&ben).await;
    assert_eq!(st, 400, "already restored");
    let (st, _) = recall(json!({"query": "x", "verbose": true})).await;
    assert_eq!(st, 422);
    let r =
        s.client.post(format!("{}/v1/namespaces/a/recall", s.base)).bearer_auth(OPS).body("{}").send().await.unwrap();
    let st = r.status().as_u16();
    assert_eq!(st, 415);
    assert!(declares(&doc, "POST", &format!("{ns}/recall"), st));
    typed::<ErrorBody>(&r.json().await.unwrap());
    s.stop().await;
}

/// The `mnemo-backup-*` directories in the system's temp directory.
fn backup_dirs() -> std::collections::BTreeSet<std::path::PathBuf> {
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("mnemo-backup-")))
        .collect()
}

/// `POST /v1/backup` streams the whole store (every namespace) to a token that reaches every
/// namespace; the file it sends restores into a new data directory with every memory; a
/// namespace-scoped token is refused (403) and nothing is left in the temp directory.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backup_over_http_holds_every_namespace_and_restores() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    s.remember("a", OPS, "[SEM] Acme | owner | Ben\n[SEM] Acme | site | Lyon", None).await;
    s.remember("a", OPS, "[SEM] Acme | owner | Carl", None).await;
    s.remember("b", OTHER, "[SEM] Globex | owner | Dana", None).await;

    let (st, v) = s.call("POST", "/v1/backup", None, None).await;
    assert_eq!((st, code(&v)), (401, "unauthorized"), "{v}");
    for token in [OPS, OTHER] {
        let (st, v) = s.call("POST", "/v1/backup", Some(token), None).await;
        assert_eq!((st, code(&v)), (403, "forbidden"), "{v}");
        let m = v["error"]["message"].as_str().unwrap();
        assert!(m.contains("every namespace") && m.contains("\"*\""), "{m}");
    }
    let (st, v) = s.call("GET", "/v1/backup", Some(ADMIN), None).await;
    assert_eq!((st, code(&v)), (405, "method_not_allowed"), "{v}");

    let before = backup_dirs();
    let r = s.client.post(format!("{}/v1/backup", s.base)).bearer_auth(ADMIN).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 200);
    let header = |name: &str| r.headers().get(name).map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    assert_eq!(header("content-type"), "application/octet-stream");
    let disposition = header("content-disposition");
    assert!(disposition.starts_with("attachment; filename=\"mnemo-backup-") && disposition.ends_with(".db\""));
    // Four memories (one superseded) in two namespaces, three turns.
    assert_eq!((header("x-mnemo-backup-memories"), header("x-mnemo-backup-turns")), ("4".into(), "3".into()));
    let declared: usize = header("x-mnemo-backup-bytes").parse().unwrap();
    let body = r.bytes().await.unwrap();
    assert_eq!(body.len(), declared);
    assert!(body.starts_with(b"SQLite format 3\0"), "a SQLite database");
    // The snapshot is removed once sent (off the executor: give it a moment).
    let mut left: Vec<_> = Vec::new();
    for _ in 0..50 {
        left = backup_dirs().difference(&before).cloned().collect();
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(left.is_empty(), "the temporary backup is removed: {left:?}");
    s.stop().await;

    // Restored into a new data directory: every namespace, every memory.
    let file = d.path().join("downloaded.db");
    std::fs::write(&file, &body).unwrap();
    let other = tempfile::tempdir().unwrap();
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-02T09:00:00Z").unwrap()));
    let rt = Runtime::build(&Config::embedded_default().unwrap(), other.path(), clock, vec![]).await.unwrap();
    let (info, _) = rt.engine().restore_backup(&file, &|_, _| {}).await.unwrap();
    assert_eq!((info.memories, info.turns), (4, 3));
    let content = |ns: &str| {
        let rt = &rt;
        let ns = Namespace::new(ns).unwrap();
        async move {
            let page = ListPage { after: None, limit: 100, include_tombstoned: true };
            rt.list(&ns, &page).await.unwrap().memories.into_iter().map(|m| m.content).collect::<Vec<_>>()
        }
    };
    assert_eq!(content("a").await, ["Acme | owner | Ben", "Acme | site | Lyon", "Acme | owner | Carl"]);
    assert_eq!(content("b").await, ["Globex | owner | Dana"]);
}

/// The field names and spellings every door takes: `about` as text or as parts, `mode` by its
/// alias, the turn's `text` (as remember's), and the mistakes refused naming what is wrong.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_doors_take_the_same_fields() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    s.remember("a", OPS, "[SEM] Acme | owner | Ben", None).await;
    for about in [json!("Acme | owner"), json!({"entity": "Acme", "attribute": "owner"})] {
        let body = json!({"query": "who owns Acme", "about": about, "mode": "bm25"});
        let (st, v) = s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(body)).await;
        assert_eq!(st, 200, "{v}");
        assert_eq!(v["decision"]["act_on"][0]["value"], "Ben", "{v}");
    }
    for field in ["text", "message"] {
        let body = json!({field: "who owns Acme?", "about": "Acme | owner"});
        let (st, v) = s.call("POST", "/v1/namespaces/a/turn", Some(OPS), Some(body)).await;
        assert_eq!(st, 200, "{field}: {v}");
        assert_eq!(v["recall"]["decision"]["decision"], "act", "{v}");
    }
    let (st, v) =
        s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(json!({"query": "x", "about": "Acme"}))).await;
    assert_eq!(st, 422, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("entity | attribute"), "{v}");
    let (st, v) =
        s.call("POST", "/v1/namespaces/a/recall", Some(OPS), Some(json!({"query": "x", "mode": "fuzzy"}))).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("lexical (or bm25)"), "{v}");
    let (st, v) = s
        .call(
            "POST",
            "/v1/namespaces/a/recall",
            Some(OPS),
            Some(json!({"query": "x", "raw": true, "about": "Acme | owner"})),
        )
        .await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "{v}");
    let (st, v) = s.call("POST", "/v1/namespaces/a/turn", Some(OPS), Some(json!({"text": "  "}))).await;
    assert_eq!((st, code(&v)), (400, "invalid_input"), "{v}");
    s.stop().await;
}

/// Answering an escalation is a human's word, which memory trusts most: a token without
/// `answers = true` (an agent's own token) may open escalations but neither answer nor dismiss them.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn only_a_token_allowed_to_answer_answers_escalations() {
    let d = tempfile::tempdir().unwrap();
    let s = Server::start(d.path(), None).await;
    let turn = json!({"text": "Who approves orders for Contoso?", "about": "Contoso | approver"});
    let (st, v) = s.call("POST", "/v1/namespaces/a/turn", Some(CRM), Some(turn)).await;
    assert_eq!(st, 200, "{v}");
    let id = v["recall"]["escalation"]["id"].as_str().unwrap().to_string();
    for (verb, body) in [("answer", json!({"text": "Carla"})), ("dismiss", json!({}))] {
        let path = format!("/v1/namespaces/a/escalations/{id}/{verb}");
        let (st, v) = s.call("POST", &path, Some(CRM), Some(body)).await;
        assert_eq!((st, code(&v)), (403, "forbidden"), "{verb}: {v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("answers = true"), "{v}");
    }
    let (st, v) = s
        .call("POST", &format!("/v1/namespaces/a/escalations/{id}/answer"), Some(OPS), Some(json!({"text": "Carla"})))
        .await;
    assert_eq!(st, 200, "a person's token answers: {v}");
    s.stop().await;
}

/// POST `body` to `path` as OPS: the status, the body and the `Retry-After` header (seconds).
async fn post_with_retry_after(s: &Server, path: &str, body: Value) -> (u16, Value, Option<u64>) {
    let r = s.client.post(format!("{}{path}", s.base)).bearer_auth(OPS).json(&body).send().await.unwrap();
    let status = r.status().as_u16();
    let after = r.headers().get("retry-after").map(|v| v.to_str().unwrap().parse::<u64>().unwrap());
    (status, r.json().await.unwrap(), after)
}

const MOCK_KEY_VAR: &str = "MNEMO_SERVER_MOCK_TEST_KEY";

/// The embedded default with the live model client (chat and embeddings) on the mock at `base`,
/// never retrying. The variables that would change the seam are cleared (only this test sets
/// them, to the same values).
fn live_config(base: &str) -> Config {
    std::env::set_var(MOCK_KEY_VAR, "mock-key");
    for v in ["MNEMO_OFFLINE", "MNEMO_REPLAY", "MNEMO_RECORD", "MNEMO_LLM_BASE_URL"] {
        std::env::remove_var(v);
    }
    let text = format!(
        "[embedder]\nkind = \"llm\"\n\n[llm]\nclient = \"live\"\nbase_url = \"{base}\"\napi_key_env = \"{MOCK_KEY_VAR}\"\n\
         embedding_dims = 64\nbackoff_base_ms = 1\nmax_retries = 0\n"
    );
    Config::embedded_default().unwrap().with_overrides(&text.parse().unwrap(), "test").unwrap()
}

/// A model that fails is the model's failure (502 model_failure), one that asks to slow down is
/// 429 rate_limited with Retry-After, both declared; the server is not at fault (never 500).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_failing_model_is_502_and_a_rate_limited_one_429_with_retry_after() {
    use mnemo_llm::mock::{Fault, MockServer};
    let mock = MockServer::start().await.unwrap();
    let d = tempfile::tempdir().unwrap();
    let rt = Runtime::build(&live_config(&mock.base_url()), d.path(), clock(), vec![]).await.unwrap();
    let s = Server::serve(rt, None).await;
    let (_, doc) = s.call("GET", "/openapi.json", None, None).await;
    s.remember("a", OPS, "[SEM] Acme | owner | Ben", None).await;
    let recall = "/v1/namespaces/a/recall";
    let (st, v, _) = post_with_retry_after(&s, recall, json!({"query": "who owns Acme"})).await;
    assert_eq!(st, 200, "the mock answers: {v}");

    mock.set_always(Some(Fault::Status(429, Some(7))));
    let (st, v, after) = post_with_retry_after(&s, recall, json!({"query": "who owns Acme?"})).await;
    assert_eq!((st, code(&v)), (429, "rate_limited"), "{v}");
    assert!(after.is_some_and(|a| a >= 1), "a rate-limited answer says when to retry");
    assert!(v["error"]["message"].as_str().unwrap().contains("429"), "{v}");
    for (method, template) in [("post", "recall"), ("post", "turn"), ("post", "forget")] {
        let path = format!("/v1/namespaces/{{ns}}/{template}");
        assert!(doc["paths"][&path][method]["responses"]["429"].is_object(), "{path} declares 429");
        assert!(doc["paths"][&path][method]["responses"]["502"].is_object(), "{path} declares 502");
    }

    mock.set_always(Some(Fault::Status(500, None)));
    let (st, v, after) = post_with_retry_after(&s, recall, json!({"query": "who is Acme's owner"})).await;
    assert_eq!((st, code(&v)), (502, "model_failure"), "{v}");
    assert_eq!(after, None);
    let (st, v, _) =
        post_with_retry_after(&s, "/v1/namespaces/a/turn", json!({"text": "who owns Acme", "about": "Acme | owner"}))
            .await;
    // A turn's message is recorded first: its failed extraction is the turn's, listed for
    // `mnemo reextract`.
    assert_eq!((st, code(&v)), (500, "unextracted"), "{v}");

    mock.set_always(None);
    let (st, v, _) = post_with_retry_after(&s, recall, json!({"query": "Acme owner"})).await;
    assert_eq!(st, 200, "the model answers again: {v}");
    s.stop().await;
}

/// A server whose store cannot be written (here: opened read-only beside another holder of the
/// data directory's lock) answers writes 503 read_only with Retry-After, and still reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_read_only_store_answers_writes_503_read_only_with_retry_after() {
    let d = tempfile::tempdir().unwrap();
    let config = Config::embedded_default().unwrap();
    let writer = Runtime::build(&config, d.path(), clock(), vec![]).await.unwrap();
    writer.remember(&Namespace::new("a").unwrap(), "ops", b"[SEM] Acme | owner | Ben").await.unwrap();
    writer.engine().flush_index().await.unwrap();
    let reader = Runtime::build_reader(&config, d.path(), clock(), vec![]).await.unwrap();
    let s = Server::serve(reader, None).await;
    let (st, v, after) =
        post_with_retry_after(&s, "/v1/namespaces/a/remember", json!({"text": "[SEM] Acme | owner | Carl"})).await;
    assert_eq!((st, code(&v)), (503, "read_only"), "{v}");
    assert!(after.is_some_and(|a| a >= 1), "a read-only answer says when to retry");
    let (_, doc) = s.call("GET", "/openapi.json", None, None).await;
    for template in ["remember", "recall", "turn", "forget"] {
        let path = format!("/v1/namespaces/{{ns}}/{template}");
        assert!(doc["paths"][&path]["post"]["responses"]["503"].is_object(), "{path} declares 503");
    }
    let (st, v) = s.call("GET", "/v1/namespaces/a/memories", Some(OPS), None).await;
    assert_eq!(st, 200, "reads still work: {v}");
    assert_eq!(v["memories"][0]["content"], "Acme | owner | Ben", "{v}");
    s.stop().await;
    drop(writer);
}
