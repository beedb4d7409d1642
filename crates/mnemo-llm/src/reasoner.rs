//! `LlmReasoner`: the `Reasoner` of mnemo-core over any [`ChatModel`].
//!
//! It builds the prompts (`prompts`), calls the model, then parses and validates the answer
//! (`validate`): every field is checked, ids must be among the given neighbours/candidates,
//! kinds must be known. An invalid answer is a `CoreError::Reasoner` naming the task, the
//! client and the model string that answered, and what was wrong. The fake model goes through
//! exactly this path, so offline runs exercise the code a live model will.
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use mnemo_core::{Candidate, CoreError, Extraction, Memory, MemoryId, ModelInfo, Reasoner, Turn, Verdict};
use serde::Serialize;
use serde_json::Value;

use crate::chat::{ChatModel, ChatRequest, ChatResponse};
use crate::prompts::{ClaimView, ExtractInput, MemoryView, ReconcileInput, ResolveForgetInput, Task};
use crate::validate;

/// The model asked for when none is configured.
pub const DEFAULT_MODEL: &str = "qwen-plus";
/// Default cap on answer tokens.
pub const DEFAULT_MAX_TOKENS: u32 = 2048;

/// A reasoner that asks a chat model.
pub struct LlmReasoner {
    chat: Arc<dyn ChatModel>,
    model: String,
    max_tokens: u32,
    /// Who answered last (None before any answer).
    last: Mutex<Option<ModelInfo>>,
}

impl LlmReasoner {
    /// A reasoner over `chat`, asking for [`DEFAULT_MODEL`] at temperature 0.
    pub fn new(chat: Arc<dyn ChatModel>) -> Self {
        LlmReasoner { chat, model: DEFAULT_MODEL.to_string(), max_tokens: DEFAULT_MAX_TOKENS, last: Mutex::new(None) }
    }
    /// Ask for `model` (recorded in every request; the answer says who really answered).
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = model.into();
        self
    }
    /// Cap the answers' tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }
    /// The model asked for.
    pub fn requested_model(&self) -> &str {
        &self.model
    }

    /// Send one task's prompt with `input` as the user message; the parsed answer object, who
    /// answered, and the raw answer (for error messages).
    async fn ask<I: Serialize>(&self, task: Task, input: &I) -> Result<(Value, ModelInfo, String), CoreError> {
        let user = serde_json::to_string(input)
            .map_err(|e| CoreError::Reasoner(format!("{}: could not encode the prompt input: {e}", task.name())))?;
        let req = ChatRequest {
            model: self.model.clone(),
            system: task.system_prompt().to_string(),
            user,
            max_tokens: self.max_tokens,
            temperature: 0.0,
            json: true,
        };
        let resp: ChatResponse = self.chat.chat(&req).await.map_err(|e| {
            let c = self.chat.configured();
            CoreError::Reasoner(format!(
                "{} call to {} model {:?} failed: {e}",
                task.name(),
                c.client.as_str(),
                c.model
            ))
        })?;
        let info = ModelInfo { client: resp.client, model: resp.model.clone() };
        if resp.model.trim().is_empty() {
            return Err(CoreError::Reasoner(format!(
                "{} answer from {} client carries no model string; an answer without provenance is refused",
                task.name(),
                resp.client.as_str()
            )));
        }
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(info.clone());
        let value = validate::parse_json(&resp.content).map_err(|p| invalid(task, &info, &p, &resp.content))?;
        Ok((value, info, resp.content))
    }
}

/// The error for an invalid answer: task, who answered, what was wrong, and the answer's start.
fn invalid(task: Task, info: &ModelInfo, problem: &str, content: &str) -> CoreError {
    let mut head: String = content.chars().take(200).collect();
    if head.len() < content.len() {
        head.push('…');
    }
    CoreError::Reasoner(format!(
        "{} answer from {} model {:?} is invalid: {problem}; answer: {head:?}",
        task.name(),
        info.client.as_str(),
        info.model
    ))
}

fn candidate_view(c: &Candidate) -> MemoryView {
    MemoryView {
        id: None,
        kind: c.kind,
        content: c.content.clone(),
        claim: c.claim.as_ref().map(ClaimView::from),
        confirmed_at: None,
    }
}

#[async_trait]
impl Reasoner for LlmReasoner {
    async fn extract(&self, turn: &Turn) -> mnemo_core::Result<Extraction> {
        let task = Task::Extract;
        let (v, info, raw) = self.ask(task, &ExtractInput::of(turn)).await?;
        let items = validate::extraction(&v).map_err(|p| invalid(task, &info, &p, &raw))?;
        Ok(Extraction { items, model: info })
    }

    async fn reconcile(&self, candidate: &Candidate, neighbours: &[Memory]) -> mnemo_core::Result<Verdict> {
        let task = Task::Reconcile;
        if neighbours.is_empty() {
            // Nothing to relate to: novel without a call (no spend; `model_info` is unchanged).
            return Ok(Verdict::Novel);
        }
        let input = ReconcileInput {
            candidate: candidate_view(candidate),
            neighbours: neighbours.iter().map(MemoryView::from).collect(),
        };
        let (v, info, raw) = self.ask(task, &input).await?;
        let ids: Vec<MemoryId> = neighbours.iter().map(|m| m.id).collect();
        validate::verdict(&v, &ids).map_err(|p| invalid(task, &info, &p, &raw))
    }

    async fn resolve_forget(&self, command: &str, candidates: &[Memory]) -> mnemo_core::Result<Vec<MemoryId>> {
        let task = Task::ResolveForget;
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let input = ResolveForgetInput {
            command: command.to_string(),
            candidates: candidates.iter().map(MemoryView::from).collect(),
        };
        let (v, info, raw) = self.ask(task, &input).await?;
        let ids: Vec<MemoryId> = candidates.iter().map(|m| m.id).collect();
        validate::forget_ids(&v, &ids).map_err(|p| invalid(task, &info, &p, &raw))
    }

    /// Who answered the last call; before any call, who is configured to answer.
    fn model_info(&self) -> ModelInfo {
        let last = self.last.lock().unwrap_or_else(PoisonError::into_inner).clone();
        last.unwrap_or_else(|| self.chat.configured())
    }
}
