//! The lexical search keeps each term's committed document frequency per searcher generation
//! (`tantivy_index/searcher_cache.rs`): after further commits, removals and a clear, its scores
//! must be exactly those of an index that was given the final documents at once, and never
//! those of an earlier generation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemo_contract::*;
use mnemo_store::tantivy_index::{TantivyIndex, TantivySettings};

fn ns(s: &str) -> Namespace {
    Namespace::new(s).unwrap()
}

fn doc(id: i64, namespace: &str, content: &str) -> IndexDoc {
    IndexDoc {
        id: MemoryId(id),
        namespace: ns(namespace),
        content: content.into(),
        entities: vec![],
        embedding: None,
        rev: 0,
    }
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(SimClock::new(Timestamp(1_780_000_000_000)))
}

fn index() -> TantivyIndex {
    TantivyIndex::in_memory(TantivySettings::default(), clock()).unwrap()
}

/// A new index given `docs` at once, committed.
async fn index_of(docs: Vec<IndexDoc>) -> TantivyIndex {
    let idx = index();
    idx.upsert(docs).await.unwrap();
    idx.flush().await.unwrap();
    idx
}

async fn scores(idx: &TantivyIndex, text: &str) -> Vec<(i64, u32)> {
    scores_in(idx, "a", text).await
}

async fn scores_in(idx: &TantivyIndex, namespace: &str, text: &str) -> Vec<(i64, u32)> {
    let q = SearchQuery {
        namespace: ns(namespace),
        text: text.into(),
        embedding: None,
        limit: 50,
        mode: SearchMode::Lexical,
    };
    idx.search(&q).await.unwrap().iter().map(|h| (h.id.0, h.score.to_bits())).collect()
}

/// Three kiwi documents and some others in namespace `a`, then more kiwi and a removal, each
/// step committed and searched (so each generation's frequencies are cached).
#[tokio::test]
async fn frequencies_follow_every_commit_and_a_clear() {
    let first: Vec<IndexDoc> = (1..=3)
        .map(|i| doc(i, "a", "kiwi mango"))
        .chain((4..=9).map(|i| doc(i, "a", "papaya mango")))
        .chain((20..=25).map(|i| doc(i, "b", "kiwi kiwi")))
        .collect();
    let more: Vec<IndexDoc> = (10..=15).map(|i| doc(i, "a", "kiwi lime")).collect();

    let stepwise = index();
    stepwise.upsert(first.clone()).await.unwrap();
    stepwise.flush().await.unwrap();
    let early = scores(&stepwise, "kiwi mango").await;
    stepwise.upsert(more.clone()).await.unwrap();
    stepwise.flush().await.unwrap();
    let _ = scores(&stepwise, "kiwi mango").await;
    stepwise.remove(&ns("a"), &[MemoryId(4), MemoryId(5)]).await.unwrap();
    stepwise.flush().await.unwrap();
    // Namespace `b` first, in the same generation: its frequencies are its own.
    assert_eq!(scores_in(&stepwise, "b", "kiwi mango").await.len(), 6);
    let late = scores(&stepwise, "kiwi mango").await;

    let mut all = first.clone();
    all.extend(more.clone());
    all.retain(|d| d.id != MemoryId(4) && d.id != MemoryId(5));
    let at_once = index_of(all).await;
    assert_eq!(late, scores(&at_once, "kiwi mango").await, "the frequencies of the last generation, exactly");
    assert_ne!(early, late, "kiwi grew more common in `a` and mango rarer: the scores moved");

    // A clear starts the generations anew: the frequencies of before must not be taken for them.
    stepwise.clear().await.unwrap();
    stepwise.upsert(first.clone()).await.unwrap();
    stepwise.flush().await.unwrap();
    let fresh = index_of(first).await;
    assert_eq!(scores(&stepwise, "kiwi mango").await, scores(&fresh, "kiwi mango").await);
    assert_eq!(scores(&stepwise, "kiwi mango").await, early);
}

