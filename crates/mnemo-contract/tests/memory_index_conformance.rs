//! The Index conformance suite (`conformance::index`) against the reference in-memory index
//! (which does not persist: a reopened slot is a fresh, empty index).
#![cfg(feature = "conformance")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemo_contract::conformance::index as suite;
use mnemo_contract::test_support::MemoryIndex;
use mnemo_contract::{Index, IndexState};

#[tokio::test]
async fn run_all() {
    suite::run_all(|_slot: usize| Arc::new(MemoryIndex::new()) as Arc<dyn Index>, false).await;
}

/// What the suite cannot see of an index that does not persist: a set watermark counts once
/// flushed (as a persistent index's commit makes it durable), and a clear drops it.
#[tokio::test]
async fn the_watermark_counts_once_flushed() {
    let idx = MemoryIndex::new();
    idx.set_watermark(7).await.unwrap();
    assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(0), "not flushed yet");
    idx.flush().await.unwrap();
    assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(7));
    idx.clear().await.unwrap();
    assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(0));
}
