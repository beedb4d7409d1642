//! The Index conformance suite against every Index backend of this crate: brute force, tantivy
//! in RAM and tantivy on disk (reopened from its directory); plus the tantivy-specific
//! durability checks (stale states, batching, commit on drop).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use mnemo_contract::conformance::index::{self as suite, axis, doc, query};
use mnemo_contract::{Index, IndexState, SearchMode, SimClock, Timestamp};
use mnemo_store::brute::BruteForceIndex;
use mnemo_store::tantivy_index::{TantivyIndex, TantivySettings};

fn clock() -> Arc<SimClock> {
    Arc::new(SimClock::new(Timestamp::from_millis(1_000_000)))
}

#[tokio::test]
async fn brute_force_conforms() {
    suite::run_all(|_slot: usize| Arc::new(BruteForceIndex::new()) as Arc<dyn Index>, false).await;
}

#[tokio::test]
async fn tantivy_in_ram_conforms() {
    suite::run_all(
        |_slot: usize| {
            Arc::new(TantivyIndex::in_memory(TantivySettings::default(), clock()).unwrap()) as Arc<dyn Index>
        },
        false,
    )
    .await;
}

#[tokio::test]
async fn tantivy_on_disk_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    suite::run_all(
        move |slot: usize| {
            Arc::new(TantivyIndex::open(&root.join(format!("s{slot}")), TantivySettings::default(), clock()).unwrap())
                as Arc<dyn Index>
        },
        true,
    )
    .await;
}

#[tokio::test]
async fn tantivy_on_disk_commits_in_batches_and_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let settings = TantivySettings { commit_every_docs: 3, commit_interval_ms: 60_000, ..Default::default() };
    let c = clock();
    {
        let idx = TantivyIndex::open(dir.path(), settings.clone(), c.clone()).unwrap();
        assert!(matches!(idx.state().await.unwrap(), IndexState::Stale(_)), "a missing index is stale");
        idx.clear().await.unwrap();
        idx.upsert(vec![doc(1, "a", "alpha one", Some(axis(0, 1, 0.0)))]).await.unwrap();
        idx.set_watermark(1).await.unwrap();
        assert_eq!(
            idx.state().await.unwrap(),
            IndexState::UpTo(0),
            "nothing committed yet: the durable watermark is 0"
        );
        idx.upsert(vec![doc(2, "a", "alpha two", None), doc(3, "a", "alpha three", None)]).await.unwrap();
        // Three pending documents reached commit_every_docs: committed with watermark 1.
        assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(1));
        idx.upsert(vec![doc(4, "a", "alpha four", None)]).await.unwrap();
        idx.set_watermark(4).await.unwrap();
        // Old enough: the next write commits.
        c.advance(61_000);
        idx.remove(&suite::ns("a"), &[mnemo_contract::MemoryId(2)]).await.unwrap();
        assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(4));
        idx.upsert(vec![doc(5, "a", "alpha five", None)]).await.unwrap();
        idx.set_watermark(5).await.unwrap();
        // Dropped without a flush: committed on drop.
    }
    let idx = TantivyIndex::open(dir.path(), settings, c).unwrap();
    assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(5));
    let mut ids: Vec<i64> =
        idx.search(&query("a", "alpha", None, SearchMode::Lexical, 10)).await.unwrap().iter().map(|h| h.id.0).collect();
    ids.sort();
    assert_eq!(ids, vec![1, 3, 4, 5]);
    assert_eq!(idx.vector_count().unwrap(), 1, "the vector survived the reopen");
}

