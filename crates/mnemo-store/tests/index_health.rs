//! The on-disk index stays right and healthy (issue 42): a flipped byte in the vector log is
//! seen (the index is rebuilt from the store, saying why, and dense recall counts right), and
//! short-lived processes — one open, one write, one close each, as the CLI does — leave few
//! segments and no temporary files.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use mnemo_contract::*;
use mnemo_core::engine::SyncReport;
use mnemo_core::Engine;
use mnemo_store::sqlite::SqliteStore;
use mnemo_store::tantivy_index::{TantivyIndex, TantivySettings};

mod common;
use common::{at, engine, semantic};

fn ns() -> Namespace {
    Namespace::new("health").unwrap()
}

/// The store and index of `dir`, opened as a command opens them, and an engine over them
/// (its index synced with the store, as every command does first).
async fn open(dir: &Path) -> (Engine, Arc<TantivyIndex>, SyncReport) {
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.join("mnemo.db")).unwrap());
    let clock = Arc::new(SimClock::new(at()));
    let index = Arc::new(TantivyIndex::open(&dir.join("index"), TantivySettings::default(), clock.clone()).unwrap());
    let e = engine(store, index.clone(), clock);
    let report = e.sync_index(&|_, _| {}).await.unwrap();
    (e, index, report)
}

/// Every memory the dense search finds in `ns` (limit above the count).
async fn dense_ids(e: &Engine, limit: usize) -> Vec<MemoryId> {
    let q = SearchQuery {
        namespace: ns(),
        text: String::new(),
        embedding: Some(vec![0.6, 0.8]),
        limit,
        mode: SearchMode::Dense,
    };
    let mut ids: Vec<MemoryId> = e.search(&q).await.unwrap().iter().map(|h| h.id).collect();
    ids.sort();
    ids
}

/// The vector log files of an index directory.
fn vector_logs(index: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(index)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("vectors-"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_flipped_bytes_in_the_vector_log_rebuild_the_index_and_dense_recall_counts_right() {
    const N: usize = 3_000;
    let dir = tempfile::tempdir().unwrap();
    let ids = {
        let (e, _, _) = open(dir.path()).await;
        let ops: Vec<WriteOp> = (0..N).map(|i| semantic(&ns(), &format!("fact number {i}"), false)).collect();
        let mut ids = Vec::new();
        let mut ack = |_: usize, got: Vec<MemoryId>| ids.extend(got);
        e.apply_batches(&ns(), vec![ops], &mut ack).await.unwrap();
        assert_eq!(dense_ids(&e, N + 10).await.len(), N);
        ids.sort();
        ids
    };
    let logs = vector_logs(&dir.path().join("index"));
    assert_eq!(logs.len(), 1, "{logs:?}");
    let log = &logs[0];
    // The damage of the report: XOR 0x40 at size/2+100, size/3+57, size/4+11.
    let mut bytes = std::fs::read(log).unwrap();
    let size = bytes.len();
    for at in [size / 2 + 100, size / 3 + 57, size / 4 + 11] {
        bytes[at] ^= 0x40;
    }
    std::fs::write(log, &bytes).unwrap();

    let (e, _, report) = open(dir.path()).await;
    assert!(report.rebuilt, "{report:?}");
    let why = report.rebuilt_because.clone().unwrap_or_default();
    let name = log.file_name().unwrap().to_string_lossy().to_string();
    assert!(why.contains(&name) && why.contains("checksum"), "the reason names the file: {why}");
    assert_eq!(dense_ids(&e, N + 10).await, ids, "every memory, and only those, after the rebuild");
    drop(e);
    // The rebuilt log is sound: the next open is not a rebuild.
    let (_, _, report) = open(dir.path()).await;
    assert!(!report.rebuilt, "{report:?}");
}

/// Files under `dir` whose name starts with `.tmp` or ends with `.tmp`.
fn temporary_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else if name.starts_with(".tmp") || name.ends_with(".tmp") {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_short_lived_writers_leave_few_segments_and_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut most = 0;
    for i in 0..200 {
        let (e, index, _) = open(dir.path()).await;
        let mut ack = |_: usize, _: Vec<MemoryId>| {};
        e.apply_batches(&ns(), vec![vec![semantic(&ns(), &format!("note {i} about kiwis"), false)]], &mut ack)
            .await
            .unwrap();
        most = most.max(index.segment_count().unwrap().unwrap());
        drop(e);
        // The index goes with the last holder of it (the engine's copy and this one).
        drop(index);
        let tmp = temporary_files(dir.path());
        assert!(tmp.is_empty(), "after write {i}: {tmp:?}");
    }
    let (e, index, report) = open(dir.path()).await;
    assert!(!report.rebuilt, "{report:?}");
    let segments = index.segment_count().unwrap().unwrap();
    assert!(segments <= 10, "{segments} segments after 200 writers");
    assert!(most <= 10, "at most {most} segments on the way");
    // Segment files on disk are those of the live segments (merged inputs are removed).
    let files = std::fs::read_dir(dir.path().join("index").join("tantivy")).unwrap().count();
    assert!(files <= 10 * 8 + 4, "{files} files in the tantivy directory");
    let q =
        SearchQuery { namespace: ns(), text: "kiwis".into(), embedding: None, limit: 500, mode: SearchMode::Lexical };
    assert_eq!(e.search(&q).await.unwrap().len(), 200, "every write is found");
}

#[tokio::test]
async fn a_temporary_file_left_by_a_killed_writer_is_removed_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (e, _, _) = open(dir.path()).await;
        let mut ack = |_: usize, _: Vec<MemoryId>| {};
        e.apply_batches(&ns(), vec![vec![semantic(&ns(), "kiwi", false)]], &mut ack).await.unwrap();
    }
    let left = dir.path().join("index").join("tantivy").join(".tmpAbC123");
    std::fs::write(&left, b"half a meta.json").unwrap();
    let (_e, _, report) = open(dir.path()).await;
    assert!(!report.rebuilt, "{report:?}");
    assert!(!left.exists(), "the leftover is removed by the writer's open");
}
