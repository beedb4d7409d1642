//! An index opened read-only (a data directory that cannot be written) searches what is on disk
//! and refuses every write with an error of kind `ReadOnly`, leaving its files as they were.
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
async fn a_read_only_index_searches_and_refuses_writes_with_a_kind() {
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
    let ro = TantivyIndex::open(dir.path(), TantivySettings { read_only: true, ..Default::default() }, clock).unwrap();
    let hits = ro.search(&query("a", "vault owner", None, SearchMode::Lexical, 5)).await.unwrap();
    assert_eq!(hits.first().map(|h| h.id), Some(MemoryId(2)));
    let refused = [
        ro.upsert(vec![doc(3, "a", "new", Some(vec![1.0, 1.0]))]).await.unwrap_err(),
        ro.remove(&ns("a"), &[MemoryId(1)]).await.unwrap_err(),
        ro.clear().await.unwrap_err(),
    ];
    for e in refused {
        assert_eq!(e.index_kind(), Some(IndexErrorKind::ReadOnly), "{e}");
    }
    ro.flush().await.unwrap();
    drop(ro);
    assert_eq!(files(dir.path()), before, "a read-only index wrote to its directory");
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
