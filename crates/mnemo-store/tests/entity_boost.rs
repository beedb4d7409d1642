//! `[index] entity_boost` in the tantivy index: a query naming a document's entity ranks it
//! higher, for uncommitted and committed documents alike, in its namespace only, and after a
//! reopen; off (0) changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use mnemo_contract::conformance::index::{axis, doc, query};
use mnemo_contract::{Index, IndexDoc, SearchMode, SimClock, Timestamp};
use mnemo_store::tantivy_index::{TantivyIndex, TantivySettings};

fn clock() -> Arc<SimClock> {
    Arc::new(SimClock::new(Timestamp::from_millis(1_000_000)))
}

fn with_entity(mut d: IndexDoc, entity: &str) -> IndexDoc {
    d.entities = vec![entity.to_string()];
    d
}

/// Two speakers' turns: BM25 ranks Melanie's (watercolor, painting ×3) first for the query.
fn docs(ns: &str) -> Vec<IndexDoc> {
    vec![
        with_entity(doc(1, ns, "painting watercolor painting painting", Some(axis(0, 1, 0.1))), "Melanie"),
        with_entity(doc(2, ns, "I tried painting once", Some(axis(0, 1, 0.5))), "Caroline"),
        with_entity(doc(3, ns, "the weather is nice", Some(axis(3, 1, 0.0))), "Caroline"),
    ]
}

const Q: &str = "Caroline's watercolor painting?";

async fn ids(idx: &dyn Index, ns: &str, text: &str, mode: SearchMode) -> Vec<i64> {
    let e = if mode == SearchMode::Lexical { None } else { Some(axis(0, 1, 0.0)) };
    idx.search(&query(ns, text, e, mode, 10)).await.unwrap().iter().map(|h| h.id.0).collect()
}

#[tokio::test]
async fn a_named_entity_ranks_its_documents_first() {
    let boosted = TantivySettings { entity_boost: 1.0, ..Default::default() };
    let on = TantivyIndex::in_memory(boosted, clock()).unwrap();
    let off = TantivyIndex::in_memory(TantivySettings::default(), clock()).unwrap();
    for idx in [&on, &off] {
        idx.upsert(docs("a")).await.unwrap();
        // The same documents in another namespace: never matched for "a".
        idx.upsert(vec![with_entity(doc(9, "b", "painting painting", None), "Caroline")]).await.unwrap();
    }
    let q = Q;
    assert_eq!(ids(&off, "a", q, SearchMode::Lexical).await[0], 1, "BM25 alone: Melanie's first");
    assert_eq!(ids(&on, "a", q, SearchMode::Lexical).await, vec![2, 3, 1]);
    assert_eq!(ids(&on, "a", q, SearchMode::Hybrid).await[..2], [2, 3]);
    assert_eq!(ids(&on, "a", q, SearchMode::Dense).await[..2], [2, 3]);
    // No entity named: the boost changes nothing.
    assert_eq!(
        ids(&on, "a", "painting", SearchMode::Lexical).await,
        ids(&off, "a", "painting", SearchMode::Lexical).await
    );
    let hits = on.search(&query("a", q, Some(axis(0, 1, 0.0)), SearchMode::Hybrid, 10)).await.unwrap();
    assert!(hits.iter().all(|h| (0.0..=1.0).contains(&h.score)), "{hits:?}");
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score), "{hits:?}");
}

#[tokio::test]
async fn committed_documents_match_after_a_reopen_and_removals_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let s = TantivySettings { entity_boost: 1.0, ..Default::default() };
    {
        let idx = TantivyIndex::open(dir.path(), s.clone(), clock()).unwrap();
        idx.clear().await.unwrap();
        idx.upsert(docs("a")).await.unwrap();
        idx.set_watermark(3).await.unwrap();
        idx.flush().await.unwrap();
    }
    let idx = TantivyIndex::open(dir.path(), s, clock()).unwrap();
    let q = Q;
    assert_eq!(ids(&idx, "a", q, SearchMode::Lexical).await, vec![2, 3, 1], "committed entity terms are used");
    // An uncommitted new version without the entity supersedes the committed one.
    idx.upsert(vec![doc(2, "a", "I tried painting once", Some(axis(0, 1, 0.5)))]).await.unwrap();
    assert_eq!(ids(&idx, "a", q, SearchMode::Lexical).await, vec![3, 1, 2]);
    idx.remove(&mnemo_contract::Namespace::new("a").unwrap(), &[mnemo_contract::MemoryId(3)]).await.unwrap();
    assert_eq!(ids(&idx, "a", q, SearchMode::Lexical).await, vec![1, 2]);
}

#[tokio::test]
async fn a_negative_boost_is_refused_naming_the_key() {
    let bad = TantivySettings { entity_boost: -0.5, ..Default::default() };
    let e = TantivyIndex::in_memory(bad, clock()).err().unwrap();
    assert!(e.to_string().contains("entity_boost"), "{e}");
}
