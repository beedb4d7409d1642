//! Cassettes: record and replay as layers around a [`ChatModel`] or an [`EmbedModel`].
//!
//! A cassette is a directory holding the recorded calls (format in docs/cassettes.md): a header
//! (format version, when it was first recorded, the base URL, whether that was a mock server, the
//! model strings the API echoed) and the recorded calls, each keyed by the SHA-256 of its
//! normalised request (the request as plain data: model, prompts, token cap, temperature, JSON
//! mode, repair, i.e. every field that shapes the answer; or model, dims, texts). JSON mode is a
//! field of the request and the live client sends `response_format` exactly when it is set, so
//! the recorded request is what was sent. The API key is a header of the HTTP call, never part of
//! a request, so it can never reach a cassette.
//!
//! Two framings, told apart by the file name and the format tag:
//! - `cassette.jsonl`, format `mnemo-cassette/2` (written by [`Recorder`]): JSON Lines, the
//!   header on the first line and one entry per line after it. Recording appends one line per
//!   new call (written and synced off the async executor before the call returns), so a session
//!   of N calls writes O(N) bytes, and a crash loses at most the call in flight: a torn last line
//!   (no newline) is skipped by readers and cut off by the next recorder.
//! - `cassette.json`, format `mnemo-cassette/1` (the earlier framing: one pretty-printed JSON
//!   object, rewritten per call): read as before; recording into such a directory first converts
//!   it to `cassette.jsonl` once (same header, same entries) and removes the old file.
//!
//! When both files exist (a conversion interrupted after its rename), `cassette.jsonl` wins: it
//! holds everything the old file held.
//!
//! The layers are generic over the model they wrap: [`Recorder<M>`] and [`Metered<M>`] are a
//! [`ChatModel`] when `M` is one and an [`EmbedModel`] when `M` is one, so a layer without a model
//! of the right kind is a type error, not a run-time one. They stack in any order
//! (`Metered<Recorder<LiveChat>>`, `Counted<Recorder<LiveEmbed>>`, …), and each passes the inner
//! answer through untouched: the client and model it names are the ones that answered.
//!
//! Replay is deterministic (same request, same answer, `client = replay`); a request that is
//! not on the cassette is an error naming it, never a call to another client.
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use async_trait::async_trait;
use mnemo_contract::{ClientKind, ModelInfo};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::chat::{ChatModel, ChatRequest, ChatResponse, EmbedModel, EmbedRequest, EmbedResponse};
use crate::error::LlmError;
use crate::prompts::Task;

/// The file a recorder writes inside a cassette directory (JSON Lines, format [`FORMAT`]).
pub const CASSETTE_FILE: &str = "cassette.jsonl";
/// The file of the earlier framing (one JSON object, format [`LEGACY_FORMAT`]): still read.
pub const LEGACY_FILE: &str = "cassette.json";
/// The format tag of a `cassette.jsonl` header.
pub const FORMAT: &str = "mnemo-cassette/2";
/// The format tag of a `cassette.json` header.
pub const LEGACY_FORMAT: &str = "mnemo-cassette/1";

/// The cassette's header.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`FORMAT`] or [`LEGACY_FORMAT`], by the file it was read from.
    pub format: String,
    /// When the first call was recorded (RFC 3339).
    pub recorded_at: String,
    /// When the last call was recorded (RFC 3339). In `cassette.jsonl` the header line keeps the
    /// value it was written with (empty for a new cassette, the old value for a converted one)
    /// and a reader takes the `at` of the last entry that has one.
    pub updated_at: String,
    /// The base URL the calls went to.
    pub base_url: String,
    /// True when that base URL was a mock server (test or demo), not a real provider.
    pub mock: bool,
    /// The model strings the API echoed, sorted. In `cassette.jsonl` a reader adds every model
    /// its entries' answers echoed to the header line's list.
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
    /// When this call was recorded (RFC 3339; entries of format 1 have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
}

