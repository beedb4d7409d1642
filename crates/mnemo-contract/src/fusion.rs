//! Fusion of the lexical and dense signals, with scores normalised into 0..=1. Two methods
//! (`[index] fusion = "rrf" | "convex"`):
//!
//! - weighted reciprocal rank (`rrf`, the default): fused(d) = Σ_s w_s / (k + rank_s(d)) over
//!   the signals s whose list holds d (ranks from 1), divided by the best attainable value
//!   Σ_s w_s / (k + 1) over the non-empty lists: a document ranked first by every signal
//!   scores 1. Uses ranks only: right when one signal's scores mean little (a hashed bag of words).
//! - convex mix of min-max normalised scores (`convex`): each signal's candidate scores are
//!   mapped to 0..=1 by (s − min) / (max − min) over its list, and fused(d) = Σ_s w_s · s'(d) /
//!   Σ_s w_s (a document missing from a list gets 0 there). Keeps how much better the best
//!   candidates are, which ranks throw away: with a real embedder it beat every RRF weighting on
//!   LoCoMo (bench/RESULTS.md).
//!
//! The arithmetic only, shared by every index backend; running a search by its mode over a
//! backend's own rankings is the backend's.
use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::{CoreError, Hit, MemoryId, Result};

/// How two signals are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FusionMethod {
    /// Weighted reciprocal-rank fusion.
    #[default]
    Rrf,
    /// Convex mix of min-max normalised scores.
    Convex,
}

/// How lexical and dense rankings are fused (the `[index]` keys `fusion`, `lexical_weight`,
/// `dense_weight`, `rrf_k`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FusionSettings {
    /// rrf or convex.
    pub fusion: FusionMethod,
    /// Weight of the lexical (BM25) ranking.
    pub lexical_weight: f32,
    /// Weight of the dense (vector) ranking.
    pub dense_weight: f32,
    /// The RRF constant k (larger flattens the rank curve; unused by convex).
    pub rrf_k: f32,
    /// Run the two rankings of a hybrid search at once, the dense one on a thread of its own
    /// (`[index] parallel_rankings`; off by default: on a machine whose cores are all busy the
    /// helper thread waits for a core and the search takes longer, see bench/RESULTS.md).
    pub parallel: bool,
}

impl Default for FusionSettings {
    /// Lexical-led: with the fake hashed bag-of-words embedder the dense signal is a weaker
    /// copy of the lexical one (LoCoMo dev R@10: dense .319 vs BM25 .587), so it only breaks
    /// near-ties; equal weights or k = 60 lose to BM25 alone (see mnemo-bench RESULTS.md).
    /// A real embedder deserves a larger dense weight: it is a setting.
    fn default() -> Self {
        FusionSettings {
            fusion: FusionMethod::Rrf,
            lexical_weight: 1.0,
            dense_weight: 0.1,
            rrf_k: 30.0,
            parallel: false,
        }
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

/// How many candidates each signal contributes to a fusion returning `limit` hits: half as
/// many again as the limit, at least 100 (100 at the default 64 candidates). Deeper rankings
/// only reorder near-ties between lexical ranks (the fused top 64 from 100 rows holds the same
/// memories as from 128, bench/RESULTS.md) while the dense search's cost grows with the rows
/// asked of it.
pub fn fusion_depth(limit: usize) -> usize {
    limit.saturating_add(limit / 2).max(100)
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

/// Fuse scored lists `(weight, hits)` by a convex mix of their min-max normalised scores;
/// returns at most `limit` hits, scores in 0..=1 descending (ties: the higher id first).
/// Empty lists and zero weights take no part (and do not dilute the others).
pub fn convex(lists: &[(f32, &[Hit])], limit: usize) -> Vec<Hit> {
    let total: f32 = lists.iter().filter(|(w, l)| !l.is_empty() && *w > 0.0).map(|(w, _)| *w).sum();
    if total <= 0.0 {
        return vec![];
    }
    let mut fused: HashMap<MemoryId, f32> = HashMap::new();
    for (w, hits) in lists {
        if *w <= 0.0 || hits.is_empty() {
            continue;
        }
        let (lo, hi) =
            hits.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), h| (lo.min(h.score), hi.max(h.score)));
        let span = hi - lo;
        for h in hits.iter() {
            // One candidate, or all equal: each is as good as the best.
            let norm = if span > 0.0 { (h.score - lo) / span } else { 1.0 };
            *fused.entry(h.id).or_insert(0.0) += w * norm;
        }
    }
    let mut out: Vec<Hit> = fused.into_iter().map(|(id, s)| Hit { id, score: (s / total).clamp(0.0, 1.0) }).collect();
    sort_hits(&mut out);
    out.truncate(limit);
    out
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
        let s = FusionSettings { lexical_weight: 0.0, dense_weight: 0.0, rrf_k: 60.0, ..Default::default() };
        assert!(s.validate().is_err());
    }

    #[test]
    fn convex_mixes_normalised_scores_by_weight() {
        let h = |id: i64, score: f32| Hit { id: MemoryId(id), score };
        let lex = [h(1, 0.9), h(2, 0.5), h(3, 0.1)];
        let den = [h(3, 0.8), h(2, 0.7), h(4, 0.2)];
        let f = convex(&[(0.5, &lex), (0.5, &den)], 10);
        // 1: lex 1.0 → 0.5; 2: lex 0.5, dense (0.7-0.2)/0.6 → 0.25 + 0.4167; 3: 0 + 0.5; 4: 0.
        assert_eq!(f[0].id, MemoryId(2));
        assert!((f[0].score - (0.25 + 0.5 * 0.5 / 0.6)).abs() < 1e-5, "{f:?}");
        assert_eq!(f.last().map(|x| x.id), Some(MemoryId(4)));
        assert!(f.windows(2).all(|w| w[0].score >= w[1].score));
        // The dense side alone, weights ignored when the other list is empty.
        let only = convex(&[(0.9, &[]), (0.1, &den)], 10);
        assert_eq!(only[0], Hit { id: MemoryId(3), score: 1.0 });
        assert!(convex(&[(1.0, &[])], 10).is_empty());
        assert_eq!(convex(&[(1.0, &lex)], 2).len(), 2);
    }

    #[test]
    fn the_method_is_chosen_by_config() {
        let s: FusionSettings = toml::from_str("fusion = \"convex\"\ndense_weight = 0.5").unwrap();
        assert_eq!(s.fusion, FusionMethod::Convex);
        assert!(toml::from_str::<FusionSettings>("fusion = \"mean\"").is_err());
        assert_eq!(FusionSettings::default().fusion, FusionMethod::Rrf);
    }
}
