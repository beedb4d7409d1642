//! The live client: chat completions and embeddings over the OpenAI-compatible HTTP API
//! (DashScope's compatible mode for Qwen, OpenAI, vLLM, Ollama, llama.cpp's server).
//!
//! Requests are plain OpenAI shapes: `POST {base}/chat/completions` with `model`, `messages`
//! (system, user; plus the refused answer and a correction request on the one repair attempt),
//! `max_tokens`, `temperature` and, when asked and enabled, `response_format = json_object`;
//! `POST {base}/embeddings` with `model`, `input` and `dimensions`. The model string of every
//! answer is the one the response echoes.
pub mod http;

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use mnemo_contract::{ClientKind, ModelInfo};
use serde_json::{json, Value};

use crate::chat::{ChatModel, ChatRequest, ChatResponse, EmbedModel, EmbedRequest, EmbedResponse};
use crate::error::LlmError;
pub use http::{Resilience, Transport};

/// Chat completions over a [`Transport`].
#[derive(Debug)]
pub struct LiveChat {
    transport: Arc<Transport>,
    /// Send `response_format = json_object` for JSON requests (off for servers without it).
    json_mode: bool,
    /// The model configured for display before any answer.
    configured_model: String,
}

impl LiveChat {
    /// A chat client.
    pub fn new(transport: Arc<Transport>, json_mode: bool, configured_model: &str) -> Self {
        LiveChat { transport, json_mode, configured_model: configured_model.to_string() }
    }

    /// The request body for `req` (also what a cassette hashes, minus nothing secret: the key
    /// is a header, never part of the body).
    pub fn body(req: &ChatRequest, json_mode: bool) -> Value {
        let mut messages =
            vec![json!({"role": "system", "content": req.system}), json!({"role": "user", "content": req.user})];
        if let Some(r) = &req.repair {
            messages.push(json!({"role": "assistant", "content": r.previous}));
            messages.push(json!({"role": "user", "content": r.message()}));
        }
        let mut body = json!({
            "model": req.model,
            "messages": messages,
            "max_tokens": req.max_tokens,
            "temperature": req.temperature,
        });
        if req.json && json_mode {
            body["response_format"] = json!({"type": "json_object"});
        }
        body
    }
}

fn shape(endpoint: String, model: &str, detail: &str) -> LlmError {
    LlmError::Shape { endpoint, model: model.to_string(), detail: detail.to_string() }
}

fn usage_of(body: &Value) -> (Option<u32>, Option<u32>) {
    let u = &body["usage"];
    let n = |k: &str| u.get(k).and_then(Value::as_u64).map(|x| x.min(u32::MAX as u64) as u32);
    (n("prompt_tokens"), n("completion_tokens"))
}

#[async_trait]
impl ChatModel for LiveChat {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let endpoint = format!("{}/chat/completions", self.transport.base_url());
        let started = Instant::now();
        let answer = self.transport.post("/chat/completions", &req.model, &Self::body(req, self.json_mode)).await?;
        let body = answer.body;
        let content = body["choices"][0]["message"]["content"]
            .as_str()
            .ok_or_else(|| shape(endpoint.clone(), &req.model, "no choices[0].message.content string"))?
            .to_string();
        let model = body["model"]
            .as_str()
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| shape(endpoint.clone(), &req.model, "the answer echoes no model string"))?
            .to_string();
        let (p, c) = usage_of(&body);
        tracing::info!(
            kind = "chat", asked = %req.model, model = %model, attempts = answer.attempts,
            prompt_tokens = p.unwrap_or(0), completion_tokens = c.unwrap_or(0),
            latency_ms = started.elapsed().as_millis() as u64, "model call"
        );
        Ok(ChatResponse { content, model, client: ClientKind::Live, usage: p.zip(c) })
    }

    fn configured(&self) -> ModelInfo {
        ModelInfo { client: ClientKind::Live, model: self.configured_model.clone() }
    }
}

/// Embeddings over a [`Transport`], in batches.
#[derive(Debug)]
pub struct LiveEmbed {
    transport: Arc<Transport>,
    /// Texts per request (DashScope's text-embedding-v4 takes at most 10).
    batch: usize,
}

impl LiveEmbed {
    /// An embeddings client sending at most `batch` texts per request.
    pub fn new(transport: Arc<Transport>, batch: usize) -> Self {
        LiveEmbed { transport, batch: batch.max(1) }
    }
}

#[async_trait]
impl EmbedModel for LiveEmbed {
    async fn embed(&self, req: &EmbedRequest) -> Result<EmbedResponse, LlmError> {
        let endpoint = format!("{}/embeddings", self.transport.base_url());
        let mut vectors = Vec::with_capacity(req.texts.len());
        let mut echoed = String::new();
        let mut tokens: Option<u32> = None;
        for chunk in req.texts.chunks(self.batch) {
            let started = Instant::now();
            let body = json!({"model": req.model, "input": chunk, "dimensions": req.dims, "encoding_format": "float"});
            let answer = self.transport.post("/embeddings", &req.model, &body).await?;
            let data =
                answer.body["data"].as_array().ok_or_else(|| shape(endpoint.clone(), &req.model, "no data array"))?;
            if data.len() != chunk.len() {
                return Err(shape(
                    endpoint,
                    &req.model,
                    &format!("asked for {} vectors, got {}", chunk.len(), data.len()),
                ));
            }
            let mut got: Vec<(usize, Vec<f32>)> = Vec::with_capacity(data.len());
            for (i, d) in data.iter().enumerate() {
                let index = d["index"].as_u64().map(|x| x as usize).unwrap_or(i);
                let v: Vec<f32> = d["embedding"]
                    .as_array()
                    .ok_or_else(|| {
                        shape(endpoint.clone(), &req.model, &format!("data[{i}].embedding is not an array"))
                    })?
                    .iter()
                    .map(|x| x.as_f64().map(|f| f as f32))
                    .collect::<Option<_>>()
                    .ok_or_else(|| {
                        shape(endpoint.clone(), &req.model, &format!("data[{i}].embedding holds a non-number"))
                    })?;
                if v.len() != req.dims {
                    return Err(shape(
                        endpoint,
                        &req.model,
                        &format!("data[{i}].embedding has {} dimensions; {} are configured", v.len(), req.dims),
                    ));
                }
                got.push((index, unit(v)));
            }
            got.sort_by_key(|(i, _)| *i);
            vectors.extend(got.into_iter().map(|(_, v)| v));
            if let Some(m) = answer.body["model"].as_str() {
                echoed = m.to_string();
            }
            let (p, _) = usage_of(&answer.body);
            if let Some(p) = p {
                tokens = Some(tokens.unwrap_or(0).saturating_add(p));
            }
            tracing::info!(
                kind = "embed", asked = %req.model, model = %echoed, attempts = answer.attempts, texts = chunk.len(),
                prompt_tokens = p.unwrap_or(0), latency_ms = started.elapsed().as_millis() as u64, "model call"
            );
        }
        if echoed.trim().is_empty() && !req.texts.is_empty() {
            return Err(shape(endpoint, &req.model, "the answer echoes no model string"));
        }
        Ok(EmbedResponse { vectors, model: echoed, client: ClientKind::Live, prompt_tokens: tokens })
    }
}

/// Scale to unit length (a zero vector stays zero).
fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let n: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}
