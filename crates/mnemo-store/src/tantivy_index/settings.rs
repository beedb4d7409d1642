//! The `[index] kind = "tantivy"` settings (unknown keys are refused).
use serde::{Deserialize, Serialize};

use mnemo_contract::{CoreError, Result};

use crate::vector::{AnnKind, AnnSettings};
use mnemo_contract::fusion::{FusionMethod, FusionSettings};

/// Settings of the tantivy index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TantivySettings {
    /// Directory of the index, relative to the data directory.
    pub path: String,
    /// Keep everything in RAM (nothing persists; the engine rebuilds from the Store).
    pub in_memory: bool,
    /// How hybrid search fuses the two signals: "rrf" or "convex".
    pub fusion: FusionMethod,
    /// Weight of the BM25 ranking in hybrid fusion.
    pub lexical_weight: f32,
    /// Weight of the dense ranking in hybrid fusion.
    pub dense_weight: f32,
    /// The RRF constant k.
    pub rrf_k: f32,
    /// Run a hybrid search's lexical and dense rankings at once (the dense one on a thread of
    /// its own); off by default (see `FusionSettings::parallel`).
    pub parallel_rankings: bool,
    /// Boost of hits whose entities the query names (`entity_match`): a matched hit's score s
    /// becomes (s + w) / (1 + w), the others' s / (1 + w); 0 = off.
    pub entity_boost: f32,
    /// Leave English function words ("what", "did", "the", "you" …: `schema::STOP_WORDS`) out of
    /// a query's BM25 terms, unless it has no other word. The documents are indexed as they
    /// are (not part of the on-disk format): only what a query asks for changes. A question's
    /// "what did you" otherwise matches every turn that asks something back.
    pub query_stop_words: bool,
    /// Commit once this many documents (upserts + removals) are pending.
    pub commit_every_docs: usize,
    /// Commit at the next write once the last commit is this old (by the engine's clock).
    pub commit_interval_ms: u64,
    /// Memory budget of the tantivy writer, in MiB (at least 15).
    pub writer_memory_mb: usize,
    /// English stemming of words (part of the on-disk format: changing it rebuilds the index).
    pub stemming: bool,
    /// Dense search: "ivf" (an IVF index for each namespace of at least `ann_min_vectors`
    /// vectors, exact below) or "exact" (always scan every vector of the namespace).
    pub ann: AnnKind,
    /// Vectors a namespace must hold before it gets an IVF (retrained each time it has grown
    /// 4× since its last training; dropped under half of this).
    pub ann_min_vectors: usize,
    /// Lists (centroids) of an IVF; 0 = automatic, √(vectors at training), at least 16.
    pub ivf_lists: usize,
    /// IVF lists scanned per search, at least (more: closer to exact, slower).
    pub ivf_nprobe: usize,
    /// Recall@10 vs the exact scan each IVF is calibrated to on its own vectors when trained or
    /// reopened: the probe count rises from `ivf_nprobe` until it is reached (0 = off).
    pub ivf_recall_target: f64,
    /// Check every segment file's checksum when the index is opened (reads the whole index
    /// once): a damaged file makes the index stale and rebuilt instead of failing later, or
    /// panicking inside tantivy, on a search.
    pub verify_on_open: bool,
    /// Open the on-disk index for reading only (a data directory that cannot be written):
    /// searches work; any write, commit or rebuild fails with an index error of kind
    /// `ReadOnly` and leaves the files as they are.
    pub read_only: bool,
}

impl Default for TantivySettings {
    fn default() -> Self {
        let f = FusionSettings::default();
        let a = AnnSettings::default();
        TantivySettings {
            path: "index".into(),
            in_memory: false,
            fusion: f.fusion,
            lexical_weight: f.lexical_weight,
            dense_weight: f.dense_weight,
            rrf_k: f.rrf_k,
            parallel_rankings: f.parallel,
            entity_boost: 0.0,
            query_stop_words: false,
            commit_every_docs: 10_000,
            commit_interval_ms: 1_000,
            writer_memory_mb: 64,
            stemming: true,
            ann: a.kind,
            ann_min_vectors: a.min_vectors,
            ivf_lists: a.lists,
            ivf_nprobe: a.nprobe,
            ivf_recall_target: a.recall_target,
            verify_on_open: true,
            read_only: false,
        }
    }
}

impl TantivySettings {
    /// The fusion part.
    pub fn fusion(&self) -> FusionSettings {
        FusionSettings {
            fusion: self.fusion,
            lexical_weight: self.lexical_weight,
            dense_weight: self.dense_weight,
            rrf_k: self.rrf_k,
            parallel: self.parallel_rankings,
        }
    }

    /// The dense-search part.
    pub fn ann(&self) -> AnnSettings {
        AnnSettings {
            kind: self.ann,
            min_vectors: self.ann_min_vectors,
            lists: self.ivf_lists,
            nprobe: self.ivf_nprobe,
            recall_target: self.ivf_recall_target,
        }
    }

    /// Check ranges; the error names the key.
    pub fn validate(&self) -> Result<()> {
        self.fusion().validate()?;
        self.ann().validate()?;
        crate::entity_match::validate_boost(self.entity_boost)?;
        if self.commit_every_docs == 0 {
            return Err(CoreError::Config("index.commit_every_docs must be at least 1".into()));
        }
        if !(15..=4096).contains(&self.writer_memory_mb) {
            return Err(CoreError::Config("index.writer_memory_mb must be within 15..=4096".into()));
        }
        Ok(())
    }
}
