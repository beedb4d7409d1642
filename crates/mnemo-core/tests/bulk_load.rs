//! The engine's bulk load (`Engine::apply_batches`): the store applies a batch while the index
//! takes in the one before; each batch is acknowledged in order, once it is in the store and a
//! search finds it, and the index is committed at the end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemo_contract::{Index, IndexState, MemoryId, Namespace, SearchMode, SearchQuery, SimClock};

mod common;
use common::{at, engine, semantic};

fn ns() -> Namespace {
    Namespace::new("bulk").unwrap()
}

async fn lexical(index: &Arc<dyn Index>, text: &str) -> Vec<MemoryId> {
    let q = SearchQuery { namespace: ns(), text: text.into(), embedding: None, limit: 10, mode: SearchMode::Lexical };
    let mut ids: Vec<MemoryId> = index.search(&q).await.unwrap().iter().map(|h| h.id).collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_batch_is_acknowledged_in_order_once_stored_and_searchable() {
    let store = common::store();
    let clock = Arc::new(SimClock::new(at()));
    // The reference index reports its flushed watermark, as a persistent one its committed one.
    let index = common::index();
    let e = engine(store.clone(), index.clone(), clock);
    let batches = vec![
        vec![semantic(&ns(), "kiwi one", false), semantic(&ns(), "kiwi two", false)],
        vec![],
        vec![semantic(&ns(), "mango three", false)],
        vec![semantic(&ns(), "papaya four", false), semantic(&ns(), "kiwi five", false)],
    ];
    let mut acks: Vec<(usize, Vec<MemoryId>)> = Vec::new();
    let mut ack = |k: usize, ids: Vec<MemoryId>| acks.push((k, ids));
    let applied = e.apply_batches(&ns(), batches, &mut ack).await.unwrap();
    assert_eq!(applied, 4);
    let numbers: Vec<usize> = acks.iter().map(|a| a.0).collect();
    assert_eq!(numbers, vec![0, 1, 2, 3], "every batch acknowledged once, in order");
    let sizes: Vec<usize> = acks.iter().map(|a| a.1.len()).collect();
    assert_eq!(sizes, vec![2, 0, 1, 2]);
    let all: Vec<MemoryId> = acks.iter().flat_map(|a| a.1.clone()).collect();
    let stored = store.get_many(&ns(), &all).await.unwrap();
    let contents: Vec<&str> = stored.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, vec!["kiwi one", "kiwi two", "mango three", "papaya four", "kiwi five"]);
    let mut kiwis = vec![all[0], all[1], all[4]];
    kiwis.sort();
    assert_eq!(lexical(&index, "kiwi").await, kiwis);
    assert_eq!(lexical(&index, "papaya").await, vec![all[3]]);
    assert_eq!(
        index.state().await.unwrap(),
        IndexState::UpTo(store.max_rev().await.unwrap()),
        "committed at the end: the durable watermark is the store's newest revision"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_batch_stops_the_load_after_the_ones_acknowledged() {
    let store = common::store();
    let clock = Arc::new(SimClock::new(at()));
    let e = engine(store.clone(), common::index(), clock);
    let other = Namespace::new("other").unwrap();
    let batches = vec![
        vec![semantic(&ns(), "kiwi one", false)],
        // A memory of another namespace: the store refuses the batch.
        vec![semantic(&other, "mango two", false)],
        vec![semantic(&ns(), "papaya three", false)],
    ];
    let mut acks = Vec::new();
    let mut ack = |k: usize, ids: Vec<MemoryId>| acks.push((k, ids));
    assert!(e.apply_batches(&ns(), batches, &mut ack).await.is_err());
    assert_eq!(acks.len(), 1, "the batch before the failure is acknowledged, none after it");
    assert_eq!(acks[0].0, 0);
    let active = store.changed_since(0, 100).await.unwrap();
    let contents: Vec<&str> = active.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(contents, vec!["kiwi one"], "nothing of the failed batch or after it is stored");
}
