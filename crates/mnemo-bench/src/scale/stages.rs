//! The per-stage breakdown of a recall, from the engine's own tracing spans: a layer records
//! the wall time of each named span from the first time it is entered (its future first
//! polled) to its close. Stages joined in one task (the query embedding and the catch-up
//! check; the index search and the pinned memories) are polled one after the other, so a
//! stage's time is its own, not the time it waited for the other.
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tracing::span::Id;
use tracing::Subscriber;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// The spans of a recall that are timed, in the order a recall runs them: the engine's
/// (`embed` ‖ `catch_up_check`, `search` ‖ `pinned`, `fetch` (the candidates' cards, misses
/// read from the store), `score`, `plan`, `fetch_packed` (the full rows of what is packed that
/// no earlier stage read), `evidence` (each candidate's absolute relevance), `touch`) and the
/// index's inside `search` (`lexical`, `dense`, `fuse`); `recall` is the whole call.
pub const STAGES: [&str; 14] = [
    "recall",
    "embed",
    "catch_up_check",
    "search",
    "lexical",
    "dense",
    "fuse",
    "pinned",
    "fetch",
    "score",
    "plan",
    "fetch_packed",
    "evidence",
    "touch",
];

/// The bench rows of each stage: (stage, p50 metric, p99 metric).
pub const STAGE_METRICS: [(&str, &str, &str); 14] = [
    ("recall", "stage_recall_p50", "stage_recall_p99"),
    ("embed", "stage_embed_p50", "stage_embed_p99"),
    ("catch_up_check", "stage_catch_up_check_p50", "stage_catch_up_check_p99"),
    ("search", "stage_search_p50", "stage_search_p99"),
    ("lexical", "stage_lexical_p50", "stage_lexical_p99"),
    ("dense", "stage_dense_p50", "stage_dense_p99"),
    ("fuse", "stage_fuse_p50", "stage_fuse_p99"),
    ("pinned", "stage_pinned_p50", "stage_pinned_p99"),
    ("fetch", "stage_fetch_p50", "stage_fetch_p99"),
    ("score", "stage_score_p50", "stage_score_p99"),
    ("plan", "stage_plan_p50", "stage_plan_p99"),
    ("fetch_packed", "stage_fetch_packed_p50", "stage_fetch_packed_p99"),
    ("evidence", "stage_evidence_p50", "stage_evidence_p99"),
    ("touch", "stage_touch_p50", "stage_touch_p99"),
];

/// The spans of the engine's index sync (after each write) and the index's commit, timed
/// during the ingest: read the changed rows back, build the documents, upsert and remove,
/// record the watermark and stamp; inside the upsert the index's filing of the vectors and its
/// documents (tantivy; `index_overlay`, the uncommitted overlay, is inside it), and the
/// index commits; around them, the bulk load's two overlapped halves (`Engine::apply_batches`):
/// the store's apply of one batch and the index sync of the one before. With the stage's
/// total seconds metric.
pub const INGEST_STAGES: [(&str, &str); 11] = [
    ("bulk_apply", "ingest_stage_bulk_apply"),
    ("bulk_sync", "ingest_stage_bulk_sync"),
    ("sync_read", "ingest_stage_sync_read"),
    ("sync_docs", "ingest_stage_sync_docs"),
    ("sync_upsert", "ingest_stage_sync_upsert"),
    ("index_vectors", "ingest_stage_index_vectors"),
    ("index_documents", "ingest_stage_index_documents"),
    ("index_overlay", "ingest_stage_index_overlay"),
    ("sync_remove", "ingest_stage_sync_remove"),
    ("sync_mark", "ingest_stage_sync_mark"),
    ("index_commit", "ingest_stage_index_commit"),
];

/// The same spans timed during the one-at-a-time ingest, with the stage's mean microseconds
/// per write metric.
pub const SINGLE_STAGES: [(&str, &str); 9] = [
    ("sync_read", "single_stage_sync_read_us"),
    ("sync_docs", "single_stage_sync_docs_us"),
    ("sync_upsert", "single_stage_sync_upsert_us"),
    ("index_vectors", "single_stage_index_vectors_us"),
    ("index_documents", "single_stage_index_documents_us"),
    ("index_overlay", "single_stage_index_overlay_us"),
    ("sync_remove", "single_stage_sync_remove_us"),
    ("sync_mark", "single_stage_sync_mark_us"),
    ("index_commit", "single_stage_index_commit_us"),
];

