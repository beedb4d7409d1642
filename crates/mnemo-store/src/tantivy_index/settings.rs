//! The `[index] kind = "tantivy"` settings (unknown keys are refused).
use serde::{Deserialize, Serialize};

use mnemo_core::{CoreError, Result};

use crate::fusion::FusionSettings;

/// Settings of the tantivy index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TantivySettings {
    /// Directory of the index, relative to the data directory.
    pub path: String,
    /// Keep everything in RAM (nothing persists; the engine rebuilds from the Store).
    pub in_memory: bool,
    /// Weight of the BM25 ranking in hybrid fusion.
    pub lexical_weight: f32,
    /// Weight of the dense ranking in hybrid fusion.
    pub dense_weight: f32,
    /// The RRF constant k.
    pub rrf_k: f32,
    /// Commit once this many documents (upserts + removals) are pending.
    pub commit_every_docs: usize,
    /// Commit at the next write once the last commit is this old (by the engine's clock).
    pub commit_interval_ms: u64,
    /// Memory budget of the tantivy writer, in MiB (at least 15).
    pub writer_memory_mb: usize,
    /// English stemming of words (part of the on-disk format: changing it rebuilds the index).
    pub stemming: bool,
}

impl Default for TantivySettings {
    fn default() -> Self {
        let f = FusionSettings::default();
        TantivySettings {
            path: "index".into(),
            in_memory: false,
            lexical_weight: f.lexical_weight,
            dense_weight: f.dense_weight,
            rrf_k: f.rrf_k,
            commit_every_docs: 10_000,
            commit_interval_ms: 1_000,
            writer_memory_mb: 64,
            stemming: true,
        }
    }
}

impl TantivySettings {
    /// The fusion part.
    pub fn fusion(&self) -> FusionSettings {
        FusionSettings { lexical_weight: self.lexical_weight, dense_weight: self.dense_weight, rrf_k: self.rrf_k }
    }

    /// Check ranges; the error names the key.
    pub fn validate(&self) -> Result<()> {
        self.fusion().validate()?;
        if self.commit_every_docs == 0 {
            return Err(CoreError::Config("index.commit_every_docs must be at least 1".into()));
        }
        if !(15..=4096).contains(&self.writer_memory_mb) {
            return Err(CoreError::Config("index.writer_memory_mb must be within 15..=4096".into()));
        }
        Ok(())
    }
}
