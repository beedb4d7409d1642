//! Uncommitted documents are analysed for the lexical search only when a search first needs
//! them: whatever the order of upserts, replacements and removals before the commit, and
//! whether or not a search came in between, a search sees exactly the newest live versions; and
//! a committed document upserted again (after a reopen too) keeps one version.
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
        embedding: Some(vec![0.6, 0.8]),
        rev: 0,
    }
}

async fn found(idx: &TantivyIndex, namespace: &str, text: &str) -> Vec<i64> {
    let q = SearchQuery {
        namespace: ns(namespace),
        text: text.into(),
        embedding: None,
        limit: 10,
        mode: SearchMode::Lexical,
    };
    let mut ids: Vec<i64> = idx.search(&q).await.unwrap().iter().map(|h| h.id.0).collect();
    ids.sort();
    ids
}

fn index() -> TantivyIndex {
    let clock: Arc<dyn Clock> = Arc::new(SimClock::new(Timestamp(1_780_000_000_000)));
    TantivyIndex::in_memory(TantivySettings::default(), clock).unwrap()
}

#[tokio::test]
async fn replaced_and_removed_before_any_search() {
    let idx = index();
    idx.upsert(vec![doc(1, "a", "kiwi"), doc(2, "a", "kiwi"), doc(3, "a", "kiwi")]).await.unwrap();
    // Replaced twice, removed, removed from another namespace (a no-op), all before a search.
    idx.upsert(vec![doc(1, "a", "mango")]).await.unwrap();
    idx.upsert(vec![doc(1, "a", "papaya")]).await.unwrap();
    idx.remove(&ns("a"), &[MemoryId(2)]).await.unwrap();
    idx.remove(&ns("b"), &[MemoryId(3)]).await.unwrap();
    assert_eq!(found(&idx, "a", "kiwi").await, vec![3]);
    assert_eq!(found(&idx, "a", "mango").await, Vec::<i64>::new());
    assert_eq!(found(&idx, "a", "papaya").await, vec![1]);
}

#[tokio::test]
async fn searches_between_writes_and_after_the_commit() {
    let idx = index();
    idx.upsert(vec![doc(1, "a", "kiwi"), doc(2, "a", "kiwi")]).await.unwrap();
    assert_eq!(found(&idx, "a", "kiwi").await, vec![1, 2]);
    // Analysed by that search; now replaced and removed, then searched again.
    idx.upsert(vec![doc(1, "a", "mango"), doc(4, "a", "kiwi")]).await.unwrap();
    idx.remove(&ns("a"), &[MemoryId(2)]).await.unwrap();
    assert_eq!(found(&idx, "a", "kiwi").await, vec![4]);
    assert_eq!(found(&idx, "a", "mango").await, vec![1]);
    // Committed, then a version waiting to be analysed hides the committed one.
    idx.flush().await.unwrap();
    idx.upsert(vec![doc(4, "a", "papaya")]).await.unwrap();
    assert_eq!(found(&idx, "a", "kiwi").await, Vec::<i64>::new());
    assert_eq!(found(&idx, "a", "papaya").await, vec![4]);
    assert_eq!(found(&idx, "a", "mango").await, vec![1]);
}

#[tokio::test]
async fn a_committed_document_replaced_after_reopening_is_found_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SimClock::new(Timestamp(1_780_000_000_000)));
    {
        let idx = TantivyIndex::open(dir.path(), TantivySettings::default(), clock.clone()).unwrap();
        idx.upsert(vec![doc(7, "a", "kiwi"), doc(3, "a", "kiwi")]).await.unwrap();
        idx.flush().await.unwrap();
    }
    let idx = TantivyIndex::open(dir.path(), TantivySettings::default(), clock).unwrap();
    // Both ids are at or below the highest the index holds: their old versions are deleted.
    idx.upsert(vec![doc(7, "a", "kiwi mango"), doc(3, "a", "papaya"), doc(9, "a", "kiwi")]).await.unwrap();
    idx.flush().await.unwrap();
    assert_eq!(found(&idx, "a", "kiwi").await, vec![7, 9], "one version of 7, none of 3");
    assert_eq!(found(&idx, "a", "papaya").await, vec![3]);
    // A new id twice in one batch: the second version replaces the first.
    idx.upsert(vec![doc(12, "a", "mango"), doc(12, "a", "papaya")]).await.unwrap();
    idx.flush().await.unwrap();
    assert_eq!(found(&idx, "a", "mango").await, vec![7]);
    assert_eq!(found(&idx, "a", "papaya").await, vec![3, 12]);
}