/// The longest single instance of each of those spans during the one-at-a-time ingest (what a
/// slow write waited for, by cause), with its milliseconds metric.
pub const SINGLE_STAGE_MAX: [(&str, &str); 9] = [
    ("sync_read", "single_max_sync_read_ms"),
    ("sync_docs", "single_max_sync_docs_ms"),
    ("sync_upsert", "single_max_sync_upsert_ms"),
    ("index_vectors", "single_max_index_vectors_ms"),
    ("index_documents", "single_max_index_documents_ms"),
    ("index_overlay", "single_max_index_overlay_ms"),
    ("sync_remove", "single_max_sync_remove_ms"),
    ("sync_mark", "single_max_sync_mark_ms"),
    ("index_commit", "single_max_index_commit_ms"),
];

/// The longest single instance of each span during the batched ingest (one batch's), with its
/// milliseconds metric.
pub const INGEST_STAGE_MAX: [(&str, &str); 9] = [
    ("sync_read", "ingest_max_sync_read_ms"),
    ("sync_docs", "ingest_max_sync_docs_ms"),
    ("sync_upsert", "ingest_max_sync_upsert_ms"),
    ("index_vectors", "ingest_max_index_vectors_ms"),
    ("index_documents", "ingest_max_index_documents_ms"),
    ("index_overlay", "ingest_max_index_overlay_ms"),
    ("sync_remove", "ingest_max_sync_remove_ms"),
    ("sync_mark", "ingest_max_sync_mark_ms"),
    ("index_commit", "ingest_max_index_commit_ms"),
];

/// Wall times (ms) of every closed span named in [`STAGES`], by name.
#[derive(Clone, Default)]
pub struct StageTimes(Arc<Mutex<BTreeMap<&'static str, Vec<f64>>>>);

impl StageTimes {
    /// The times recorded so far, by stage, each sorted.
    pub fn sorted(&self) -> BTreeMap<&'static str, Vec<f64>> {
        let mut out = self.0.lock().map(|m| m.clone()).unwrap_or_default();
        for v in out.values_mut() {
            v.sort_by(f64::total_cmp);
        }
        out
    }
}

/// When a timed span was first entered.
struct Started(Instant);

/// The layer recording into a [`StageTimes`].
pub struct StageLayer(pub StageTimes);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for StageLayer {
    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        if timed(span.name()) && span.extensions().get::<Started>().is_none() {
            span.extensions_mut().insert(Started(Instant::now()));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(started) = span.extensions().get::<Started>().map(|s| s.0) else { return };
        let ms = started.elapsed().as_secs_f64() * 1000.0;
        let Some(name) = STAGES.iter().chain(INGEST_STAGES.iter().map(|(s, _)| s)).find(|s| **s == span.name()) else {
            return;
        };
        if let Ok(mut m) = (self.0).0.lock() {
            m.entry(name).or_default().push(ms);
        }
    }
}

fn timed(name: &str) -> bool {
    STAGES.contains(&name) || INGEST_STAGES.iter().any(|(s, _)| *s == name)
}

/// A dispatcher that times the stages into `times` (and records nothing else).
pub fn dispatch(times: &StageTimes) -> tracing::Dispatch {
    use tracing_subscriber::layer::SubscriberExt as _;
    tracing::Dispatch::new(tracing_subscriber::registry().with(StageLayer(times.clone())))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tracing::instrument::WithSubscriber as _;

    #[test]
    fn times_named_spans_and_ignores_others() {
        let times = StageTimes::default();
        let run = async {
            let outer = tracing::info_span!("recall");
            let _g = outer.enter();
            drop(tracing::info_span!("fetch").entered());
            drop(tracing::info_span!("fetch").entered());
            drop(tracing::info_span!("unrelated").entered());
        };
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(run.with_subscriber(dispatch(&times)));
        let got = times.sorted();
        assert_eq!(got.get("fetch").map(Vec::len), Some(2));
        assert_eq!(got.get("recall").map(Vec::len), Some(1));
        assert!(!got.contains_key("unrelated"));
    }
}
