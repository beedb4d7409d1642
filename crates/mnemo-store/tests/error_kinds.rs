//! Callers match on what went wrong, not on message text: store errors carry a kind and keep
//! the backend's error as their source.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::error::Error as _;

use mnemo_contract::{
    ClientKind, CoreError, MemoryKind, Namespace, NewMemory, Provenance, Store, StoreErrorKind, Timestamp, WriteOp,
};
use mnemo_store::error::StoreError;
use mnemo_store::sqlite::SqliteStore;

fn ns() -> Namespace {
    Namespace::new("b").unwrap()
}

fn insert(content: &str) -> WriteOp {
    WriteOp::Insert {
        memory: NewMemory {
            validity: Default::default(),
            namespace: ns(),
            kind: MemoryKind::Semantic,
            content: content.to_string(),
            claim: None,
            entities: vec![],
            importance: 0.5,
            sources: vec!["user".to_string()],
            provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "m".to_string() },
            created_at: Timestamp(1),
            pinned: false,
            embedding: None,
        },
        turn: None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_only_store_reads_and_refuses_writes_with_a_kind() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("mnemo.db");
    let id = SqliteStore::open(&path).unwrap().apply(&ns(), Timestamp(1), vec![insert("kept")]).await.unwrap()[0];

    let s = SqliteStore::open_read_only(&path).unwrap();
    assert!(s.read_only().is_some());
    assert_eq!(s.get_many(&ns(), &[id]).await.unwrap()[0].content, "kept", "reads work");
    assert_eq!(s.history(&ns(), id).await.unwrap().len(), 1);
    assert!(s.identity().await.unwrap().is_some());

    let e = s.apply(&ns(), Timestamp(2), vec![insert("new")]).await.unwrap_err();
    // A caller matches the kind...
    match &e {
        CoreError::StoreFailure { kind: StoreErrorKind::ReadOnly, .. } => {}
        other => panic!("expected a read-only store failure, got {other:?}"),
    }
    assert_eq!(e.store_kind(), Some(StoreErrorKind::ReadOnly));
    // ...and finds the backend's error in the chain.
    let source = e.source().unwrap();
    assert!(matches!(source.downcast_ref::<StoreError>(), Some(StoreError::ReadOnly { .. })), "{source:?}");
    assert!(e.to_string().contains("read-only") && e.to_string().contains("mnemo.db"), "{e}");
    let e = s.touch(&ns(), &[id], Timestamp(3)).await.unwrap_err();
    assert_eq!(e.store_kind(), Some(StoreErrorKind::ReadOnly));
}

#[test]
fn a_foreign_or_damaged_file_is_told_apart_by_kind() {
    let d = tempfile::tempdir().unwrap();
    let foreign = d.path().join("other.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    let e = SqliteStore::open(&foreign).unwrap_err();
    assert_eq!(e.store_kind(), Some(StoreErrorKind::Foreign), "{e}");

    let text = d.path().join("notes.db");
    std::fs::write(&text, "just some text, not a database at all, long enough to have a header.....").unwrap();
    assert_eq!(SqliteStore::open(&text).unwrap_err().store_kind(), Some(StoreErrorKind::Foreign));

    let empty = d.path().join("empty.db");
    std::fs::write(&empty, "").unwrap();
    assert_eq!(SqliteStore::open(&empty).unwrap_err().store_kind(), Some(StoreErrorKind::Damaged));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_damaged_page_is_refused_on_open_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    let path = d.path().join("mnemo.db");
    {
        let s = SqliteStore::open(&path).unwrap();
        let ops = (0..400).map(|i| insert(&format!("memory number {i} with some words to fill pages"))).collect();
        s.apply(&ns(), Timestamp(1), ops).await.unwrap();
    }
    // Everything in the main file (no WAL), then an invalid page type on every page but the
    // first (the file header and schema, checked before): the b-trees are damaged.
    let c = rusqlite::Connection::open(&path).unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    c.pragma_update(None, "journal_mode", "DELETE").unwrap();
    drop(c);
    let mut bytes = std::fs::read(&path).unwrap();
    let page = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    assert!(bytes.len() > 4 * page);
    for p in 1..bytes.len() / page {
        bytes[p * page] = 0x07;
    }
    std::fs::write(&path, &bytes).unwrap();
    let e = SqliteStore::open(&path).unwrap_err();
    assert_eq!(e.store_kind(), Some(StoreErrorKind::Damaged), "{e}");
    assert!(e.to_string().contains("mnemo.db"), "names the file: {e}");
}
