//! Recall searches the index at the same time as it checks that the index holds every change
//! of the store (the catch-up check), so the check costs no round trip before the search. The
//! speculative answer may only be used when the check found the index current: when another
//! process wrote since (the index lags), the index is caught up and searched again, and the
//! pack holds what the store holds now.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use mnemo_contract::{
    Hit, Index, IndexDoc, IndexStamp, IndexState, MemoryId, MemoryRef, Namespace, Result, SearchMode, SearchQuery,
    SimClock, WriteOp,
};
use mnemo_core::engine::RecallOptions;
use mnemo_core::Engine;

mod common;
use common::{at, engine, index, store};

/// An index that counts its searches.
struct CountingIndex {
    inner: Arc<dyn Index>,
    searches: AtomicUsize,
}

#[async_trait]
impl Index for CountingIndex {
    async fn upsert(&self, docs: Vec<IndexDoc>) -> Result<()> {
        self.inner.upsert(docs).await
    }
    async fn remove(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<()> {
        self.inner.remove(namespace, ids).await
    }
    async fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>> {
        self.searches.fetch_add(1, Ordering::SeqCst);
        self.inner.search(query).await
    }
    async fn state(&self) -> Result<IndexState> {
        self.inner.state().await
    }
    async fn set_watermark(&self, rev: u64) -> Result<()> {
        self.inner.set_watermark(rev).await
    }
    async fn flush(&self) -> Result<()> {
        self.inner.flush().await
    }
    async fn clear(&self) -> Result<()> {
        self.inner.clear().await
    }
    async fn stamp(&self) -> Result<Option<IndexStamp>> {
        self.inner.stamp().await
    }
    async fn set_stamp(&self, stamp: IndexStamp) -> Result<()> {
        self.inner.set_stamp(stamp).await
    }
}

fn ns() -> Namespace {
    Namespace::new("lag").unwrap()
}

async fn recall(e: &Engine) -> Vec<String> {
    let opts = RecallOptions { mode: Some(SearchMode::Lexical), no_touch: true, ..Default::default() };
    let pack = e.recall(&ns(), "Ben phone", &opts).await.unwrap();
    let mut v: Vec<String> = pack.items.iter().map(|i| i.memory.content.clone()).collect();
    v.sort();
    v
}

#[tokio::test]
async fn a_lagging_index_is_caught_up_and_searched_again_a_current_one_once() {
    // `other` stands for another process writing to the same store; `e` has an index of its own.
    let store = store();
    let other = store.clone();
    let counting = Arc::new(CountingIndex { inner: index(), searches: AtomicUsize::new(0) });
    let e = engine(store, counting.clone(), Arc::new(SimClock::new(at())));

    let first = other.apply(&ns(), at(), vec![common::semantic(&ns(), "Ben phone is 555-0100", false)]).await.unwrap();
    assert_eq!(
        recall(&e).await,
        vec!["Ben phone is 555-0100"],
        "the lagging index caught up before its answer was used"
    );
    assert_eq!(
        counting.searches.load(Ordering::SeqCst),
        2,
        "a lagging index: the speculative search, then one after the catch-up"
    );

    assert_eq!(recall(&e).await, vec!["Ben phone is 555-0100"]);
    assert_eq!(counting.searches.load(Ordering::SeqCst), 3, "a current index: one search, its answer used");

    // The other process supersedes the phone: the speculative search (on the lagging index)
    // still finds the old value; the pack must not.
    other
        .apply(
            &ns(),
            at(),
            vec![
                common::semantic(&ns(), "Ben phone is 555-0199", false),
                WriteOp::Tombstone {
                    id: first[0],
                    reason: "test".into(),
                    superseded_by: Some(MemoryRef::New(0)),
                    turn: None,
                },
            ],
        )
        .await
        .unwrap();
    assert_eq!(recall(&e).await, vec!["Ben phone is 555-0199"], "only the current value, never the superseded one");
    assert_eq!(counting.searches.load(Ordering::SeqCst), 5, "the lag was seen: searched again");
}
