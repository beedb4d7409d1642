//! Cassettes: record and replay as decorators around [`ChatModel`] and [`EmbedModel`].
//!
//! A cassette is one JSON file, `cassette.json`, in a directory (format in docs/cassettes.md):
//! a header (format version, when it was first and last recorded, the base URL, whether that
//! was a mock server, the model strings the API echoed) and the recorded calls, each keyed by
//! the SHA-256 of its normalised request (the request as plain data: model, prompts, token cap,
//! temperature, JSON mode, repair, i.e. every field that shapes the answer; or model, dims,
//! texts). JSON mode is a field of the request and the live client sends `response_format`
//! exactly when it is set, so the recorded request is what was sent. The API key is a header of
//! the HTTP call, never part of a request, so it can never reach a cassette.
//!
//! Replay is deterministic (same request, same answer, `client = replay`); a request that is
//! not on the cassette is an error naming it, never a call to another client.
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use mnemo_contract::{ClientKind, ModelInfo};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::chat::{ChatModel, ChatRequest, ChatResponse, EmbedModel, EmbedRequest, EmbedResponse};
use crate::error::LlmError;
use crate::prompts::Task;

/// The file inside a cassette directory.
pub const CASSETTE_FILE: &str = "cassette.json";
/// The format tag of the header.
pub const FORMAT: &str = "mnemo-cassette/1";

/// The cassette's header.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// When the first call was recorded (RFC 3339).
    pub recorded_at: String,
    /// When the last call was recorded (RFC 3339).
    pub updated_at: String,
    /// The base URL the calls went to.
    pub base_url: String,
    /// True when that base URL was a mock server (test or demo), not a real provider.
    pub mock: bool,
    /// The model strings the API echoed, sorted.
    pub echoed_models: Vec<String>,
}

/// Token usage of one call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Completion tokens (0 for embeddings).
    pub completion_tokens: u32,
}

/// One recorded call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// SHA-256 of the normalised request, hex.
    pub key: String,
    /// "chat:<task>" (e.g. "chat:extract") or "embed".
    pub kind: String,
    /// The normalised request.
    pub request: serde_json::Value,
    /// The answer: `{"content", "model"}` for chat, `{"vectors", "model"}` for embeddings.
    pub response: serde_json::Value,
    /// Token usage, when the API reported it.
    pub usage: Option<Usage>,
}

/// A whole cassette.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cassette {
    /// Header.
    pub header: Header,
    /// Calls in the order first recorded.
    pub entries: Vec<Entry>,
}

impl Cassette {
    /// Read `dir/cassette.json`.
    pub fn load(dir: &Path) -> Result<Cassette, LlmError> {
        let path = dir.join(CASSETTE_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| LlmError::Cassette(format!("cannot read {}: {e}", path.display())))?;
        let c: Cassette = serde_json::from_str(&text)
            .map_err(|e| LlmError::Cassette(format!("{} is not a cassette: {e}", path.display())))?;
        if c.header.format != FORMAT {
            return Err(LlmError::Cassette(format!(
                "{}: format {:?}, expected {FORMAT:?}",
                path.display(),
                c.header.format
            )));
        }
        Ok(c)
    }

    fn save(&self, dir: &Path) -> Result<(), LlmError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| LlmError::Cassette(format!("cannot create {}: {e}", dir.display())))?;
        let path = dir.join(CASSETTE_FILE);
        let tmp = dir.join(format!("{CASSETTE_FILE}.tmp"));
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| LlmError::Cassette(format!("cannot encode the cassette: {e}")))?;
        std::fs::write(&tmp, text + "\n")
            .and_then(|()| std::fs::rename(&tmp, &path))
            .map_err(|e| LlmError::Cassette(format!("cannot write {}: {e}", path.display())))
    }

    fn find(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }
}

