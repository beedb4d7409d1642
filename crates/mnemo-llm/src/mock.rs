//! A mock OpenAI-compatible server on loopback, for tests and for recording demo cassettes
//! without a provider. It is a small hand-written HTTP/1.1 server (one request per
//! connection) that answers `POST /chat/completions` and `POST /embeddings`:
//!
//! - chat: Mnemo's structured prompts are answered like the fake model does (tagged lines, an
//!   untagged turn as one episode, rule-based reconcile and forget resolution), except that an extraction whose turn text
//!   contains a scripted phrase answers the scripted items (how tests and demos give the mock
//!   "understanding" of prose);
//!   A plan prompt answers a scripted plan when the test queued one (`script_plan`);
//! - embeddings: the fake's hashed bag of words at the requested dimensions;
//! - faults queued by the test (a status with an optional `Retry-After`, a delay, a malformed
//!   answer, per-token embeddings) are served first, one per request;
//! - `usage` is reported as characters / 4, and the echoed model can be set to differ from the
//!   one asked for.
//!
//! The mock is never a fallback: it is only reached through an explicit base URL.
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::fake::{answer, FakeQwen};
use crate::prompts::Task;

/// One scripted misbehaviour, served to one request.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// Answer with this HTTP status (and `Retry-After` seconds, if given).
    Status(u16, Option<u32>),
    /// Wait this long before answering normally (to trip a client timeout).
    Delay(Duration),
    /// Answer 200 with chat content that is not JSON.
    Malformed,
    /// Answer embeddings unpooled, as llama.cpp does with pooling none: each `embedding` is
    /// this many vectors (one per token) instead of one.
    PerTokenEmbeddings(usize),
}

/// What the mock saw of one request (never the key: only whether one was sent).
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    /// The path.
    pub path: String,
    /// Whether an `Authorization: Bearer …` header came with it.
    pub had_bearer: bool,
    /// The JSON body.
    pub body: Value,
}

#[derive(Default)]
struct State {
    faults: VecDeque<Fault>,
    always: Option<Fault>,
    echo_model: Option<String>,
    prose: Vec<(String, Value)>,
    plans: VecDeque<Value>,
    seen: Vec<Seen>,
}

/// A running mock server; stopped when dropped (or with [`MockServer::stop`]).
pub struct MockServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl MockServer {
    /// Start on 127.0.0.1 at a free port.
    pub async fn start() -> std::io::Result<MockServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State::default()));
        let s = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let s = s.clone();
                tokio::spawn(async move {
                    let _ = serve(stream, s).await;
                });
            }
        });
        Ok(MockServer { addr, state, task })
    }

    /// The base URL (`http://127.0.0.1:PORT/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Serve `fault` to the next request (queued in order).
    pub fn push_fault(&self, fault: Fault) {
        self.state().faults.push_back(fault);
    }

    /// Serve `fault` to every request (after the queued ones); None: behave.
    pub fn set_always(&self, fault: Option<Fault>) {
        self.state().always = fault;
    }

    /// Echo this model string instead of the one asked for.
    pub fn echo_model(&self, model: &str) {
        self.state().echo_model = Some(model.to_string());
    }

    /// When an extraction's turn text contains `phrase`, answer these `items` (the extraction
    /// schema's `items` array).
    pub fn script_extraction(&self, phrase: &str, items: Value) {
        self.state().prose.push((phrase.to_string(), items));
    }

    /// Answer the next plan prompt with this JSON (the plan schema: `answer`, `steps`, `uses`
    /// by the prompt's numbers), once; later plan prompts are answered like the fake model.
    pub fn script_plan(&self, answer: Value) {
        self.state().plans.push_back(answer);
    }

    /// The requests seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.state().seen.clone()
    }

    /// Stop listening (connections in flight are dropped).
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut stream: TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let (head_end, content_length) = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_string();
            let len = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim().eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<usize>().ok())?
                })
                .unwrap_or(0);
            break (i + 4, len);
        }
    };
    while buf.len() < head_end + content_length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let had_bearer = head.lines().any(|l| l.to_ascii_lowercase().starts_with("authorization: bearer "));
    let body: Value = serde_json::from_slice(&buf[head_end..]).unwrap_or(Value::Null);
    let fault = {
        let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
        s.seen.push(Seen { path: path.clone(), had_bearer, body: body.clone() });
        s.faults.pop_front().or_else(|| s.always.clone())
    };
    let (status, extra, payload) = match fault {
        Some(Fault::Status(code, after)) => (
            code,
            after.map(|a| format!("Retry-After: {a}\r\n")).unwrap_or_default(),
            json!({"error": {"message": format!("mock fault {code}"), "type": "mock"}}),
        ),
        Some(Fault::Delay(d)) => {
            tokio::time::sleep(d).await;
            (200, String::new(), answer_of(&path, &body, &state, false))
        }
        Some(Fault::Malformed) => (200, String::new(), answer_of(&path, &body, &state, true)),
        Some(Fault::PerTokenEmbeddings(n)) => {
            let mut payload = answer_of(&path, &body, &state, false);
            if let Some(data) = payload["data"].as_array_mut() {
                for d in data {
                    let one = d["embedding"].clone();
                    d["embedding"] = Value::Array(vec![one; n]);
                }
            }
            (200, String::new(), payload)
        }
        None => (200, String::new(), answer_of(&path, &body, &state, false)),
    };
    let text = payload.to_string();
    let reason = if status == 200 { "OK" } else { "Mock Fault" };
    let resp = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{text}",
        text.len()
    );
    stream.write_all(resp.as_bytes()).await?;
    stream.shutdown().await
}

