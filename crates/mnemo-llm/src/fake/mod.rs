//! `FakeQwen`: the deterministic offline stand-in for Qwen, both a [`ChatModel`] and an
//! [`Embedder`]. It proves plumbing, never model behaviour: every answer says
//! `client = Fake`, `model = "fake-qwen"`, and an unrecognised prompt is an error, not a guess.
pub mod answer;
pub mod embed;
pub mod grammar;

use async_trait::async_trait;
use mnemo_contract::{ClientKind, Embedder, ModelInfo};

use crate::chat::{ChatModel, ChatRequest, ChatResponse};
use crate::error::LlmError;
use crate::prompts::Task;
use embed::{HashEmbedder, Scratch};

/// The model string the fake answers with (as a live API would echo its own).
pub const FAKE_CHAT_MODEL: &str = "fake-qwen";
/// Default embedding dimensions.
pub const DEFAULT_DIMS: usize = 256;
/// Smallest accepted embedding dimensions.
pub const MIN_DIMS: usize = 8;
/// Largest accepted embedding dimensions.
pub const MAX_DIMS: usize = 4096;

/// The deterministic fake model: hashed bag-of-words embeddings and pattern-matched chat.
#[derive(Clone, Debug)]
pub struct FakeQwen {
    embedder: HashEmbedder,
    model_id: String,
}

impl FakeQwen {
    /// A fake whose embeddings have `dims` dimensions (8..=4096); model id
    /// `fake-hash-bow-<dims>`.
    pub fn new(dims: usize) -> Result<Self, LlmError> {
        if !(MIN_DIMS..=MAX_DIMS).contains(&dims) {
            return Err(LlmError::InvalidSetting(format!(
                "dims = {dims} is out of range; fake embeddings take {MIN_DIMS}..={MAX_DIMS} dimensions"
            )));
        }
        Ok(FakeQwen { embedder: HashEmbedder::new(dims), model_id: format!("fake-hash-bow-{dims}") })
    }

    /// Embed one text (synchronous; what `Embedder::embed` does for each text).
    pub fn embed_one(&self, text: &str) -> Vec<f32> {
        self.embedder.embed_with(text, &mut Scratch::default())
    }

    /// Embed many texts, reusing scratch buffers across them (synchronous).
    pub fn embed_batch<S: AsRef<str>>(&self, texts: &[S]) -> Vec<Vec<f32>> {
        let mut scratch = Scratch::default();
        texts.iter().map(|t| self.embedder.embed_with(t.as_ref(), &mut scratch)).collect()
    }
}

impl Default for FakeQwen {
    /// 256 dimensions.
    fn default() -> Self {
        FakeQwen { embedder: HashEmbedder::new(DEFAULT_DIMS), model_id: format!("fake-hash-bow-{DEFAULT_DIMS}") }
    }
}

#[async_trait]
impl Embedder for FakeQwen {
    fn model_id(&self) -> &str {
        &self.model_id
    }
    fn dims(&self) -> usize {
        self.embedder.dims()
    }
    async fn embed(&self, texts: &[String]) -> mnemo_contract::Result<Vec<Vec<f32>>> {
        Ok(self.embed_batch(texts))
    }
}

#[async_trait]
impl ChatModel for FakeQwen {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let task = Task::of_system_prompt(&req.system).ok_or_else(|| {
            let first = req.system.lines().next().unwrap_or("").chars().take(80).collect::<String>();
            LlmError::UnrecognisedPrompt(format!(
                "the system prompt's first line {first:?} is not a known mnemo-task marker"
            ))
        })?;
        if !req.json {
            return Err(LlmError::BadRequest(format!(
                "the {} prompt must be sent in JSON mode (json = true)",
                task.name()
            )));
        }
        Ok(ChatResponse {
            content: answer::answer(task, &req.user)?,
            model: FAKE_CHAT_MODEL.to_string(),
            client: ClientKind::Fake,
            usage: None,
        })
    }
    fn configured(&self) -> ModelInfo {
        ModelInfo { client: ClientKind::Fake, model: FAKE_CHAT_MODEL.to_string() }
    }
}