/// The key of a normalised request.
pub fn key_of(request: &serde_json::Value) -> String {
    let bytes = serde_json::to_vec(request).unwrap_or_default();
    let d = Sha256::digest(&bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// A chat request as plain data (`ChatRequest`'s fields, in declaration order).
pub fn normalise_chat(req: &ChatRequest) -> serde_json::Value {
    serde_json::to_value(req).unwrap_or_default()
}

/// An embeddings request as plain data.
pub fn normalise_embed(req: &EmbedRequest) -> serde_json::Value {
    serde_json::to_value(req).unwrap_or_default()
}

/// The call kind of a chat request: "chat:<task>" by its prompt marker, or "chat:other".
pub fn chat_kind(req: &ChatRequest) -> String {
    let task = Task::of_system_prompt(&req.system).map(Task::name).unwrap_or("other");
    if req.repair.is_some() {
        format!("chat:{task}:repair")
    } else {
        format!("chat:{task}")
    }
}

fn describe(kind: &str, key: &str, request: &serde_json::Value) -> String {
    let model = request["model"].as_str().unwrap_or("?");
    let hint: String = match request.get("user").and_then(|u| u.as_str()) {
        Some(u) => u.chars().take(120).collect(),
        None => request["texts"].as_array().map(|t| format!("{} texts", t.len())).unwrap_or_default(),
    };
    format!("{kind} request {} (model {model:?}; {hint:?})", &key[..16.min(key.len())])
}

fn now_rfc3339() -> String {
    // The recording time is metadata for people, not an input to Mnemo's logic.
    use mnemo_contract::Clock as _;
    mnemo_contract::SystemClock.now().to_rfc3339()
}

/// Serialises cassette writes in this process.
static FILE_WRITES: Mutex<()> = Mutex::new(());

/// Where a recorder writes.
#[derive(Debug)]
struct Tape {
    dir: PathBuf,
    cassette: Mutex<Cassette>,
}

impl Tape {
    fn open(dir: &Path, base_url: &str, mock: bool) -> Result<Tape, LlmError> {
        let mut cassette = if dir.join(CASSETTE_FILE).exists() { Cassette::load(dir)? } else { Cassette::default() };
        if cassette.header.format.is_empty() {
            cassette.header = Header {
                format: FORMAT.into(),
                recorded_at: now_rfc3339(),
                updated_at: String::new(),
                base_url: base_url.to_string(),
                mock,
                echoed_models: vec![],
            };
        } else if cassette.header.base_url != base_url || cassette.header.mock != mock {
            return Err(LlmError::Cassette(format!(
                "{} was recorded against {} (mock: {}); recording against {base_url} (mock: {mock}) would mix sources: use another directory",
                dir.join(CASSETTE_FILE).display(),
                cassette.header.base_url,
                cassette.header.mock
            )));
        }
        Ok(Tape { dir: dir.to_path_buf(), cassette: Mutex::new(cassette) })
    }

    fn add(&self, entry: Entry, echoed: &str) -> Result<(), LlmError> {
        // Several recorders may share one file (the reasoner's chat and the embedder are built
        // apart): every add merges into what is on disk now, one writer at a time.
        let _one_writer = FILE_WRITES.lock().unwrap_or_else(PoisonError::into_inner);
        let mut c = self.cassette.lock().unwrap_or_else(PoisonError::into_inner);
        if self.dir.join(CASSETTE_FILE).exists() {
            *c = Cassette::load(&self.dir)?;
        }
        if c.find(&entry.key).is_some() {
            return Ok(());
        }
        c.entries.push(entry);
        if !c.header.echoed_models.iter().any(|m| m == echoed) {
            c.header.echoed_models.push(echoed.to_string());
            c.header.echoed_models.sort();
        }
        c.header.updated_at = now_rfc3339();
        c.save(&self.dir)
    }
}

/// Records every call of an inner client onto a cassette (and passes its answer through).
#[derive(Clone)]
pub struct Recorder {
    tape: Arc<Tape>,
    chat: Option<Arc<dyn ChatModel>>,
    embed: Option<Arc<dyn EmbedModel>>,
}

impl Recorder {
    /// A recorder writing to `dir/cassette.json` (appending to a cassette already there, which
    /// must have been recorded against the same base URL).
    pub fn open(
        dir: &Path,
        base_url: &str,
        mock: bool,
        chat: Option<Arc<dyn ChatModel>>,
        embed: Option<Arc<dyn EmbedModel>>,
    ) -> Result<Recorder, LlmError> {
        Ok(Recorder { tape: Arc::new(Tape::open(dir, base_url, mock)?), chat, embed })
    }
}

#[async_trait]
impl ChatModel for Recorder {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let inner = self.chat.as_ref().ok_or_else(|| LlmError::Cassette("this recorder has no chat client".into()))?;
        let resp = inner.chat(req).await?;
        let request = normalise_chat(req);
        self.tape.add(
            Entry {
                key: key_of(&request),
                kind: chat_kind(req),
                request,
                response: serde_json::json!({"content": resp.content, "model": resp.model}),
                usage: resp.usage.map(|(p, c)| Usage { prompt_tokens: p, completion_tokens: c }),
            },
            &resp.model,
        )?;
        Ok(resp)
    }
    fn configured(&self) -> ModelInfo {
        self.chat
            .as_ref()
            .map(|c| c.configured())
            .unwrap_or(ModelInfo { client: ClientKind::Live, model: String::new() })
    }
}

#[async_trait]
impl EmbedModel for Recorder {
    async fn embed(&self, req: &EmbedRequest) -> Result<EmbedResponse, LlmError> {
        let inner =
            self.embed.as_ref().ok_or_else(|| LlmError::Cassette("this recorder has no embeddings client".into()))?;
        let resp = inner.embed(req).await?;
        let request = normalise_embed(req);
        self.tape.add(
            Entry {
                key: key_of(&request),
                kind: "embed".into(),
                request,
                response: serde_json::json!({"vectors": resp.vectors, "model": resp.model}),
                usage: resp.prompt_tokens.map(|p| Usage { prompt_tokens: p, completion_tokens: 0 }),
            },
            &resp.model,
        )?;
        Ok(resp)
    }
}

/// Answers from a cassette only; a miss is an error naming the request.
#[derive(Clone, Debug)]
pub struct Replayer {
    file: PathBuf,
    cassette: Arc<Cassette>,
}

impl Replayer {
    /// Load `dir/cassette.json`.
    pub fn open(dir: &Path) -> Result<Replayer, LlmError> {
        Ok(Replayer { file: dir.join(CASSETTE_FILE), cassette: Arc::new(Cassette::load(dir)?) })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.cassette.header
    }

    fn lookup(&self, kind: &str, request: &serde_json::Value) -> Result<&Entry, LlmError> {
        let key = key_of(request);
        self.cassette.find(&key).ok_or_else(|| {
            LlmError::Cassette(format!(
                "replay miss: {} is not on {} (record it with MNEMO_RECORD=DIR against a live or mock server)",
                describe(kind, &key, request),
                self.file.display()
            ))
        })
    }

    fn bad(&self, key: &str, what: &str) -> LlmError {
        LlmError::Cassette(format!("{}: entry {key} {what}", self.file.display()))
    }
}

#[async_trait]
impl ChatModel for Replayer {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let request = normalise_chat(req);
        let e = self.lookup(&chat_kind(req), &request)?;
        let content = e.response["content"].as_str().ok_or_else(|| self.bad(&e.key, "has no content"))?;
        let model = e.response["model"].as_str().ok_or_else(|| self.bad(&e.key, "has no model"))?;
        tracing::info!(kind = %e.kind, model, client = "replay", "model call");
        Ok(ChatResponse {
            content: content.to_string(),
            model: model.to_string(),
            client: ClientKind::Replay,
            usage: e.usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
        })
    }
    fn configured(&self) -> ModelInfo {
        let model = self.cassette.header.echoed_models.join(",");
        ModelInfo { client: ClientKind::Replay, model }
    }
}

