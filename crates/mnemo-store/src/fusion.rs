//! Running a search by its mode over an index's two signals, lexical and dense; the fusion
//! arithmetic itself (settings, weighted reciprocal rank, convex mix, depth, hit order) is the
//! contract's, [`mnemo_contract::fusion`].
use std::sync::Mutex;

use mnemo_contract::{CoreError, Hit, IndexErrorKind, MemoryId, Result, SearchMode, SearchQuery};

use crate::vector::VectorIndex;

use mnemo_contract::fusion::{convex, fusion_depth, rrf, FusionMethod, FusionSettings};

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
