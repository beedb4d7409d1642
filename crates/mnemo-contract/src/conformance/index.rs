//! The Index conformance suite: every `Index` backend's tests run `run_all` with a factory.
//!
//! The factory takes a slot number and returns an index for that slot: each check uses slots
//! of its own; calling the factory again with the same slot after every handle of the earlier
//! instance was dropped REOPENS it (for a persistent backend, from its storage; for an
//! in-memory one, a fresh empty instance). `persists` says which, so that the durability checks
//! (removal survives a reopen, the watermark survives a reopen) run where they mean something.
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::model::{MemoryId, Namespace};
use crate::{Hit, Index, IndexDoc, IndexState, SearchMode, SearchQuery};

/// Dimensions of the suite's hand-made vectors.
pub const DIMS: usize = 8;

/// A factory of index instances by slot (see the module docs).
pub trait IndexMaker: Send + Sync {
    /// Open (or create) the index of `slot`.
    fn open(&self, slot: usize) -> Arc<dyn Index>;
}

impl<F: Fn(usize) -> Arc<dyn Index> + Send + Sync> IndexMaker for F {
    fn open(&self, slot: usize) -> Arc<dyn Index> {
        self(slot)
    }
}

/// Hands out fresh slot numbers.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

fn slot() -> usize {
    NEXT_SLOT.fetch_add(1, Ordering::SeqCst)
}

/// Run every check. `persists`: whether a reopened instance keeps its committed state.
pub async fn run_all<M: IndexMaker>(make: M, persists: bool) {
    read_your_writes(&*make.open(slot())).await;
    namespace_partition(&*make.open(slot())).await;
    remove_is_final(&make, persists).await;
    upsert_replaces(&*make.open(slot())).await;
    lexical_rare_word_first(&*make.open(slot())).await;
    dense_nearest_first(&*make.open(slot())).await;
    hybrid_without_embedding(&*make.open(slot())).await;
    scores_in_range_and_sorted(&*make.open(slot())).await;
    limit_respected(&*make.open(slot())).await;
    watermark_state(&make, persists).await;
    clear_empties(&*make.open(slot())).await;
}

/// A namespace by name.
pub fn ns(s: &str) -> Namespace {
    Namespace::new(s).unwrap()
}