/// A whole cassette.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Cassette {
    /// Header.
    pub header: Header,
    /// Calls in the order first recorded.
    pub entries: Vec<Entry>,
}

/// A `cassette.jsonl` as read: the cassette and how many of its bytes are whole lines.
struct Lines {
    cassette: Cassette,
    /// The length of the whole lines; anything after it is a torn last write.
    whole: usize,
}

impl Cassette {
    /// Read the cassette in `dir`: `cassette.jsonl` if it is there, else `cassette.json`.
    pub fn load(dir: &Path) -> Result<Cassette, LlmError> {
        let path = dir.join(CASSETTE_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => return Ok(parse_lines(&path, &bytes)?.cassette),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LlmError::Cassette(format!("cannot read {}: {e}", path.display()))),
        }
        let legacy = dir.join(LEGACY_FILE);
        match std::fs::read_to_string(&legacy) {
            Ok(text) => parse_legacy(&legacy, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(LlmError::Cassette(format!(
                "no cassette in {}: neither {CASSETTE_FILE} nor {LEGACY_FILE} is there (record one with MNEMO_RECORD=DIR)",
                dir.display()
            ))),
            Err(e) => Err(LlmError::Cassette(format!("cannot read {}: {e}", legacy.display()))),
        }
    }

    /// Remove the cassette files of `dir` (both framings), e.g. before recording it afresh.
    pub fn remove(dir: &Path) -> Result<(), LlmError> {
        for name in [CASSETTE_FILE, LEGACY_FILE] {
            let path = dir.join(name);
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LlmError::Cassette(format!("cannot remove {}: {e}", path.display()))),
            }
        }
        Ok(())
    }

    /// The first entry recorded for `key`.
    pub fn find(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }
}

/// Read a `cassette.json` (format 1).
fn parse_legacy(path: &Path, text: &str) -> Result<Cassette, LlmError> {
    let c: Cassette = serde_json::from_str(text)
        .map_err(|e| LlmError::Cassette(format!("{} is not a cassette: {e}", path.display())))?;
    if c.header.format != LEGACY_FORMAT {
        return Err(LlmError::Cassette(format!(
            "{}: format {:?}, expected {LEGACY_FORMAT:?}",
            path.display(),
            c.header.format
        )));
    }
    Ok(c)
}

/// Read a `cassette.jsonl` (format 2). A last line without its newline is a write a crash cut
/// short: it is left out (and reported), never an error; any other unreadable line is one.
fn parse_lines(path: &Path, bytes: &[u8]) -> Result<Lines, LlmError> {
    let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    if whole < bytes.len() {
        tracing::warn!(
            file = %path.display(),
            bytes = bytes.len() - whole,
            "the cassette ends in a torn write (a crash mid-call?); its calls before it are read"
        );
    }
    let mut lines = bytes[..whole].split(|b| *b == b'\n').enumerate().filter(|(_, l)| !l.is_empty());
    let bad = |n: usize, what: String| LlmError::Cassette(format!("{} line {}: {what}", path.display(), n + 1));
    let Some((n, first)) = lines.next() else {
        return Err(LlmError::Cassette(format!("{} has no header line (nothing was recorded)", path.display())));
    };
    let mut header: Header =
        serde_json::from_slice(first).map_err(|e| bad(n, format!("not a cassette header: {e}")))?;
    if header.format != FORMAT {
        return Err(bad(n, format!("format {:?}, expected {FORMAT:?}", header.format)));
    }
    let mut entries = Vec::new();
    for (n, line) in lines {
        let e: Entry = serde_json::from_slice(line).map_err(|e| bad(n, format!("not a cassette entry: {e}")))?;
        if let Some(at) = &e.at {
            header.updated_at.clone_from(at);
        }
        if let Some(m) = e.response["model"].as_str() {
            if !header.echoed_models.iter().any(|x| x == m) {
                header.echoed_models.push(m.to_string());
            }
        }
        entries.push(e);
    }
    header.echoed_models.sort();
    Ok(Lines { cassette: Cassette { header, entries }, whole })
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

fn io_error(what: &str, path: &Path, e: std::io::Error) -> LlmError {
    LlmError::Cassette(format!("cannot {what} {}: {e}", path.display()))
}

/// Make a rename or a new file in `dir` durable (best effort: not every platform can sync a
/// directory).
fn sync_dir(dir: &Path) {
    if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(dir = %dir.display(), error = %e, "could not sync the cassette directory");
    }
}