#[async_trait]
impl EmbedModel for Replayer {
    async fn embed(&self, req: &EmbedRequest) -> Result<EmbedResponse, LlmError> {
        let request = normalise_embed(req);
        let e = self.lookup("embed", &request)?;
        let vectors: Vec<Vec<f32>> = serde_json::from_value(e.response["vectors"].clone())
            .map_err(|err| self.bad(&e.key, &format!("has unreadable vectors ({err})")))?;
        let model = e.response["model"].as_str().ok_or_else(|| self.bad(&e.key, "has no model"))?;
        Ok(EmbedResponse {
            vectors,
            model: model.to_string(),
            client: ClientKind::Replay,
            prompt_tokens: e.usage.map(|u| u.prompt_tokens),
        })
    }
}

/// Token usage tallied by call kind, for `mnemo bench tokens`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UsageTally {
    /// Per call kind ("chat:extract", "embed", …): (calls, prompt tokens, completion tokens).
    pub by_kind: BTreeMap<String, (u32, u64, u64)>,
    /// The model strings the answers echoed.
    pub models: Vec<String>,
    /// The clients that answered.
    pub clients: Vec<String>,
}

impl UsageTally {
    fn add(&mut self, kind: &str, usage: Option<(u32, u32)>, model: &str, client: ClientKind) {
        let row = self.by_kind.entry(kind.to_string()).or_default();
        row.0 += 1;
        if let Some((p, c)) = usage {
            row.1 += p as u64;
            row.2 += c as u64;
        }
        if !self.models.iter().any(|m| m == model) {
            self.models.push(model.to_string());
        }
        if !self.clients.iter().any(|m| m == client.as_str()) {
            self.clients.push(client.as_str().to_string());
        }
    }
    /// Prompt + completion tokens over every kind.
    pub fn total(&self) -> u64 {
        self.by_kind.values().map(|(_, p, c)| p + c).sum()
    }
}

