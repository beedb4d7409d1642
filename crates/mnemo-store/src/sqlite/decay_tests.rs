//! SQLite schema 3: the decay range query, the idempotency look-up and memory pages use their
//! indexes; a store written by schema 2 (before due times) gets every row's due time at migration.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use mnemo_contract::time::DAY_MS;
use mnemo_contract::{
    ClientKind, DecayRule, DuePage, MemoryId, MemoryKind, Namespace, NewMemory, Provenance, Store, Timestamp, WriteOp,
};
use rusqlite::Connection;

use super::decay::due_sql;
use super::schema::{known_version, UNDO_V4};
use super::SqliteStore;

fn ns() -> Namespace {
    Namespace::new("alpha").unwrap()
}

fn episode(i: usize, importance: f32, kind: MemoryKind) -> WriteOp {
    WriteOp::Insert {
        memory: NewMemory {
            validity: Default::default(),
            namespace: ns(),
            kind,
            content: format!("episode {i}"),
            claim: None,
            entities: vec![],
            importance,
            sources: vec!["user".to_string()],
            provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "fake".to_string() },
            created_at: Timestamp(0),
            pinned: false,
            embedding: None,
        },
        turn: None,
    }
}

fn day(d: i64) -> Timestamp {
    Timestamp(d * DAY_MS)
}

async fn due_ids(s: &SqliteStore, rule: &DecayRule, now: Timestamp) -> Vec<MemoryId> {
    let page = DuePage { now, after: None, limit: 1000 };
    s.due_for_decay(&ns(), rule, &page).await.unwrap().into_iter().map(|d| d.memory.id).collect()
}

#[test]
fn the_due_query_uses_its_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    drop(SqliteStore::open(&path).unwrap());
    let c = Connection::open(&path).unwrap();
    let sql = format!("EXPLAIN QUERY PLAN {}", due_sql());
    let mut stmt = c.prepare(&sql).unwrap();
    let plan: Vec<String> = stmt
        .query_map(rusqlite::params!["alpha", 0i64, i64::MIN, 0i64, 10i64], |r| r.get::<_, String>(3))
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    let plan = plan.join(" | ");
    assert!(plan.contains("USING INDEX memories_decay_due"), "{plan}");
    assert!(plan.contains("decay_due<?"), "a range on the due time, not a scan of the namespace: {plan}");
    assert!(!plan.contains("TEMP B-TREE"), "no sort: the index gives the order: {plan}");
}

#[tokio::test]
async fn a_schema_2_store_gets_due_times_at_migration() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    {
        let s = SqliteStore::open(&path).unwrap();
        let ops = vec![
            episode(0, 0.5, MemoryKind::Episodic),
            episode(1, 0.1, MemoryKind::Episodic),
            episode(2, 0.1, MemoryKind::Semantic),
        ];
        s.apply(&ns(), Timestamp(0), ops).await.unwrap();
    }
    // Turn it back into what schema 2 wrote: no due column, no index, no recorded rule.
    {
        let c = Connection::open(&path).unwrap();
        c.execute_batch(UNDO_V4).unwrap();
        c.execute_batch(
            "DROP INDEX memories_decay_due; DROP INDEX turns_external_id; ALTER TABLE memories DROP COLUMN decay_due; \
             DELETE FROM store_meta WHERE key = 'decay_rule'; PRAGMA user_version = 2;",
        )
        .unwrap();
    }
    let s = SqliteStore::open(&path).unwrap();
    let c = Connection::open(&path).unwrap();
    assert_eq!(c.query_row("PRAGMA user_version", [], |r| r.get::<_, i64>(0)).unwrap(), known_version());
    let nulls: i64 = c
        .query_row("SELECT count(*) FROM memories WHERE kind = 'episodic' AND decay_due IS NULL", [], |r| r.get(0))
        .unwrap();
    assert_eq!(nulls, 0, "every old decaying row has a due time");
    let rule = DecayRule::default();
    assert_eq!(due_ids(&s, &rule, day(3)).await, Vec::<MemoryId>::new());
    assert_eq!(due_ids(&s, &rule, day(6)).await.len(), 1, "importance 0.1 fades after ~5 days");
    assert_eq!(due_ids(&s, &rule, day(38)).await.len(), 2, "importance 0.5 after ~37; the fact never");
}

#[tokio::test]
async fn a_new_rule_recomputes_and_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let s = SqliteStore::open(&path).unwrap();
    s.apply(&ns(), Timestamp(0), vec![episode(0, 0.5, MemoryKind::Episodic)]).await.unwrap();
    let slow = DecayRule { half_life_days: 140.0, ..DecayRule::default() };
    assert!(due_ids(&s, &slow, day(38)).await.is_empty(), "ten times the half-life: not due at 38 days");
    drop(s);
    let c = Connection::open(&path).unwrap();
    let recorded: String =
        c.query_row("SELECT value FROM store_meta WHERE key = 'decay_rule'", [], |r| r.get(0)).unwrap();
    assert_eq!(serde_json::from_str::<DecayRule>(&recorded).unwrap(), slow);
    let due: i64 = c.query_row("SELECT decay_due FROM memories", [], |r| r.get(0)).unwrap();
    assert!(due > day(369).0 && due < day(371).0, "recomputed under the new rule: {due}");
}

#[tokio::test]
async fn a_read_only_store_answers_another_rule_by_scanning() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    let s = SqliteStore::open(&path).unwrap();
    s.apply(&ns(), Timestamp(0), vec![episode(0, 0.5, MemoryKind::Episodic)]).await.unwrap();
    drop(s);
    let ro = SqliteStore::open_read_only(&path).unwrap();
    assert_eq!(due_ids(&ro, &DecayRule::default(), day(38)).await.len(), 1);
    let slow = DecayRule { half_life_days: 140.0, ..DecayRule::default() };
    assert!(due_ids(&ro, &slow, day(38)).await.is_empty());
}

fn plan(c: &Connection, sql: &str, params: impl rusqlite::Params) -> String {
    let mut stmt = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    let rows: Vec<String> = stmt.query_map(params, |r| r.get::<_, String>(3)).unwrap().map(|r| r.unwrap()).collect();
    rows.join(" | ")
}

#[test]
fn the_idempotency_lookup_and_memory_pages_use_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.db");
    drop(SqliteStore::open(&path).unwrap());
    let c = Connection::open(&path).unwrap();
    let p = plan(
        &c,
        "SELECT id FROM turns WHERE namespace = ?1 AND external_id = ?2 ORDER BY id LIMIT 1",
        rusqlite::params!["alpha", "k"],
    );
    assert!(p.contains("INDEX turns_external_id (namespace=? AND external_id=?)"), "{p}");
    let p = plan(
        &c,
        "SELECT id FROM memories WHERE namespace = ?1 AND status = 'active' AND id > ?2 ORDER BY id LIMIT ?3",
        rusqlite::params!["alpha", 0i64, 10i64],
    );
    assert!(p.contains("memories_namespace_status") && !p.contains("TEMP B-TREE"), "{p}");
}
