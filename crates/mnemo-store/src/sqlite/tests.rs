//! SQLite-specific tests: opening refused files, migrations, corrupt rows, reopening,
//! concurrent writers, shutdown and the plugin. The Store contract itself is checked by the
//! conformance suite in tests/store_conformance.rs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use mnemo_contract::registry::{self, Section, StoreContext};
use mnemo_contract::{
    ClientKind, CoreError, Embedding, MemoryId, MemoryKind, Namespace, NewMemory, Provenance, SimClock, Store,
    Timestamp, WriteOp,
};
use rusqlite::Connection;

use super::embedding::encode_f32;
use super::schema::{known_version, APPLICATION_ID, UNDO_V4};
use super::SqliteStore;

fn ns() -> Namespace {
    Namespace::new("alpha").unwrap()
}

fn mem(content: &str) -> NewMemory {
    NewMemory {
        validity: Default::default(),
        namespace: ns(),
        kind: MemoryKind::Semantic,
        content: content.to_string(),
        claim: None,
        entities: vec!["acme".to_string()],
        importance: 0.5,
        sources: vec!["user".to_string()],
        provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "fake".to_string() },
        created_at: Timestamp(1_000),
        pinned: false,
        embedding: None,
    }
}

fn ins(content: &str) -> WriteOp {
    WriteOp::Insert { memory: mem(content), turn: None }
}

async fn insert(s: &SqliteStore, content: &str) -> MemoryId {
    s.apply(&ns(), Timestamp(1_000), vec![WriteOp::Insert { memory: mem(content), turn: None }]).await.unwrap()[0]
}

fn open_err(path: &Path) -> String {
    match SqliteStore::open(path) {
        Ok(_) => panic!("opening {} should fail", path.display()),
        Err(e) if e.store_kind().is_some() => e.to_string(),
        Err(other) => panic!("expected a store error, got {other:?}"),
    }
}

fn pragma(path: &Path, name: &str) -> i64 {
    Connection::open(path).unwrap().query_row(&format!("PRAGMA {name}"), [], |r| r.get(0)).unwrap()
}

fn journal_mode(path: &Path) -> String {
    Connection::open(path).unwrap().query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap()
}

#[test]
fn a_newer_schema_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    for app_id in [APPLICATION_ID, 0] {
        let path = dir.path().join(format!("future-{app_id}.db"));
        let c = Connection::open(&path).unwrap();
        c.pragma_update(None, "application_id", app_id).unwrap();
        c.pragma_update(None, "user_version", 99).unwrap();
        drop(c);
        let msg = open_err(&path);
        assert!(msg.contains("schema version 99 is newer"), "{msg}");
        assert!(msg.contains(&path.display().to_string()), "the error names the file: {msg}");
        assert_eq!(pragma(&path, "user_version"), 99, "a refused file is left as it was");
        assert_eq!(journal_mode(&path), "delete", "a refused file is not switched to WAL");
    }
}

#[test]
fn a_garbage_file_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("garbage.db");
    std::fs::write(&big, (0..8192u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect::<Vec<_>>())
        .unwrap();
    let small = dir.path().join("notes.db");
    std::fs::write(&small, "these are my notes, not a database\n").unwrap();
    for path in [&big, &small] {
        let msg = open_err(path);
        assert!(msg.contains("not a SQLite database"), "{msg}");
        assert!(msg.contains(&path.display().to_string()), "the error names the file: {msg}");
    }
}

#[test]
fn another_applications_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("erp.db");
    Connection::open(&theirs).unwrap().execute_batch("CREATE TABLE customers (id INTEGER PRIMARY KEY);").unwrap();
    let msg = open_err(&theirs);
    assert!(msg.contains("not a Mnemo store"), "{msg}");
    assert_eq!(journal_mode(&theirs), "delete", "someone else's database is left as it was");
    let tagged = dir.path().join("tagged.db");
    Connection::open(&tagged).unwrap().pragma_update(None, "application_id", 42).unwrap();
    assert!(open_err(&tagged).contains("application_id"));
}

