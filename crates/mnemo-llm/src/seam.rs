//! The model seam, in one place: which client answers (fake | live | record | replay), from
//! the `[llm]` config section, the environment and the `--live` flag (which the command line
//! turns into `llm.client = "live"`).
//!
//! | source | effect |
//! |---|---|
//! | `[llm] client` | fake (default), live, record, replay |
//! | `MNEMO_REPLAY=DIR` | replay from the cassette in `DIR` (no network, no key) |
//! | `MNEMO_RECORD=DIR` | live calls, each appended to `DIR/cassette.jsonl` |
//! | `MNEMO_OFFLINE=1` | any live call (live, record) is an error naming the variable |
//! | `MNEMO_LLM_BASE_URL` | overrides `[llm] base_url` |
//!
//! Live without a key, or live with `MNEMO_OFFLINE=1`, is an error naming the variable;
//! nothing ever falls back to the fake. The one exception to the key is `profile = "local"`
//! (a model server on this machine, e.g. llama.cpp's, which needs none): there a missing key
//! means no `Authorization` header.
//!
//! Profiles are sets of defaults for the keys the `[llm]` table does not set:
//!
//! | profile | defaults |
//! |---|---|
//! | `""` or `"hosted"` (default) | the defaults of [`LlmSettings::default`] (a hosted provider) |
//! | `"local"` | a CPU model: `request_timeout_ms = 600000` (the tiers follow it), `max_concurrency = 1`, `retry_timeouts = false`, `json_mode = true`, `api_key_env = ""`; a key is optional (sent only when `api_key_env` names a variable that is set) |
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use mnemo_contract::{ClientKind, CoreError, Embedder, ModelErrorKind, ModelRole};
use serde::{Deserialize, Serialize};

use crate::cassette::{Recorder, Replayer};
use crate::chat::{ChatModel, EmbedModel, EmbedRequest};
use crate::error::LlmError;
use crate::fake::FakeQwen;
use crate::live::{LiveChat, LiveEmbed, Resilience, TierTimeouts, Transport};
use crate::usage::Counted;

/// DashScope's international OpenAI-compatible endpoint.
pub const DEFAULT_BASE_URL: &str = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1";
/// The variable holding the key, by default.
pub const DEFAULT_API_KEY_ENV: &str = "DASHSCOPE_API_KEY";
/// The profile of a model on this machine (slow, keyless).
pub const LOCAL_PROFILE: &str = "local";
/// The profiles `[llm] profile` accepts ("" is the hosted default).
pub const KNOWN_PROFILES: [&str; 3] = ["", "hosted", LOCAL_PROFILE];
/// The request timeout of the local profile: a CPU model may take minutes over one extraction.
pub const LOCAL_REQUEST_TIMEOUT_MS: u64 = 600_000;

/// The `[llm]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlmSettings {
    /// fake | live | record | replay.
    pub client: String,
    /// Defaults for the keys not set: "" or "hosted" (a provider), "local" (a CPU model on this
    /// machine: long timeouts, one call at a time, no key needed). Keys set explicitly win.
    pub profile: String,
    /// OpenAI-compatible base URL (env `MNEMO_LLM_BASE_URL` wins).
    pub base_url: String,
    /// The NAME of the variable holding the API key (never the key itself).
    pub api_key_env: String,
    /// Extraction tier (cheap).
    pub extraction_model: String,
    /// Reasoning tier (reconcile, forget resolution).
    pub reasoning_model: String,
    /// Embeddings model (for `[embedder] kind = "llm"`).
    pub embedding_model: String,
    /// Embedding dimensions.
    pub embedding_dims: usize,
    /// Texts per embeddings request.
    pub embedding_batch: usize,
    /// Send `response_format = json_object` (turn off for a server without it).
    pub json_mode: bool,
    /// Answer token cap of an extraction.
    pub extract_max_tokens: u32,
    /// Ask the extraction model to write a turn's relative dates as dates and to give a
    /// memory's validity interval (`valid_from` / `valid_to`), on turns that state a date.
    /// Off by default: Qwen2.5-Coder-1.5B answered nothing usable for 2 of the 5 dated turns
    /// of the real-model suite when asked (docs/time.md). The engine resolves relative dates and
    /// reads interval phrases itself either way.
    pub ask_dates: bool,
    /// Answer token cap of a reconcile or forget resolution.
    pub reason_max_tokens: u32,
    /// Cassette directory for client = record | replay (env MNEMO_RECORD / MNEMO_REPLAY win).
    pub cassette_dir: String,
    /// Mark a recorded cassette as recorded against a mock server.
    pub cassette_mock: bool,
    /// Connect timeout, ms.
    pub connect_timeout_ms: u64,
    /// Per-attempt request timeout, ms (embeddings; and each chat tier whose own is 0).
    pub request_timeout_ms: u64,
    /// Per-attempt timeout of an extraction call, ms (0: request_timeout_ms).
    pub extraction_timeout_ms: u64,
    /// Per-attempt timeout of a reconcile or forget resolution, ms (0: request_timeout_ms).
    pub reasoning_timeout_ms: u64,
    /// Retry a timed-out call too (default false: the server may still be computing it, and a
    /// second request would queue behind the first).
    pub retry_timeouts: bool,
    /// Retries after the first attempt on 429, 408, 5xx and failed connections (and timeouts
    /// when retry_timeouts is set).
    pub max_retries: u32,
    /// Backoff base, ms (attempt n waits base·2ⁿ⁻¹ + jitter, or the server's Retry-After).
    pub backoff_base_ms: u64,
    /// Cap on one wait, ms.
    pub backoff_max_ms: u64,
    /// Calls in flight at once.
    pub max_concurrency: usize,
}