fn tokens(s: &str) -> u64 {
    s.chars().count().div_ceil(4) as u64
}

fn answer_of(path: &str, body: &Value, state: &Arc<Mutex<State>>, malformed: bool) -> Value {
    let (echo, prose) = {
        let s = state.lock().unwrap_or_else(PoisonError::into_inner);
        (s.echo_model.clone(), s.prose.clone())
    };
    let asked = body["model"].as_str().unwrap_or("unknown").to_string();
    let model = echo.unwrap_or(asked);
    if path.ends_with("/embeddings") {
        let dims = body["dimensions"].as_u64().unwrap_or(256).clamp(8, 4096) as usize;
        let texts: Vec<String> = body["input"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t.as_str().map(str::to_string)).collect())
            .unwrap_or_default();
        let fake = FakeQwen::new(dims).unwrap_or_default();
        let data: Vec<Value> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": fake.embed_one(t)}))
            .collect();
        let used: u64 = texts.iter().map(|t| tokens(t)).sum();
        return json!({"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": used, "total_tokens": used}});
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let system = messages.first().and_then(|m| m["content"].as_str()).unwrap_or("");
    let user = messages.get(1).and_then(|m| m["content"].as_str()).unwrap_or("");
    let content = if malformed {
        "Sure! Here you go: {items: [".to_string()
    } else {
        match Task::of_system_prompt(system) {
            Some(Task::Extract) => extract(user, &prose),
            Some(Task::Plan) if state.lock().unwrap_or_else(PoisonError::into_inner).plans.front().is_some() => {
                let scripted = state.lock().unwrap_or_else(PoisonError::into_inner).plans.pop_front();
                scripted.unwrap_or_default().to_string()
            }
            Some(task) => answer::answer(task, user).unwrap_or_else(|e| json!({"error": e.to_string()}).to_string()),
            None => "I am a mock and only answer Mnemo's prompts.".to_string(),
        }
    };
    let prompt: u64 = messages.iter().filter_map(|m| m["content"].as_str()).map(tokens).sum();
    let completion = tokens(&content);
    json!({
        "id": "mock-1", "object": "chat.completion", "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    })
}

fn extract(user: &str, prose: &[(String, Value)]) -> String {
    let text = serde_json::from_str::<Value>(user).ok().and_then(|v| v["turn"]["text"].as_str().map(str::to_string));
    if let Some(text) = text {
        let mut items = Vec::new();
        for (phrase, scripted) in prose {
            if text.contains(phrase.as_str()) {
                items.extend(scripted.as_array().cloned().unwrap_or_default());
            }
        }
        if !items.is_empty() {
            return json!({"items": items}).to_string();
        }
    }
    answer::extract(user).unwrap_or_else(|e| json!({"error": e.to_string()}).to_string())
}
