//! The server protects itself: a slow request head and an idle connection are closed, a request
//! above `max_in_flight` is shed (503) and one above a token's rate (429) refused, both with
//! Retry-After; a body that stops coming is 408; connections above `max_connections` are
//! closed at accept; CORS answers only for the origins named.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;
use std::time::Duration;

use reqwest::Method;
use serde_json::json;

mod serving;
use serving::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_request_head_is_closed_at_the_header_timeout() {
    let mut settings = settings();
    settings.header_read_timeout = Duration::from_millis(400);
    settings.idle_timeout = Duration::from_secs(30);
    let s = Server::start(settings).await;

    // A request line and half a header, then nothing (slowloris).
    let mut slow = s.connect().await;
    write(&mut slow, b"GET /health HTTP/1.1\r\nHost: loc").await;
    let mut seen = Vec::new();
    let took = closed_within(&mut slow, Duration::from_secs(5), &mut seen).await;
    let took = took.expect("a connection that never finishes its head must be closed");
    assert!(took >= Duration::from_millis(350), "closed after {took:?}, before the 400 ms limit");
    assert!(took < Duration::from_secs(2), "closed after {took:?}");
    assert!(seen.is_empty(), "nothing is answered to a head that never ended: {:?}", String::from_utf8_lossy(&seen));

    // A connection that sends nothing at all owes its head as well.
    let mut silent = s.connect().await;
    let took = closed_within(&mut silent, Duration::from_secs(5), &mut Vec::new()).await;
    assert!(took.is_some_and(|t| t < Duration::from_secs(2)), "silent connection: {took:?}");

    // And a whole head in time is answered.
    let r = s.send(Method::GET, "/health", None, &[], None).await;
    assert_eq!(r.status(), 200);
    let m = s.send(Method::GET, "/metrics", Some(ADMIN), &[], None).await.text().await.unwrap();
    assert!(m.contains("mnemo_http_connections_timed_out_total{reason=\"header_timeout\"} 2"), "{m}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_kept_alive_connection_is_closed_at_the_idle_timeout() {
    let mut settings = settings();
    // The header limit is shorter: an idle connection between requests is not held to it.
    settings.header_read_timeout = Duration::from_millis(300);
    settings.idle_timeout = Duration::from_millis(1200);
    let s = Server::start(settings).await;
    let mut c = s.connect().await;
    write(&mut c, b"GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n").await;
    let mut seen = Vec::new();
    let took = closed_within(&mut c, Duration::from_secs(6), &mut seen).await;
    let text = String::from_utf8_lossy(&seen);
    assert!(text.starts_with("HTTP/1.1 200"), "the request is answered first: {text}");
    assert!(!text.to_ascii_lowercase().contains("connection: close"), "kept alive: {text}");
    let took = took.expect("an idle kept-alive connection must be closed");
    assert!(took >= Duration::from_millis(1100), "closed after {took:?}: before the idle limit");
    assert!(took < Duration::from_secs(3), "closed after {took:?}");
    let m = s.send(Method::GET, "/metrics", Some(ADMIN), &[], None).await.text().await.unwrap();
    assert!(m.contains("mnemo_http_connections_timed_out_total{reason=\"idle\"} 1"), "{m}");
    s.stop().await;
}

/// A remember whose body is promised but not sent: the request holds its place meanwhile.
async fn held_request(s: &Server) -> tokio::net::TcpStream {
    let mut held = s.connect().await;
    let head = format!(
        "POST /v1/namespaces/a/remember HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {OPS}\r\n\
         Content-Type: application/json\r\nContent-Length: 64\r\n\r\n{{\"text\": \"[SEM] X"
    );
    write(&mut held, head.as_bytes()).await;
    // Let the server read the head and enter the handler.
    tokio::time::sleep(Duration::from_millis(300)).await;
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn above_max_in_flight_a_request_is_shed_with_503_and_retry_after() {
    let mut settings = settings();
    settings.max_in_flight = 1;
    let s = Server::start(settings).await;
    let held = held_request(&s).await;

    let r = s.send(Method::POST, "/v1/namespaces/a/recall", Some(OPS), &[], Some(json!({"query": "x"}))).await;
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["retry-after"], "1");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "overloaded", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("serve.max_in_flight"), "{body}");
    // Probes and metrics are never shed.
    assert_eq!(s.send(Method::GET, "/ready", None, &[], None).await.status(), 200);
    let m = s.send(Method::GET, "/metrics", Some(ADMIN), &[], None).await.text().await.unwrap();
    assert!(m.contains("mnemo_http_requests_shed_total 1"), "{m}");

    // The held request gone, its place is free again.
    drop(held);
    let mut status = 0;
    for _ in 0..50 {
        let (st, _) = s.post("/v1/namespaces/a/recall", OPS, json!({"query": "x"})).await;
        status = st;
        if st == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, 200, "the place of an abandoned request is given back");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_body_that_stops_coming_is_408() {
    let mut settings = settings();
    settings.request_body_timeout = Duration::from_millis(300);
    let s = Server::start(settings).await;
    let mut held = held_request(&s).await;
    let mut seen = Vec::new();
    let _ = closed_within(&mut held, Duration::from_secs(5), &mut seen).await;
    let text = String::from_utf8_lossy(&seen);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("request_timeout") && text.contains("serve.request_body_timeout_secs"), "{text}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_past_its_rate_limit_gets_429_with_retry_after() {
    let mut settings = settings();
    settings.rate_limit_requests = 3;
    settings.rate_limit_window = Duration::from_secs(60);
    let s = Server::start(settings).await;
    let list = |token: &'static str, ns: &'static str| {
        let path = format!("/v1/namespaces/{ns}/escalations");
        let s = &s;
        async move { s.send(Method::GET, &path, Some(token), &[], None).await }
    };
    for i in 0..3 {
        assert_eq!(list(OPS, "a").await.status(), 200, "request {i} is within the limit");
    }
    let r = list(OPS, "a").await;
    assert_eq!(r.status(), 429);
    let after: u64 = r.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=20).contains(&after), "one request per 20 s comes back: Retry-After {after}");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "rate_limited", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("serve.rate_limit_requests"), "{body}");
    // Another token has its own bucket; an unknown token is 401, not counted against anyone.
    assert_eq!(list(CRM, "b").await.status(), 200);
    let r = s.send(Method::GET, "/v1/namespaces/a/escalations", Some("not-a-token-0123456789"), &[], None).await;
    assert_eq!(r.status(), 401);
    let m = s.send(Method::GET, "/metrics", Some(ADMIN), &[], None).await.text().await.unwrap();
    assert!(m.contains("mnemo_http_requests_rate_limited_total 1"), "{m}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_above_the_bound_are_closed_at_accept() {
    let mut settings = settings();
    settings.max_connections = 1;
    settings.max_in_flight = 1;
    let s = Server::start(settings).await;
    let _first = s.connect().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut second = s.connect().await;
    let took = closed_within(&mut second, Duration::from_secs(3), &mut Vec::new()).await;
    assert!(took.is_some_and(|t| t < Duration::from_secs(1)), "the second connection is closed at once: {took:?}");
    drop(_first);
    s.stop().await;
}