/// A unit vector along axis `i` (mod DIMS), tilted slightly toward axis `j`.
pub fn axis(i: usize, j: usize, tilt: f32) -> Vec<f32> {
    let mut v = [0.0f32; DIMS];
    v[i % DIMS] = 1.0;
    v[j % DIMS] += tilt;
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

/// A document.
pub fn doc(id: i64, namespace: &str, content: &str, embedding: Option<Vec<f32>>) -> IndexDoc {
    IndexDoc {
        id: MemoryId(id),
        namespace: ns(namespace),
        content: content.to_string(),
        entities: vec![],
        embedding,
        rev: id as u64,
    }
}

/// A query.
pub fn query(namespace: &str, text: &str, embedding: Option<Vec<f32>>, mode: SearchMode, limit: usize) -> SearchQuery {
    SearchQuery { namespace: ns(namespace), text: text.to_string(), embedding, limit, mode }
}

fn ids(hits: &[Hit]) -> Vec<i64> {
    hits.iter().map(|h| h.id.0).collect()
}

async fn lexical_ids(idx: &dyn Index, namespace: &str, text: &str) -> Vec<i64> {
    ids(&idx.search(&query(namespace, text, None, SearchMode::Lexical, 50)).await.unwrap())
}

/// Upserted documents are searchable at once, without a flush, by every mode.
pub async fn read_your_writes(idx: &dyn Index) {
    idx.upsert(vec![doc(1, "a", "the zebra crossed the road", Some(axis(0, 1, 0.0)))]).await.unwrap();
    assert_eq!(lexical_ids(idx, "a", "zebra").await, vec![1], "lexical: a fresh upsert must be found before any flush");
    let d = idx.search(&query("a", "zebra", Some(axis(0, 1, 0.0)), SearchMode::Dense, 5)).await.unwrap();
    assert_eq!(ids(&d), vec![1], "dense: a fresh upsert must be found before any flush");
    let h = idx.search(&query("a", "zebra", Some(axis(0, 1, 0.0)), SearchMode::Hybrid, 5)).await.unwrap();
    assert_eq!(ids(&h), vec![1], "hybrid: a fresh upsert must be found before any flush");
    // Again after a flush, with a second document that is only in memory.
    idx.flush().await.unwrap();
    idx.upsert(vec![doc(2, "a", "a zebra and a lion", Some(axis(1, 0, 0.0)))]).await.unwrap();
    let mut got = lexical_ids(idx, "a", "zebra").await;
    got.sort();
    assert_eq!(got, vec![1, 2], "flushed and unflushed documents are both searchable");
}

/// The same text in two namespaces never crosses over.
pub async fn namespace_partition(idx: &dyn Index) {
    let v = axis(2, 3, 0.1);
    idx.upsert(vec![doc(10, "alpha", "shared secret platypus", Some(v.clone()))]).await.unwrap();
    idx.flush().await.unwrap();
    idx.upsert(vec![doc(11, "beta", "shared secret platypus", Some(v.clone()))]).await.unwrap();
    for mode in [SearchMode::Lexical, SearchMode::Dense, SearchMode::Hybrid] {
        let a = idx.search(&query("alpha", "platypus", Some(v.clone()), mode, 10)).await.unwrap();
        let b = idx.search(&query("beta", "platypus", Some(v.clone()), mode, 10)).await.unwrap();
        assert_eq!(ids(&a), vec![10], "{mode:?}: namespace alpha must see only its own document");
        assert_eq!(ids(&b), vec![11], "{mode:?}: namespace beta must see only its own document");
        let c = idx.search(&query("gamma", "platypus", Some(v.clone()), mode, 10)).await.unwrap();
        assert!(c.is_empty(), "{mode:?}: an empty namespace finds nothing");
    }
    // A removal names its namespace: removing 11 from alpha must not touch beta's document.
    idx.remove(&ns("alpha"), &[MemoryId(11)]).await.unwrap();
    assert_eq!(lexical_ids(idx, "beta", "platypus").await, vec![11], "a removal in another namespace must not remove");
}

/// A removed document is never returned again: at once, after a flush, and after a reopen.
pub async fn remove_is_final<M: IndexMaker>(make: &M, persists: bool) {
    let s = slot();
    let idx = make.open(s);
    idx.upsert(vec![
        doc(20, "a", "ancient mariner albatross", Some(axis(4, 5, 0.0))),
        doc(21, "a", "albatross", Some(axis(4, 5, 0.2))),
        doc(22, "a", "unrelated mariner text", None),
    ])
    .await
    .unwrap();
    idx.flush().await.unwrap();
    idx.remove(&ns("a"), &[MemoryId(20)]).await.unwrap();
    idx.upsert(vec![doc(23, "a", "albatross soup", None)]).await.unwrap();
    idx.remove(&ns("a"), &[MemoryId(23)]).await.unwrap();
    let check = |when: &'static str| {
        let idx = idx.clone();
        async move {
            for mode in [SearchMode::Lexical, SearchMode::Dense, SearchMode::Hybrid] {
                let h = idx
                    .search(&query("a", "ancient mariner albatross soup", Some(axis(4, 5, 0.0)), mode, 10))
                    .await
                    .unwrap();
                assert!(
                    !ids(&h).contains(&20) && !ids(&h).contains(&23),
                    "{when}, {mode:?}: removed documents came back: {h:?}"
                );
                assert!(ids(&h).contains(&21), "{when}, {mode:?}: a kept document went missing: {h:?}");
            }
        }
    };
    check("before flush").await;
    idx.flush().await.unwrap();
    check("after flush").await;
    if persists {
        drop(idx);
        let idx = make.open(s);
        for mode in [SearchMode::Lexical, SearchMode::Dense, SearchMode::Hybrid] {
            let h = idx
                .search(&query("a", "ancient mariner albatross soup", Some(axis(4, 5, 0.0)), mode, 10))
                .await
                .unwrap();
            assert!(
                !ids(&h).contains(&20) && !ids(&h).contains(&23),
                "after reopen, {mode:?}: removed documents came back: {h:?}"
            );
            assert!(ids(&h).contains(&21), "after reopen, {mode:?}: a kept document went missing: {h:?}");
        }
    }
}

