//! An index opened read-only (a data directory that cannot be written, or a reader beside a
//! writer) searches what is on disk, holds upserts and removals in memory only, and refuses a
//! clear with an error of kind `ReadOnly`, leaving its files as they were; a rebuild beside it
//! is written aside and put in place at its end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use mnemo_contract::conformance::index::{doc, ns, query};
use mnemo_contract::{Index, IndexErrorKind, MemoryId, SearchMode, SimClock, Timestamp};
use mnemo_store::tantivy_index::{TantivyIndex, TantivySettings};

fn files(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = walk(dir);
    out.sort();
    out
}

fn walk(dir: &std::path::Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push((p.display().to_string(), std::fs::metadata(&p).unwrap().len()));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_index_searches_holds_writes_in_memory_and_refuses_a_clear() {
    let clock = Arc::new(SimClock::new(Timestamp::from_millis(1_000_000)));
    let dir = tempfile::tempdir().unwrap();
    {
        let idx = TantivyIndex::open(dir.path(), TantivySettings::default(), clock.clone()).unwrap();
        idx.upsert(vec![
            doc(1, "a", "the harbour lunch with bob", Some(vec![1.0, 0.0])),
            doc(2, "a", "vault owner ana", Some(vec![0.0, 1.0])),
        ])
        .await
        .unwrap();
        idx.set_watermark(2).await.unwrap();
        idx.flush().await.unwrap();
    }
    let before = files(dir.path());
    let read_only = || TantivySettings { read_only: true, ..Default::default() };
    let ro = TantivyIndex::open(dir.path(), read_only(), clock.clone()).unwrap();
    let hits = ro.search(&query("a", "vault owner", None, SearchMode::Lexical, 5)).await.unwrap();
    assert_eq!(hits.first().map(|h| h.id), Some(MemoryId(2)));
    // Upserts and removals are held in memory (a reader catching up with the store beside a
    // writer): searches see them, the files do not.
    ro.upsert(vec![doc(3, "a", "vault keeper carl", Some(vec![1.0, 1.0]))]).await.unwrap();
    ro.remove(&ns("a"), &[MemoryId(2)]).await.unwrap();
    ro.set_watermark(3).await.unwrap();
    let ids = |hits: Vec<mnemo_contract::Hit>| hits.into_iter().map(|h| h.id.0).collect::<Vec<_>>();
    assert_eq!(ids(ro.search(&query("a", "vault", None, SearchMode::Lexical, 5)).await.unwrap()), vec![3]);
    assert_eq!(ids(ro.search(&query("a", "x", Some(vec![1.0, 1.0]), SearchMode::Dense, 5)).await.unwrap())[0], 3);
    let e = ro.clear().await.unwrap_err();
    assert_eq!(e.index_kind(), Some(IndexErrorKind::ReadOnly), "{e}");
    ro.flush().await.unwrap();
    drop(ro);
    assert_eq!(files(dir.path()), before, "a read-only index wrote to its directory");
    let again = TantivyIndex::open(dir.path(), read_only(), clock).unwrap();
    assert_eq!(ids(again.search(&query("a", "vault", None, SearchMode::Lexical, 5)).await.unwrap()), vec![2]);
}

/// A rebuild is written beside the index in place: a reader that opens meanwhile (a `recall`
/// beside `reindex`) searches the previous index, complete up to its watermark; the flush that
/// ends the rebuild puts it in place and leaves one index and one vector log.
#[tokio::test(flavor = "multi_thread")]
async fn a_reader_beside_a_rebuild_searches_the_index_before_it() {
    use mnemo_contract::IndexState;
    let clock = Arc::new(SimClock::new(Timestamp::from_millis(1_000_000)));
    let dir = tempfile::tempdir().unwrap();
    let small_commits = TantivySettings { commit_every_docs: 1, ..Default::default() };
    let writer = TantivyIndex::open(dir.path(), small_commits, clock.clone()).unwrap();
    writer.clear().await.unwrap();
    writer.upsert(vec![doc(1, "a", "alpha one", Some(vec![1.0, 0.0])), doc(2, "a", "alpha two", None)]).await.unwrap();
    writer.set_watermark(2).await.unwrap();
    writer.flush().await.unwrap();
    // The rebuild: cleared, one document replayed and committed (commit_every_docs = 1).
    writer.clear().await.unwrap();
    writer.upsert(vec![doc(7, "a", "beta seven", Some(vec![0.0, 1.0]))]).await.unwrap();
    writer.set_watermark(1).await.unwrap();
    writer.upsert(vec![doc(8, "a", "beta eight", None)]).await.unwrap();
    let read_only = || TantivySettings { read_only: true, ..Default::default() };
    let ids = |hits: Vec<mnemo_contract::Hit>| {
        let mut v: Vec<i64> = hits.into_iter().map(|h| h.id.0).collect();
        v.sort();
        v
    };
    let reader = TantivyIndex::open(dir.path(), read_only(), clock.clone()).unwrap();
    assert_eq!(reader.state().await.unwrap(), IndexState::UpTo(2), "the index before the rebuild");
    assert_eq!(ids(reader.search(&query("a", "alpha", None, SearchMode::Lexical, 5)).await.unwrap()), vec![1, 2]);
    assert_eq!(reader.vector_count().unwrap(), 1, "its vector log is kept until the rebuild is in place");
    writer.set_watermark(2).await.unwrap();
    writer.flush().await.unwrap();
    // The first reader keeps its files open; a new one sees the rebuild.
    assert_eq!(ids(reader.search(&query("a", "alpha", None, SearchMode::Lexical, 5)).await.unwrap()), vec![1, 2]);
    let after = TantivyIndex::open(dir.path(), read_only(), clock.clone()).unwrap();
    assert_eq!(after.state().await.unwrap(), IndexState::UpTo(2));
    assert_eq!(ids(after.search(&query("a", "beta", None, SearchMode::Lexical, 5)).await.unwrap()), vec![7, 8]);
    assert!(ids(after.search(&query("a", "alpha", None, SearchMode::Lexical, 5)).await.unwrap()).is_empty());
    let mut names: Vec<String> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert_eq!(names[0], "tantivy");
    assert!(names[1].starts_with("vectors-"), "{names:?}");
    // The writer goes on writing in place.
    writer.upsert(vec![doc(9, "a", "beta nine", None)]).await.unwrap();
    writer.set_watermark(3).await.unwrap();
    writer.flush().await.unwrap();
    drop(writer);
    let reopened = TantivyIndex::open(dir.path(), TantivySettings::default(), clock).unwrap();
    assert_eq!(reopened.state().await.unwrap(), IndexState::UpTo(3));
    assert_eq!(ids(reopened.search(&query("a", "beta", None, SearchMode::Lexical, 5)).await.unwrap()), vec![7, 8, 9]);
    assert_eq!(reopened.vector_count().unwrap(), 1);
}

#[test]
fn no_index_on_disk_cannot_be_opened_read_only() {
    let clock = Arc::new(SimClock::new(Timestamp::from_millis(1)));
    let dir = tempfile::tempdir().unwrap();
    let e =
        TantivyIndex::open(dir.path(), TantivySettings { read_only: true, ..Default::default() }, clock).err().unwrap();
    assert_eq!(e.index_kind(), Some(IndexErrorKind::ReadOnly));
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing was created");
}
