//! The uncommitted overlay: documents upserted or removed since the last commit, which a
//! search must see at once although tantivy shows them only after a commit. A search merges
//! the overlay's own BM25 scores with the committed segments' (both computed with the same
//! statistics: committed + overlay) and filters out committed versions that the overlay
//! superseded or removed.
//!
//! An upserted document is held as its text until a search first needs its terms
//! ([`Overlay::tokenise`]): tantivy analyses the text on its own indexing thread, and a bulk load
//! committed before any search would otherwise analyse every document a second time here.
use std::collections::{HashMap, HashSet};

use mnemo_contract::{MemoryId, Namespace};

use super::searcher_cache::SearcherCache;
use tantivy::collector::{Collector, Count, SegmentCollector};
use tantivy::fieldnorm::FieldNormReader;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight, BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{DocId, Score, Searcher, SegmentOrdinal, SegmentReader, Term};

/// One uncommitted document.
struct ODoc {
    ns: Namespace,
    tf: Vec<(String, u32)>,
    len: u32,
    /// Entity keys (`entity_match::entity_key`).
    entities: Vec<String>,
}

/// One uncommitted document whose text is not analysed yet.
struct RawDoc {
    ns: Namespace,
    text: String,
    entities: Vec<String>,
}

/// Uncommitted changes (see the module docs).
#[derive(Default)]
pub struct Overlay {
    docs: HashMap<MemoryId, ODoc>,
    /// Upserted since the commit and not analysed yet (no version of theirs is in `docs`).
    raw: HashMap<MemoryId, RawDoc>,
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
    /// Add or replace an uncommitted document from its indexed text and entity keys; its text
    /// is analysed when a search first needs it (`tokenise`).
    pub fn put(&mut self, id: MemoryId, ns: &Namespace, text: String, entities: Vec<String>) {
        self.drop_doc(id);
        self.raw.insert(id, RawDoc { ns: ns.clone(), text, entities });
        if self.hidden.insert(id) {
            match self.hidden_in.get_mut(ns) {
                Some(n) => *n += 1,
                None => {
                    self.hidden_in.insert(ns.clone(), 1);
                }
            }
        }
        if let Some(r) = self.removed.get_mut(ns) {
            r.remove(&id);
        }
        self.pending += 1;
    }

    /// Whether some documents wait for `tokenise` (a search must call it first to see them).
    pub fn needs_tokens(&self) -> bool {
        !self.raw.is_empty()
    }

    /// Analyse the documents put since the last call with `analyzer` (the index's), so that
    /// searches score them.
    pub fn tokenise(&mut self, analyzer: &mut TextAnalyzer) {
        for (id, d) in std::mem::take(&mut self.raw) {
            let tokens = super::schema::tokens(analyzer, &d.text);
            self.insert_tokens(id, d.ns, tokens, d.entities);
        }
    }

    /// File an analysed document (no version of it is in `docs`: `put` dropped it).
    fn insert_tokens(&mut self, id: MemoryId, ns: Namespace, mut tokens: Vec<String>, entities: Vec<String>) {
        let len = tokens.len() as u32;
        // Term frequencies by sorting the tokens in place: each distinct token's String is
        // moved, not copied, and a posting list that exists already costs no allocation
        // (a bulk load puts thousands of documents between two commits).
        tokens.sort_unstable();
        let mut tf: Vec<(String, u32)> = Vec::with_capacity(tokens.len());
        for t in tokens {
            match tf.last_mut() {
                Some((last, f)) if *last == t => *f += 1,
                _ => tf.push((t, 1)),
            }
        }
        for (t, _) in &tf {
            match self.postings.get_mut(t.as_str()) {
                Some(p) => {
                    p.insert(id);
                }
                None => {
                    self.postings.insert(t.clone(), HashSet::from([id]));
                }
            }
        }
        self.tokens += u64::from(len);
        self.docs.insert(id, ODoc { ns, tf, len, entities });
    }

    /// Remove `id` from `ns` (an uncommitted version too).
    pub fn remove(&mut self, ns: &Namespace, id: MemoryId) {
        if self.docs.get(&id).is_some_and(|d| &d.ns == ns) {
            self.drop_doc(id);
        }
        if self.raw.get(&id).is_some_and(|d| &d.ns == ns) {
            self.raw.remove(&id);
        }
        self.removed.entry(ns.clone()).or_default().insert(id);
        self.pending += 1;
    }