impl Default for LlmSettings {
    fn default() -> Self {
        let r = Resilience::default();
        LlmSettings {
            client: "fake".into(),
            profile: String::new(),
            base_url: DEFAULT_BASE_URL.into(),
            api_key_env: DEFAULT_API_KEY_ENV.into(),
            extraction_model: "qwen-flash".into(),
            reasoning_model: "qwen-plus".into(),
            embedding_model: "text-embedding-v4".into(),
            embedding_dims: 1024,
            embedding_batch: 10,
            json_mode: true,
            extract_max_tokens: 1024,
            ask_dates: false,
            reason_max_tokens: 256,
            cassette_dir: String::new(),
            cassette_mock: false,
            connect_timeout_ms: r.connect_timeout.as_millis() as u64,
            request_timeout_ms: r.request_timeout.as_millis() as u64,
            extraction_timeout_ms: 0,
            reasoning_timeout_ms: 0,
            retry_timeouts: r.retry_timeouts,
            max_retries: r.max_retries,
            backoff_base_ms: r.backoff_base.as_millis() as u64,
            backoff_max_ms: r.backoff_max.as_millis() as u64,
            max_concurrency: r.max_concurrency,
        }
    }
}

/// An unknown profile, named with the known ones.
fn unknown_profile(name: &str) -> LlmError {
    LlmError::InvalidSetting(format!(
        "[llm] profile = {name:?}; known profiles: \"hosted\" (or \"\", the default: a hosted provider), \"local\" (a CPU model on this machine)"
    ))
}

impl LlmSettings {
    /// The defaults of a profile (see the module docs); an unknown name is an error naming the
    /// known ones. For settings built in code: `LlmSettings { .., ..LlmSettings::for_profile("local")? }`.
    pub fn for_profile(name: &str) -> Result<LlmSettings, LlmError> {
        let mut s = LlmSettings { profile: name.to_string(), ..LlmSettings::default() };
        match name {
            "" | "hosted" => {}
            LOCAL_PROFILE => {
                // One slow model on this machine: wait long, ask one thing at a time (a second
                // call would only queue in the server), never resend a call it may still be
                // computing. The tiers' own timeouts stay 0, so they follow request_timeout_ms.
                s.request_timeout_ms = LOCAL_REQUEST_TIMEOUT_MS;
                s.extraction_timeout_ms = 0;
                s.reasoning_timeout_ms = 0;
                s.max_concurrency = 1;
                s.retry_timeouts = false;
                s.json_mode = true;
                // No key unless one is named: a hosted provider's key left in the environment
                // must not travel to a local (or LAN, plain http) server that never needed it.
                s.api_key_env = String::new();
            }
            other => return Err(unknown_profile(other)),
        }
        Ok(s)
    }

