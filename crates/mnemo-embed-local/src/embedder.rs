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

/// What becomes of a text longer than `max_tokens` word pieces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LongTexts {
    /// Embedded in windows of at most `max_tokens` pieces, near-equal in length, each window's
    /// unit vector weighted by its piece count, the sum normalised: every piece counts. A text
    /// that fits one window gets the same vector as with `Truncate`. The model id gains
    /// `+win<max_tokens>`, so vectors made the other way are re-embedded for the index.
    /// Measured on LongMemEval's long turns, it retrieves no better than `Truncate`
    /// (bench/RESULTS.md), at the cost of a forward pass per window: not the default.
    Windows,
    /// Only the first `max_tokens` pieces are read (what sentence-transformers does; the rest
    /// of a long text reaches BM25 but not its vector). The default.
    Truncate,
}

impl LongTexts {
    /// The setting's name in a config (`long_texts = "windows"`).
    pub fn parse(name: &str) -> Option<LongTexts> {
        match name {
            "windows" => Some(LongTexts::Windows),
            "truncate" => Some(LongTexts::Truncate),
            _ => None,
        }
    }
}

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
    /// Word pieces per forward pass of a text, [CLS] and [SEP] included.
    pub max_tokens: usize,
    /// What becomes of a longer text.
    pub long_texts: LongTexts,
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
            long_texts: LongTexts::Truncate,
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
    max_tokens: usize,
    long_texts: LongTexts,
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
        let model_id = match settings.long_texts {
            LongTexts::Truncate => settings.model_id.clone(),
            LongTexts::Windows => format!("{}+win{}", settings.model_id, settings.max_tokens),
        };
        Ok(LocalEmbedder {
            model,
            model_id,
            batch_size: settings.batch_size,
            max_tokens: settings.max_tokens,
            long_texts: settings.long_texts,
        })
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
        if self.long_texts == LongTexts::Truncate {
            return self.embed_tokens(&self.model.tokenize(texts)?);
        }
        let per_text: Vec<Vec<Vec<u32>>> =
            self.model.tokenize_whole(texts)?.iter().map(|ids| windows(ids, self.max_tokens)).collect();
        let flat: Vec<Vec<u32>> = per_text.iter().flatten().cloned().collect();
        // One vector per window, in order: each text takes the next `ws.len()`.
        let mut vectors = self.embed_tokens(&flat)?;
        let mut out = Vec::with_capacity(texts.len());
        for ws in per_text.iter().rev() {
            let at = vectors.len().checked_sub(ws.len()).ok_or_else(|| {
                LocalEmbedError::Setting("internal: the model gave fewer vectors than windows".into())
            })?;
            let mine = vectors.split_off(at);
            out.push(combine(ws.iter().map(|w| w.len().saturating_sub(2)).zip(mine).collect()));
        }
        out.reverse();
        Ok(out)
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

/// A text's token ids ([CLS] … [SEP]) as windows of at most `max_tokens` ids, each with its
/// own [CLS] and [SEP], their contents near-equal in length (no short tail window). A text that
/// fits is its own one window.
fn windows(ids: &[u32], max_tokens: usize) -> Vec<Vec<u32>> {
    let (Some(first), Some(last)) = (ids.first(), ids.last()) else { return vec![ids.to_vec()] };
    if ids.len() <= max_tokens || ids.len() < 2 || max_tokens < 3 {
        return vec![ids.to_vec()];
    }
    let content = &ids[1..ids.len() - 1];
    let per = max_tokens - 2;
    let n = content.len().div_ceil(per);
    let (base, extra) = (content.len() / n, content.len() % n);
    let mut out = Vec::with_capacity(n);
    let mut at = 0;
    for i in 0..n {
        let len = base + usize::from(i < extra);
        let mut w = Vec::with_capacity(len + 2);
        w.push(*first);
        w.extend_from_slice(&content[at..at + len]);
        w.push(*last);
        out.push(w);
        at += len;
    }
    out
}

/// One unit vector from the windows' unit vectors, each weighted by its piece count. One
/// window's vector is returned as it is (bit for bit what truncation gives a short text).
fn combine(mut parts: Vec<(usize, Vec<f32>)>) -> Vec<f32> {
    if parts.len() == 1 {
        return parts.pop().map(|(_, v)| v).unwrap_or_default();
    }
    let dims = parts.first().map_or(0, |(_, v)| v.len());
    let mut sum = vec![0f64; dims];
    for (n, v) in &parts {
        for (s, x) in sum.iter_mut().zip(v) {
            *s += *n as f64 * f64::from(*x);
        }
    }
    let norm = sum.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
    sum.iter().map(|x| (x / norm) as f32).collect()
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_text_that_fits_is_one_window() {
        assert_eq!(windows(&[101, 7, 8, 102], 256), vec![vec![101, 7, 8, 102]]);
        assert_eq!(windows(&[101, 7, 8, 102], 4), vec![vec![101, 7, 8, 102]]);
    }

    #[test]
    fn a_long_text_is_cut_into_near_equal_windows_each_with_its_markers() {
        // 7 content pieces, 3 per window: 3 windows of 3, 2, 2 (not 3, 3, 1).
        let ids = [101, 1, 2, 3, 4, 5, 6, 7, 102];
        let w = windows(&ids, 5);
        assert_eq!(w, vec![vec![101, 1, 2, 3, 102], vec![101, 4, 5, 102], vec![101, 6, 7, 102]]);
        let content: Vec<u32> = w.iter().flat_map(|x| x[1..x.len() - 1].to_vec()).collect();
        assert_eq!(content, (1..=7).collect::<Vec<u32>>(), "every piece in exactly one window, in order");
    }

    #[test]
    fn windows_combine_by_piece_count_into_a_unit_vector() {
        let v = combine(vec![(3, vec![1.0, 0.0]), (1, vec![0.0, 1.0])]);
        let norm = (v[0] * v[0] + v[1] * v[1]).sqrt();
        assert!((norm - 1.0).abs() < 1e-6);
        assert!((v[0] / v[1] - 3.0).abs() < 1e-5, "weighted 3 to 1: {v:?}");
        assert_eq!(combine(vec![(2, vec![0.6, 0.8])]), vec![0.6, 0.8]);
    }

    #[test]
    fn long_texts_names_parse() {
        assert_eq!(LongTexts::parse("windows"), Some(LongTexts::Windows));
        assert_eq!(LongTexts::parse("truncate"), Some(LongTexts::Truncate));
        assert_eq!(LongTexts::parse("chunks"), None);
    }
}
