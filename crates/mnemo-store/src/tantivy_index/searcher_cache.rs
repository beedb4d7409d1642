//! What one searcher generation's committed segments answer the same way every time, kept
//! until the next commit makes a new generation: each namespace's committed documents and
//! their total length, each (namespace, term)'s committed document frequency, and each
//! segment's `id` column.
//!
//! Why: a lexical search asks each query term's namespace-local document frequency twice (for
//! the query's best attainable score, then inside tantivy's weight), and each is a count of the
//! intersection of the term's postings with the namespace's (O(df)); and it opened the `id`
//! column of each segment it read hits from. Measured at 100k (profile of `bench scale`), those
//! were 22% and 14% of the lexical search, plus the weight's own counts inside tantivy's share.
//! The namespace sizes were already kept so, by the generation's number alone (see below).
//! All depend only on the committed segments, so they are exact for as long as the
//! generation lives; the overlay's share of a frequency is still counted at each search.
//!
//! The key is the whole `SearcherGeneration`: its id and each segment's id (random) and delete
//! opstamp, so a cached value is served only to a searcher over exactly those segments. The id
//! alone would not do: a reader counts its generations from 0, and a cleared on-disk index gets
//! a new reader. A searcher of any other generation replaces the cached one (the index reloads
//! only under its write lock, which no search holds, so two generations do not alternate).
//! `clear` empties it too, to free what the old index's generation held.
use std::collections::HashMap;
use std::sync::Mutex;

use mnemo_contract::Namespace;
use tantivy::columnar::Column;
use tantivy::{SearcherGeneration, SegmentOrdinal, Term};

/// Frequencies kept at most; past it the cache starts over (queries' vocabularies are small).
const MAX_TERMS: usize = 65_536;

struct Generation<K> {
    key: K,
    ns_sizes: HashMap<Namespace, (u64, u64)>,
    doc_freqs: HashMap<(Namespace, Term), u64>,
    id_columns: HashMap<SegmentOrdinal, Column<i64>>,
}

/// The cache (see the module docs), by generation key `K` (tantivy's in the index; tests use
/// plain numbers).
pub(crate) struct SearcherCache<K = SearcherGeneration> {
    inner: Mutex<Option<Generation<K>>>,
}

impl<K> Default for SearcherCache<K> {
    fn default() -> Self {
        SearcherCache { inner: Mutex::new(None) }
    }
}

impl<K: Clone + PartialEq> SearcherCache<K> {
    /// Run `f` on the cached state of generation `key`, which replaces any other (None: a
    /// poisoned lock; the caller then computes without the cache).
    fn with<T>(&self, key: &K, f: impl FnOnce(&mut Generation<K>) -> T) -> Option<T> {
        let mut g = self.inner.lock().ok()?;
        if g.as_ref().is_none_or(|cur| cur.key != *key) {
            *g = Some(Generation {
                key: key.clone(),
                ns_sizes: HashMap::new(),
                doc_freqs: HashMap::new(),
                id_columns: HashMap::new(),
            });
        }
        g.as_mut().map(f)
    }

    /// The committed (documents, total length) of `ns` at generation `key`, computed by
    /// `count` when not cached.
    pub(crate) fn ns_sizes(
        &self,
        key: &K,
        ns: &Namespace,
        count: impl FnOnce() -> tantivy::Result<(u64, u64)>,
    ) -> tantivy::Result<(u64, u64)> {
        if let Some(Some(s)) = self.with(key, |g| g.ns_sizes.get(ns).copied()) {
            return Ok(s);
        }
        let s = count()?;
        self.with(key, |g| g.ns_sizes.insert(ns.clone(), s));
        Ok(s)
    }

    /// The committed document frequency of `term` in `ns` at generation `key`, computed by
    /// `count` when not cached.
    pub(crate) fn doc_freq(
        &self,
        key: &K,
        ns: &Namespace,
        term: &Term,
        count: impl FnOnce() -> tantivy::Result<u64>,
    ) -> tantivy::Result<u64> {
        let k = (ns.clone(), term.clone());
        if let Some(Some(n)) = self.with(key, |g| g.doc_freqs.get(&k).copied()) {
            return Ok(n);
        }
        let n = count()?;
        self.with(key, |g| {
            if g.doc_freqs.len() >= MAX_TERMS {
                g.doc_freqs.clear();
            }
            g.doc_freqs.insert(k, n);
        });
        Ok(n)
    }

    /// The `id` column of segment `segment` at generation `key`, opened by `open` when not cached.
    pub(crate) fn id_column(
        &self,
        key: &K,
        segment: SegmentOrdinal,
        open: impl FnOnce() -> tantivy::Result<Column<i64>>,
    ) -> tantivy::Result<Column<i64>> {
        if let Some(Some(c)) = self.with(key, |g| g.id_columns.get(&segment).cloned()) {
            return Ok(c);
        }
        let c = open()?;
        self.with(key, |g| g.id_columns.insert(segment, c.clone()));
        Ok(c)
    }

    /// Forget everything (the index was cleared).
    pub(crate) fn clear(&self) {
        if let Ok(mut g) = self.inner.lock() {
            *g = None;
        }
    }

    /// Frequencies held (for tests).
    #[cfg(test)]
    pub(crate) fn terms(&self) -> usize {
        self.inner.lock().ok().and_then(|g| g.as_ref().map(|g| g.doc_freqs.len())).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::Field;

    #[test]
    fn a_generation_is_counted_once_and_any_other_replaces_it() {
        let c: SearcherCache<u64> = SearcherCache::default();
        let ns = Namespace::default();
        let ben = Term::from_field_text(Field::from_field_id(0), "ben");
        let mut counted = 0;
        for _ in 0..3 {
            let n = c
                .doc_freq(&2, &ns, &ben, || {
                    counted += 1;
                    Ok(7)
                })
                .ok();
            assert_eq!(n, Some(7));
        }
        assert_eq!(counted, 1, "counted once for generation 2");
        // The same text in another field or namespace is another frequency.
        let other_field = Term::from_field_text(Field::from_field_id(1), "ben");
        assert_eq!(c.doc_freq(&2, &ns, &other_field, || Ok(3)).ok(), Some(3));
        let b = Namespace::new("b").ok().unwrap_or_default();
        assert_eq!(c.doc_freq(&2, &b, &ben, || Ok(4)).ok(), Some(4));
        assert_eq!(c.terms(), 3);
        let mut sized = 0;
        for _ in 0..2 {
            let s = c.ns_sizes(&2, &ns, || {
                sized += 1;
                Ok((10, 40))
            });
            assert_eq!(s.ok(), Some((10, 40)));
        }
        assert_eq!(sized, 1, "a namespace's sizes counted once per generation");
        // Any other generation, older or newer, starts over.
        assert_eq!(c.doc_freq(&1, &ns, &ben, || Ok(5)).ok(), Some(5));
        assert_eq!(c.terms(), 1);
        assert_eq!(c.doc_freq(&2, &ns, &ben, || Ok(9)).ok(), Some(9), "generation 2 counted again");
        c.clear();
        assert_eq!(c.terms(), 0);
    }
}