    /// From a TOML table (the `[llm]` section; empty = all defaults). Unknown keys are errors.
    /// Two passes: the table's `profile` picks the defaults, then every key the table sets
    /// overrides them (so an explicit key always wins over its profile).
    pub fn from_table(t: &toml::Table) -> Result<LlmSettings, LlmError> {
        let bad = |e: String| LlmError::InvalidSetting(format!("[llm]: {}", e.trim_end()));
        let profile = match t.get("profile") {
            None => "",
            Some(toml::Value::String(p)) => p.as_str(),
            Some(other) => {
                return Err(LlmError::InvalidSetting(format!(
                    "[llm] profile must be a string (\"hosted\" or \"local\"), not {}",
                    other.type_str()
                )))
            }
        };
        let defaults = LlmSettings::for_profile(profile)?;
        let mut merged = toml::Table::try_from(&defaults).map_err(|e| bad(e.to_string()))?;
        merged.extend(t.iter().map(|(k, v)| (k.clone(), v.clone())));
        merged.try_into().map_err(|e: toml::de::Error| bad(mnemo_contract::text::toml_error(&e, None)))
    }

    /// Whether a missing API key is allowed (a local server needs none).
    pub fn key_optional(&self) -> bool {
        self.profile == LOCAL_PROFILE
    }

    /// The per-attempt timeouts of the chat tiers (0 = request_timeout_ms).
    pub fn tier_timeouts(&self) -> TierTimeouts {
        let or_request = |ms: u64| Duration::from_millis(if ms == 0 { self.request_timeout_ms } else { ms });
        TierTimeouts {
            extraction: or_request(self.extraction_timeout_ms),
            reasoning: or_request(self.reasoning_timeout_ms),
        }
    }

    fn resilience(&self) -> Resilience {
        Resilience {
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            request_timeout: Duration::from_millis(self.request_timeout_ms),
            retry_timeouts: self.retry_timeouts,
            max_retries: self.max_retries,
            backoff_base: Duration::from_millis(self.backoff_base_ms),
            backoff_max: Duration::from_millis(self.backoff_max_ms),
            max_concurrency: self.max_concurrency,
        }
    }
}

/// Which client answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The deterministic offline fake.
    Fake,
    /// Live calls.
    Live,
    /// Live calls, recorded to a cassette directory.
    Record(PathBuf),
    /// Answers from a cassette directory only.
    Replay(PathBuf),
}

impl Mode {
    /// fake | live | record | replay.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Fake => "fake",
            Mode::Live => "live",
            Mode::Record(_) => "record",
            Mode::Replay(_) => "replay",
        }
    }
}

/// The resolved seam: the mode, the settings, and (live, record) the key.
#[derive(Clone)]
pub struct Seam {
    /// The mode.
    pub mode: Mode,
    /// The settings, with env overrides applied.
    pub settings: LlmSettings,
    /// The key (live, record only). Never printed: `Seam` has no Debug.
    api_key: Option<String>,
}