/// Counts the tokens of every call through it (a decorator like the others).
#[derive(Clone)]
pub struct Metered {
    chat: Option<Arc<dyn ChatModel>>,
    embed: Option<Arc<dyn EmbedModel>>,
    tally: Arc<Mutex<UsageTally>>,
}

impl Metered {
    /// Meter `chat` and `embed`.
    pub fn new(chat: Option<Arc<dyn ChatModel>>, embed: Option<Arc<dyn EmbedModel>>) -> Self {
        Metered { chat, embed, tally: Arc::new(Mutex::new(UsageTally::default())) }
    }
    /// Take the tally so far and start again from zero.
    pub fn take(&self) -> UsageTally {
        std::mem::take(&mut *self.tally.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[async_trait]
impl ChatModel for Metered {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let inner = self.chat.as_ref().ok_or_else(|| LlmError::Cassette("no chat client to meter".into()))?;
        let r = inner.chat(req).await?;
        self.tally.lock().unwrap_or_else(PoisonError::into_inner).add(&chat_kind(req), r.usage, &r.model, r.client);
        Ok(r)
    }
    fn configured(&self) -> ModelInfo {
        self.chat
            .as_ref()
            .map(|c| c.configured())
            .unwrap_or(ModelInfo { client: ClientKind::Fake, model: String::new() })
    }
}

#[async_trait]
impl EmbedModel for Metered {
    async fn embed(&self, req: &EmbedRequest) -> Result<EmbedResponse, LlmError> {
        let inner = self.embed.as_ref().ok_or_else(|| LlmError::Cassette("no embeddings client to meter".into()))?;
        let r = inner.embed(req).await?;
        self.tally.lock().unwrap_or_else(PoisonError::into_inner).add(
            "embed",
            r.prompt_tokens.map(|p| (p, 0)),
            &r.model,
            r.client,
        );
        Ok(r)
    }
}
