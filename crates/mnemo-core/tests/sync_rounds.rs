//! The engine's index sync replays the store's changes in rounds of 5,000 (`SYNC_BATCH`): a
//! catch-up longer than one round replays every change once, reports its progress against the
//! newest rev it started from, and leaves the index at the store's newest rev.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use mnemo_contract::{IndexState, Namespace, SearchMode, SearchQuery, SimClock, WriteOp};

mod common;
use common::at;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_of_more_than_one_round_replays_every_change_once() {
    let ns = Namespace::new("rounds").unwrap();
    let store = common::store();
    let index = common::index();
    let e = common::engine(store.clone(), index.clone(), Arc::new(SimClock::new(at())));
    // Two rounds: a full one, then 3 inserts and 1 tombstone.
    let n = 5_003;
    let ops = (0..n).map(|i| common::semantic(&ns, &format!("memory number {i}"), false)).collect();
    let ids = store.apply(&ns, at(), ops).await.unwrap();
    let gone = WriteOp::Tombstone { id: ids[0], reason: "test".into(), superseded_by: None, turn: None };
    store.apply(&ns, at(), vec![gone]).await.unwrap();
    let newest = store.max_rev().await.unwrap();
    assert_eq!(newest, n as u64 + 1, "one rev per change");

    let calls = Mutex::new(Vec::new());
    let report = e.sync_index(&|done, total| calls.lock().unwrap().push((done, total))).await.unwrap();
    // The tombstoned memory's newest state is a removal: it is replayed once, as one.
    assert_eq!((report.upserted, report.removed), (n - 1, 1), "{report:?}");
    assert_eq!(report.rev, newest);
    // The tombstone moved the first memory to the newest rev, so the first round (revs 2 to
    // 5,001) ends at 5,001.
    assert_eq!(*calls.lock().unwrap(), vec![(5_001, newest), (newest, newest)], "one progress call per round");
    // The reference index reports its flushed watermark: the one the sync set, once flushed.
    e.flush_index().await.unwrap();
    assert_eq!(index.state().await.unwrap(), IndexState::UpTo(newest));
    let hits = index
        .search(&SearchQuery {
            namespace: ns.clone(),
            text: "memory number 5002".into(),
            embedding: None,
            limit: 3,
            mode: SearchMode::Lexical,
        })
        .await
        .unwrap();
    assert!(hits.iter().any(|h| h.id == ids[n - 1]), "the second round's insert is searchable: {hits:?}");

    let again = e.sync_index(&|_, _| {}).await.unwrap();
    assert_eq!((again.upserted, again.removed, again.rev), (0, 0, newest), "nothing replayed twice");
}
