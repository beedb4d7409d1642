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

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        mod disk {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    let (_dir, store) = on_disk();
                    suite::$name(&store).await;
                }
            )*
        }
        mod memory {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    let store = SqliteStore::open_in_memory().unwrap();
                    suite::$name(&store).await;
                }
            )*
        }
    };
}

conformance!(
    empty_store,
    record_turn_assigns_increasing_ids,
    insert_round_trips_every_field,
    get_many_leaves_out_missing_ids,
    namespace_partition,
    apply_is_atomic,
    reinforce_and_confirm,
    tombstone_keeps_the_row,
    tombstone_new_within_a_batch,
    tombstone_is_final,
    rev_increases_on_every_change,
    changed_since_pages_by_rev,
    changes_since_is_the_four_lookups,
    history_in_order,
    touch_does_not_bump_rev,
    active_by_entities_matches_any,
    history_chain_covers_every_write,
    erase_empties_content_and_keeps_a_record,
);

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
