//! The live client: chat completions and embeddings over the OpenAI-compatible HTTP API
//! (DashScope's compatible mode for Qwen, OpenAI, vLLM, Ollama, llama.cpp's server).
//!
//! Requests are plain OpenAI shapes: `POST {base}/chat/completions` with `model`, `messages`
//! (system, user; plus the refused answer and a correction request on the one repair attempt),
//! `max_tokens`, `temperature` and, exactly when the request's `json` is true,
//! `response_format = json_object` (so a cassette's recorded request says what was sent);
//! `POST {base}/embeddings` with `model`, `input` and `dimensions`. The model string of every
//! answer is the one the response echoes.
//!
//! A chat call's timeout is its tier's: an extraction (known by its prompt's task marker) gets
//! the extraction tier's, every other call the reasoning tier's (a CPU model may take minutes
//! over a long extraction and far less over a reconcile).
pub mod http;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mnemo_contract::{ClientKind, ModelInfo};
use serde_json::{json, Value};

use crate::chat::{ChatModel, ChatRequest, ChatResponse, EmbedModel, EmbedRequest, EmbedResponse};
use crate::error::LlmError;
use crate::prompts::Task;
use crate::validate::type_name;
pub use http::{Resilience, Transport};

/// Per-attempt timeouts of the two chat tiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TierTimeouts {
    /// Extraction calls (the `extract` task).
    pub extraction: Duration,
    /// Every other call (reconcile, forget resolution, anything unmarked).
    pub reasoning: Duration,
}

impl TierTimeouts {
    /// Both tiers on one timeout.
    pub fn same(t: Duration) -> Self {
        TierTimeouts { extraction: t, reasoning: t }
    }

    /// The timeout of `req`, by its system prompt's task marker.
    pub fn of(&self, req: &ChatRequest) -> Duration {
        match Task::of_system_prompt(&req.system) {
            Some(Task::Extract) => self.extraction,
            _ => self.reasoning,
        }
    }
}

/// Chat completions over a [`Transport`].
#[derive(Debug)]
pub struct LiveChat {
    transport: Arc<Transport>,
    /// The model configured for display before any answer.
    configured_model: String,
    timeouts: TierTimeouts,
}

impl LiveChat {
    /// A chat client; both tiers on the transport's request timeout until
    /// [`LiveChat::with_timeouts`] says otherwise.
    pub fn new(transport: Arc<Transport>, configured_model: &str) -> Self {
        let timeouts = TierTimeouts::same(transport.request_timeout());
        LiveChat { transport, configured_model: configured_model.to_string(), timeouts }
    }

    /// Per-tier timeouts.
    pub fn with_timeouts(mut self, timeouts: TierTimeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// The request body for `req` (the key is a header, never part of the body).
    /// `response_format` is sent exactly when `req.json` is true: JSON mode is a field of the
    /// request (set from `[llm] json_mode`), so what a cassette records is what was sent.
    pub fn body(req: &ChatRequest) -> Value {
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
        if req.json {
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
        let timeout = self.timeouts.of(req);
        let answer = self.transport.post_within("/chat/completions", &req.model, &Self::body(req), timeout).await?;
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
                let v = vector_of(&d["embedding"], i).map_err(|detail| shape(endpoint.clone(), &req.model, &detail))?;
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

/// `data[i].embedding` as numbers, or what is wrong with it. An array of arrays is the answer
/// of a server that does not pool (llama.cpp with pooling none returns one vector per token),
/// which no dimension count would explain, so the message says so and how to fix it.
fn vector_of(embedding: &Value, i: usize) -> Result<Vec<f32>, String> {
    let items = embedding
        .as_array()
        .ok_or_else(|| format!("data[{i}].embedding is {}, not an array of numbers", type_name(embedding)))?;
    if items.first().is_some_and(Value::is_array) {
        let lens: Vec<usize> = items.iter().map(|x| x.as_array().map_or(0, Vec::len)).collect();
        let (lo, hi) = (lens.iter().min().copied().unwrap_or(0), lens.iter().max().copied().unwrap_or(0));
        let numbers = if lo == hi { format!("{lo}") } else { format!("{lo} to {hi}") };
        return Err(format!(
            "data[{i}].embedding is {} vectors of {numbers} numbers (one per token): the server does not pool; \
             start llama.cpp's server with `--pooling mean` (llama-server) or \
             `--kv_overrides <arch>.pooling_type=int:1` (llama-cpp-python's server; e.g. qwen2.pooling_type)",
            items.len()
        ));
    }
    items
        .iter()
        .enumerate()
        .map(|(j, x)| {
            x.as_f64()
                .map(|f| f as f32)
                .ok_or_else(|| format!("data[{i}].embedding[{j}] is {}, not a number", type_name(x)))
        })
        .collect()
}

/// Scale to unit length (a zero vector stays zero).
fn unit(mut v: Vec<f32>) -> Vec<f32> {
    let n: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_number_in_an_embedding_is_named_by_its_index() {
        let e = vector_of(&json!([0.5, 1.0, "x"]), 4).unwrap_err();
        assert_eq!(e, "data[4].embedding[2] is a string, not a number");
        let e = vector_of(&json!({"values": []}), 0).unwrap_err();
        assert!(e.contains("data[0].embedding is an object"), "{e}");
        assert_eq!(vector_of(&json!([0.5, -1]), 0).unwrap(), vec![0.5, -1.0]);
    }

    #[test]
    fn unpooled_vectors_of_uneven_length_are_counted() {
        let e = vector_of(&json!([[0.1, 0.2], [0.3, 0.4, 0.5]]), 1).unwrap_err();
        assert!(e.starts_with("data[1].embedding is 2 vectors of 2 to 3 numbers (one per token)"), "{e}");
    }

    #[test]
    fn the_tier_of_a_request_is_its_task_marker() {
        let t = TierTimeouts { extraction: Duration::from_secs(9), reasoning: Duration::from_secs(2) };
        let req = |system: &str| ChatRequest {
            model: "m".into(),
            system: system.into(),
            user: String::new(),
            max_tokens: 1,
            temperature: 0.0,
            json: false,
            repair: None,
        };
        assert_eq!(t.of(&req(Task::Extract.system_prompt())), Duration::from_secs(9));
        assert_eq!(t.of(&req(Task::Reconcile.system_prompt())), Duration::from_secs(2));
        assert_eq!(t.of(&req(Task::ResolveForget.system_prompt())), Duration::from_secs(2));
        assert_eq!(t.of(&req("You are a helpful assistant.")), Duration::from_secs(2), "unmarked: reasoning");
    }

    #[test]
    fn response_format_is_sent_exactly_when_the_request_asks_for_json() {
        let mut r = ChatRequest {
            model: "m".into(),
            system: "s".into(),
            user: "u".into(),
            max_tokens: 1,
            temperature: 0.0,
            json: true,
            repair: None,
        };
        assert_eq!(LiveChat::body(&r)["response_format"]["type"], "json_object");
        r.json = false;
        assert!(LiveChat::body(&r).get("response_format").is_none());
    }
}