/// An index on disk gets a new reader when it is cleared, whose searcher generations count from
/// the start again: the frequencies cached for the old index's generation of the same number
/// must not be served to the new one's.
#[tokio::test]
async fn a_cleared_index_on_disk_is_not_served_the_old_frequencies() {
    let dir = tempfile::tempdir().unwrap();
    let idx = TantivyIndex::open(dir.path(), TantivySettings::default(), clock()).unwrap();
    // Two commits, then a search: its generation's frequencies are cached.
    idx.upsert((1..=4).map(|i| doc(i, "a", "kiwi mango")).collect()).await.unwrap();
    idx.flush().await.unwrap();
    idx.upsert((5..=8).map(|i| doc(i, "a", "kiwi lime")).collect()).await.unwrap();
    idx.flush().await.unwrap();
    assert_eq!(scores(&idx, "kiwi mango").await.len(), 8);
    // Cleared (a new reader; the clear commits once), then one commit of other documents: the
    // search's generation has the number of the cached one again.
    idx.clear().await.unwrap();
    let after: Vec<IndexDoc> =
        (11..=13).map(|i| doc(i, "a", "kiwi mango")).chain((14..=20).map(|i| doc(i, "a", "papaya fig"))).collect();
    idx.upsert(after.clone()).await.unwrap();
    idx.flush().await.unwrap();
    let fresh = index_of(after).await;
    assert_eq!(scores(&idx, "kiwi mango").await, scores(&fresh, "kiwi mango").await);
}

/// A namespace's frequencies are its own, cached or not: alone in the index, it gets the hits
/// and scores it gets with another namespace beside it that uses the same words (scores within
/// float rounding), and again after the other namespace's documents are removed.
#[tokio::test]
async fn a_namespace_alone_ranks_as_it_does_beside_another() {
    let words = ["kiwi", "mango", "lime", "papaya", "fig"];
    let docs_a: Vec<IndexDoc> = (1..=60)
        .map(|i: i64| {
            let text: Vec<&str> = (0..5).filter(|w| (i as usize * (w + 3)) % 7 < 3).map(|w| words[w]).collect();
            doc(i, "a", &format!("{} {}", text.join(" "), words[i as usize % 5]))
        })
        .collect();
    let alone = index_of(docs_a.clone()).await;
    let beside = index();
    let mut with_b = docs_a.clone();
    with_b.extend((100..=140).map(|i| doc(i, "b", "kiwi kiwi mango")));
    beside.upsert(with_b).await.unwrap();
    beside.flush().await.unwrap();
    // Equal documents score equal up to the last bits of a float sum, so near-ties may swap
    // places: the same hits, each with its score, and the same score at every rank.
    let near = |a: u32, b: u32| {
        let (a, b) = (f32::from_bits(a), f32::from_bits(b));
        (a - b).abs() <= 1e-6 * a.abs().max(1e-6)
    };
    let close = |x: &[(i64, u32)], y: &[(i64, u32)]| {
        let (mut xs, mut ys) = (x.to_vec(), y.to_vec());
        xs.sort();
        ys.sort();
        assert_eq!(xs.iter().map(|h| h.0).collect::<Vec<_>>(), ys.iter().map(|h| h.0).collect::<Vec<_>>());
        assert!(xs.iter().zip(&ys).all(|(a, b)| near(a.1, b.1)), "{xs:?} vs {ys:?}");
        assert!(x.iter().zip(y).all(|(a, b)| near(a.1, b.1)), "by rank: {x:?} vs {y:?}");
    };
    for text in ["kiwi", "kiwi mango", "lime fig papaya", "mango kiwi lime papaya fig"] {
        let a = scores(&alone, text).await;
        assert!(a.len() > 10, "{text}: {} hits", a.len());
        close(&a, &scores(&beside, text).await);
    }
    // Only `a`'s documents left live beside deleted ones of `b`: the unfiltered search again.
    let ids: Vec<MemoryId> = (100..=140).map(MemoryId).collect();
    beside.remove(&ns("b"), &ids).await.unwrap();
    beside.flush().await.unwrap();
    for text in ["kiwi", "lime fig papaya"] {
        close(&scores(&alone, text).await, &scores(&beside, text).await);
    }
}
