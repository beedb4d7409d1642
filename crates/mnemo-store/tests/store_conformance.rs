//! The Store conformance suite (mnemo_contract::conformance::store) against `SqliteStore`, on
//! disk (a fresh file in a temp dir) and in memory: one test per suite function per backend.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemo_contract::conformance::store as suite;
use mnemo_contract::Store;
use mnemo_store::sqlite::SqliteStore;

/// A fresh store in a new temp dir; the dir lives as long as the returned guard.
fn on_disk() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("nested/dir/mnemo.db")).unwrap();
    (dir, store)
}

mod disk {
    use super::*;
    mnemo_contract::store_conformance_tests!((_dir, store) = on_disk() => &store);
}

mod memory {
    use super::*;
    mnemo_contract::store_conformance_tests!(store = SqliteStore::open_in_memory().unwrap() => &store);
}

/// `run_all` itself (the entry point other backends use), with many stores in one dir.
#[tokio::test]
async fn run_all_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let n = std::sync::atomic::AtomicUsize::new(0);
    let path = dir.path().to_path_buf();
    suite::run_all(|| {
        let file = path.join(format!("store-{}.db", n.fetch_add(1, std::sync::atomic::Ordering::SeqCst)));
        async move { Arc::new(SqliteStore::open(&file).unwrap()) as Arc<dyn Store> }
    })
    .await;
    assert!(n.load(std::sync::atomic::Ordering::SeqCst) >= 14, "every suite test ran on its own store");
}

#[tokio::test]
async fn run_all_in_memory() {
    suite::run_all(|| async { Arc::new(SqliteStore::open_in_memory().unwrap()) as Arc<dyn Store> }).await;
}