/// A browser's preflight of a cross-origin recall.
async fn preflight(s: &Server, origin: &str) -> reqwest::Response {
    s.send(
        Method::OPTIONS,
        "/v1/namespaces/a/recall",
        None,
        &[
            ("origin", origin),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "authorization,content-type"),
        ],
        None,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_is_off_by_default_and_answers_only_the_origins_named() {
    let s = Server::start(settings()).await;
    let r = preflight(&s, "https://app.example").await;
    assert!(r.headers().get("access-control-allow-origin").is_none(), "no CORS by default: {:?}", r.headers());
    let r = s
        .send(Method::GET, "/v1/namespaces/a/escalations", Some(OPS), &[("origin", "https://app.example")], None)
        .await;
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("access-control-allow-origin").is_none(), "{:?}", r.headers());
    s.stop().await;

    let mut settings = settings();
    settings.cors_origins = vec!["https://app.example".into()];
    let s = Server::start(settings).await;
    let r = preflight(&s, "https://app.example").await;
    assert!(r.status().is_success(), "{}", r.status());
    assert_eq!(r.headers()["access-control-allow-origin"], "https://app.example");
    let methods = r.headers()["access-control-allow-methods"].to_str().unwrap().to_string();
    assert!(methods.contains("POST"), "{methods}");
    let allowed = r.headers()["access-control-allow-headers"].to_str().unwrap().to_ascii_lowercase();
    assert!(allowed.contains("authorization") && allowed.contains("content-type"), "{allowed}");
    let r = preflight(&s, "https://elsewhere.example").await;
    assert!(r.headers().get("access-control-allow-origin").is_none(), "another origin: {:?}", r.headers());
    let r = s
        .send(Method::GET, "/v1/namespaces/a/escalations", Some(OPS), &[("origin", "https://app.example")], None)
        .await;
    assert_eq!(r.headers()["access-control-allow-origin"], "https://app.example");
    s.stop().await;
}