/// One line of JSON Lines.
fn line_of<T: Serialize>(value: &T) -> Result<Vec<u8>, LlmError> {
    let mut line =
        serde_json::to_vec(value).map_err(|e| LlmError::Cassette(format!("cannot encode a cassette line: {e}")))?;
    line.push(b'\n');
    Ok(line)
}

/// Convert `dir/cassette.json` (format 1) to `dir/cassette.jsonl` once, if it was recorded
/// against the same source: the same header (tagged format 2) and entries, written to a
/// temporary file, synced and renamed into place, and only then the old file removed.
fn convert_legacy(dir: &Path, base_url: &str, mock: bool) -> Result<(), LlmError> {
    let legacy = dir.join(LEGACY_FILE);
    let text = std::fs::read_to_string(&legacy).map_err(|e| io_error("read", &legacy, e))?;
    let mut c = parse_legacy(&legacy, &text)?;
    Tape::same_source_of(&legacy, &c.header.base_url, c.header.mock, base_url, mock)?;
    c.header.format = FORMAT.into();
    let mut bytes = line_of(&c.header)?;
    for e in &c.entries {
        bytes.extend(line_of(e)?);
    }
    let path = dir.join(CASSETTE_FILE);
    let tmp = dir.join(format!("{CASSETTE_FILE}.tmp"));
    File::create(&tmp)
        .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| io_error("write", &path, e))?;
    sync_dir(dir);
    match std::fs::remove_file(&legacy) {
        // Another process converting the same cassette at once got there first: same result.
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_error("remove", &legacy, e)),
        _ => {}
    }
    sync_dir(dir);
    tracing::info!(from = %legacy.display(), to = %path.display(), entries = c.entries.len(), "cassette converted to JSON Lines");
    Ok(())
}

/// The recorders open in this process, by cassette directory: a chat recorder and an embeddings
/// recorder built apart (the seam builds them apart) share one tape, so one writer appends.
static TAPES: Mutex<BTreeMap<PathBuf, Weak<Tape>>> = Mutex::new(BTreeMap::new());

/// The writing end of a tape.
#[derive(Debug)]
struct Writer {
    /// `cassette.jsonl`, opened for appending and locked against other processes.
    file: File,
    /// Its length: every byte up to here is a whole line.
    len: u64,
    /// The keys already on the tape (the first answer for a key is kept).
    keys: HashSet<String>,
}

/// A cassette being recorded: `DIR/cassette.jsonl`, appended to one line per new call. One per
/// directory in a process ([`Tape::open`] hands out the one already open), and one process per
/// directory (the file is locked while a tape holds it).
#[derive(Debug)]
pub struct Tape {
    path: PathBuf,
    base_url: String,
    mock: bool,
    writer: Mutex<Writer>,
}