#[tokio::test]
async fn migrations_run_once_and_data_survives_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a/b/mnemo.db");
    let (first, rev) = {
        let s = SqliteStore::open(&path).unwrap();
        let id = insert(&s, "kept").await;
        (id, s.max_rev().await.unwrap())
    };
    assert_eq!(pragma(&path, "user_version"), known_version());
    assert_eq!(pragma(&path, "application_id"), APPLICATION_ID);
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(s.get_many(&ns(), &[first]).await.unwrap()[0].content, "kept");
    assert_eq!(s.max_rev().await.unwrap(), rev, "rev survives a reopen");
    let second = insert(&s, "new").await;
    assert!(second > first, "ids keep increasing after a reopen");
    assert!(s.max_rev().await.unwrap() > rev, "revs keep increasing after a reopen");
    assert!(s.integrity_check().unwrap().is_empty());
}

#[tokio::test]
async fn a_corrupt_row_is_an_error_naming_the_row() {
    let edits = [
        ("UPDATE memories SET kind = 'bogus' WHERE id = ?1", "kind"),
        ("UPDATE memories SET sources = '[not json' WHERE id = ?1", "sources"),
        ("UPDATE memories SET content = CAST(X'FFFE41' AS TEXT) WHERE id = ?1", "content"),
        ("UPDATE memories SET embedding = X'010203', embedding_model = 'm' WHERE id = ?1", "embedding"),
        (
            "UPDATE memories SET embedding = X'0102030405', embedding_model = 'm', embedding_codec = 9 WHERE id = ?1",
            "embedding_codec 9",
        ),
        ("UPDATE memories SET status = 'tombstoned' WHERE id = ?1", "reason"),
        ("UPDATE memories SET importance = 'high' WHERE id = ?1", "importance"),
    ];
    for (sql, column) in edits {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mnemo.db");
        let id = {
            let s = SqliteStore::open(&path).unwrap();
            insert(&s, "fine").await;
            insert(&s, "damaged").await
        };
        Connection::open(&path).unwrap().execute(sql, [id.0]).unwrap();
        let s = SqliteStore::open(&path).unwrap();
        for r in [s.get_many(&ns(), &[id]).await, s.all_memories(&ns()).await, s.changed_since(0, 10).await] {
            match r {
                Err(e @ CoreError::StoreFailure { .. }) => {
                    let msg = e.to_string();
                    assert!(msg.contains(&format!("memories row {}", id.0)), "names the row: {msg}");
                    assert!(msg.contains(column), "names what is wrong ({column}): {msg}");
                }
                other => panic!("{sql}: expected a store error, got {other:?}"),
            }
        }
        // The undamaged row still reads.
        assert_eq!(s.get_many(&ns(), &[MemoryId(id.0 - 1)]).await.unwrap()[0].content, "fine");
    }
}

