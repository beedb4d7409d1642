//! The HTTP grounder against a tiny local server: GET only, JSON pointers, 404, garbage.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mnemo_contract::{Grounder, GrounderErrorKind};
use mnemo_grounders::HttpGrounder;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Serve `answer(path) -> (status, body)`; record every request line.
async fn serve(answer: fn(&str) -> (u16, String)) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else { return };
            let mut buf = vec![0u8; 8192];
            let n = s.read(&mut buf).await.unwrap_or(0);
            let req = String::from_utf8_lossy(&buf[..n]).to_string();
            let line = req.lines().next().unwrap_or("").to_string();
            log.lock().unwrap().push(req.clone());
            let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let (status, body) = answer(&path);
            let resp = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(resp.as_bytes()).await;
        }
    });
    (format!("http://{addr}"), seen)
}

fn erp(path: &str) -> (u16, String) {
    match path {
        "/items/IC-MC-44%20from%20S-208/lead%20time" => {
            (200, r#"{"data": {"value": "35 days", "updated": "2026-07-03T00:00:00Z"}}"#.into())
        }
        "/items/IC-MC-44%20from%20S-208/stock" => (200, r#"{"data": {"value": 120}}"#.into()),
        "/items/garbage/x" => (200, "<html>oops</html>".into()),
        "/items/object/x" => (200, r#"{"data": {"value": {"nested": 1}}}"#.into()),
        "/items/down/x" => (503, "{}".into()),
        _ => (404, "{}".into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gets_values_by_pointer_and_sends_only_get() {
    let (base, seen) = serve(erp).await;
    let g = HttpGrounder::new(
        "erp-api",
        &format!("{base}/items/{{entity}}/{{attribute}}"),
        "/data/value",
        Duration::from_secs(5),
    )
    .unwrap()
    .with_as_of("/data/updated")
    .with_header("x-api-key", "k123");
    let v = g.lookup("IC-MC-44 from S-208", "lead time").await.unwrap().unwrap();
    assert_eq!(v.value, "35 days");
    assert_eq!(v.source, "erp-api");
    assert!(v.as_of.is_some());
    assert_eq!(g.lookup("IC-MC-44 from S-208", "stock").await.unwrap().unwrap().value, "120");
    assert!(g.lookup("nobody", "x").await.unwrap().is_none(), "404: not held");
    let kind = |e: mnemo_contract::CoreError| e.grounder_kind();
    let garbage = g.lookup("garbage", "x").await.expect_err("a body that is not JSON is an error");
    assert_eq!(kind(garbage), Some(GrounderErrorKind::BadAnswer));
    let object = g.lookup("object", "x").await.expect_err("an object is not a value");
    assert_eq!(kind(object), Some(GrounderErrorKind::BadAnswer));
    let down = g.lookup("down", "x").await.expect_err("503 is an error");
    assert_eq!(kind(down), Some(GrounderErrorKind::Unavailable), "retrying later may work");
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty());
    for req in seen.iter() {
        assert!(req.starts_with("GET "), "only GET is ever sent: {req}");
        assert!(req.to_lowercase().contains("x-api-key: k123"));
    }
}

#[tokio::test]
async fn a_refused_connection_is_an_error_not_an_answer() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let g = HttpGrounder::new("erp-api", &format!("http://{addr}/{{entity}}"), "/v", Duration::from_secs(2)).unwrap();
    let e = g.lookup("a", "b").await.expect_err("no answer");
    assert_eq!(e.grounder_kind(), Some(GrounderErrorKind::Unavailable), "{e}");
}
