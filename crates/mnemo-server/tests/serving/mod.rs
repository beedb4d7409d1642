//! A server on loopback with settings a test chooses, for the guard and metrics tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;
use std::time::Duration;

use mnemo_agent::{Config, Runtime};
use mnemo_contract::{SimClock, Timestamp};
use mnemo_server::{ServeSettings, TokenGrant};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// Reaches namespace `a`.
pub const OPS: &str = "ops-token-0123456789";
/// Reaches namespace `b`.
pub const CRM: &str = "crm-token-0123456789";
/// Reaches every namespace.
pub const ADMIN: &str = "admin-token-0123456789";

pub struct Server {
    pub addr: std::net::SocketAddr,
    pub base: String,
    pub client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<Result<(), mnemo_server::ServerError>>,
    _dir: tempfile::TempDir,
}

/// The settings every test starts from: three tokens, default guards.
pub fn settings() -> ServeSettings {
    ServeSettings::with_tokens(vec![
        TokenGrant::new("ops", OPS, &["a"]),
        TokenGrant::new("crm", CRM, &["b"]),
        TokenGrant::new("admin", ADMIN, &["*"]),
    ])
}

impl Server {
    pub async fn start(settings: ServeSettings) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
        let rt = Runtime::build(&Config::embedded_default().unwrap(), dir.path(), clock, vec![]).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let done = tokio::spawn(mnemo_server::serve(Arc::new(rt), settings, listener, async {
            let _ = rx.await;
        }));
        let _ = rustls::crypto::ring::default_provider().install_default();
        Server { addr, base: format!("http://{addr}"), client: reqwest::Client::new(), stop: Some(tx), done, _dir: dir }
    }

    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        tokio::time::timeout(Duration::from_secs(20), self.done).await.unwrap().unwrap().unwrap();
    }

    /// A request with this method, path, token, headers and JSON body.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        headers: &[(&str, &str)],
        body: Option<serde_json::Value>,
    ) -> reqwest::Response {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        req.send().await.unwrap()
    }

    pub async fn post(&self, path: &str, token: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
        let r = self.send(reqwest::Method::POST, path, Some(token), &[], Some(body)).await;
        let status = r.status().as_u16();
        (status, r.json().await.unwrap_or(serde_json::Value::Null))
    }

    /// A raw connection to the server.
    pub async fn connect(&self) -> TcpStream {
        TcpStream::connect(self.addr).await.unwrap()
    }
}

/// Reads until the server closes `stream` (EOF or a reset); how long that took, or None when it
/// was still open after `limit`. What it read is appended to `seen`.
pub async fn closed_within(stream: &mut TcpStream, limit: Duration, seen: &mut Vec<u8>) -> Option<Duration> {
    let started = tokio::time::Instant::now();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at(started + limit, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(started.elapsed()),
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
        }
    }
}

/// Writes `bytes` to `stream`.
pub async fn write(stream: &mut TcpStream, bytes: &[u8]) {
    stream.write_all(bytes).await.unwrap();
    stream.flush().await.unwrap();
}