impl Tape {
    /// The tape of `dir` (created if need be), recording calls made against `base_url`. An
    /// existing cassette must have been recorded against the same base URL (and be a mock server
    /// exactly when this is); one in the earlier framing is converted first; a torn last write
    /// left by a crash is cut off.
    pub fn open(dir: &Path, base_url: &str, mock: bool) -> Result<Arc<Tape>, LlmError> {
        std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, e))?;
        let canonical = dir.canonicalize().map_err(|e| io_error("resolve", dir, e))?;
        let mut open = TAPES.lock().unwrap_or_else(PoisonError::into_inner);
        open.retain(|_, t| t.strong_count() > 0);
        if let Some(tape) = open.get(&canonical).and_then(Weak::upgrade) {
            Tape::same_source_of(&tape.path, &tape.base_url, tape.mock, base_url, mock)?;
            return Ok(tape);
        }
        let tape = Arc::new(Tape::open_file(&canonical, base_url, mock)?);
        open.insert(canonical, Arc::downgrade(&tape));
        Ok(tape)
    }

    fn open_file(dir: &Path, base_url: &str, mock: bool) -> Result<Tape, LlmError> {
        let path = dir.join(CASSETTE_FILE);
        if !path.exists() && dir.join(LEGACY_FILE).exists() {
            convert_legacy(dir, base_url, mock)?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| io_error("open", &path, e))?;
        file.try_lock().map_err(|e| match e {
            std::fs::TryLockError::WouldBlock => LlmError::Cassette(format!(
                "{} is being recorded by another process: record into another directory",
                path.display()
            )),
            std::fs::TryLockError::Error(e) => io_error("lock", &path, e),
        })?;
        let bytes = std::fs::read(&path).map_err(|e| io_error("read", &path, e))?;
        let tape = |file: File, len: usize, keys: HashSet<String>| Tape {
            path: path.clone(),
            base_url: base_url.to_string(),
            mock,
            writer: Mutex::new(Writer { file, len: len as u64, keys }),
        };
        if !bytes.contains(&b'\n') {
            // New (or a crash cut its first write short): start it with a header line.
            let header = Header {
                format: FORMAT.into(),
                recorded_at: now_rfc3339(),
                updated_at: String::new(),
                base_url: base_url.to_string(),
                mock,
                echoed_models: vec![],
            };
            let line = line_of(&header)?;
            file.set_len(0)
                .and_then(|()| (&file).write_all(&line))
                .and_then(|()| file.sync_all())
                .map_err(|e| io_error("write", &path, e))?;
            sync_dir(dir);
            return Ok(tape(file, line.len(), HashSet::new()));
        }
        let Lines { cassette, whole } = parse_lines(&path, &bytes)?;
        let h = &cassette.header;
        Tape::same_source_of(&path, &h.base_url, h.mock, base_url, mock)?;
        if whole < bytes.len() {
            file.set_len(whole as u64).and_then(|()| file.sync_all()).map_err(|e| io_error("truncate", &path, e))?;
        }
        let keys = cassette.entries.into_iter().map(|e| e.key).collect();
        Ok(tape(file, whole, keys))
    }

    fn same_source_of(path: &Path, had_url: &str, had_mock: bool, base_url: &str, mock: bool) -> Result<(), LlmError> {
        if had_url != base_url || had_mock != mock {
            return Err(LlmError::Cassette(format!(
                "{} was recorded against {had_url} (mock: {had_mock}); recording against {base_url} (mock: {mock}) would mix sources: use another directory",
                path.display(),
            )));
        }
        Ok(())
    }

    /// The file this tape appends to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append `entry` unless its key is on the tape already: one write of one whole line, then
    /// synced. A failed write is taken back, so the next line starts on a line of its own.
    /// Blocking: the recorder calls it off the async executor.
    fn append(&self, entry: &Entry) -> Result<(), LlmError> {
        let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if w.keys.contains(&entry.key) {
            return Ok(());
        }
        let line = line_of(entry)?;
        if let Err(e) = w.file.write_all(&line).and_then(|()| w.file.sync_data()) {
            let len = w.len;
            if let Err(undo) = w.file.set_len(len) {
                tracing::warn!(file = %self.path.display(), error = %undo, "could not take back a failed cassette write");
            }
            return Err(io_error("append to", &self.path, e));
        }
        w.len += line.len() as u64;
        w.keys.insert(entry.key.clone());
        Ok(())
    }

    /// Append `entry` from async code: on tokio's blocking pool when there is a runtime (the
    /// executor never waits on the disk), in place otherwise. The write finishes even if the
    /// caller stops waiting for it.
    async fn record(self: &Arc<Self>, entry: Entry) -> Result<(), LlmError> {
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                let tape = Arc::clone(self);
                rt.spawn_blocking(move || tape.append(&entry)).await.map_err(|e| {
                    LlmError::Cassette(format!("the write to {} did not finish: {e}", self.path.display()))
                })?
            }
            Err(_) => self.append(&entry),
        }
    }

    /// Sync everything written so far (each entry is synced as it is written; this also syncs the
    /// file's metadata). Dropping the last handle of a tape does the same.
    pub fn finish(&self) -> Result<(), LlmError> {
        let w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        w.file.sync_all().map_err(|e| io_error("sync", &self.path, e))
    }
}