#[tokio::test]
async fn tantivy_during_a_bulk_load_commits_by_size_only_at_the_bulk_factor() {
    use mnemo_store::tantivy_index::BULK_COMMIT_FACTOR;
    let dir = tempfile::tempdir().unwrap();
    let settings = TantivySettings { commit_every_docs: 3, commit_interval_ms: 1_000, ..Default::default() };
    let c = clock();
    let idx = TantivyIndex::open(dir.path(), settings, c.clone()).unwrap();
    idx.clear().await.unwrap();
    idx.bulk_load(true).await.unwrap();
    let bulk_every = (3 * BULK_COMMIT_FACTOR) as i64;
    for id in 1..bulk_every {
        idx.upsert(vec![doc(id, "a", "alpha", None)]).await.unwrap();
        idx.set_watermark(id as u64).await.unwrap();
        // Old enough and past commit_every_docs: outside a bulk load either would commit.
        c.advance(2_000);
    }
    assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(0), "no commit below the bulk factor");
    let ids = idx.search(&query("a", "alpha", None, SearchMode::Lexical, 100)).await.unwrap();
    assert_eq!(ids.len() as i64, bulk_every - 1, "uncommitted documents are searchable all the same");
    idx.upsert(vec![doc(bulk_every, "a", "alpha", None)]).await.unwrap();
    assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(bulk_every as u64 - 1), "committed at the bulk factor");
    idx.set_watermark(bulk_every as u64).await.unwrap();
    idx.bulk_load(false).await.unwrap();
    idx.upsert(vec![doc(bulk_every + 1, "a", "alpha", None)]).await.unwrap();
    idx.set_watermark(bulk_every as u64 + 1).await.unwrap();
    c.advance(2_000);
    idx.remove(&suite::ns("a"), &[mnemo_contract::MemoryId(1)]).await.unwrap();
    assert_eq!(
        idx.state().await.unwrap(),
        IndexState::UpTo(bulk_every as u64 + 1),
        "the load over: the age of the last commit commits again"
    );
}

#[tokio::test]
async fn tantivy_other_schema_or_corrupt_is_stale_and_clear_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let c = clock();
    {
        let idx = TantivyIndex::open(dir.path(), TantivySettings::default(), c.clone()).unwrap();
        idx.clear().await.unwrap();
        idx.upsert(vec![doc(1, "a", "kept words", None)]).await.unwrap();
        idx.set_watermark(7).await.unwrap();
        idx.flush().await.unwrap();
    }
    // Another analyzer configuration is another on-disk format: stale, and a clear fixes it.
    {
        let other = TantivySettings { stemming: false, ..Default::default() };
        let idx = TantivyIndex::open(dir.path(), other, c.clone()).unwrap();
        match idx.state().await.unwrap() {
            IndexState::Stale(why) => assert!(why.contains("stemming"), "{why}"),
            s => panic!("expected stale, got {s:?}"),
        }
        idx.clear().await.unwrap();
        assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(0));
    }
    // A corrupt meta.json: stale (not an error), unusable until cleared, then usable.
    std::fs::write(dir.path().join("tantivy").join("meta.json"), b"{ not json").unwrap();
    let idx = TantivyIndex::open(dir.path(), TantivySettings::default(), c.clone()).unwrap();
    assert!(matches!(idx.state().await.unwrap(), IndexState::Stale(_)));
    assert!(
        idx.search(&query("a", "kept", None, SearchMode::Lexical, 5)).await.is_err(),
        "a corrupt index refuses searches"
    );
    idx.clear().await.unwrap();
    assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(0));
    idx.upsert(vec![doc(2, "a", "fresh words", None)]).await.unwrap();
    assert_eq!(idx.search(&query("a", "fresh", None, SearchMode::Lexical, 5)).await.unwrap().len(), 1);
    // A vector log shorter than the commit says: stale.
    idx.upsert(vec![doc(3, "a", "vec", Some(axis(1, 2, 0.0)))]).await.unwrap();
    idx.set_watermark(3).await.unwrap();
    idx.flush().await.unwrap();
    drop(idx);
    for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("vectors-") {
            std::fs::write(e.path(), b"MNVEC2\n\0").unwrap();
        }
    }
    let idx = TantivyIndex::open(dir.path(), TantivySettings::default(), c).unwrap();
    assert!(matches!(idx.state().await.unwrap(), IndexState::Stale(_)), "a truncated vector log is stale");
}

#[tokio::test]
async fn bad_settings_and_dimension_mismatch_are_named() {
    let bad = TantivySettings { commit_every_docs: 0, ..Default::default() };
    let e = TantivyIndex::in_memory(bad, clock()).err().unwrap().to_string();
    assert!(e.contains("commit_every_docs"), "{e}");
    let idx = TantivyIndex::in_memory(TantivySettings::default(), clock()).unwrap();
    idx.upsert(vec![doc(1, "a", "x", Some(vec![1.0, 0.0]))]).await.unwrap();
    let e = idx.upsert(vec![doc(2, "a", "y", Some(vec![1.0, 0.0, 0.0]))]).await.unwrap_err().to_string();
    assert!(e.contains("dimensions"), "{e}");
    let e = idx.search(&query("a", "x", Some(vec![1.0; 5]), SearchMode::Dense, 3)).await.unwrap_err().to_string();
    assert!(e.contains("dimensions"), "{e}");
}
