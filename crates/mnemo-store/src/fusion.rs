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
use std::collections::HashMap;
use std::sync::Mutex;

use mnemo_contract::{CoreError, Hit, IndexErrorKind, MemoryId, Result, SearchMode, SearchQuery};

use crate::vector::VectorIndex;
use serde::{Deserialize, Serialize};

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
        let _dense = tracing::info_span!("dense", limit).entered();
        Ok(vectors
            .search(&q.namespace, e, limit)?
            .into_iter()
            .map(|(id, s)| Hit { id, score: s.clamp(0.0, 1.0) })
            .collect())
    };
    match q.mode {
        SearchMode::Lexical => {
            let _lexical = tracing::info_span!("lexical", limit = q.limit).entered();
            lexical(q.limit)
        }
        SearchMode::Dense => {
            if q.embedding.is_none() {
                return Err(CoreError::InvalidInput("a dense search needs a query embedding".into()));
            }
            dense(q.limit)
        }
        SearchMode::Hybrid => {
            let depth = fusion_depth(q.limit);
            let lexical = || {
                let _lexical = tracing::info_span!("lexical", limit = depth).entered();
                lexical(depth)
            };
            let (l, d) = if fusion.parallel && q.embedding.is_some() && vectors.len() >= PARALLEL_HYBRID_VECTORS {
                let (l, d) = beside(lexical, || dense(depth));
                let lost = || {
                    CoreError::index_message(IndexErrorKind::Other, "the dense ranking's thread ended without a result")
                };
                (l, d.unwrap_or_else(|| Err(lost())))
            } else {
                (lexical(), dense(depth))
            };
            let l = l?;
            // A vector at or below 0 cosine shares nothing with the query: it does not vote.
            let d: Vec<Hit> = d?.into_iter().filter(|h| h.score > 0.0).collect();
            let _fuse = tracing::info_span!("fuse").entered();
            Ok(match fusion.fusion {
                FusionMethod::Rrf => {
                    let l: Vec<MemoryId> = l.into_iter().map(|h| h.id).collect();
                    let d: Vec<MemoryId> = d.into_iter().map(|h| h.id).collect();
                    rrf(&[(fusion.lexical_weight, &l), (fusion.dense_weight, &d)], fusion.rrf_k, q.limit)
                }
                FusionMethod::Convex => convex(&[(fusion.lexical_weight, &l), (fusion.dense_weight, &d)], q.limit),
            })
        }
    }
}

/// Vectors held from which a hybrid search runs its two rankings at once, the dense one on a
/// thread of its own: below, the dense scan is shorter than starting a thread (~50 µs here).
pub const PARALLEL_HYBRID_VECTORS: usize = 4_096;

/// Run `here` on this thread while a scoped thread of its own runs `there` (the two rankings
/// are independent). Whichever thread comes to `there` first runs it: when the helper has not
/// started by the time `here` is done (a busy machine) or cannot be started, this thread runs
/// it rather than wait. `there` runs under this thread's tracing dispatcher and current span,
/// so its spans are timed as part of the search. None only if the helper took `there` and
/// came back without its result (it cannot; the caller treats it as a failed search).
fn beside<A, B: Send>(here: impl FnOnce() -> A, there: impl FnOnce() -> B + Send) -> (A, Option<B>) {
    let job = Mutex::new(Some(there));
    let take = || job.lock().ok().and_then(|mut j| j.take());
    let dispatch = tracing::dispatcher::get_default(tracing::Dispatch::clone);
    let parent = tracing::Span::current();
    std::thread::scope(|s| {
        let helper = std::thread::Builder::new().name("mnemo-dense".into()).spawn_scoped(s, || {
            let f = take()?;
            Some(tracing::dispatcher::with_default(&dispatch, || parent.in_scope(f)))
        });
        let a = here();
        let b = match take() {
            Some(f) => Some(f()),
            None => match helper.map(|h| h.join()) {
                Ok(Ok(b)) => b,
                // A panic on the helper is raised again here, as if it had run on this thread
                // (the index contains a search's panic and reports itself damaged).
                Ok(Err(panic)) => std::panic::resume_unwind(panic),
                Err(_) => None,
            },
        };
        (a, b)
    })
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