#[tokio::test]
async fn a_corrupt_turn_is_an_error_naming_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let id = {
        let s = SqliteStore::open(&path).unwrap();
        let t = mnemo_contract::NewTurn {
            namespace: ns(),
            source: "u".into(),
            at: Timestamp(1),
            text: "hi".into(),
            external_id: None,
        };
        s.record_turn(t).await.unwrap().id
    };
    Connection::open(&path).unwrap().execute("UPDATE turns SET text = CAST(X'C328' AS TEXT)", []).unwrap();
    let s = SqliteStore::open(&path).unwrap();
    match s.turns(&ns()).await {
        Err(e @ CoreError::StoreFailure { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains(&format!("turns row {}", id.0)) && msg.contains("text"), "{msg}")
        }
        other => panic!("expected a store error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_damaged_value_the_store_reads_whole_is_a_damaged_store_failure() {
    // A caller matches the kind, not the text: `Damaged` says "restore from a backup".
    let edits = [
        ("UPDATE memories SET namespace = 'not a namespace!' WHERE id = ?1", "corrupt namespace in the store"),
        ("UPDATE memories SET rev = -5 WHERE id = ?1", "negative rev -5 in memories"),
    ];
    for (sql, said) in edits {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mnemo.db");
        let id = {
            let s = SqliteStore::open(&path).unwrap();
            insert(&s, "damaged").await
        };
        Connection::open(&path).unwrap().execute(sql, [id.0]).unwrap();
        let s = SqliteStore::open(&path).unwrap();
        let r = if said.contains("rev") { s.max_rev().await.map(|_| ()) } else { s.namespaces().await.map(|_| ()) };
        match r {
            Err(e @ CoreError::StoreFailure { kind: mnemo_contract::StoreErrorKind::Damaged, .. }) => {
                let msg = e.to_string();
                assert!(msg.starts_with(&format!("store error: {said}")), "{sql}: {msg}");
            }
            other => panic!("{sql}: expected a damaged-store failure, got {other:?}"),
        }
    }
}

fn embedded(content: &str, vector: &[f32], pinned: bool) -> WriteOp {
    let embedding = Some(Embedding { model: "fake-embed-8".to_string(), vector: vector.to_vec() });
    WriteOp::Insert { memory: NewMemory { embedding, pinned, ..mem(content) }, turn: None }
}

fn blob_of(path: &Path, id: MemoryId) -> (Vec<u8>, Option<i64>) {
    let c = Connection::open(path).unwrap();
    c.query_row("SELECT embedding, embedding_codec FROM memories WHERE id = ?1", [id.0], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
}

#[tokio::test]
async fn a_version_3_store_with_f32_embeddings_opens_and_keeps_them_bit_exact() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let old = [0.5f32, -1.0 / 3.0, 0.0, 1.0e-7, -0.25, 0.125, 0.7, -0.01];
    let (a, b) = {
        let s = SqliteStore::open(&path).unwrap();
        let ids = s.apply(&ns(), Timestamp(1), vec![embedded("old", &old, true), ins("bare")]).await.unwrap();
        (ids[0], ids[1])
    };
    // Turn the file into what version 3 wrote: f32 blobs, no codec column, the old indexes.
    {
        let c = Connection::open(&path).unwrap();
        c.execute("UPDATE memories SET embedding = ?1 WHERE id = ?2", rusqlite::params![encode_f32(&old), a.0])
            .unwrap();
        c.execute_batch(UNDO_V4).unwrap();
    }
    assert_eq!(pragma(&path, "user_version"), 3);
    let s = SqliteStore::open(&path).unwrap();
    assert_eq!(pragma(&path, "user_version"), known_version());
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let got = s.get_many(&ns(), &[a, b]).await.unwrap();
    assert_eq!(bits(&got[0].embedding.as_ref().unwrap().vector), bits(&old), "an old f32 row reads bit-exactly");
    assert!(got[1].embedding.is_none());
    assert_eq!(s.pinned(&ns()).await.unwrap().iter().map(|m| m.id).collect::<Vec<_>>(), vec![a]);
    // A change to the old row leaves its embedding as it was; a new row gets int8 codes.
    s.apply(&ns(), Timestamp(2), vec![WriteOp::Reinforce { id: a, source: "erp".into(), turn: None }]).await.unwrap();
    let new = [0.1f32, 0.2, -0.3, 0.4, 0.0, -0.5, 0.6, 0.05];
    let c = s.apply(&ns(), Timestamp(3), vec![embedded("new", &new, false)]).await.unwrap()[0];
    assert_eq!(blob_of(&path, a), (encode_f32(&old), None), "the old row is not rewritten");
    let (blob, codec) = blob_of(&path, c);
    assert_eq!((blob.len(), codec), (4 + new.len(), Some(1)), "a new row: a scale and one byte per component");
    let got = s.get_many(&ns(), &[a, c]).await.unwrap();
    assert_eq!(bits(&got[0].embedding.as_ref().unwrap().vector), bits(&old));
    let input = Embedding { model: "fake-embed-8".to_string(), vector: new.to_vec() };
    assert!(input.within_store_tolerance(got[1].embedding.as_ref().unwrap()), "{:?}", got[1].embedding);
    assert!(s.integrity_check().unwrap().is_empty());
}

#[tokio::test]
async fn the_pinned_lookup_uses_the_index_of_pinned_rows_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    drop(SqliteStore::open(&path).unwrap());
    let c = Connection::open(&path).unwrap();
    let plan: Vec<String> = c
        .prepare("EXPLAIN QUERY PLAN SELECT * FROM memories WHERE namespace = ?1 AND pinned = 1 AND status = 'active' ORDER BY id")
        .unwrap()
        .query_map(["alpha"], |r| r.get::<_, String>(3))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert!(plan.join(" | ").contains("USING INDEX memories_namespace_pinned"), "{plan:?}");
    let sql: String = c
        .query_row("SELECT sql FROM sqlite_master WHERE name = 'memories_namespace_pinned'", [], |r| r.get(0))
        .unwrap();
    assert!(sql.contains("WHERE pinned = 1"), "only pinned rows have an entry: {sql}");
}

