//! What one searcher generation's committed segments answer the same way every time, kept
//! until the next commit makes a new generation: each (namespace, term)'s committed document
//! frequency, and each segment's `id` column.
//!
//! Why: a lexical search asks each query term's namespace-local document frequency twice (for
//! the query's best attainable score, then inside tantivy's weight), and each is a count of the
//! intersection of the term's postings with the namespace's (O(df)); and it opened the `id`
//! column of each segment it read hits from. Measured at 100k (profile of `bench scale`), those
//! were 22% and 14% of the lexical search, plus the weight's own counts inside tantivy's share.
//! Both depend only on the committed segments, so they are exact for as long as the
//! generation lives; the overlay's share of a frequency is still counted at each search.
//!
//! A searcher of another generation than the cached one (an older one still in use while a
//! commit reloaded) neither reads nor fills the cache. A cleared index starts its generations
//! anew, so `clear` empties it.
use std::collections::HashMap;
use std::sync::Mutex;

use mnemo_contract::Namespace;
use tantivy::columnar::Column;
use tantivy::SegmentOrdinal;

/// Frequencies kept at most; past it the cache starts over (queries' vocabularies are small).
const MAX_TERMS: usize = 65_536;

#[derive(Default)]
struct Generation {
    id: u64,
    doc_freqs: HashMap<(Namespace, String), u64>,
    id_columns: HashMap<SegmentOrdinal, Column<i64>>,
}

/// The cache (see the module docs).
#[derive(Default)]
pub(crate) struct SearcherCache {
    inner: Mutex<Option<Generation>>,
}

impl SearcherCache {
    /// Run `f` on the cached state of generation `id` when it is (or becomes) the current one;
    /// None for an older generation or a poisoned lock.
    fn with<T>(&self, id: u64, f: impl FnOnce(&mut Generation) -> T) -> Option<T> {
        let mut g = self.inner.lock().ok()?;
        match g.as_ref() {
            Some(cur) if cur.id > id => return None,
            Some(cur) if cur.id == id => {}
            _ => *g = Some(Generation { id, ..Generation::default() }),
        }
        g.as_mut().map(f)
    }

    /// The committed document frequency of `term` in `ns` at generation `id`, computed by
    /// `count` when not cached.
    pub(crate) fn doc_freq(
        &self,
        id: u64,
        ns: &Namespace,
        term: &str,
        count: impl FnOnce() -> tantivy::Result<u64>,
    ) -> tantivy::Result<u64> {
        let key = (ns.clone(), term.to_string());
        if let Some(Some(n)) = self.with(id, |g| g.doc_freqs.get(&key).copied()) {
            return Ok(n);
        }
        let n = count()?;
        self.with(id, |g| {
            if g.doc_freqs.len() >= MAX_TERMS {
                g.doc_freqs.clear();
            }
            g.doc_freqs.insert(key, n);
        });
        Ok(n)
    }

    /// The `id` column of segment `segment` at generation `id`, opened by `open` when not cached.
    pub(crate) fn id_column(
        &self,
        id: u64,
        segment: SegmentOrdinal,
        open: impl FnOnce() -> tantivy::Result<Column<i64>>,
    ) -> tantivy::Result<Column<i64>> {
        if let Some(Some(c)) = self.with(id, |g| g.id_columns.get(&segment).cloned()) {
            return Ok(c);
        }
        let c = open()?;
        self.with(id, |g| g.id_columns.insert(segment, c.clone()));
        Ok(c)
    }

    /// Forget everything (the index was cleared: its generations start anew).
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

    #[test]
    fn a_generation_is_counted_once_and_an_older_one_is_not_cached() {
        let c = SearcherCache::default();
        let ns = Namespace::default();
        let mut counted = 0;
        for _ in 0..3 {
            let n = c
                .doc_freq(2, &ns, "ben", || {
                    counted += 1;
                    Ok(7)
                })
                .ok();
            assert_eq!(n, Some(7));
        }
        assert_eq!(counted, 1, "counted once for generation 2");
        // An older searcher counts for itself and leaves generation 2's cache as it is.
        assert_eq!(c.doc_freq(1, &ns, "ben", || Ok(5)).ok(), Some(5));
        assert_eq!(c.doc_freq(2, &ns, "ben", || Ok(99)).ok(), Some(7));
        // A newer generation starts over.
        assert_eq!(c.doc_freq(3, &ns, "ben", || Ok(8)).ok(), Some(8));
        assert_eq!(c.terms(), 1);
        c.clear();
        assert_eq!(c.terms(), 0);
        assert_eq!(c.doc_freq(1, &ns, "ben", || Ok(4)).ok(), Some(4), "after a clear, generations start anew");
    }
}
