//! Registrations with mnemo-core's plugin registry:
//! - `[embedder] kind = "fake"`, settings `dims = 256` (8..=4096);
//! - `[reasoner] kind = "llm"`, settings `client = "fake"` (required) and `model = "qwen-plus"`
//!   (the model asked for; the answer says who really answered).
//!
//! Only the fake client is built in this version. Asking for `live` or `replay` is a config
//! error, never a silent fallback to the fake.
use std::sync::Arc;

use mnemo_core::registry::{EmbedderContext, ReasonerContext};
use mnemo_core::{CoreError, Embedder, Reasoner};
use serde::Deserialize;

use crate::fake::{FakeQwen, DEFAULT_DIMS, MAX_DIMS, MIN_DIMS};
use crate::reasoner::{LlmReasoner, DEFAULT_MODEL};

/// Settings of the fake embedder.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FakeEmbedderSettings {
    #[serde(default = "default_dims")]
    dims: i64,
}

fn default_dims() -> i64 {
    DEFAULT_DIMS as i64
}

fn build_fake_embedder(ctx: &EmbedderContext<'_>) -> mnemo_core::Result<Arc<dyn Embedder>> {
    let s: FakeEmbedderSettings = ctx.settings()?;
    let dims = usize::try_from(s.dims).ok().filter(|d| (MIN_DIMS..=MAX_DIMS).contains(d)).ok_or_else(|| {
        CoreError::Config(format!(
            "{}: dims = {} is out of range; the fake embedder takes {MIN_DIMS}..={MAX_DIMS}",
            ctx.origin, s.dims
        ))
    })?;
    let fake = FakeQwen::new(dims).map_err(|e| CoreError::Config(format!("{}: {e}", ctx.origin)))?;
    Ok(Arc::new(fake))
}

/// The chat clients a reasoner can ask for, built or not.
pub const KNOWN_CLIENTS: &[&str] = &["fake", "live", "replay"];

/// Settings of the LLM reasoner.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LlmReasonerSettings {
    /// Required: which client answers is never implied.
    client: String,
    #[serde(default = "default_model")]
    model: String,
}

fn default_model() -> String {
    DEFAULT_MODEL.to_string()
}

fn build_llm_reasoner(ctx: &ReasonerContext<'_>) -> mnemo_core::Result<Arc<dyn Reasoner>> {
    let s: LlmReasonerSettings = ctx.settings()?;
    let origin = ctx.origin;
    if s.model.trim().is_empty() {
        return Err(CoreError::Config(format!("{origin}: model must not be empty")));
    }
    let chat = match s.client.as_str() {
        "fake" => Arc::new(FakeQwen::default()),
        "live" => {
            return Err(CoreError::Config(format!(
                "{origin}: client = \"live\": the live Qwen client is not built in this version of mnemo-llm. \
                 Asking for live and not getting it is an error, never a silent fallback to the fake; \
                 use client = \"fake\" for offline runs"
            )))
        }
        "replay" => {
            return Err(CoreError::Config(format!(
                "{origin}: client = \"replay\": cassette record/replay is not built in this version of mnemo-llm. \
                 Asking for a cassette and not getting it is an error, never a silent fallback to the fake; \
                 use client = \"fake\" for offline runs"
            )))
        }
        other => {
            return Err(CoreError::Config(format!(
                "{origin}: unknown client {other:?}; known clients: {} (only \"fake\" is built in this version)",
                KNOWN_CLIENTS.join(", ")
            )))
        }
    };
    Ok(Arc::new(LlmReasoner::new(chat).with_model(s.model)))
}

mnemo_core::register_embedder!(
    "fake",
    "deterministic hashed bag-of-words embeddings (offline; proves plumbing, not model quality)",
    build_fake_embedder
);

mnemo_core::register_reasoner!(
    "llm",
    "extract / reconcile / resolve-forget by a chat model (client: fake; live and replay not built yet)",
    build_llm_reasoner
);