/// Resolve the seam from settings and an environment (`env(name)`, so tests inject one).
pub fn resolve(settings: LlmSettings, env: &dyn Fn(&str) -> Option<String>) -> Result<Seam, LlmError> {
    let mut s = settings;
    // Settings built in code skip from_table, so the profile is checked here too.
    if !KNOWN_PROFILES.contains(&s.profile.as_str()) {
        return Err(unknown_profile(&s.profile));
    }
    let set = |name: &str| env(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
    if let Some(url) = set("MNEMO_LLM_BASE_URL") {
        s.base_url = url;
    }
    let offline = set("MNEMO_OFFLINE").is_some_and(|v| v != "0");
    let mode = match (set("MNEMO_REPLAY"), set("MNEMO_RECORD")) {
        (Some(_), Some(_)) => {
            return Err(LlmError::InvalidSetting("MNEMO_REPLAY and MNEMO_RECORD are both set; choose one".into()))
        }
        (Some(dir), None) => Mode::Replay(dir.into()),
        (None, Some(dir)) => Mode::Record(dir.into()),
        (None, None) => match s.client.as_str() {
            "fake" => Mode::Fake,
            "live" => Mode::Live,
            "record" | "replay" if s.cassette_dir.trim().is_empty() => {
                return Err(LlmError::InvalidSetting(format!(
                    "[llm] client = {:?} needs cassette_dir (or MNEMO_{}=DIR)",
                    s.client,
                    s.client.to_uppercase()
                )))
            }
            "record" => Mode::Record(s.cassette_dir.clone().into()),
            "replay" => Mode::Replay(s.cassette_dir.clone().into()),
            other => {
                return Err(LlmError::InvalidSetting(format!(
                    "[llm] client = {other:?}; known clients: fake, live, record, replay"
                )))
            }
        },
    };
    let mut api_key = None;
    if matches!(mode, Mode::Live | Mode::Record(_)) {
        if offline {
            return Err(LlmError::InvalidSetting(format!(
                "the {} model client makes live calls, but MNEMO_OFFLINE=1 forbids them: unset MNEMO_OFFLINE, or use the fake or a cassette (MNEMO_REPLAY=DIR)",
                mode.name()
            )));
        }
        let env_name = s.api_key_env.trim();
        if env_name.is_empty() && !s.key_optional() {
            return Err(LlmError::InvalidSetting(
                "[llm] api_key_env must name the variable holding the API key (or, for a server on this machine that needs none, set profile = \"local\")".into(),
            ));
        }
        match (env_name.is_empty(), set(env_name)) {
            (false, Some(k)) => api_key = Some(k),
            // profile local: a server that needs no key gets no Authorization header.
            _ if s.key_optional() => api_key = None,
            _ => {
                return Err(LlmError::InvalidSetting(format!(
                    "the {} model client needs an API key: set the environment variable {} ([llm] api_key_env names it; a local server that needs none: [llm] profile = \"local\")",
                    mode.name(),
                    s.api_key_env
                )))
            }
        }
        if !(s.base_url.starts_with("http://") || s.base_url.starts_with("https://")) {
            return Err(LlmError::InvalidSetting(format!(
                "[llm] base_url {:?} must start with http:// or https://",
                s.base_url
            )));
        }
    }
    if s.request_timeout_ms == 0 {
        return Err(LlmError::InvalidSetting(
            "[llm] request_timeout_ms = 0: a call needs time to answer (0 means \"follow request_timeout_ms\" only for extraction_timeout_ms and reasoning_timeout_ms)".into(),
        ));
    }
    if s.embedding_dims == 0 || s.embedding_dims > 16_384 {
        return Err(LlmError::InvalidSetting(format!(
            "[llm] embedding_dims = {} must be within 1..=16384",
            s.embedding_dims
        )));
    }
    Ok(Seam { mode, settings: s, api_key })
}

/// Resolve from the process environment.
pub fn resolve_from_process(settings: LlmSettings) -> Result<Seam, LlmError> {
    resolve(settings, &|name| std::env::var(name).ok())
}

impl Seam {
    /// One line for start-up (stderr) and artifacts: the mode and where calls go.
    pub fn describe(&self) -> String {
        let s = &self.settings;
        let key = match &self.api_key {
            Some(_) => format!("key from {}", s.api_key_env),
            None => "no API key".to_string(),
        };
        let profile = if s.profile.is_empty() { String::new() } else { format!("profile {}; ", s.profile) };
        match &self.mode {
            Mode::Fake => {
                "model client: fake (offline, deterministic; reads tagged lines, keeps an untagged turn as one episode)"
                    .into()
            }
            Mode::Live => format!(
                "model client: live ({}; {profile}extraction {}, reasoning {}; {key})",
                s.base_url, s.extraction_model, s.reasoning_model
            ),
            Mode::Record(d) => format!(
                "model client: record (live calls to {}, recorded to {}; {profile}extraction {}, reasoning {}; {key})",
                s.base_url,
                d.display(),
                s.extraction_model,
                s.reasoning_model
            ),
            Mode::Replay(d) => format!("model client: replay (from {}; no network)", d.display()),
        }
    }

    fn transport(&self) -> Result<Arc<Transport>, LlmError> {
        if self.api_key.is_none() && !self.settings.key_optional() {
            return Err(LlmError::InvalidSetting("no API key resolved".into()));
        }
        Ok(Arc::new(Transport::new(&self.settings.base_url, self.api_key.clone(), self.settings.resilience())?))
    }

    fn live_chat(&self) -> Result<LiveChat, LlmError> {
        let s = &self.settings;
        Ok(LiveChat::new(self.transport()?, &s.extraction_model).with_timeouts(s.tier_timeouts()))
    }

    /// The chat client of this mode, its calls counted in the process's tally
    /// ([`crate::usage`]): `Counted<FakeQwen>`, `Counted<LiveChat>`, `Counted<Recorder<LiveChat>>`
    /// or `Counted<Replayer>`, type-erased.
    pub fn chat(&self) -> Result<Arc<dyn ChatModel>, LlmError> {
        let s = &self.settings;
        Ok(match &self.mode {
            Mode::Fake => Arc::new(Counted(FakeQwen::default())),
            Mode::Live => Arc::new(Counted(self.live_chat()?)),
            Mode::Record(dir) => {
                Arc::new(Counted(Recorder::open(dir, &s.base_url, s.cassette_mock, self.live_chat()?)?))
            }
            Mode::Replay(dir) => Arc::new(Counted(Replayer::open(dir)?)),
        })
    }

    /// The embeddings client of this mode (the fake: hashed bag of words at the configured
    /// dims), its calls counted in the process's tally ([`crate::usage`]), layered as
    /// [`Seam::chat`]'s. The chat and embeddings recorders of one cassette share its tape.
    pub fn embed(&self) -> Result<Arc<dyn EmbedModel>, LlmError> {
        let s = &self.settings;
        Ok(match &self.mode {
            Mode::Fake => {
                Arc::new(Counted(FakeQwen::new(s.embedding_dims.clamp(crate::fake::MIN_DIMS, crate::fake::MAX_DIMS))?))
            }
            Mode::Live => Arc::new(Counted(LiveEmbed::new(self.transport()?, s.embedding_batch))),
            Mode::Record(dir) => Arc::new(Counted(Recorder::open(
                dir,
                &s.base_url,
                s.cassette_mock,
                LiveEmbed::new(self.transport()?, s.embedding_batch),
            )?)),
            Mode::Replay(dir) => Arc::new(Counted(Replayer::open(dir)?)),
        })
    }

    /// The reasoner of this mode: extraction on the extraction tier, the rest on the reasoning
    /// tier, with the configured answer caps.
    pub fn reasoner(&self) -> Result<crate::LlmReasoner, LlmError> {
        Ok(self.reasoner_over(self.chat()?))
    }

    /// The reasoner of these settings over a given chat client (e.g. a metered one). JSON mode
    /// is a field of each request, so a cassette keys and records it; the fake always gets it
    /// (`json_mode` describes a server, and the fake refuses a structured prompt without it).
    pub fn reasoner_over(&self, chat: Arc<dyn ChatModel>) -> crate::LlmReasoner {
        let s = &self.settings;
        crate::LlmReasoner::new(chat)
            .with_json_mode(s.json_mode || self.mode == Mode::Fake)
            .with_model(s.reasoning_model.clone())
            .with_extraction_model(s.extraction_model.clone())
            .with_max_tokens(s.reason_max_tokens)
            .with_extract_max_tokens(s.extract_max_tokens)
            .with_ask_dates(s.ask_dates)
    }

    /// A core `Embedder` over this mode's embeddings client.
    pub fn embedder(&self) -> Result<ModelEmbedder, LlmError> {
        Ok(ModelEmbedder::new(self.embed()?, &self.settings.embedding_model, self.settings.embedding_dims, &self.mode))
    }
}

/// mnemo-contract's `Embedder` over any [`EmbedModel`].
pub struct ModelEmbedder {
    inner: Arc<dyn EmbedModel>,
    model: String,
    dims: usize,
    model_id: String,
}

impl ModelEmbedder {
    /// Vectors of `model` at `dims`; the id stored beside each vector names both (and "fake"
    /// for the offline fake, whose vectors are not the model's).
    pub fn new(inner: Arc<dyn EmbedModel>, model: &str, dims: usize, mode: &Mode) -> Self {
        let model_id = match mode {
            Mode::Fake => format!("fake-hash-bow-{dims}"),
            _ => format!("{model}@{dims}"),
        };
        ModelEmbedder { inner, model: model.to_string(), dims, model_id }
    }
}

#[async_trait]
impl Embedder for ModelEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }
    fn dims(&self) -> usize {
        self.dims
    }
    async fn embed(&self, texts: &[String]) -> mnemo_contract::Result<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let req = EmbedRequest { model: self.model.clone(), dims: self.dims, texts: texts.to_vec() };
        let r = self.inner.embed(&req).await.map_err(LlmError::into_embedder)?;
        if r.vectors.len() != texts.len() || r.vectors.iter().any(|v| v.len() != self.dims) {
            return Err(CoreError::model_message(
                ModelRole::Embedder,
                ModelErrorKind::BadAnswer,
                format!(
                    "{} client (model {:?}) returned {} vectors for {} texts, or vectors of other than {} dimensions",
                    r.client.as_str(),
                    r.model,
                    r.vectors.len(),
                    texts.len(),
                    self.dims
                ),
            ));
        }
        Ok(r.vectors)
    }
}

#[async_trait]
impl EmbedModel for FakeQwen {
    async fn embed(&self, req: &EmbedRequest) -> Result<crate::chat::EmbedResponse, LlmError> {
        Ok(crate::chat::EmbedResponse {
            vectors: self.embed_batch(&req.texts),
            model: mnemo_contract::Embedder::model_id(self).to_string(),
            client: ClientKind::Fake,
            prompt_tokens: None,
        })
    }
}