#[tokio::test]
async fn a_non_finite_embedding_is_invalid_input() {
    let s = SqliteStore::open_in_memory().unwrap();
    let r = s.apply(&ns(), Timestamp(1), vec![embedded("x", &[0.5, f32::NAN], false)]).await;
    assert!(matches!(r, Err(CoreError::InvalidInput(ref msg)) if msg.contains("component 1")), "{r:?}");
    assert!(s.all_memories(&ns()).await.unwrap().is_empty(), "nothing written");
}

#[tokio::test]
async fn non_finite_importance_is_invalid_input() {
    let s = SqliteStore::open_in_memory().unwrap();
    let m = NewMemory { importance: f32::NAN, ..mem("x") };
    let r = s.apply(&ns(), Timestamp(1), vec![WriteOp::Insert { memory: m, turn: None }]).await;
    assert!(matches!(r, Err(CoreError::InvalidInput(ref msg)) if msg.contains("importance")), "{r:?}");
}

#[tokio::test]
async fn errors_name_the_memory_and_namespace() {
    let s = SqliteStore::open_in_memory().unwrap();
    let id = insert(&s, "x").await;
    let other = Namespace::new("beta").unwrap();
    let r = s.apply(&other, Timestamp(2), vec![WriteOp::Confirm { id, source: "erp".into() }]).await;
    assert!(
        matches!(&r, Err(CoreError::NotFound(m)) if m.contains(&format!("memory {id}")) && m.contains("beta")),
        "{r:?}"
    );
    let tomb = || WriteOp::Tombstone { id, reason: "r".into(), superseded_by: None, turn: None };
    s.apply(&ns(), Timestamp(3), vec![tomb()]).await.unwrap();
    let r = s.apply(&ns(), Timestamp(4), vec![tomb()]).await;
    assert!(
        matches!(&r, Err(CoreError::InvalidInput(m)) if m.contains(&format!("memory {id} is tombstoned"))),
        "{r:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_get_distinct_ids_and_revs() {
    let dir = tempfile::tempdir().unwrap();
    let s = Arc::new(SqliteStore::open(&dir.path().join("mnemo.db")).unwrap());
    let mut tasks = Vec::new();
    for t in 0..8 {
        let s = Arc::clone(&s);
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..40 {
                ids.push(insert(&s, &format!("t{t}-{i}")).await);
                // Reads interleave with writes and always see this task's own writes.
                assert_eq!(s.get_many(&ns(), &ids[ids.len() - 1..]).await.unwrap().len(), 1);
            }
            ids
        }));
    }
    let mut all = HashSet::new();
    for t in tasks {
        for id in t.await.unwrap() {
            assert!(all.insert(id), "id {id} handed out twice");
        }
    }
    assert_eq!(all.len(), 320);
    let changed = s.changed_since(0, 10_000).await.unwrap();
    assert_eq!(changed.len(), 320);
    assert!(changed.windows(2).all(|w| w[0].rev < w[1].rev), "revs distinct and ordered");
}

#[tokio::test]
async fn dropping_the_store_checkpoints_and_closes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let s = SqliteStore::open(&path).unwrap();
    insert(&s, "x").await;
    let wal = dir.path().join("mnemo.db-wal");
    assert!(wal.exists(), "WAL mode is on while open");
    drop(s);
    // SQLite removes the WAL when the last connection closes: both connections are closed,
    // so the write connection was closed by the drop.
    assert!(!wal.exists(), "the WAL is checkpointed and removed on drop");
    assert_eq!(journal_mode(&path), "wal", "WAL mode is persistent");
}

