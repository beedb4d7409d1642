//! Searching: lexical BM25 over the committed documents and the overlay of uncommitted ones,
//! fused with the dense hits by `search_by_mode`, then the entity boost; a panic inside
//! tantivy (a damaged segment) makes the index stale instead of taking the process down.
use std::sync::{RwLockReadGuard, RwLockWriteGuard};

use mnemo_contract::{CoreError, Hit, IndexErrorKind, MemoryId, Namespace, Result, SearchQuery};
use tantivy::collector::TopDocs;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight, BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::Term;

use super::overlay::{self, Stats};
use super::schema::{self, Fields};
use super::write::adopt_training;
use super::{entities, stale_err, terr, Inner, TantivyIndex};
use crate::fusion::search_by_mode;
use mnemo_contract::fusion::sort_hits;

impl TantivyIndex {
    /// `Index::search`: the hits of `q`, lexical and dense fused, best first.
    pub(super) fn search_hits(&self, q: &SearchQuery) -> Result<Vec<Hit>> {
        self.adopt_finished_training()?;
        let g = self.read_analysed()?;
        if g.live.is_none() {
            return Err(stale_err(&g));
        }
        // A damaged segment can make tantivy panic deep inside a read; contained here, it makes
        // the index stale (rebuilt from the store) instead of taking the process down.
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let hits = search_by_mode(q, &self.fusion, &g.vectors, |limit| self.lexical(&g, q, limit))?;
            match g.live.as_ref() {
                Some(live) if self.settings.entity_boost > 0.0 => entities::boost_matches(
                    hits,
                    self.settings.entity_boost,
                    &live.reader.searcher(),
                    live.fields,
                    &g.overlay,
                    &q.namespace,
                    &q.text,
                ),
                _ => Ok(hits),
            }
        }));
        let result = match result {
            Ok(r) => r,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Err(CoreError::index_message(
                    IndexErrorKind::Damaged,
                    format!("the index is damaged (a search failed inside tantivy: {what})"),
                ))
            }
        };
        if let Err(e) = &result {
            if let Ok(mut d) = self.damaged.lock() {
                *d = Some(e.to_string());
            }
        }
        result
    }

    /// Lexical hits of `q` (committed + overlay), scores normalised by the query's best
    /// attainable BM25 score (Σ over its terms of idf·(k1+1)), best first.
    fn lexical(&self, g: &Inner, q: &SearchQuery, limit: usize) -> Result<Vec<Hit>> {
        let Some(live) = g.live.as_ref() else { return Err(stale_err(g)) };
        let mut analyzer = live.analyzer.clone();
        let mut terms = schema::tokens(&mut analyzer, &q.text);
        terms.sort();
        terms.dedup();
        if terms.iter().any(|t| !live.stop_terms.contains(t)) {
            terms.retain(|t| !live.stop_terms.contains(t));
        }
        if terms.is_empty() || limit == 0 {
            return Ok(vec![]);
        }
        let searcher = live.reader.searcher();
        let committed = self.committed_sizes(&searcher, live.fields, &q.namespace)?;
        let pending = g.overlay.ns_sizes(&q.namespace);
        let stats = Stats {
            searcher: &searcher,
            overlay: &g.overlay,
            ns: &q.namespace,
            ns_field: live.fields.ns,
            sizes: (committed.0 + pending.0, committed.1 + pending.1),
            cache: &self.searcher_cache,
        };
        let n = stats.total_num_docs().map_err(|e| terr("statistics", e))?;
        let avg = stats.total_num_tokens(live.fields.text).map_err(|e| terr("statistics", e))? as f32 / n as f32;
        let mut weights = Vec::with_capacity(terms.len());
        let mut max = 0.0f32;
        for t in &terms {
            let term = Term::from_field_text(live.fields.text, t);
            let df = stats.doc_freq(&term).map_err(|e| terr("statistics", e))?;
            if df == 0 {
                continue;
            }
            let w = Bm25Weight::for_one_term(df, n, avg);
            max += w.max_score();
            weights.push((t.clone(), w));
        }
        if weights.is_empty() || max <= 0.0 {
            return Ok(vec![]);
        }
        let mut hits: Vec<Hit> =
            g.overlay.score(&q.namespace, &weights).into_iter().map(|(id, s)| Hit { id, score: s }).collect();
        let should: Vec<(Occur, Box<dyn Query>)> = weights
            .iter()
            .map(|(t, _)| {
                let tq: Box<dyn Query> =
                    Box::new(TermQuery::new(Term::from_field_text(live.fields.text, t), IndexRecordOption::WithFreqs));
                (Occur::Should, tq)
            })
            .collect();
        let ns_filter: Box<dyn Query> = Box::new(ConstScoreQuery::new(
            Box::new(TermQuery::new(
                Term::from_field_text(live.fields.ns, q.namespace.as_str()),
                IndexRecordOption::Basic,
            )),
            0.0,
        ));
        let query =
            BooleanQuery::new(vec![(Occur::Must, ns_filter), (Occur::Must, Box::new(BooleanQuery::new(should)))]);
        let want = limit + g.overlay.hidden_bound(&q.namespace);
        let top = searcher
            .search_with_statistics_provider(&query, &TopDocs::with_limit(want).order_by_score(), &stats)
            .map_err(|e| terr("search failed", e))?;
        let generation = searcher.generation();
        let mut columns = std::collections::HashMap::new();
        for (score, addr) in top {
            let col = match columns.entry(addr.segment_ord) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => v.insert(
                    self.searcher_cache
                        .id_column(generation, addr.segment_ord, || {
                            searcher.segment_reader(addr.segment_ord).fast_fields().i64("id")
                        })
                        .map_err(|e| terr("id column", e))?,
                ),
            };
            let Some(id) = col.first(addr.doc_id) else { continue };
            let id = MemoryId(id);
            if !g.overlay.hides(&q.namespace, id) {
                hits.push(Hit { id, score });
            }
        }
        for h in &mut hits {
            h.score = (h.score / max).clamp(0.0, 1.0);
        }
        sort_hits(&mut hits);
        hits.truncate(limit);
        Ok(hits)
    }

    /// The committed documents of `ns` and their total length, kept for the searcher's
    /// generation (a commit makes a new one), so a search does not scan the namespace each time.
    fn committed_sizes(&self, searcher: &tantivy::Searcher, fields: Fields, ns: &Namespace) -> Result<(u64, u64)> {
        self.searcher_cache
            .ns_sizes(searcher.generation(), ns, || overlay::committed_sizes(searcher, fields.ns, fields.text, ns))
            .map_err(|e| terr("statistics", e))
    }

    /// Put a finished background training in place (logged at the next commit), so that
    /// searches use it at once instead of the old structure until the next write: a search
    /// after ingest stops would otherwise scan the lists of the previous, smaller training.
    fn adopt_finished_training(&self) -> Result<()> {
        if !self.read()?.vectors.has_finished_training() {
            return Ok(());
        }
        adopt_training(&mut *self.write()?, self.persists());
        Ok(())
    }

    /// The index as a search reads it, every upserted document analysed: those that wait for
    /// it are analysed under the write lock, which is then downgraded to the read lock the
    /// search holds, so that no write slips in between (its documents would hide their committed
    /// versions from the search without being scored: a memory found in neither version).
    fn read_analysed(&self) -> Result<RwLockReadGuard<'_, Inner>> {
        {
            let g = self.read()?;
            if !g.overlay.needs_tokens() {
                return Ok(g);
            }
        }
        let mut g = self.write()?;
        let inner = &mut *g;
        if let Some(live) = inner.live.as_mut() {
            inner.overlay.tokenise(&mut live.analyzer);
        }
        Ok(RwLockWriteGuard::downgrade(g))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use mnemo_contract::{Index, SearchMode};

    use super::super::test_support::{clock, doc, ids, in_ram, search, settings, unit};
    use super::super::TantivySettings;

    #[tokio::test]
    async fn a_hybrid_search_fuses_lexical_and_dense_hits_ranking_the_one_found_by_both_first() {
        let idx = in_ram();
        idx.upsert(vec![
            doc(1, "the quokka smiles", Some(unit(1))),
            doc(2, "an unrelated line", Some(unit(0))),
            doc(3, "a quokka in the sun", Some(unit(0))),
        ])
        .await
        .unwrap();
        let lexical = ids(&search(&idx, "quokka", None, SearchMode::Lexical).await);
        assert!(!lexical.contains(&2), "2 has no word of the query: {lexical:?}");
        let mut dense_top: Vec<i64> =
            ids(&search(&idx, "", Some(unit(0)), SearchMode::Dense).await).into_iter().take(2).collect();
        dense_top.sort();
        assert_eq!(dense_top, vec![2, 3], "the two documents along the query's vector");
        let hybrid = ids(&search(&idx, "quokka", Some(unit(0)), SearchMode::Hybrid).await);
        assert_eq!(hybrid.first(), Some(&3), "found by both signals, ranked first: {hybrid:?}");
        assert!(hybrid.contains(&1), "a lexical-only hit is kept: {hybrid:?}");
        assert!(hybrid.contains(&2), "a dense-only hit is kept: {hybrid:?}");
    }

    #[tokio::test]
    async fn committed_and_pending_documents_are_scored_on_one_scale() {
        let idx = in_ram();
        idx.upsert(vec![doc(1, "kiwi tart", None), doc(2, "plain bread", None)]).await.unwrap();
        idx.flush().await.unwrap();
        idx.upsert(vec![doc(3, "kiwi tart", None)]).await.unwrap();
        let hits = search(&idx, "kiwi", None, SearchMode::Lexical).await;
        assert_eq!(hits.len(), 2, "{hits:?}");
        // The same text scores the same whether committed or in the overlay: the BM25
        // statistics count both.
        assert!((hits[0].score - hits[1].score).abs() < 1e-6, "{hits:?}");
        assert!(hits.iter().all(|h| h.score > 0.0 && h.score <= 1.0), "normalised: {hits:?}");
    }

    #[tokio::test]
    async fn words_the_index_never_saw_find_nothing() {
        let idx = in_ram();
        idx.upsert(vec![doc(1, "kiwi tart", None)]).await.unwrap();
        assert!(search(&idx, "durian", None, SearchMode::Lexical).await.is_empty());
        assert!(search(&idx, "", None, SearchMode::Lexical).await.is_empty(), "no words, no lexical hits");
    }

    #[tokio::test]
    async fn query_stop_words_leave_the_question_words_out_unless_nothing_else_is_asked() {
        let docs = || {
            vec![
                doc(1, "What did you do after that?", None),
                doc(2, "I researched adoption agencies last week.", None),
                doc(3, "Did you see it?", None),
            ]
        };
        let asked = "What did you research?";
        let plain = in_ram();
        plain.upsert(docs()).await.unwrap();
        let with = ids(&search(&plain, asked, None, SearchMode::Lexical).await);
        assert!(with.contains(&1) && with.contains(&3), "without the setting, \"what did you\" matches: {with:?}");

        let s = TantivySettings { query_stop_words: true, ..settings() };
        let idx = super::super::TantivyIndex::in_memory(s, clock()).unwrap();
        idx.upsert(docs()).await.unwrap();
        assert_eq!(ids(&search(&idx, asked, None, SearchMode::Lexical).await), vec![2], "only the research");
        // A query of stop words only keeps them: it still finds what it asks for.
        let only = ids(&search(&idx, "did you", None, SearchMode::Lexical).await);
        assert!(only.contains(&1) && only.contains(&3), "{only:?}");
    }
}
