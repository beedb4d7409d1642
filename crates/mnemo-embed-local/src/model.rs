//! The loaded model: tokenizer + BERT weights, and one forward pass over a batch of token
//! sequences of equal length.
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use candle_core::{DType, Device, Tensor, D};
use candle_nn::VarBuilder;
use tokenizers::{Tokenizer, TruncationParams};

use crate::bert::{Bert, BertConfig};
use crate::error::LocalEmbedError;
use crate::loaded::Loaded;

/// A sentence encoder held in memory.
pub(crate) struct SentenceModel {
    /// Truncates to the model's `max_tokens`.
    tokenizer: Tokenizer,
    /// Keeps every piece (for texts embedded in windows).
    whole: Tokenizer,
    bert: Bert,
    device: Device,
    /// Output dimensions (the config's hidden size).
    pub(crate) dims: usize,
}

/// Files a model directory must hold.
pub(crate) const FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The models loaded so far in this process, by (directory, max tokens): each is read once.
fn loaded() -> &'static Loaded<(PathBuf, usize), SentenceModel> {
    static LOADED: OnceLock<Loaded<(PathBuf, usize), SentenceModel>> = OnceLock::new();
    LOADED.get_or_init(Loaded::new)
}

/// How many models this process has loaded.
pub(crate) fn loaded_count() -> usize {
    loaded().len()
}

impl SentenceModel {
    /// The model in `dir`, loaded on first use in this process and shared after.
    pub(crate) fn shared(name: &str, dir: &Path, max_tokens: usize) -> Result<Arc<SentenceModel>, LocalEmbedError> {
        if let Some(missing) = FILES.iter().find(|f| !dir.join(f).is_file()) {
            return Err(LocalEmbedError::ModelMissing {
                name: name.to_string(),
                dir: dir.to_path_buf(),
                missing: missing.to_string(),
            });
        }
        let key = (std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()), max_tokens);
        loaded().get_or_load(key, || SentenceModel::load(dir, max_tokens))
    }

    fn load(dir: &Path, max_tokens: usize) -> Result<SentenceModel, LocalEmbedError> {
        let load_err = |file: PathBuf| {
            move |e: Box<dyn std::error::Error + Send + Sync>| LocalEmbedError::Load { file, source: e }
        };
        let config_path = dir.join("config.json");
        let text = std::fs::read_to_string(&config_path).map_err(|e| load_err(config_path.clone())(Box::new(e)))?;
        let config: BertConfig = serde_json::from_str(&text).map_err(|e| load_err(config_path.clone())(Box::new(e)))?;
        if max_tokens < 2 || max_tokens > config.max_position_embeddings {
            return Err(LocalEmbedError::Setting(format!(
                "max_tokens = {max_tokens} is out of range; this model takes 2..={}",
                config.max_position_embeddings
            )));
        }
        let tok_path = dir.join("tokenizer.json");
        let mut tokenizer = Tokenizer::from_file(&tok_path).map_err(load_err(tok_path.clone()))?;
        tokenizer.with_padding(None);
        let mut whole = tokenizer.clone();
        whole.with_truncation(None).map_err(load_err(tok_path.clone()))?;
        tokenizer
            .with_truncation(Some(TruncationParams { max_length: max_tokens, ..Default::default() }))
            .map_err(load_err(tok_path.clone()))?;
        let weights_path = dir.join("model.safetensors");
        let weights = std::fs::read(&weights_path).map_err(|e| load_err(weights_path.clone())(Box::new(e)))?;
        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|e| load_err(weights_path.clone())(Box::new(e)))?;
        let bert = Bert::load(vb, &config).map_err(|e| load_err(weights_path.clone())(Box::new(e)))?;
        Ok(SentenceModel { tokenizer, whole, bert, device, dims: config.hidden_size })
    }

    /// Token ids of each text (with [CLS] … [SEP], truncated).
    pub(crate) fn tokenize(&self, texts: &[String]) -> Result<Vec<Vec<u32>>, LocalEmbedError> {
        Self::encode(&self.tokenizer, texts)
    }

    /// Token ids of each text (with [CLS] … [SEP]), every piece kept.
    pub(crate) fn tokenize_whole(&self, texts: &[String]) -> Result<Vec<Vec<u32>>, LocalEmbedError> {
        Self::encode(&self.whole, texts)
    }

    fn encode(tokenizer: &Tokenizer, texts: &[String]) -> Result<Vec<Vec<u32>>, LocalEmbedError> {
        texts
            .iter()
            .map(|t| {
                tokenizer.encode(t.as_str(), true).map(|e| e.get_ids().to_vec()).map_err(LocalEmbedError::Tokenize)
            })
            .collect()
    }

    /// The id of a word piece of the vocabulary (`[CLS]`, `[SEP]` …).
    pub(crate) fn piece_id(&self, piece: &str) -> Option<u32> {
        self.tokenizer.token_to_id(piece)
    }

    /// The vocabulary: every word piece with its id.
    pub(crate) fn vocabulary(&self) -> Vec<(String, u32)> {
        let mut v: Vec<(String, u32)> = self.tokenizer.get_vocab(true).into_iter().collect();
        v.sort_by_key(|(_, id)| *id);
        v
    }

    /// Raw hidden states (not normalised) of sequences of one length: the mean over every
    /// position, or the state at position `at`.
    pub(crate) fn hidden_states(&self, seqs: &[&[u32]], at: Option<usize>) -> Result<Vec<Vec<f32>>, LocalEmbedError> {
        match self.pooled(seqs, at)? {
            Some(pooled) => Ok(pooled.to_dtype(DType::F32)?.to_vec2::<f32>()?),
            None => Ok(vec![]),
        }
    }

    /// The forward pass of sequences of one length, pooled (batch, hidden): the mean over every
    /// position (no padding, so every position is a real token), or the state at position
    /// `at`. None for no sequences.
    fn pooled(&self, seqs: &[&[u32]], at: Option<usize>) -> Result<Option<Tensor>, LocalEmbedError> {
        let Some(first) = seqs.first() else { return Ok(None) };
        let len = first.len();
        if len == 0 || seqs.iter().any(|s| s.len() != len) || at.is_some_and(|a| a >= len) {
            return Err(LocalEmbedError::Setting(
                "internal: a batch must hold sequences of one non-zero length".into(),
            ));
        }
        let flat: Vec<u32> = seqs.iter().flat_map(|s| s.iter().copied()).collect();
        let ids = Tensor::from_vec(flat, (seqs.len(), len), &self.device)?;
        let out = self.bert.forward(&ids)?; // (batch, len, hidden)
        Ok(Some(match at {
            Some(a) => out.narrow(1, a, 1)?.squeeze(1)?,
            None => (out.sum(1)? / len as f64)?,
        }))
    }

    /// Mean-pooled, L2-normalised vectors of sequences that all have the same length.
    pub(crate) fn embed_same_length(&self, seqs: &[&[u32]]) -> Result<Vec<Vec<f32>>, LocalEmbedError> {
        let Some(pooled) = self.pooled(seqs, None)? else { return Ok(vec![]) };
        let norms = pooled.sqr()?.sum_keepdim(D::Minus1)?.sqrt()?;
        let unit = pooled.broadcast_div(&norms.maximum(1e-12)?)?;
        Ok(unit.to_dtype(DType::F32)?.to_vec2::<f32>()?)
    }
}
