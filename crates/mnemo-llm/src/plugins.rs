//! Registrations with mnemo-contract's plugin registry:
//! - `[embedder] kind = "fake"`, settings `dims = 256` (8..=4096);
//! - `[reasoner] kind = "llm"` and `[embedder] kind = "llm"`: built from the shared `[llm]`
//!   section (the context's `llm`, beside the component's own section) through the seam
//!   (`crate::seam`): fake,
//!   live, record or replay. Asking for live and not getting it is an error, never a silent
//!   fallback to the fake.
use std::sync::Arc;

use mnemo_contract::registry::{EmbedderContext, ReasonerContext, Section};
use mnemo_contract::{CoreError, Embedder, Reasoner};
use serde::Deserialize;

use crate::fake::{FakeQwen, DEFAULT_DIMS, MAX_DIMS, MIN_DIMS};
use crate::seam::{resolve_from_process, LlmSettings, Seam};

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

fn build_fake_embedder(ctx: &EmbedderContext<'_>) -> mnemo_contract::Result<Arc<dyn Embedder>> {
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

/// The model clients `[llm] client` can name.
pub const KNOWN_CLIENTS: &[&str] = &["fake", "live", "record", "replay"];

/// Settings of the LLM reasoner and the `llm` embedder: none of their own. The seam is the
/// shared `[llm]` section (configured in one place, not per component), which the context
/// carries beside this section.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LlmComponentSettings {
    /// The `[llm]` section used to be passed in here as a key; kept only to say where it is.
    #[serde(default)]
    llm: Option<toml::Value>,
    /// Where the client used to be named; kept only to say where it went.
    #[serde(default)]
    client: Option<toml::Value>,
    /// Idem for the model.
    #[serde(default)]
    model: Option<toml::Value>,
}

/// The seam of the shared `[llm]` section `llm`, for the component of section `ctx`.
fn seam_of(ctx: &Section<'_>, llm: Option<&toml::Table>) -> mnemo_contract::Result<Seam> {
    let s: LlmComponentSettings = ctx.settings()?;
    let origin = ctx.origin;
    if s.llm.is_some() {
        return Err(CoreError::Config(format!(
            "{origin}: `llm` is not a key of this section; the model client is set in the [llm] section now, a \
             section of its own"
        )));
    }
    if s.client.is_some() || s.model.is_some() {
        return Err(CoreError::Config(format!(
            "{origin}: `client` and `model` are set in the [llm] section now (client = fake | live | record | replay; \
             extraction_model, reasoning_model, embedding_model), not in this section"
        )));
    }
    let table = llm.ok_or_else(|| {
        CoreError::Config(format!(
            "{origin}: no [llm] section was passed to this component; the model client is never implied"
        ))
    })?;
    let settings = LlmSettings::from_table(table).map_err(|e| CoreError::Config(format!("{origin}: {e}")))?;
    resolve_from_process(settings).map_err(|e| CoreError::Config(format!("{origin}: {e}")))
}

fn build_llm_reasoner(ctx: &ReasonerContext<'_>) -> mnemo_contract::Result<Arc<dyn Reasoner>> {
    let seam = seam_of(ctx, ctx.llm)?;
    let r = seam.reasoner().map_err(|e| CoreError::Config(format!("{}: {e}", ctx.origin)))?;
    Ok(Arc::new(r))
}

fn build_llm_embedder(ctx: &EmbedderContext<'_>) -> mnemo_contract::Result<Arc<dyn Embedder>> {
    let seam = seam_of(ctx, ctx.llm)?;
    let e = seam.embedder().map_err(|e| CoreError::Config(format!("{}: {e}", ctx.origin)))?;
    Ok(Arc::new(e))
}

mnemo_contract::register_embedder!(
    "fake",
    "deterministic hashed bag-of-words embeddings (offline; proves plumbing, not model quality)",
    build_fake_embedder
);

mnemo_contract::register_reasoner!(
    "llm",
    "extract / reconcile / resolve-forget by a chat model ([llm] client: fake | live | record | replay)",
    build_llm_reasoner
);

mnemo_contract::register_embedder!(
    "llm",
    "embeddings from the [llm] client (live/record/replay: embedding_model at embedding_dims; fake: hashed bag of words)",
    build_llm_embedder
);
