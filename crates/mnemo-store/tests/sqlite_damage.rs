//! Damage inside the SQLite file that `quick_check` does not see (issue 42): a byte flipped in
//! an index's b-tree page. The next open rebuilds the index (REINDEX) and says so, every memory
//! is there afterwards and writes go on; a damaged table is refused naming the file and the
//! fix; damage met in use names the file and the fix and makes the next open check in full.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use mnemo_contract::{ClientKind, MemoryKind, Namespace, NewMemory, Provenance, Store, Timestamp, WriteOp};
use mnemo_store::sqlite::{damage_marker, Check, SqliteStore, Synchronous};

const MEMORIES: usize = 50;

fn ns() -> Namespace {
    Namespace::new("damage").unwrap()
}

fn memory(i: usize) -> NewMemory {
    NewMemory {
        validity: Default::default(),
        namespace: ns(),
        kind: MemoryKind::Episodic,
        content: format!("memory number {i}"),
        claim: None,
        entities: vec![],
        importance: 0.5,
        sources: vec!["damage-test".to_string()],
        provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "none".to_string() },
        created_at: Timestamp(i as i64),
        pinned: false,
        embedding: None,
    }
}

/// A closed store of `MEMORIES` memories (its WAL checkpointed into the file).
async fn seeded(path: &Path) {
    let store = SqliteStore::open(path).unwrap();
    let ops = (0..MEMORIES).map(|i| WriteOp::Insert { memory: memory(i), turn: None }).collect();
    store.apply(&ns(), Timestamp(0), ops).await.unwrap();
    drop(store);
    assert!(!path.with_file_name("mnemo.db-wal").exists(), "a clean close removes the WAL");
}

/// The file offset of the first leaf page of the b-tree named `name` (an index or a table).
fn leaf_page(path: &Path, name: &str) -> (usize, usize) {
    let raw = rusqlite::Connection::open(path).unwrap();
    let root: usize = raw
        .query_row("SELECT rootpage FROM sqlite_schema WHERE name = ?1", [name], |r| r.get::<_, i64>(0))
        .unwrap() as usize;
    let page_size: usize = raw.query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0)).unwrap() as usize;
    drop(raw);
    let data = std::fs::read(path).unwrap();
    let mut page = root;
    loop {
        let at = (page - 1) * page_size;
        match data[at] {
            // Index or table leaf.
            0x0a | 0x0d => return (at, page_size),
            // Interior: follow the right-most child.
            0x02 | 0x05 => {
                page = u32::from_be_bytes([data[at + 8], data[at + 9], data[at + 10], data[at + 11]]) as usize;
            }
            other => panic!("page {page} of {name} has type {other:#x}"),
        }
    }
}

fn flip(path: &Path, offset: usize, mask: u8) {
    let mut data = std::fs::read(path).unwrap();
    data[offset] ^= mask;
    std::fs::write(path, data).unwrap();
}

fn pragma(path: &Path, which: &str) -> Vec<String> {
    let raw = rusqlite::Connection::open(path).unwrap();
    let mut stmt = raw.prepare(&format!("PRAGMA {which}")).unwrap();
    let lines = stmt.query_map([], |r| r.get::<_, String>(0)).unwrap().map(|l| l.unwrap()).collect();
    lines
}

/// Flip a byte of the last cell of `memories_rev`'s leaf page (the page's last bytes: the
/// memory id an index entry points to): `quick_check` passes, `integrity_check` does not.
fn flip_index(path: &Path, from_end: usize, mask: u8) {
    let (at, size) = leaf_page(path, "memories_rev");
    flip(path, at + size - from_end, mask);
    assert_eq!(pragma(path, "quick_check"), vec!["ok"], "quick_check does not see it");
    let problems = pragma(path, "integrity_check");
    assert!(problems.iter().any(|p| p.contains("memories_rev")), "integrity_check sees it: {problems:?}");
}

#[tokio::test]
async fn a_flipped_index_byte_is_repaired_at_the_next_open_and_every_memory_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    seeded(&path).await;
    flip_index(&path, 1, 0x01);

    // `mnemo verify`'s view, before anything opens it for writing: index damage only.
    let found = SqliteStore::verify(&path).unwrap();
    assert!(found.only_indexes(), "{found:?}");
    assert_eq!(found.indexes, vec!["memories_rev".to_string()]);

    let store = SqliteStore::open(&path).unwrap();
    let note = store.repaired().expect("the open says what it repaired");
    assert!(note.contains("memories_rev") && note.contains(&path.display().to_string()), "{note}");
    assert!(store.integrity_check().unwrap().is_empty());
    assert_eq!(store.all_memories(&ns()).await.unwrap().len(), MEMORIES, "every memory is there");
    assert_eq!(store.changed_since(0, 1000).await.unwrap().len(), MEMORIES, "and found through memories_rev");
    store.apply(&ns(), Timestamp(0), vec![WriteOp::Insert { memory: memory(MEMORIES), turn: None }]).await.unwrap();
    drop(store);
    assert_eq!(pragma(&path, "integrity_check"), vec!["ok"]);
    let again = SqliteStore::open(&path).unwrap();
    assert!(again.repaired().is_none(), "nothing left to repair");
    assert_eq!(again.all_memories(&ns()).await.unwrap().len(), MEMORIES + 1);
}

#[tokio::test]
async fn a_damaged_table_is_refused_naming_the_file_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    seeded(&path).await;
    // The first cell pointer of a `memories` leaf page, sent out of the page's range.
    let (at, _) = leaf_page(&path, "memories");
    flip(&path, at + 8, 0x10);

    let found = SqliteStore::verify(&path).unwrap();
    assert!(!found.is_sound() && !found.only_indexes(), "{found:?}");

    let err = SqliteStore::open(&path).unwrap_err();
    assert_eq!(err.store_kind(), Some(mnemo_contract::StoreErrorKind::Damaged));
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "names the file: {text}");
    assert!(text.contains("mnemo backup restore"), "names the fix: {text}");
}

#[tokio::test]
async fn damage_met_in_use_names_the_file_and_the_fix_and_the_next_open_repairs_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    seeded(&path).await;
    // The id's third byte: the index entry points at a memory that does not exist.
    flip_index(&path, 3, 0x40);

    // Opened without the check (`[store] quick_check = false`): the read through the index
    // fails, naming the file and the fix, and leaves the marker.
    let store = SqliteStore::open_with_check(&path, Synchronous::Normal, Check::Off).unwrap();
    let err = store.changed_since(0, 1000).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()) && text.contains("mnemo verify --repair"), "{text}");
    assert_eq!(err.store_kind(), Some(mnemo_contract::StoreErrorKind::Damaged));
    assert!(damage_marker(&path).exists());
    drop(store);

    let store = SqliteStore::open(&path).unwrap();
    assert!(store.repaired().is_some_and(|n| n.contains("memories_rev")));
    assert!(!damage_marker(&path).exists(), "the marker goes once the store is sound");
    assert_eq!(store.changed_since(0, 1000).await.unwrap().len(), MEMORIES);
}
