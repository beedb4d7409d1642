//! `MemoryIndex`: the reference [`Index`], in memory and brute force. Lexical: the query's
//! words (`crate::text::words`) a document's content and entities hold, each weighted by its
//! rarity in the namespace (idf), over the weight of every query word; dense: the cosine of
//! the vectors, mapped into 0..=1; hybrid: the two rankings fused by `crate::fusion` with the
//! default settings. It need not rank as a real index does, only keep the contract (checked by
//! `conformance::index`).
//!
//! It behaves as a persistent index would: `state` reports the watermark of the last `flush`
//! (what a commit made durable), not the last one set, so a test sees whether the engine
//! commits what it applied.
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use crate::error::{CoreError, IndexErrorKind, Result};
use crate::fusion::{fusion_depth, rrf, sort_hits, FusionSettings};
use crate::relevance::cosine;
use crate::text::words;
use crate::{Hit, Index, IndexDoc, IndexStamp, IndexState, MemoryId, Namespace, SearchMode, SearchQuery};

#[derive(Default)]
struct Inner {
    /// Each namespace's documents, by id.
    docs: BTreeMap<Namespace, BTreeMap<MemoryId, IndexDoc>>,
    /// Set, not yet flushed.
    watermark: u64,
    stamp: Option<IndexStamp>,
    /// As of the last flush.
    durable_watermark: u64,
    durable_stamp: Option<IndexStamp>,
}

/// The reference in-memory index (see the module docs). A new one is empty, at 0.
#[derive(Default)]
pub struct MemoryIndex {
    inner: Mutex<Inner>,
}

impl MemoryIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, Inner>> {
        self.inner.lock().map_err(|_| {
            CoreError::index_message(
                IndexErrorKind::Other,
                "the in-memory index's lock was poisoned by an earlier panic",
            )
        })
    }
}

/// The distinct words a document is searched by: its content's and its entities'.
fn doc_words(d: &IndexDoc) -> BTreeSet<String> {
    words(&d.content).chain(d.entities.iter().flat_map(|e| words(e).collect::<Vec<_>>())).collect()
}

/// Lexical hits: Σ idf of the query words a document holds ÷ Σ idf of every query word, best
/// first. idf = ln(1 + N / (1 + df)) over the namespace's N documents.
fn lexical(docs: &BTreeMap<MemoryId, IndexDoc>, text: &str, limit: usize) -> Vec<Hit> {
    let terms: BTreeSet<String> = words(text).collect();
    let bags: Vec<(MemoryId, BTreeSet<String>)> = docs.values().map(|d| (d.id, doc_words(d))).collect();
    let n = bags.len() as f32;
    let idf = |t: &String| (1.0 + n / (1.0 + bags.iter().filter(|(_, b)| b.contains(t)).count() as f32)).ln();
    let weights: Vec<(&String, f32)> = terms.iter().map(|t| (t, idf(t))).collect();
    let total: f32 = weights.iter().map(|(_, w)| w).sum();
    if total <= 0.0 {
        return vec![];
    }
    let mut hits: Vec<Hit> = bags
        .iter()
        .filter_map(|(id, bag)| {
            let s: f32 = weights.iter().filter(|(t, _)| bag.contains(*t)).map(|(_, w)| w).sum();
            (s > 0.0).then(|| Hit { id: *id, score: (s / total).clamp(0.0, 1.0) })
        })
        .collect();
    sort_hits(&mut hits);
    hits.truncate(limit);
    hits
}

/// Dense hits: (1 + cosine) / 2 of each document vector of the query's length, best first.
fn dense(docs: &BTreeMap<MemoryId, IndexDoc>, q: &[f32], limit: usize) -> Vec<Hit> {
    let mut hits: Vec<Hit> = docs
        .values()
        .filter_map(|d| {
            // None for another length or a zero vector.
            let cos = cosine(d.embedding.as_deref()?, q)? as f32;
            Some(Hit { id: d.id, score: ((1.0 + cos) / 2.0).clamp(0.0, 1.0) })
        })
        .collect();
    sort_hits(&mut hits);
    hits.truncate(limit);
    hits
}

#[async_trait]
impl Index for MemoryIndex {
    async fn upsert(&self, docs: Vec<IndexDoc>) -> Result<()> {
        let mut g = self.lock()?;
        for d in docs {
            // Ids are unique across namespaces: a document moves with its id.
            for other in g.docs.values_mut() {
                other.remove(&d.id);
            }
            g.docs.entry(d.namespace.clone()).or_default().insert(d.id, d);
        }
        Ok(())
    }

    async fn remove(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<()> {
        let mut g = self.lock()?;
        // Only within the namespace asked: the partition holds for removals too.
        if let Some(docs) = g.docs.get_mut(namespace) {
            for id in ids {
                docs.remove(id);
            }
        }
        Ok(())
    }

    async fn search(&self, q: &SearchQuery) -> Result<Vec<Hit>> {
        let g = self.lock()?;
        let Some(docs) = g.docs.get(&q.namespace) else { return Ok(vec![]) };
        let dense_of = |limit| q.embedding.as_deref().map(|e| dense(docs, e, limit)).unwrap_or_default();
        Ok(match q.mode {
            SearchMode::Lexical => lexical(docs, &q.text, q.limit),
            SearchMode::Dense => dense_of(q.limit),
            SearchMode::Hybrid => {
                let depth = fusion_depth(q.limit);
                let ids = |hits: Vec<Hit>| hits.into_iter().map(|h| h.id).collect::<Vec<_>>();
                let (lex, den) = (ids(lexical(docs, &q.text, depth)), ids(dense_of(depth)));
                let f = FusionSettings::default();
                rrf(&[(f.lexical_weight, &lex), (f.dense_weight, &den)], f.rrf_k, q.limit)
            }
        })
    }

    async fn state(&self) -> Result<IndexState> {
        Ok(IndexState::UpTo(self.lock()?.durable_watermark))
    }

    async fn set_watermark(&self, rev: u64) -> Result<()> {
        self.lock()?.watermark = rev;
        Ok(())
    }

    async fn flush(&self) -> Result<()> {
        let mut g = self.lock()?;
        g.durable_watermark = g.watermark;
        g.durable_stamp = g.stamp.clone();
        Ok(())
    }

    async fn clear(&self) -> Result<()> {
        *self.lock()? = Inner::default();
        Ok(())
    }

    async fn stamp(&self) -> Result<Option<IndexStamp>> {
        Ok(self.lock()?.durable_stamp.clone())
    }

    async fn set_stamp(&self, stamp: IndexStamp) -> Result<()> {
        self.lock()?.stamp = Some(stamp);
        Ok(())
    }
}
