//! `StaticEmbedder`: the `Embedder` over a shared [`StaticModel`].
use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use mnemo_contract::{Embedder, Result};

use crate::error::LocalEmbedError;
use crate::static_model::{StaticManifest, StaticModel};

/// A static embedding model (word-piece vectors, mean pooled, unit vectors): no forward pass.
pub struct StaticEmbedder {
    model: Arc<StaticModel>,
}

impl StaticEmbedder {
    /// Load (or reuse, if this process loaded it already) the static model in `dir`; `name` is
    /// its catalogue name, for the "fetch it" hint.
    pub fn load(name: &str, dir: &Path) -> std::result::Result<Self, LocalEmbedError> {
        Ok(StaticEmbedder { model: StaticModel::shared(name, dir)? })
    }

    /// What the model is and how it was made.
    pub fn manifest(&self) -> &StaticManifest {
        &self.model.manifest
    }

    /// Embed texts now (synchronous: microseconds a text).
    pub fn embed_now(&self, texts: &[String]) -> std::result::Result<Vec<Vec<f32>>, LocalEmbedError> {
        self.model.embed(texts)
    }
}

#[async_trait]
impl Embedder for StaticEmbedder {
    fn model_id(&self) -> &str {
        &self.model.manifest.model_id
    }
    fn dims(&self) -> usize {
        self.model.dims()
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(self.embed_now(texts)?)
    }
}
