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
use crate::static_model::{sha256_hex, vector_bytes, StaticManifest, MANIFEST_FORMAT};

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
}

impl Default for Recipe {
    /// What `mnemo models fetch minilm-static` makes (chosen on the development splits:
    /// bench/RESULTS.md, "A fast real embedder").
    fn default() -> Self {
        Recipe { pooling: Pooling::Mean, pca_dims: 256, sif: 1e-4 }
    }
}

impl Recipe {
    /// A short tag naming the recipe, part of the model id.
    pub fn tag(&self) -> String {
        let pooling = match self.pooling {
            Pooling::Mean => "mean",
            Pooling::Piece => "piece",
        };
        format!("{pooling}-pca{}-sif{:e}", self.pca_dims, self.sif)
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
    out_dir: &Path,
    batch_size: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Distilled, LocalEmbedError> {
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

    let pcs = principal_components(&raw, dims, &keep, recipe.pca_dims);
    let variance_kept =
        if pcs.total_variance > 0.0 { pcs.variances.iter().sum::<f64>() / pcs.total_variance } else { 0.0 };
    // Zipf probability by rank (the vocabulary's order), as Model2Vec estimates it.
    let harmonic: f64 = (0..vocab_size).map(|r| 1.0 / (r as f64 + 2.0)).sum();
    let out_dims = recipe.pca_dims;
    let mut vectors = vec![0.0f32; vocab_size * out_dims];
    for id in 0..vocab_size {
        if !keep[id] {
            continue;
        }
        let row = &raw[id * dims..(id + 1) * dims];
        let weight = if recipe.sif > 0.0 {
            let p = 1.0 / ((id as f64 + 2.0) * harmonic);
            recipe.sif / (recipe.sif + p)
        } else {
            1.0
        };
        for (k, dir) in pcs.directions.iter().enumerate() {
            let proj: f64 = row.iter().zip(&pcs.mean).zip(dir).map(|((x, m), d)| (*x as f64 - m) * d).sum();
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
        let other = Recipe { pooling: Pooling::Piece, pca_dims: 384, sif: 0.0 };
        assert_eq!(other.tag(), "piece-pca384-sif0e0");
    }
}
