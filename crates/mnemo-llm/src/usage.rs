//! The seam's decorator that records every answered model call in the process's tally
//! ([`mnemo_contract::usage`]): calls and reported tokens per kind of call, which a server
//! exports (`GET /metrics`). [`crate::seam::Seam`] puts it around every client it hands out.
use async_trait::async_trait;
use mnemo_contract::usage::record_model_call;
use mnemo_contract::ModelInfo;

use crate::cassette::chat_kind;
use crate::chat::{ChatModel, ChatRequest, ChatResponse, EmbedModel, EmbedRequest, EmbedResponse};
use crate::error::LlmError;

/// Records each answered call of the model inside (a failed call reported no tokens): a chat
/// model when `M` is one, an embeddings model when `M` is one.
#[derive(Clone, Debug)]
pub struct Counted<M>(pub M);

#[async_trait]
impl<M: ChatModel> ChatModel for Counted<M> {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let r = self.0.chat(req).await?;
        record_model_call(&chat_kind(req), r.usage);
        Ok(r)
    }
    fn configured(&self) -> ModelInfo {
        self.0.configured()
    }
}

#[async_trait]
impl<M: EmbedModel> EmbedModel for Counted<M> {
    async fn embed(&self, req: &EmbedRequest) -> Result<EmbedResponse, LlmError> {
        let r = self.0.embed(req).await?;
        record_model_call("embed", r.prompt_tokens.map(|p| (p, 0)));
        Ok(r)
    }
}