    /// Forget the uncommitted version of `id`, analysed or not.
    fn drop_doc(&mut self, id: MemoryId) {
        self.raw.remove(&id);
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

    /// The uncommitted documents of `ns` with an entity key in `keys`.
    pub fn entity_matches<'a>(
        &'a self,
        ns: &'a Namespace,
        keys: &'a HashSet<String>,
    ) -> impl Iterator<Item = MemoryId> + 'a {
        self.docs
            .iter()
            .filter(move |(_, d)| &d.ns == ns && d.entities.iter().any(|e| keys.contains(e)))
            .map(|(id, _)| *id)
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

/// BM25 statistics of ONE namespace, over the committed segments and the overlay together (so
/// that scores of both are comparable). Namespace-local, so that a tenant's scores never move
/// with another tenant's content: a word's rarity is judged among the namespace's own memories.
pub struct Stats<'a> {
    /// The committed view.
    pub searcher: &'a Searcher,
    /// The overlay.
    pub overlay: &'a Overlay,
    /// The namespace.
    pub ns: &'a Namespace,
    /// The namespace field (raw terms).
    pub ns_field: Field,
    /// (documents, tokens) of the namespace, committed + overlay (see `committed_sizes`).
    pub sizes: (u64, u64),
    /// The committed frequencies already counted for this searcher's generation.
    pub cache: &'a SearcherCache,
}

impl Stats<'_> {
    fn ns_term(&self) -> Term {
        Term::from_field_text(self.ns_field, self.ns.as_str())
    }
}

impl Overlay {
    /// Uncommitted documents of `ns` and their total length.
    pub fn ns_sizes(&self, ns: &Namespace) -> (u64, u64) {
        self.docs.values().filter(|d| &d.ns == ns).fold((0, 0), |a, d| (a.0 + 1, a.1 + u64::from(d.len)))
    }
}

/// Live committed documents of `ns` and their total length in `text_field` (a scan of the
/// namespace's documents: the caller caches it per searcher generation).
pub fn committed_sizes(
    searcher: &Searcher,
    ns_field: Field,
    text_field: Field,
    ns: &Namespace,
) -> tantivy::Result<(u64, u64)> {
    let q = TermQuery::new(Term::from_field_text(ns_field, ns.as_str()), IndexRecordOption::Basic);
    searcher.search(&q, &NsLength { field: text_field })
}

impl Bm25StatisticsProvider for Stats<'_> {
    fn total_num_tokens(&self, _field: Field) -> tantivy::Result<u64> {
        Ok(self.sizes.1.max(1))
    }
    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.sizes.0.max(1))
    }
    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let o = term.value().as_str().and_then(|t| self.overlay.postings.get(t)).map_or(0, |p| {
            p.iter().filter(|id| self.overlay.docs.get(id).is_some_and(|d| &d.ns == self.ns)).count() as u64
        });
        let committed = self.cache.doc_freq(self.searcher.generation(), self.ns, term, || {
            let q = BooleanQuery::new(vec![
                (Occur::Must, Box::new(TermQuery::new(term.clone(), IndexRecordOption::Basic)) as Box<dyn Query>),
                (Occur::Must, Box::new(TermQuery::new(self.ns_term(), IndexRecordOption::Basic))),
            ]);
            Ok(self.searcher.search(&q, &Count)? as u64)
        })?;
        Ok(committed + o)
    }
}

/// Counts the documents a query matches and sums their lengths in `field` (from the field
/// norms; deleted documents are skipped by tantivy).
struct NsLength {
    field: Field,
}

struct NsLengthSegment {
    norms: FieldNormReader,
    docs: u64,
    tokens: u64,
}

impl Collector for NsLength {
    type Fruit = (u64, u64);
    type Child = NsLengthSegment;

    fn for_segment(&self, _ord: SegmentOrdinal, reader: &SegmentReader) -> tantivy::Result<NsLengthSegment> {
        Ok(NsLengthSegment { norms: reader.get_fieldnorms_reader(self.field)?, docs: 0, tokens: 0 })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<(u64, u64)>) -> tantivy::Result<(u64, u64)> {
        Ok(fruits.into_iter().fold((0, 0), |a, f| (a.0 + f.0, a.1 + f.1)))
    }
}

impl SegmentCollector for NsLengthSegment {
    type Fruit = (u64, u64);

    fn collect(&mut self, doc: DocId, _score: Score) {
        self.docs += 1;
        self.tokens += u64::from(self.norms.fieldnorm(doc));
    }

    fn harvest(self) -> (u64, u64) {
        (self.docs, self.tokens)
    }
}
