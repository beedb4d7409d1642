//! The engine keeps what recall packs in memory (the recall cache): it must never serve a
//! memory that was superseded or forgotten since, nor miss a change, even when the change was
//! made by another process. Here "another process" is a second engine on the same store (the
//! contract's in-memory reference store, shared): with an index of its own, and sharing the
//! first engine's index (which is then ahead of what the first engine applied, so it replays
//! nothing).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemo_contract::{Memory, MemoryId, MemoryRef, Namespace, Pack, SearchMode, SimClock, Store, WriteOp};
use mnemo_core::engine::RecallOptions;
use mnemo_core::Engine;

mod common;
use common::{at, engine, index, store};

fn tombstone(id: MemoryId, superseded_by: Option<MemoryRef>) -> WriteOp {
    WriteOp::Tombstone { id, reason: "test".into(), superseded_by, turn: None }
}

fn ns() -> Namespace {
    Namespace::new("cache").unwrap()
}

fn packed(pack: &Pack) -> Vec<String> {
    let mut v: Vec<String> = pack.items.iter().map(|i| i.memory.content.clone()).collect();
    v.sort();
    v
}

async fn recall(e: &Engine) -> Vec<String> {
    let opts = RecallOptions { mode: Some(SearchMode::Lexical), ..Default::default() };
    packed(&e.recall(&ns(), "Ben phone standup", &opts).await.unwrap())
}

/// Engine `a` writes, then `b` (which has recalled, so holds the memories in its cache) must
/// pack only what is current; `a_syncs` runs `a`'s index sync after each write.
async fn another_writer_is_seen(share_index: bool) {
    // One store, two handles (as two processes open one file).
    let store_a: Arc<dyn Store> = store();
    let store_b = store_a.clone();
    let index_b = index();
    let index_a = if share_index { index_b.clone() } else { index() };
    let a = engine(store_a.clone(), index_a, Arc::new(SimClock::new(at())));
    let b = engine(store_b, index_b, Arc::new(SimClock::new(at())));

    let ids = store_a
        .apply(
            &ns(),
            at(),
            vec![
                common::semantic(&ns(), "Ben phone is 555-0100", false),
                common::semantic(&ns(), "standup pinned rule: Ben phone calls first", true),
                common::semantic(&ns(), "Ben phone plan is prepaid", false),
            ],
        )
        .await
        .unwrap();
    a.sync_index(&|_, _| {}).await.unwrap();
    assert_eq!(
        recall(&b).await,
        vec!["Ben phone is 555-0100", "Ben phone plan is prepaid", "standup pinned rule: Ben phone calls first"],
        "b recalls all three (and caches them)"
    );
    assert_eq!(recall(&b).await.len(), 3, "the second recall is served from the cache");

    // `a` supersedes the phone, forgets the pinned rule and restates the plan.
    store_a
        .apply(
            &ns(),
            at(),
            vec![
                common::semantic(&ns(), "Ben phone is 555-0199", false),
                tombstone(ids[0], Some(MemoryRef::New(0))),
                tombstone(ids[1], None),
                WriteOp::Reinforce { id: ids[2], source: "crm".into(), turn: None },
            ],
        )
        .await
        .unwrap();
    a.sync_index(&|_, _| {}).await.unwrap();

    let pack = b
        .recall(&ns(), "Ben phone standup", &RecallOptions { mode: Some(SearchMode::Lexical), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(
        packed(&pack),
        vec!["Ben phone is 555-0199", "Ben phone plan is prepaid"],
        "neither the superseded value nor the forgotten pinned memory (shared index: {share_index})"
    );
    let plan = pack.items.iter().find(|i| i.memory.id == ids[2]).unwrap();
    assert_eq!(plan.memory.reinforcements, 1, "the restated memory as it is now, not as cached");
    assert_eq!(plan.memory.sources, vec!["user".to_string(), "crm".to_string()]);
    for item in &pack.items {
        // (The store has the access time of this very recall's touch; the pack the one before.)
        let stored: Vec<Memory> = store_a
            .get_many(&ns(), &[item.memory.id])
            .await
            .unwrap()
            .into_iter()
            .map(|m| Memory { last_accessed_at: item.memory.last_accessed_at, ..m })
            .collect();
        assert_eq!(stored, vec![(*item.memory).clone()], "each packed memory exactly as the store holds it");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_engine_with_its_own_index() {
    another_writer_is_seen(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_engine_sharing_the_index_that_is_ahead() {
    another_writer_is_seen(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_writes_and_forgets_are_seen_at_once() {
    let store = store();
    let e = engine(store.clone(), index(), Arc::new(SimClock::new(at())));
    let ids = store.apply(&ns(), at(), vec![common::semantic(&ns(), "Ben phone is 555-0100", true)]).await.unwrap();
    e.sync_index(&|_, _| {}).await.unwrap();
    assert_eq!(recall(&e).await, vec!["Ben phone is 555-0100"]);
    store.apply(&ns(), at(), vec![tombstone(ids[0], None)]).await.unwrap();
    // No sync of its own: the recall's catch-up check must find the change.
    assert!(recall(&e).await.is_empty(), "a forgotten pinned memory is not packed");
}
