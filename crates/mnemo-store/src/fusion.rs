//! Weighted reciprocal-rank fusion of ranked lists, with scores normalised into 0..=1.
//!
//! fused(d) = Σ_s w_s / (k + rank_s(d)) over the signals s whose list holds d (ranks from 1),
//! divided by the best attainable value Σ_s w_s / (k + 1) over the non-empty lists: a document
//! ranked first by every signal scores 1.
use std::collections::HashMap;

use mnemo_core::{CoreError, Hit, MemoryId, Result, SearchMode, SearchQuery};

use crate::vector::VectorIndex;
use serde::{Deserialize, Serialize};

/// How lexical and dense rankings are fused (the `[index]` keys `lexical_weight`,
/// `dense_weight`, `rrf_k`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FusionSettings {
    /// Weight of the lexical (BM25) ranking.
    pub lexical_weight: f32,
    /// Weight of the dense (vector) ranking.
    pub dense_weight: f32,
    /// The RRF constant k (larger flattens the rank curve).
    pub rrf_k: f32,
}

impl Default for FusionSettings {
    /// Lexical-led: with the fake hashed bag-of-words embedder the dense signal is a weaker
    /// copy of the lexical one (LoCoMo dev R@10: dense .319 vs BM25 .587), so it only breaks
    /// near-ties; equal weights or k = 60 lose to BM25 alone (see mnemo-bench RESULTS.md).
    /// A real embedder deserves a larger dense weight: it is a setting.
    fn default() -> Self {
        FusionSettings { lexical_weight: 1.0, dense_weight: 0.1, rrf_k: 30.0 }
    }
}

impl FusionSettings {
    /// Check ranges; the error names the key.
    pub fn validate(&self) -> Result<()> {
        let ok = |x: f32| x.is_finite() && x >= 0.0;
        if !ok(self.lexical_weight) || !ok(self.dense_weight) {
            return Err(CoreError::Config(
                "index.lexical_weight and index.dense_weight must be finite and >= 0".into(),
            ));
        }
        if self.lexical_weight + self.dense_weight <= 0.0 {
            return Err(CoreError::Config("index.lexical_weight + index.dense_weight must be > 0".into()));
        }
        if !(self.rrf_k.is_finite() && self.rrf_k >= 0.0) {
            return Err(CoreError::Config("index.rrf_k must be finite and >= 0".into()));
        }
        Ok(())
    }
}

/// Run `q` by its mode over the two signals — the same rule for every index: lexical only,
/// dense only (a query embedding is required), or both fused by weighted RRF at
/// `fusion_depth`. `lexical(limit)` ranks the namespace's documents by text.
pub fn search_by_mode<V: VectorIndex + ?Sized>(
    q: &SearchQuery,
    fusion: &FusionSettings,
    vectors: &V,
    lexical: impl Fn(usize) -> Result<Vec<Hit>>,
) -> Result<Vec<Hit>> {
    if q.limit == 0 {
        return Ok(vec![]);
    }
    let dense = |limit: usize| -> Result<Vec<Hit>> {
        let Some(e) = &q.embedding else { return Ok(vec![]) };
        Ok(vectors
            .search(&q.namespace, e, limit)?
            .into_iter()
            .map(|(id, s)| Hit { id, score: s.clamp(0.0, 1.0) })
            .collect())
    };
    match q.mode {
        SearchMode::Lexical => lexical(q.limit),
        SearchMode::Dense => {
            if q.embedding.is_none() {
                return Err(CoreError::InvalidInput("a dense search needs a query embedding".into()));
            }
            dense(q.limit)
        }
        SearchMode::Hybrid => {
            let depth = fusion_depth(q.limit);
            let l: Vec<MemoryId> = lexical(depth)?.into_iter().map(|h| h.id).collect();
            // A vector at or below 0 cosine shares nothing with the query: it does not vote.
            let d: Vec<MemoryId> = dense(depth)?.into_iter().filter(|h| h.score > 0.0).map(|h| h.id).collect();
            Ok(rrf(&[(fusion.lexical_weight, &l), (fusion.dense_weight, &d)], fusion.rrf_k, q.limit))
        }
    }
}

/// How many candidates each signal contributes to a fusion returning `limit` hits.
pub fn fusion_depth(limit: usize) -> usize {
    limit.saturating_mul(2).max(100)
}

/// Fuse ranked id lists `(weight, ids best first)`; returns at most `limit` hits, scores in
/// 0..=1 descending (ties: the newer, higher id first).
pub fn rrf(lists: &[(f32, &[MemoryId])], k: f32, limit: usize) -> Vec<Hit> {
    let max: f32 = lists.iter().filter(|(w, l)| !l.is_empty() && *w > 0.0).map(|(w, _)| w / (k + 1.0)).sum();
    if max <= 0.0 {
        return vec![];
    }
    let mut fused: HashMap<MemoryId, f32> = HashMap::new();
    for (w, ids) in lists {
        if *w <= 0.0 {
            continue;
        }
        for (i, id) in ids.iter().enumerate() {
            *fused.entry(*id).or_insert(0.0) += w / (k + (i + 1) as f32);
        }
    }
    let mut hits: Vec<Hit> = fused.into_iter().map(|(id, s)| Hit { id, score: (s / max).clamp(0.0, 1.0) }).collect();
    sort_hits(&mut hits);
    hits.truncate(limit);
    hits
}

/// Sort hits by score descending, ties to the higher id.
pub fn sort_hits(hits: &mut [Hit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.id.cmp(&a.id)));
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn first_everywhere_scores_one_and_weights_matter() {
        let a = [MemoryId(1), MemoryId(2)];
        let b = [MemoryId(1), MemoryId(3)];
        let h = rrf(&[(1.0, &a), (0.5, &b)], 60.0, 10);
        assert_eq!(h[0], Hit { id: MemoryId(1), score: 1.0 });
        assert_eq!(h[1].id, MemoryId(2), "the heavier list's second beats the lighter's");
        assert!(h.windows(2).all(|w| w[0].score >= w[1].score));
        assert!(rrf(&[(1.0, &[])], 60.0, 10).is_empty());
        assert_eq!(rrf(&[(1.0, &a), (1.0, &b)], 60.0, 1).len(), 1);
    }

    #[test]
    fn bad_settings_are_named() {
        let s = FusionSettings { lexical_weight: -1.0, ..Default::default() };
        assert!(s.validate().unwrap_err().to_string().contains("lexical_weight"));
        let s = FusionSettings { lexical_weight: 0.0, dense_weight: 0.0, rrf_k: 60.0 };
        assert!(s.validate().is_err());
    }
}
