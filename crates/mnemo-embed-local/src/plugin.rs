//! Registration: `[embedder] kind = "local"` and `[embedder] kind = "static"`.
use std::sync::Arc;

use mnemo_contract::registry::EmbedderContext;
use mnemo_contract::CoreError;
use mnemo_contract::Embedder;
use serde::Deserialize;

use crate::embedder::{LocalEmbedder, LocalSettings, LongTexts, DEFAULT_BATCH_SIZE, DEFAULT_MAX_TOKENS};
use crate::static_embedder::StaticEmbedder;

/// Settings of `[embedder] kind = "local"`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Settings {
    /// Catalogue name.
    #[serde(default = "default_model")]
    model: String,
    /// Model directory (absolute, or relative to the working directory); default: the models
    /// directory's `<model>`.
    dir: Option<String>,
    #[serde(default = "default_batch")]
    batch_size: i64,
    #[serde(default = "default_max_tokens")]
    max_tokens: i64,
    /// A text longer than `max_tokens`: "windows" (every piece read) or "truncate".
    #[serde(default = "default_long_texts")]
    long_texts: String,
}

fn default_long_texts() -> String {
    "truncate".to_string()
}

fn default_model() -> String {
    mnemo_models::MINILM.name.to_string()
}
fn default_batch() -> i64 {
    DEFAULT_BATCH_SIZE as i64
}
fn default_max_tokens() -> i64 {
    DEFAULT_MAX_TOKENS as i64
}

/// The model directory: `dir` as the config gives it (relative to the config file), else the
/// models directory's own for the model (`in_root`).
fn model_dir(
    ctx: &EmbedderContext<'_>,
    dir: Option<String>,
    in_root: impl FnOnce(&std::path::Path) -> std::path::PathBuf,
) -> mnemo_contract::Result<std::path::PathBuf> {
    match dir.filter(|d| !d.trim().is_empty()) {
        Some(d) => ctx.config_path(&d),
        None => {
            Ok(in_root(&mnemo_models::models_root().map_err(|e| CoreError::Config(format!("{}: {e}", ctx.origin)))?))
        }
    }
}

fn build_local_embedder(ctx: &EmbedderContext<'_>) -> mnemo_contract::Result<Arc<dyn Embedder>> {
    let s: Settings = ctx.settings()?;
    let origin = ctx.origin;
    let spec = mnemo_models::find(&s.model).ok_or_else(|| {
        CoreError::Config(format!(
            "{origin}: model = {:?} is not a known local model; known: {}",
            s.model,
            mnemo_models::CATALOGUE.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
        ))
    })?;
    let dir = model_dir(ctx, s.dir, |root| mnemo_models::model_dir(spec, root))?;
    let batch_size = usize::try_from(s.batch_size)
        .map_err(|_| CoreError::Config(format!("{origin}: batch_size = {} must be positive", s.batch_size)))?;
    let max_tokens = usize::try_from(s.max_tokens)
        .map_err(|_| CoreError::Config(format!("{origin}: max_tokens = {} must be positive", s.max_tokens)))?;
    let long_texts = LongTexts::parse(&s.long_texts).ok_or_else(|| {
        CoreError::Config(format!(
            "{origin}: long_texts = {:?} is not known; it takes \"windows\" (a long text is embedded in windows of max_tokens pieces, every piece read) or \"truncate\" (only its first max_tokens pieces)",
            s.long_texts
        ))
    })?;
    let settings = LocalSettings { batch_size, max_tokens, long_texts, ..LocalSettings::of(spec, dir) };
    let e = LocalEmbedder::load(&settings).map_err(|e| CoreError::Config(format!("{origin}: {}", e.chain())))?;
    Ok(Arc::new(e))
}

mnemo_contract::register_embedder!(
    "local",
    "sentence-transformers model on the CPU (candle; all-MiniLM-L6-v2, 384 dims); offline, files from `mnemo models fetch minilm`",
    build_local_embedder
);

/// Settings of `[embedder] kind = "static"`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StaticSettings {
    /// Distilled-model name.
    #[serde(default = "default_static_model")]
    model: String,
    /// Model directory (absolute, or relative to the config file); default: the models
    /// directory's `<model>`.
    dir: Option<String>,
}

fn default_static_model() -> String {
    mnemo_models::MINILM_STATIC.name.to_string()
}

fn build_static_embedder(ctx: &EmbedderContext<'_>) -> mnemo_contract::Result<Arc<dyn Embedder>> {
    let s: StaticSettings = ctx.settings()?;
    let origin = ctx.origin;
    let spec = mnemo_models::find_distilled(&s.model).ok_or_else(|| {
        CoreError::Config(format!(
            "{origin}: model = {:?} is not a known static model; known: {}",
            s.model,
            mnemo_models::DISTILLED.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
        ))
    })?;
    let dir = model_dir(ctx, s.dir, |root| mnemo_models::distilled_dir(spec, root))?;
    let e = StaticEmbedder::load(spec.name, &dir).map_err(|e| CoreError::Config(format!("{origin}: {}", e.chain())))?;
    Ok(Arc::new(e))
}

mnemo_contract::register_embedder!(
    "static",
    "static word-piece vectors distilled from all-MiniLM-L6-v2 (256 dims; no forward pass, microseconds a text); offline, made by `mnemo models fetch minilm-static` (or `minilm-static-wordnet`, fitted to a corpus)",
    build_static_embedder
);
