//! The uncommitted overlay: documents upserted or removed since the last commit, which a
//! search must see at once although tantivy shows them only after a commit. A search merges
//! the overlay's own BM25 scores with the committed segments' (both computed with the same
//! statistics: committed + overlay) and filters out committed versions that the overlay
//! superseded or removed.
use std::collections::{HashMap, HashSet};

use mnemo_core::{MemoryId, Namespace};
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight};
use tantivy::schema::Field;
use tantivy::{Searcher, Term};

/// One uncommitted document.
struct ODoc {
    ns: Namespace,
    tf: Vec<(String, u32)>,
    len: u32,
}

/// Uncommitted changes (see the module docs).
#[derive(Default)]
pub struct Overlay {
    docs: HashMap<MemoryId, ODoc>,
    postings: HashMap<String, HashSet<MemoryId>>,
    tokens: u64,
    /// Ids upserted since the commit: any committed version of them is stale.
    hidden: HashSet<MemoryId>,
    /// How many of `hidden` were upserted into each namespace (ids never change namespace, so
    /// this bounds the committed hits of a namespace that the overlay can hide).
    hidden_in: HashMap<Namespace, usize>,
    /// Ids removed from a namespace since the commit.
    removed: HashMap<Namespace, HashSet<MemoryId>>,
    /// Changes since the commit (upserts + removals).
    pub pending: usize,
}

impl Overlay {
    /// Add or replace an uncommitted document from its tokens.
    pub fn put(&mut self, id: MemoryId, ns: &Namespace, tokens: &[String]) {
        self.drop_doc(id);
        let mut tf: HashMap<&str, u32> = HashMap::new();
        for t in tokens {
            *tf.entry(t.as_str()).or_insert(0) += 1;
        }
        for t in tf.keys() {
            self.postings.entry((*t).to_string()).or_default().insert(id);
        }
        self.tokens += tokens.len() as u64;
        let tf = tf.into_iter().map(|(t, f)| (t.to_string(), f)).collect();
        self.docs.insert(id, ODoc { ns: ns.clone(), tf, len: tokens.len() as u32 });
        if self.hidden.insert(id) {
            *self.hidden_in.entry(ns.clone()).or_default() += 1;
        }
        if let Some(r) = self.removed.get_mut(ns) {
            r.remove(&id);
        }
        self.pending += 1;
    }

    /// Remove `id` from `ns` (an uncommitted version too).
    pub fn remove(&mut self, ns: &Namespace, id: MemoryId) {
        if self.docs.get(&id).is_some_and(|d| &d.ns == ns) {
            self.drop_doc(id);
        }
        self.removed.entry(ns.clone()).or_default().insert(id);
        self.pending += 1;
    }

    fn drop_doc(&mut self, id: MemoryId) {
        let Some(d) = self.docs.remove(&id) else { return };
        self.tokens -= u64::from(d.len);
        for (t, _) in d.tf {
            if let Some(p) = self.postings.get_mut(&t) {
                p.remove(&id);
                if p.is_empty() {
                    self.postings.remove(&t);
                }
            }
        }
    }

    /// Whether the committed version of `id` must not be returned in `ns`.
    pub fn hides(&self, ns: &Namespace, id: MemoryId) -> bool {
        self.hidden.contains(&id) || self.removed.get(ns).is_some_and(|r| r.contains(&id))
    }

    /// How many committed hits of `ns` the overlay may hide at most.
    pub fn hidden_bound(&self, ns: &Namespace) -> usize {
        self.hidden_in.get(ns).copied().unwrap_or(0) + self.removed.get(ns).map_or(0, |r| r.len())
    }

    /// Forget everything (after a commit made it durable, or a clear).
    pub fn clear(&mut self) {
        *self = Overlay::default();
    }

    /// BM25 scores of the overlay's documents of `ns` for terms with their weights.
    pub fn score(&self, ns: &Namespace, weights: &[(String, Bm25Weight)]) -> Vec<(MemoryId, f32)> {
        let mut scores: HashMap<MemoryId, f32> = HashMap::new();
        for (t, w) in weights {
            let Some(p) = self.postings.get(t) else { continue };
            for id in p {
                let Some(d) = self.docs.get(id) else { continue };
                if &d.ns != ns {
                    continue;
                }
                let tf = d.tf.iter().find(|(x, _)| x == t).map_or(0, |x| x.1);
                *scores.entry(*id).or_insert(0.0) += w.score(FieldNormReader::fieldnorm_to_id(d.len), tf);
            }
        }
        scores.into_iter().collect()
    }
}

/// BM25 statistics over the committed segments and the overlay together, so that scores of
/// both are comparable.
pub struct Stats<'a> {
    /// The committed view.
    pub searcher: &'a Searcher,
    /// The overlay.
    pub overlay: &'a Overlay,
}

impl Bm25StatisticsProvider for Stats<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        Ok((self.searcher.total_num_tokens(field)? + self.overlay.tokens).max(1))
    }
    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok((Bm25StatisticsProvider::total_num_docs(self.searcher)? + self.overlay.docs.len() as u64).max(1))
    }
    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let o = term.value().as_str().and_then(|t| self.overlay.postings.get(t)).map_or(0, |p| p.len() as u64);
        Ok(self.searcher.doc_freq(term)? + o)
    }
}