/// Upserting an id again replaces it: the new content is found, the old is not.
pub async fn upsert_replaces(idx: &dyn Index) {
    idx.upsert(vec![doc(30, "a", "my favourite colour is turquoise", Some(axis(0, 1, 0.0)))]).await.unwrap();
    idx.flush().await.unwrap();
    idx.upsert(vec![doc(30, "a", "my favourite colour is vermilion", Some(axis(6, 7, 0.0)))]).await.unwrap();
    for when in ["before flush", "after flush"] {
        assert!(lexical_ids(idx, "a", "turquoise").await.is_empty(), "{when}: old content still found");
        assert_eq!(lexical_ids(idx, "a", "vermilion").await, vec![30], "{when}: new content not found");
        assert_eq!(lexical_ids(idx, "a", "favourite colour").await, vec![30], "{when}: the id must appear once");
        let d = idx.search(&query("a", "", Some(axis(6, 7, 0.0)), SearchMode::Dense, 5)).await.unwrap();
        assert_eq!(ids(&d), vec![30], "{when}: the new vector must be the one searched");
        assert!(d[0].score > 0.99, "{when}: the old vector must be gone: {d:?}");
        idx.flush().await.unwrap();
    }
}

/// A rare word ranks its document first lexically.
pub async fn lexical_rare_word_first(idx: &dyn Index) {
    let mut docs: Vec<IndexDoc> =
        (0..30).map(|i| doc(100 + i, "a", &format!("we talked about the weather again, day {i}"), None)).collect();
    docs.push(doc(200, "a", "we talked about the weather and the quokka", None));
    idx.upsert(docs).await.unwrap();
    let h = idx.search(&query("a", "what about the quokka weather", None, SearchMode::Lexical, 10)).await.unwrap();
    assert_eq!(h.first().map(|h| h.id.0), Some(200), "the rare word's document must rank first: {h:?}");
    // Entities are searchable too.
    let mut e = doc(201, "a", "met someone at the conference", None);
    e.entities = vec!["zanzibar".into()];
    idx.upsert(vec![e]).await.unwrap();
    assert_eq!(lexical_ids(idx, "a", "zanzibar").await, vec![201], "entities must be indexed with the text");
}

/// The nearest vector ranks first densely.
pub async fn dense_nearest_first(idx: &dyn Index) {
    idx.upsert(vec![
        doc(300, "a", "one", Some(axis(0, 1, 0.9))),
        doc(301, "a", "two", Some(axis(0, 1, 0.1))),
        doc(302, "a", "three", Some(axis(3, 1, 0.0))),
        doc(303, "a", "four", None),
    ])
    .await
    .unwrap();
    let h = idx.search(&query("a", "", Some(axis(0, 1, 0.0)), SearchMode::Dense, 10)).await.unwrap();
    assert_eq!(h.first().map(|h| h.id.0), Some(301), "the nearest vector must rank first: {h:?}");
    assert_eq!(h.get(1).map(|h| h.id.0), Some(300), "then the next nearest: {h:?}");
    assert!(!ids(&h).contains(&303), "a document without a vector has no dense rank");
}

/// Hybrid search works when a document (or the query) has no embedding.
pub async fn hybrid_without_embedding(idx: &dyn Index) {
    idx.upsert(vec![
        doc(400, "a", "the capybara sleeps", None),
        doc(401, "a", "the heron fishes", Some(axis(2, 0, 0.0))),
    ])
    .await
    .unwrap();
    let h = idx.search(&query("a", "capybara", Some(axis(5, 0, 0.0)), SearchMode::Hybrid, 10)).await.unwrap();
    assert_eq!(
        h.first().map(|h| h.id.0),
        Some(400),
        "hybrid must find a document without a vector by its words: {h:?}"
    );
    let h = idx.search(&query("a", "heron", None, SearchMode::Hybrid, 10)).await.unwrap();
    assert_eq!(ids(&h), vec![401], "hybrid with no query vector falls back to the words: {h:?}");
}

