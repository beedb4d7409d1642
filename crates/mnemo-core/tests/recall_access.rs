//! Recall's access times are written to the store in batches, not by a store write on every
//! recall: the first recall's at once (a store that cannot keep them is found out there), then
//! with the next write or decay sweep, in the background when the oldest pending one has waited
//! long enough by the engine's clock, and when the engine is flushed. Until then the store shows the previous time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemo_contract::{MemoryId, Namespace, NewTurn, SearchMode, SimClock, Store, Timestamp, WriteOp};
use mnemo_core::engine::RecallOptions;
use mnemo_core::Engine;

mod common;
use common::{at, engine, index};

fn ns() -> Namespace {
    Namespace::new("access").unwrap()
}

async fn recall(e: &Engine) -> Vec<MemoryId> {
    let opts = RecallOptions { mode: Some(SearchMode::Lexical), ..Default::default() };
    e.recall(&ns(), "Ben phone", &opts).await.unwrap().items.iter().map(|i| i.memory.id).collect()
}

async fn accessed(store: &Arc<dyn Store>, id: MemoryId) -> Option<Timestamp> {
    store.get_many(&ns(), &[id]).await.unwrap().remove(0).last_accessed_at
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_times_reach_the_store_in_batches_and_before_a_sweep() {
    let store = common::store();
    let clock = Arc::new(SimClock::new(at()));
    let e = engine(store.clone(), index(), clock.clone());
    let id = store.apply(&ns(), at(), vec![common::semantic(&ns(), "Ben phone is 555-0100", false)]).await.unwrap()[0];
    e.sync_index(&|_, _| {}).await.unwrap();

    assert_eq!(recall(&e).await, vec![id]);
    assert_eq!(accessed(&store, id).await, Some(at()), "the first recall's access is written at once");

    // A later recall is recorded, not written...
    clock.advance(1_000);
    recall(&e).await;
    assert_eq!(accessed(&store, id).await, Some(at()), "pending: the store still shows the first access");
    // ...until the next sweep, which writes it before it reads anything.
    let swept = e.decay_sweep(&ns()).await.unwrap();
    assert!(swept.decayed.is_empty(), "a semantic memory does not decay");
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(1_000)), "the sweep wrote the pending access");

    // Pending accesses are written by the recall that finds the oldest waited a minute.
    clock.advance(1_000);
    recall(&e).await;
    clock.advance(59_999);
    recall(&e).await;
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(1_000)), "not yet a minute");
    clock.advance(1);
    recall(&e).await;
    // Written by a task of its own (the recall does not wait for the store).
    e.settle_access_writes().await;
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(62_000)), "the newest access, written");

    // And by the next write, and by a flush of the engine (before a process exits).
    clock.advance(1_000);
    recall(&e).await;
    let WriteOp::Insert { memory, .. } = common::semantic(&ns(), "Ana desk is 4B", false) else { unreachable!() };
    let turn =
        NewTurn { namespace: ns(), source: "user".into(), at: at(), text: "Ana desk is 4B".into(), external_id: None };
    e.ingest(&ns(), vec![(turn, memory)]).await.unwrap();
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(63_000)), "the write wrote the pending access");
    clock.advance(1_000);
    recall(&e).await;
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(63_000)), "pending again");
    e.flush_index().await.unwrap();
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(64_000)), "the flush wrote the last access");
}
