//! How deep each ranking must go for the fused top 64: the fused top 64 from rankings of 128
//! rows each (twice the limit: the hybrid search's depth before it became `fusion_depth(64)` =
//! 100) is compared with the fused top 64 from shallower rankings (each asked for `depth` rows,
//! the dense one by its own search at that limit), with the default fusion settings. A cheaper
//! depth is only worth taking if this overlap is ~1.
use std::sync::Arc;

use mnemo_contract::fusion::{rrf, FusionSettings};
use mnemo_contract::{Index, MemoryId, SearchMode, SearchQuery};

use super::synth::Corpus;
use super::{ns_of, ScaleArgs};
use crate::error::Result;

const LIMIT: usize = 64;

/// The rows of the reference rankings: twice the limit.
const REFERENCE_DEPTH: usize = 2 * LIMIT;

async fn ranking(index: &Arc<dyn Index>, q: &SearchQuery, mode: SearchMode, limit: usize) -> Result<Vec<MemoryId>> {
    let hits = index.search(&SearchQuery { mode, limit, ..q.clone() }).await?;
    // As the fusion: a vector at or below 0 cosine does not vote.
    Ok(hits.into_iter().filter(|h| mode == SearchMode::Lexical || h.score > 0.0).map(|h| h.id).collect())
}

fn fused(f: &FusionSettings, l: &[MemoryId], d: &[MemoryId]) -> Vec<MemoryId> {
    rrf(&[(f.lexical_weight, l), (f.dense_weight, d)], f.rrf_k, LIMIT).into_iter().map(|h| h.id).collect()
}

/// The fraction of the fused top 64 (at the full depth) that the fused top 64 at each of
/// `depths` also holds, over `--recall-queries` queries; and the fraction of queries whose
/// fused top 64 is identical in order.
pub(crate) async fn overlap_rows(
    args: &ScaleArgs,
    index: &Arc<dyn Index>,
    corpus: &Corpus,
    depths: &[usize],
    push: &mut impl FnMut(&'static str, f64, &'static str, &str),
) -> Result<()> {
    let f = FusionSettings::default();
    let full = REFERENCE_DEPTH;
    let queries = args.recall_queries.max(1);
    let mut shared = vec![0.0f64; depths.len()];
    let mut same = vec![0usize; depths.len()];
    for q in 0..queries as u64 {
        let text = corpus.query_text(q);
        let base = SearchQuery {
            namespace: ns_of(q as usize, args.namespaces)?,
            embedding: Some(corpus.embed(&text)),
            text,
            limit: full,
            mode: SearchMode::Hybrid,
        };
        let lex = ranking(index, &base, SearchMode::Lexical, full).await?;
        let want = fused(&f, &lex, &ranking(index, &base, SearchMode::Dense, full).await?);
        for (i, &depth) in depths.iter().enumerate() {
            let got = fused(&f, &lex[..depth.min(lex.len())], &ranking(index, &base, SearchMode::Dense, depth).await?);
            let hit = got.iter().filter(|id| want.contains(id)).count();
            shared[i] += if want.is_empty() { 1.0 } else { hit as f64 / want.len() as f64 };
            same[i] += usize::from(got == want);
        }
    }
    for (i, &depth) in depths.iter().enumerate() {
        let (m1, m2) = match depth {
            64 => ("fused_top64_overlap_depth_64", "fused_top64_identical_depth_64"),
            _ => ("fused_top64_overlap_depth_100", "fused_top64_identical_depth_100"),
        };
        let note = format!(
            "fused top 64 from rankings of {depth} rows against those of {full}; default fusion weights; {queries} queries"
        );
        push(m1, shared[i] / queries as f64, "fraction", &note);
        push(m2, same[i] as f64 / queries as f64, "fraction", &note);
    }
    Ok(())
}