/// Scores are in 0..=1 and sorted descending, in every mode.
pub async fn scores_in_range_and_sorted(idx: &dyn Index) {
    let docs: Vec<IndexDoc> = (0..40)
        .map(|i| {
            let text = format!(
                "note {i} about apples {} pears {}",
                "apples ".repeat(i as usize % 5),
                "pears ".repeat(i as usize % 3)
            );
            doc(500 + i, "a", &text, Some(axis(i as usize, i as usize + 1, 0.3)))
        })
        .collect();
    idx.upsert(docs).await.unwrap();
    for mode in [SearchMode::Lexical, SearchMode::Dense, SearchMode::Hybrid] {
        let h = idx.search(&query("a", "apples pears", Some(axis(1, 2, 0.3)), mode, 40)).await.unwrap();
        assert!(!h.is_empty(), "{mode:?}: found nothing");
        assert!(h.iter().all(|x| (0.0..=1.0).contains(&x.score)), "{mode:?}: a score is outside 0..=1: {h:?}");
        assert!(h.windows(2).all(|w| w[0].score >= w[1].score), "{mode:?}: scores not descending: {h:?}");
        let mut seen = ids(&h);
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), h.len(), "{mode:?}: an id appears twice");
    }
}

/// `limit` caps the hits.
pub async fn limit_respected(idx: &dyn Index) {
    let docs: Vec<IndexDoc> =
        (0..25).map(|i| doc(600 + i, "a", "limit test words", Some(axis(1, i as usize, 0.5)))).collect();
    idx.upsert(docs).await.unwrap();
    for mode in [SearchMode::Lexical, SearchMode::Dense, SearchMode::Hybrid] {
        for limit in [0, 1, 7] {
            let h = idx.search(&query("a", "limit words", Some(axis(1, 2, 0.5)), mode, limit)).await.unwrap();
            assert_eq!(h.len(), limit, "{mode:?}: limit {limit} gave {} hits", h.len());
        }
    }
}

/// `state()` reports the watermark after `set_watermark` + `flush` (and after a reopen where
/// the backend persists).
pub async fn watermark_state<M: IndexMaker>(make: &M, persists: bool) {
    let s = slot();
    let idx = make.open(s);
    if persists {
        // A new persistent index must be cleared before use (it is stale or at 0).
        idx.clear().await.unwrap();
    }
    assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(0), "a fresh (or cleared) index is at 0");
    idx.upsert(vec![doc(700, "a", "watermark words", None)]).await.unwrap();
    idx.set_watermark(42).await.unwrap();
    idx.flush().await.unwrap();
    assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(42));
    if persists {
        drop(idx);
        let idx = make.open(s);
        assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(42), "the watermark must survive a reopen");
        assert_eq!(lexical_ids(&*idx, "a", "watermark").await, vec![700], "the documents it covers must survive too");
    }
}

/// `clear()` empties the index and resets the watermark.
pub async fn clear_empties(idx: &dyn Index) {
    idx.upsert(vec![doc(800, "a", "to be cleared", Some(axis(0, 0, 0.0)))]).await.unwrap();
    idx.flush().await.unwrap();
    idx.upsert(vec![doc(801, "a", "to be cleared too", Some(axis(0, 0, 0.0)))]).await.unwrap();
    idx.set_watermark(9).await.unwrap();
    idx.clear().await.unwrap();
    for mode in [SearchMode::Lexical, SearchMode::Dense, SearchMode::Hybrid] {
        let h = idx.search(&query("a", "cleared", Some(axis(0, 0, 0.0)), mode, 10)).await.unwrap();
        assert!(h.is_empty(), "{mode:?}: documents survived clear(): {h:?}");
    }
    assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(0), "clear() resets the watermark");
    idx.upsert(vec![doc(802, "a", "cleared then refilled", None)]).await.unwrap();
    assert_eq!(lexical_ids(idx, "a", "refilled").await, vec![802], "a cleared index takes new documents");
}