impl Drop for Tape {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            tracing::warn!(error = %e, "cassette not synced on close");
        }
    }
}

/// Records every call of the model it wraps onto a [`Tape`] and passes the answer through
/// untouched. A chat model when `M` is one, an embeddings model when `M` is one.
#[derive(Clone, Debug)]
pub struct Recorder<M> {
    inner: M,
    tape: Arc<Tape>,
}

impl<M> Recorder<M> {
    /// Record `inner`'s calls onto `tape`.
    pub fn new(inner: M, tape: Arc<Tape>) -> Self {
        Recorder { inner, tape }
    }

    /// Record `inner`'s calls into the cassette in `dir` (see [`Tape::open`]).
    pub fn open(dir: &Path, base_url: &str, mock: bool, inner: M) -> Result<Self, LlmError> {
        Ok(Recorder::new(inner, Tape::open(dir, base_url, mock)?))
    }

    /// The tape.
    pub fn tape(&self) -> &Arc<Tape> {
        &self.tape
    }

    /// The model recorded.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for Recorder<M> {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let resp = self.inner.chat(req).await?;
        let request = normalise_chat(req);
        let entry = Entry {
            key: key_of(&request),
            kind: chat_kind(req),
            request,
            response: serde_json::json!({"content": resp.content, "model": resp.model}),
            usage: resp.usage.map(|(p, c)| Usage { prompt_tokens: p, completion_tokens: c }),
            at: Some(now_rfc3339()),
        };
        self.tape.record(entry).await?;
        Ok(resp)
    }
    fn configured(&self) -> ModelInfo {
        self.inner.configured()
    }
}

#[async_trait]
impl<M: EmbedModel> EmbedModel for Recorder<M> {
    async fn embed(&self, req: &EmbedRequest) -> Result<EmbedResponse, LlmError> {
        let resp = self.inner.embed(req).await?;
        let request = normalise_embed(req);
        let entry = Entry {
            key: key_of(&request),
            kind: "embed".into(),
            request,
            response: serde_json::json!({"vectors": resp.vectors, "model": resp.model}),
            usage: resp.prompt_tokens.map(|p| Usage { prompt_tokens: p, completion_tokens: 0 }),
            at: Some(now_rfc3339()),
        };
        self.tape.record(entry).await?;
        Ok(resp)
    }
}

/// Answers from a cassette only; a miss is an error naming the request.
#[derive(Clone, Debug)]
pub struct Replayer {
    file: PathBuf,
    cassette: Arc<Cassette>,
    /// Entry index by key (the first entry recorded for a key).
    by_key: Arc<HashMap<String, usize>>,
}

impl Replayer {
    /// Load the cassette in `dir` (either framing, see [`Cassette::load`]).
    pub fn open(dir: &Path) -> Result<Replayer, LlmError> {
        let cassette = Cassette::load(dir)?;
        let file = dir.join(if cassette.header.format == LEGACY_FORMAT { LEGACY_FILE } else { CASSETTE_FILE });
        let mut by_key = HashMap::with_capacity(cassette.entries.len());
        for (i, e) in cassette.entries.iter().enumerate() {
            by_key.entry(e.key.clone()).or_insert(i);
        }
        Ok(Replayer { file, cassette: Arc::new(cassette), by_key: Arc::new(by_key) })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.cassette.header
    }