fn build(settings: &str, data_dir: &Path) -> mnemo_contract::Result<Arc<dyn Store>> {
    let table: toml::Table = toml::from_str(settings).unwrap();
    let ctx = StoreContext {
        section: Section { settings: &table, origin: "test [store]", data_dir, config_dir: data_dir },
        clock: Arc::new(SimClock::new(Timestamp(0))),
    };
    registry::build_store("sqlite", &ctx)
}

#[tokio::test]
async fn the_plugin_builds_from_settings() {
    let dir = tempfile::tempdir().unwrap();
    let s = build("", dir.path()).unwrap();
    s.apply(&ns(), Timestamp(1), vec![WriteOp::Insert { memory: mem("x"), turn: None }]).await.unwrap();
    assert!(dir.path().join("mnemo.db").exists(), "default path is mnemo.db in the data dir");
    drop(s);

    let s = build("path = \"stores/other.db\"\nsynchronous = \"full\"", dir.path()).unwrap();
    assert!(s.active(&ns()).await.unwrap().is_empty());
    assert!(dir.path().join("stores/other.db").exists());

    let s = build("in_memory = true", dir.path()).unwrap();
    assert!(s.namespaces().await.unwrap().is_empty());

    let bad = [
        ("colour = \"blue\"", "colour"),
        ("path = \"../escape.db\"", ".."),
        ("synchronous = \"sometimes\"", "sometimes"),
    ];
    for (settings, needle) in bad {
        match build(settings, dir.path()) {
            Err(CoreError::Config(msg)) => assert!(msg.contains(needle) && msg.contains("test [store]"), "{msg}"),
            other => panic!("{settings}: expected a config error, got {:?}", other.map(|_| ())),
        }
    }
}

#[tokio::test]
async fn statements_are_not_prepared_again_for_new_values() {
    // Without the query planner stability guarantee SQLite parses and plans a statement with
    // `LIMIT ?` anew at every binding: the index sync's `changed_since` after every write.
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("mnemo.db")).unwrap();
    for i in 0..3 {
        insert(&s, &format!("m{i}")).await;
    }
    let sql = format!("SELECT {} FROM memories WHERE rev > ?1 ORDER BY rev LIMIT ?2", super::rows::MEMORY_COLUMNS);
    let reader = s.reader.lock().unwrap();
    for (rev, limit) in [(0, 10), (1, 1), (2, 5), (0, 2)] {
        let got = super::read::changed_since(&reader, rev, limit).unwrap();
        assert!(!got.is_empty() && got.len() <= limit, "rev {rev} limit {limit}: {} rows", got.len());
    }
    let stmt = reader.prepare_cached(&sql).unwrap();
    assert_eq!(stmt.get_status(rusqlite::StatementStatus::RePrepare), 0, "changed_since was prepared again");
    drop(stmt);
    drop(reader);
    // Every connection the store opens keeps its plans.
    use rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG as QPSG;
    let path = dir.path().join("mnemo.db");
    let (writer, _) = super::connection::open_writer(&path, super::Synchronous::Normal, super::Check::Off).unwrap();
    let reader = super::connection::open_reader(&path).unwrap();
    let read_only = super::connection::open_read_only(&path).unwrap();
    let memory = super::connection::open_memory().unwrap();
    for (what, c) in [("writer", writer), ("reader", reader), ("read-only", read_only), ("in memory", memory)] {
        assert!(c.db_config(QPSG).unwrap(), "{what}: the planner's stability guarantee is off");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_since_reads_the_same_on_either_connection() {
    // A few changes are read on the write connection (its page cache holds them), many on the
    // read connection: the answers are those of the separate look-ups either way.
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("mnemo.db")).unwrap();
    for i in 0..100 {
        insert(&s, &format!("m{i}")).await;
    }
    let newest = s.max_rev().await.unwrap();
    for from in [0, newest - 80, newest - 3, newest] {
        let got = s.changes_since(from, 1_000).await.unwrap();
        assert_eq!(got.memories, s.changed_since(from, 1_000).await.unwrap(), "from {from}");
        assert_eq!(got.newest, newest);
        let last = got.memories.last().map_or(from, |m| m.rev);
        assert_eq!(got.fingerprint, s.rev_fingerprint(last).await.unwrap(), "from {from}");
        assert_eq!(got.identity, s.identity().await.unwrap());
    }
    let writer = s.writer.as_ref().unwrap();
    let few = writer.try_run(|c| super::read::changes_since_if_few(c, newest - 3, 10, 64)).unwrap().unwrap();
    assert_eq!(few.map(|c| c.memories.len()), Some(3), "3 changes are few");
    let many = writer.try_run(|c| super::read::changes_since_if_few(c, 0, 10, 64)).unwrap().unwrap();
    assert!(many.is_none(), "100 changes are not");
}

