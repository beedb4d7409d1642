//! The model seam: one async call, `ChatModel::chat`, that every model client implements.
//!
//! Shape, and why:
//! - A request is plain data ([`ChatRequest`]): model, system prompt, user prompt, token cap,
//!   temperature and JSON mode. That is exactly what an OpenAI-compatible
//!   `/chat/completions` call needs, so the live client maps it one-to-one.
//! - A response ([`ChatResponse`]) carries the model string **as echoed by the API** and the
//!   [`ClientKind`] that actually answered. The seam is loud: nothing downstream ever writes a
//!   model name from config into an artifact; it writes what the response says.
//! - The trait takes `&self` and is object-safe, so clients compose as layers, tower-style:
//!   a layer is generic over the model it wraps (`Recorder<M>`, `Metered<M>`, `Counted<M>`)
//!   and is a `ChatModel` exactly when `M` is one; `Arc<M>` (and `Arc<dyn ChatModel>`) is a
//!   model too, so a layer wraps a shared or type-erased client as well. The cassette
//!   recorder keys each request by its content and records the inner answer; the replayer
//!   answers a stored one with `client = Replay`. A cassette miss is an
//!   [`LlmError::Cassette`], never a silent call to another client.
//!
//! Embeddings have the same shape of seam, [`EmbedModel`]: the live client, the fake and the
//! cassette decorators implement it, and [`crate::seam::ModelEmbedder`] adapts any of them to
//! mnemo-contract's `Embedder`.
use std::sync::Arc;

use async_trait::async_trait;
use mnemo_contract::{ClientKind, ModelInfo};
use serde::{Deserialize, Serialize};

use crate::error::LlmError;

/// One chat call: a system prompt and one user message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The model asked for (e.g. "qwen-plus"). The answer says which model really answered.
    pub model: String,
    /// The system prompt (task, rules, answer schema).
    pub system: String,
    /// The user message (the input, as JSON for Mnemo's structured prompts).
    pub user: String,
    /// Cap on the answer's tokens.
    pub max_tokens: u32,
    /// Sampling temperature (Mnemo uses 0 for its structured calls).
    pub temperature: f32,
    /// Ask for a JSON object answer: the live client sends `response_format = json_object`
    /// exactly when this is true (the reasoner sets it from `[llm] json_mode`), so a cassette,
    /// which records and keys this request, says what was sent.
    pub json: bool,
    /// A previous answer that failed validation, sent back once with what was wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<Repair>,
}

/// The one repair attempt: the invalid answer and the problem found in it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Repair {
    /// The answer that was refused.
    pub previous: String,
    /// Why it was refused (a path and a reason, from validation).
    pub problem: String,
}

impl Repair {
    /// The follow-up user message asking for a corrected answer.
    pub fn message(&self) -> String {
        format!(
            "Your previous answer was refused: {}. Answer again with ONE JSON object that follows the schema exactly, and nothing else.",
            self.problem
        )
    }
}

/// One embeddings call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbedRequest {
    /// The model asked for (e.g. "text-embedding-v4").
    pub model: String,
    /// Dimensions asked for.
    pub dims: usize,
    /// Texts, in order.
    pub texts: Vec<String>,
}

/// An embeddings answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbedResponse {
    /// One vector per text, in order.
    pub vectors: Vec<Vec<f32>>,
    /// The model string as echoed by the API.
    pub model: String,
    /// Which client answered.
    pub client: ClientKind,
    /// Prompt tokens, when reported.
    pub prompt_tokens: Option<u32>,
}

/// An embeddings model: live, fake, or a cassette decorator around another.
#[async_trait]
pub trait EmbedModel: Send + Sync {
    /// Embed; the response says who answered.
    async fn embed(&self, req: &EmbedRequest) -> Result<EmbedResponse, LlmError>;
}

/// A model's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The answer text.
    pub content: String,
    /// The model string as echoed by the API (for the fake: "fake-qwen").
    pub model: String,
    /// Which client answered.
    pub client: ClientKind,
    /// Prompt and completion tokens, when the client reports them (the fake does not).
    pub usage: Option<(u32, u32)>,
}

/// A chat model: live, fake, or a decorator around another (cassettes).
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Send one request; the response says who answered.
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError>;
    /// Who is configured to answer, before any answer proves it (used for `model_info` before
    /// the first call). A decorator reports itself (a replayer says `Replay`).
    fn configured(&self) -> ModelInfo;
}

/// A shared model is a model: layers wrap an `Arc<M>` or an `Arc<dyn ChatModel>` as they wrap `M`.
#[async_trait]
impl<M: ChatModel + ?Sized> ChatModel for Arc<M> {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        (**self).chat(req).await
    }
    fn configured(&self) -> ModelInfo {
        (**self).configured()
    }
}

/// A shared embeddings model is one too.
#[async_trait]
impl<M: EmbedModel + ?Sized> EmbedModel for Arc<M> {
    async fn embed(&self, req: &EmbedRequest) -> Result<EmbedResponse, LlmError> {
        (**self).embed(req).await
    }
}