    fn lookup(&self, kind: &str, request: &serde_json::Value) -> Result<&Entry, LlmError> {
        let key = key_of(request);
        self.by_key.get(&key).and_then(|i| self.cassette.entries.get(*i)).ok_or_else(|| {
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

/// A shared token tally: every [`Metered`] layer made by [`Meter::wrap`] adds to it (e.g. one
/// over the chat model and one over the embeddings model of a run).
#[derive(Clone, Debug, Default)]
pub struct Meter(Arc<Mutex<UsageTally>>);

impl Meter {
    /// A meter at zero.
    pub fn new() -> Self {
        Meter::default()
    }
    /// Meter `inner`'s calls on this meter.
    pub fn wrap<M>(&self, inner: M) -> Metered<M> {
        Metered { inner, meter: self.clone() }
    }
    /// Take the tally so far and start again from zero.
    pub fn take(&self) -> UsageTally {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
    fn add(&self, kind: &str, usage: Option<(u32, u32)>, model: &str, client: ClientKind) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).add(kind, usage, model, client);
    }
}

/// Counts the calls and tokens of the model it wraps (a layer like the others): a chat model when
/// `M` is one, an embeddings model when `M` is one. A layer over a model of the other kind only
/// does not build:
///
/// ```
/// # use mnemo_llm::cassette::Metered;
/// # use mnemo_llm::{EmbedModel, EmbedRequest, EmbedResponse, LlmError};
/// struct EmbedOnly;
/// #[async_trait::async_trait]
/// impl EmbedModel for EmbedOnly {
///     async fn embed(&self, _: &EmbedRequest) -> Result<EmbedResponse, LlmError> {
///         Err(LlmError::Unavailable("stub".into()))
///     }
/// }
/// fn embeddings(_: impl EmbedModel) {}
/// embeddings(Metered::new(EmbedOnly));
/// ```
///
/// ```compile_fail
/// # use mnemo_llm::cassette::Metered;
/// # use mnemo_llm::{ChatModel, EmbedModel, EmbedRequest, EmbedResponse, LlmError};
/// struct EmbedOnly;
/// #[async_trait::async_trait]
/// impl EmbedModel for EmbedOnly {
///     async fn embed(&self, _: &EmbedRequest) -> Result<EmbedResponse, LlmError> {
///         Err(LlmError::Unavailable("stub".into()))
///     }
/// }
/// fn chat(_: impl ChatModel) {}
/// chat(Metered::new(EmbedOnly)); // no chat model to meter: a type error
/// ```
#[derive(Clone, Debug)]
pub struct Metered<M> {
    inner: M,
    meter: Meter,
}

impl<M> Metered<M> {
    /// Meter `inner` on a meter of its own.
    pub fn new(inner: M) -> Self {
        Meter::new().wrap(inner)
    }
    /// The meter this layer adds to.
    pub fn meter(&self) -> &Meter {
        &self.meter
    }
    /// Take the meter's tally so far and start again from zero.
    pub fn take(&self) -> UsageTally {
        self.meter.take()
    }
    /// The model metered.
    pub fn inner(&self) -> &M {
        &self.inner
    }
}

#[async_trait]
impl<M: ChatModel> ChatModel for Metered<M> {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let r = self.inner.chat(req).await?;
        self.meter.add(&chat_kind(req), r.usage, &r.model, r.client);
        Ok(r)
    }
    fn configured(&self) -> ModelInfo {
        self.inner.configured()
    }
}

#[async_trait]
impl<M: EmbedModel> EmbedModel for Metered<M> {
    async fn embed(&self, req: &EmbedRequest) -> Result<EmbedResponse, LlmError> {
        let r = self.inner.embed(req).await?;
        self.meter.add("embed", r.prompt_tokens.map(|p| (p, 0)), &r.model, r.client);
        Ok(r)
    }
}