/// A restore keeps the numbering above everything the live store handed out: the short ids
/// given after the backup was taken (and lost by the restore) are never handed out again for
/// other content.
#[tokio::test]
async fn ids_after_a_restore_continue_above_the_high_water_mark() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteStore::open(&dir.path().join("mnemo.db")).unwrap();
    let turn = |text: &str| mnemo_contract::NewTurn {
        namespace: ns(),
        source: "u".into(),
        at: Timestamp(1),
        text: text.into(),
        external_id: None,
    };
    insert(&s, "one").await;
    insert(&s, "two").await;
    s.record_turn(turn("first")).await.unwrap();
    let backup = dir.path().join("backup.db");
    s.backup_to(&backup).await.unwrap();
    let lost = [insert(&s, "three").await, insert(&s, "four").await];
    let lost_turn = s.record_turn(turn("second")).await.unwrap().id;
    assert_eq!((lost[1].local(), lost_turn.local()), (4, 2));
    s.replace_from_backup(&backup).await.unwrap();
    assert!(s.get_many(&ns(), &lost).await.unwrap().is_empty(), "the restore dropped what came after the backup");
    let next = insert(&s, "five").await;
    let next_turn = s.record_turn(turn("third")).await.unwrap().id;
    assert_eq!(next.local(), 5, "m3 and m4 named other content before the restore: the next memory is m5");
    assert_eq!(next_turn.local(), 3, "t2 was handed out before the restore: the next turn is t3");
    // And again: a second restore of the same backup remembers the marks it carried.
    s.replace_from_backup(&backup).await.unwrap();
    assert_eq!(insert(&s, "six").await.local(), 6);
}

/// A namespace holding rows from before per-namespace numbering (small store-wide ids, their
/// own local number) numbers its new rows above them: no two of its rows share a short id.
#[tokio::test]
async fn new_ids_stay_above_a_namespaces_legacy_ids() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mnemo.db");
    let first = {
        let s = SqliteStore::open(&path).unwrap();
        insert(&s, "legacy one").await;
        insert(&s, "legacy two").await
    };
    // Make them rows of the old scheme: small ids, and no range drawn for the namespace.
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
        c.execute("UPDATE memories SET id = id & 4294967295", []).unwrap();
        c.execute("UPDATE memory_events SET memory_id = memory_id & 4294967295", []).unwrap();
        c.execute("UPDATE memory_entities SET memory_id = memory_id & 4294967295", []).unwrap();
        c.execute("DELETE FROM store_meta WHERE key LIKE 'ns_tag:%' OR key LIKE 'tag:%'", []).unwrap();
    }
    let s = SqliteStore::open(&path).unwrap();
    let new = insert(&s, "new").await;
    assert_eq!(first.local(), 2);
    assert_eq!(new.local(), 3, "above the legacy m1 and m2");
    assert_eq!(s.id_of_local(&ns(), mnemo_contract::IdKind::Memory, 1).await.unwrap(), Some(1), "legacy m1 is found");
    assert_eq!(s.id_of_local(&ns(), mnemo_contract::IdKind::Memory, 3).await.unwrap(), Some(new.0));
}
