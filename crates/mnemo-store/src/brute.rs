//! `BruteForceIndex`: an exact in-memory Index. Lexical = BM25 over `mnemo_contract::text::words`
//! of content + entities, with per-namespace statistics; dense = dot product of unit vectors
//! (cosine); hybrid = weighted reciprocal-rank fusion. Nothing persists: a new instance is
//! empty (`UpTo(0)`), and the engine refills it from the Store.
use std::collections::HashMap;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use mnemo_contract::registry::IndexContext;
use mnemo_contract::text::words;
use mnemo_contract::{CoreError, Hit, Index, IndexDoc, IndexState, MemoryId, Namespace, Result, SearchQuery};

use crate::fusion::search_by_mode;
use crate::vector::{FlatVectors, VectorIndex};
use mnemo_contract::fusion::{sort_hits, FusionSettings};

/// BM25 constants (the usual ones, as in tantivy and Lucene).
const K1: f32 = 1.2;
const B: f32 = 0.75;

/// One namespace's inverted index.
#[derive(Default)]
struct NsLex {
    /// Each document's length in words and its term frequencies.
    docs: HashMap<MemoryId, (u32, Vec<(String, u32)>)>,
    /// term → (doc → term frequency).
    postings: HashMap<String, HashMap<MemoryId, u32>>,
    /// Sum of document lengths.
    total_len: u64,
}

impl NsLex {
    fn add(&mut self, id: MemoryId, text: &str) {
        let mut tf: HashMap<String, u32> = HashMap::new();
        let mut len = 0u32;
        for w in words(text) {
            *tf.entry(w).or_insert(0) += 1;
            len += 1;
        }
        for (t, f) in &tf {
            self.postings.entry(t.clone()).or_default().insert(id, *f);
        }
        self.total_len += u64::from(len);
        self.docs.insert(id, (len, tf.into_iter().collect()));
    }

    fn remove(&mut self, id: MemoryId) {
        let Some((len, terms)) = self.docs.remove(&id) else { return };
        self.total_len -= u64::from(len);
        for (t, _) in terms {
            if let Some(p) = self.postings.get_mut(&t) {
                p.remove(&id);
                if p.is_empty() {
                    self.postings.remove(&t);
                }
            }
        }
    }

    /// BM25 scores divided by the query's best attainable score Σ idf·(k1+1), best first.
    fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let n = self.docs.len() as f32;
        if n == 0.0 {
            return vec![];
        }
        let avg = (self.total_len as f32 / n).max(1.0);
        let mut terms: Vec<String> = words(query).collect();
        terms.sort();
        terms.dedup();
        let mut scores: HashMap<MemoryId, f32> = HashMap::new();
        let mut max = 0.0f32;
        for t in &terms {
            let Some(p) = self.postings.get(t) else { continue };
            let df = p.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            max += idf * (K1 + 1.0);
            for (id, f) in p {
                let len = self.docs.get(id).map_or(0, |d| d.0) as f32;
                let f = *f as f32;
                *scores.entry(*id).or_insert(0.0) += idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * len / avg));
            }
        }
        if max <= 0.0 {
            return vec![];
        }
        let mut hits: Vec<Hit> =
            scores.into_iter().map(|(id, s)| Hit { id, score: (s / max).clamp(0.0, 1.0) }).collect();
        sort_hits(&mut hits);
        hits.truncate(limit);
        hits
    }
}

#[derive(Default)]
struct Inner {
    lex: HashMap<Namespace, NsLex>,
    vectors: FlatVectors,
    /// Each document's namespace (ids are unique across namespaces).
    ns_of: HashMap<MemoryId, Namespace>,
    watermark: u64,
}

impl Inner {
    fn remove_id(&mut self, id: MemoryId) {
        if let Some(ns) = self.ns_of.remove(&id) {
            if let Some(l) = self.lex.get_mut(&ns) {
                l.remove(id);
                if l.docs.is_empty() {
                    self.lex.remove(&ns);
                }
            }
        }
        self.vectors.remove(id);
    }
}

/// An exact, in-memory Index (see the module docs).
pub struct BruteForceIndex {
    inner: RwLock<Inner>,
    fusion: FusionSettings,
}

impl Default for BruteForceIndex {
    fn default() -> Self {
        BruteForceIndex { inner: RwLock::new(Inner::default()), fusion: FusionSettings::default() }
    }
}

impl BruteForceIndex {
    /// An empty index with the default fusion weights.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty index with these fusion weights (validated).
    pub fn with_fusion(fusion: FusionSettings) -> Result<Self> {
        fusion.validate()?;
        Ok(BruteForceIndex { inner: RwLock::new(Inner::default()), fusion })
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, Inner>> {
        self.inner.read().map_err(|_| {
            CoreError::index_message(
                mnemo_contract::IndexErrorKind::Other,
                "brute index lock poisoned by an earlier panic",
            )
        })
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, Inner>> {
        self.inner.write().map_err(|_| {
            CoreError::index_message(
                mnemo_contract::IndexErrorKind::Other,
                "brute index lock poisoned by an earlier panic",
            )
        })
    }
}

/// The text a document is searched by: its content and its entities.
pub fn indexed_text(doc: &IndexDoc) -> String {
    if doc.entities.is_empty() {
        doc.content.clone()
    } else {
        format!("{} {}", doc.content, doc.entities.join(" "))
    }
}

#[async_trait]
impl Index for BruteForceIndex {
    async fn upsert(&self, docs: Vec<IndexDoc>) -> Result<()> {
        let mut g = self.write()?;
        // Validate every vector first: a bad batch changes nothing.
        let dims = g.vectors.dims();
        crate::vector::check_batch(&docs, dims)?;
        for d in docs {
            g.remove_id(d.id);
            g.lex.entry(d.namespace.clone()).or_default().add(d.id, &indexed_text(&d));
            if let Some(v) = &d.embedding {
                g.vectors.upsert(&d.namespace, d.id, v)?;
            }
            g.ns_of.insert(d.id, d.namespace);
        }
        Ok(())
    }

    async fn remove(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<()> {
        let mut g = self.write()?;
        for id in ids {
            // Only within the namespace asked: the partition holds for removals too.
            if g.ns_of.get(id) == Some(namespace) {
                g.remove_id(*id);
            }
        }
        Ok(())
    }

    async fn search(&self, q: &SearchQuery) -> Result<Vec<Hit>> {
        let g = self.read()?;
        let lexical = |limit: usize| Ok(g.lex.get(&q.namespace).map(|l| l.search(&q.text, limit)).unwrap_or_default());
        search_by_mode(q, &self.fusion, &g.vectors, lexical)
    }

    async fn state(&self) -> Result<IndexState> {
        Ok(IndexState::UpTo(self.read()?.watermark))
    }

    async fn set_watermark(&self, rev: u64) -> Result<()> {
        self.write()?.watermark = rev;
        Ok(())
    }

    async fn flush(&self) -> Result<()> {
        Ok(())
    }

    async fn clear(&self) -> Result<()> {
        *self.write()? = Inner::default();
        Ok(())
    }
}

fn build(ctx: &IndexContext<'_>) -> Result<std::sync::Arc<dyn Index>> {
    let fusion: FusionSettings = ctx.settings()?;
    Ok(std::sync::Arc::new(BruteForceIndex::with_fusion(fusion)?))
}

mnemo_contract::register_index!(
    "brute",
    "exact in-memory index: BM25 + cosine, weighted rank fusion (not persisted)",
    build
);
