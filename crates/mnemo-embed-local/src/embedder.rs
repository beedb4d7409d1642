//! `LocalEmbedder`: the `Embedder` over a shared [`SentenceModel`].
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use mnemo_contract::{Embedder, Result};

use crate::error::LocalEmbedError;
use crate::model::SentenceModel;

/// Texts per forward pass by default.
pub const DEFAULT_BATCH_SIZE: usize = 32;
/// Word pieces kept per text by default (what sentence-transformers uses for MiniLM).
pub const DEFAULT_MAX_TOKENS: usize = 256;

/// What to load and how to run it.
#[derive(Clone, Debug)]
pub struct LocalSettings {
    /// The catalogue name (for the model id and the "fetch it" hint).
    pub name: String,
    /// The model id stored with every vector.
    pub model_id: String,
    /// The directory holding config.json, tokenizer.json and model.safetensors.
    pub dir: PathBuf,
    /// Texts per forward pass (1..=1024).
    pub batch_size: usize,
    /// Word pieces kept per text, [CLS] and [SEP] included.
    pub max_tokens: usize,
}

impl LocalSettings {
    /// The catalogue model `spec` in `dir`, default batch size and length.
    pub fn of(spec: &mnemo_models::ModelSpec, dir: PathBuf) -> Self {
        LocalSettings {
            name: spec.name.to_string(),
            model_id: spec.model_id.to_string(),
            dir,
            batch_size: DEFAULT_BATCH_SIZE,
            max_tokens: DEFAULT_MAX_TOKENS,
        }
    }
}

/// Token ids of each text, and each text's vector.
pub(crate) type PiecesAndVectors = (Vec<Vec<u32>>, Vec<Vec<f32>>);

/// A sentence-transformers BERT model on the CPU: mean pooling, unit vectors.
pub struct LocalEmbedder {
    model: Arc<SentenceModel>,
    model_id: String,
    batch_size: usize,
}

impl LocalEmbedder {
    /// Load (or reuse, if this process loaded it already) the model of `settings`.
    pub fn load(settings: &LocalSettings) -> std::result::Result<Self, LocalEmbedError> {
        if !(1..=1024).contains(&settings.batch_size) {
            return Err(LocalEmbedError::Setting(format!(
                "batch_size = {} is out of range; it takes 1..=1024",
                settings.batch_size
            )));
        }
        let model = SentenceModel::shared(&settings.name, &settings.dir, settings.max_tokens)?;
        Ok(LocalEmbedder { model, model_id: settings.model_id.clone(), batch_size: settings.batch_size })
    }

    /// Each text's token ids ([CLS] … [SEP], truncated).
    pub(crate) fn pieces(&self, texts: &[String]) -> std::result::Result<Vec<Vec<u32>>, LocalEmbedError> {
        self.model.tokenize(texts)
    }

    /// Each text's token ids ([CLS] … [SEP], truncated) and its vector.
    pub(crate) fn pieces_and_vectors(
        &self,
        texts: &[String],
    ) -> std::result::Result<PiecesAndVectors, LocalEmbedError> {
        let seqs = self.model.tokenize(texts)?;
        let vectors = self.embed_tokens(&seqs)?;
        Ok((seqs, vectors))
    }

    fn embed_now(&self, texts: &[String]) -> std::result::Result<Vec<Vec<f32>>, LocalEmbedError> {
        self.embed_tokens(&self.model.tokenize(texts)?)
    }

    fn embed_tokens(&self, seqs: &[Vec<u32>]) -> std::result::Result<Vec<Vec<f32>>, LocalEmbedError> {
        // Batch texts of equal token length only: no padding, so a text's vector does not
        // depend on what it was batched with.
        let mut by_len: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, s) in seqs.iter().enumerate() {
            by_len.entry(s.len()).or_default().push(i);
        }
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); seqs.len()];
        for idx in by_len.values() {
            for chunk in idx.chunks(self.batch_size) {
                let batch: Vec<&[u32]> = chunk.iter().map(|i| seqs[*i].as_slice()).collect();
                for (i, v) in chunk.iter().zip(self.model.embed_same_length(&batch)?) {
                    out[*i] = v;
                }
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl Embedder for LocalEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }
    fn dims(&self) -> usize {
        self.model.dims
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(self.embed_now(texts)?)
    }
}
