//! The tamper-evident history of the PostgreSQL store (issue 41), as in the SQLite store's
//! tests: the chain is built per namespace by every write, an untouched store verifies, a
//! changed, removed or reordered row is named, concurrent writers of one namespace (two
//! processes' pools) never fork its chain, and a store from before the chain is chained once
//! at its first use after the upgrade.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use mnemo_contract::chain::{BreakKind, ChainReport, EntryKind};
use mnemo_contract::{
    ClientKind, MemoryId, MemoryKind, MemoryRef, Namespace, NewMemory, NewTurn, Provenance, Store, Timestamp, WriteOp,
};
use mnemo_store_postgres::{PgSettings, PostgresStore};

fn ns(name: &str) -> Namespace {
    Namespace::new(name).unwrap()
}

fn mem(n: &Namespace, content: &str) -> NewMemory {
    NewMemory {
        validity: Default::default(),
        namespace: n.clone(),
        kind: MemoryKind::Semantic,
        content: content.to_string(),
        claim: None,
        entities: vec!["acme".to_string()],
        importance: 0.7,
        sources: vec!["user".to_string()],
        provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "fake".to_string() },
        created_at: Timestamp(1_000),
        pinned: false,
        embedding: None,
    }
}

fn turn(n: &Namespace, text: &str, at: i64) -> NewTurn {
    NewTurn { namespace: n.clone(), source: "user".into(), at: Timestamp(at), text: text.into(), external_id: None }
}

/// Two namespaces, each: a turn, two inserts, two turns, an insert superseding the first, a
/// reinforcement and a confirmation, a forget (10 entries). Returns alpha's memory ids.
async fn populate(s: &PostgresStore) -> Vec<MemoryId> {
    let mut out = Vec::new();
    for n in [ns("alpha"), ns("beta")] {
        let t1 = s.record_turn(turn(&n, "Ben's phone is 555-0100", 1_000)).await.unwrap();
        let got = s
            .apply(
                &n,
                Timestamp(1_000),
                vec![
                    WriteOp::Insert { memory: mem(&n, "Ben | phone | 555-0100"), turn: Some(t1.id) },
                    WriteOp::Insert { memory: mem(&n, "Northwind ships on Tuesdays"), turn: Some(t1.id) },
                ],
            )
            .await
            .unwrap();
        let t2 = s.record_turn(turn(&n, "Ben's phone is now 555-0199", 2_000)).await.unwrap();
        let t3 = s.record_turn(turn(&n, "forget Northwind", 2_001)).await.unwrap();
        let new = s
            .apply(
                &n,
                Timestamp(2_000),
                vec![
                    WriteOp::Insert { memory: mem(&n, "Ben | phone | 555-0199"), turn: Some(t2.id) },
                    WriteOp::Tombstone {
                        id: got[0],
                        reason: "superseded".into(),
                        superseded_by: Some(MemoryRef::New(0)),
                        turn: Some(t2.id),
                    },
                    WriteOp::Reinforce { id: got[1], source: "erp".into(), turn: Some(t2.id) },
                    WriteOp::Confirm { id: got[1], source: "crm".into() },
                ],
            )
            .await
            .unwrap();
        s.apply(
            &n,
            Timestamp(3_000),
            vec![WriteOp::Tombstone { id: got[1], reason: "forgotten".into(), superseded_by: None, turn: Some(t3.id) }],
        )
        .await
        .unwrap();
        if n.as_str() == "alpha" {
            out = vec![got[0], got[1], new[0]];
        }
    }
    out
}

fn settings(schema: &str) -> PgSettings {
    PgSettings { url: common::url(), schema: schema.to_string(), throwaway: false, pool_size: 4 }
}

async fn reports(schema: &str) -> Vec<ChainReport> {
    PostgresStore::new(&settings(schema)).unwrap().verify_history().await.unwrap().expect("a chain is kept")
}

fn alpha(r: &[ChainReport]) -> ChainReport {
    r.iter().find(|r| r.namespace == "alpha").unwrap().clone()
}

/// Run `sql` on `schema` as the login role, scoped to namespace alpha.
async fn tamper(schema: &str, sql: &str) {
    common::client()
        .await
        .batch_execute(&format!(
            "BEGIN; SET LOCAL search_path TO \"{schema}\", public; SELECT set_config('mnemo.namespace', 'alpha', true); \
             {sql}; COMMIT;"
        ))
        .await
        .unwrap();
}

async fn one_i64(schema: &str, sql: &str) -> i64 {
    let c = common::client().await;
    c.batch_execute(&format!("SET search_path TO \"{schema}\", public; SET mnemo.namespace = '*';")).await.unwrap();
    c.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test]
async fn the_chain_is_built_per_namespace_and_tampering_is_named() {
    let schema = common::unique_schema("chain");
    let ids = {
        let s = PostgresStore::new(&settings(&schema)).unwrap();
        let ids = populate(&s).await;
        let r = s.verify_history().await.unwrap().unwrap();
        assert_eq!(r.iter().map(|r| r.namespace.as_str()).collect::<Vec<_>>(), ["alpha", "beta"]);
        for r in &r {
            assert!(r.ok(), "{r:?}");
            assert_eq!((r.entries, r.head.as_ref().unwrap().seq), (10, 10));
        }
        let heads = s.chain_heads().await.unwrap();
        assert_eq!(heads, r.iter().map(|r| r.head.clone().unwrap()).collect::<Vec<_>>());
        let records = s.history_chain(&ns("alpha"), 0, 100).await.unwrap().unwrap();
        let kinds: Vec<EntryKind> = records.iter().map(|r| r.entry).collect();
        use EntryKind::{Event as E, Turn as T};
        assert_eq!(kinds, [T, E, E, T, T, E, E, E, E, E], "the order of the writes");
        ids
    };
    // A flipped byte of an event (the supersession, entry 7).
    let seq = one_i64(
        &schema,
        &format!("SELECT seq FROM memory_events WHERE memory_id = {} AND event = 'tombstoned'", ids[0].0),
    )
    .await;
    tamper(
        &schema,
        &format!("UPDATE memory_events SET detail = replace(detail, 'superseded\"', 'superseder\"') WHERE seq = {seq}"),
    )
    .await;
    let bad = alpha(&reports(&schema).await).first_bad.unwrap();
    assert_eq!((bad.seq, bad.entry, bad.id, bad.problem), (7, EntryKind::Event, seq, BreakKind::ContentHashMismatch));
    tamper(
        &schema,
        &format!("UPDATE memory_events SET detail = replace(detail, 'superseder\"', 'superseded\"') WHERE seq = {seq}"),
    )
    .await;
    assert!(alpha(&reports(&schema).await).ok(), "put back, it verifies again");
    // A flipped byte of a memory's content: its created event (entry 2).
    tamper(&schema, &format!("UPDATE memories SET content = 'Ben | phone | 555-0101' WHERE id = {}", ids[0].0)).await;
    let bad = alpha(&reports(&schema).await).first_bad.unwrap();
    assert_eq!((bad.seq, bad.problem), (2, BreakKind::ContentHashMismatch));
    tamper(&schema, &format!("UPDATE memories SET content = 'Ben | phone | 555-0100' WHERE id = {}", ids[0].0)).await;
    // A deleted event (the reinforcement, entry 8).
    let gone = one_i64(
        &schema,
        &format!("SELECT seq FROM memory_events WHERE memory_id = {} AND event = 'reinforced'", ids[1].0),
    )
    .await;
    tamper(&schema, &format!("DELETE FROM memory_events WHERE seq = {gone}")).await;
    let bad = alpha(&reports(&schema).await).first_bad.unwrap();
    assert_eq!((bad.seq, bad.id, bad.problem), (8, gone, BreakKind::RowMissing));
    // Its entry removed as well: the gap is named.
    tamper(&schema, "DELETE FROM history_chain WHERE namespace = 'alpha' AND seq = 8").await;
    let bad = alpha(&reports(&schema).await).first_bad.unwrap();
    assert_eq!((bad.seq, bad.problem), (9, BreakKind::SequenceGap));
    // Two entries swapped (what entries 2 and 3 point at).
    tamper(
        &schema,
        "UPDATE history_chain c SET ref_id = o.ref_id FROM history_chain o \
         WHERE c.namespace = 'alpha' AND o.namespace = 'alpha' AND c.seq IN (2, 3) AND o.seq = 5 - c.seq",
    )
    .await;
    let bad = alpha(&reports(&schema).await).first_bad.unwrap();
    assert_eq!((bad.seq, bad.problem), (2, BreakKind::ContentHashMismatch));
    let r = reports(&schema).await;
    assert!(r.iter().find(|r| r.namespace == "beta").unwrap().ok(), "beta is untouched");
    common::drop_schemas(&schema).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_of_one_namespace_never_fork_its_chain() {
    let schema = common::unique_schema("chainc");
    let stores: Vec<Arc<PostgresStore>> =
        (0..2).map(|_| Arc::new(PostgresStore::new(&settings(&schema)).unwrap())).collect();
    stores[0].migrate().await.unwrap();
    let n = ns("alpha");
    let mut tasks = Vec::new();
    for w in 0..4 {
        let s = Arc::clone(&stores[w % 2]);
        let n = n.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..10 {
                let t = s.record_turn(turn(&n, &format!("writer {w} turn {i}"), 1_000 + i)).await.unwrap();
                s.apply(
                    &n,
                    Timestamp(1_000 + i),
                    vec![WriteOp::Insert { memory: mem(&n, &format!("w{w} m{i}")), turn: Some(t.id) }],
                )
                .await
                .unwrap();
            }
        }));
    }
    // Checks beside the writers see whole writes.
    let checker = PostgresStore::new(&settings(&schema)).unwrap();
    while tasks.iter().any(|t| !t.is_finished()) {
        for r in checker.verify_history().await.unwrap().unwrap() {
            assert!(r.ok(), "a check beside the writers: {r:?}");
        }
    }
    for t in tasks {
        t.await.unwrap();
    }
    let r = alpha(&reports(&schema).await);
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.entries, 4 * 10 * 2, "every turn and event, once");
    common::drop_schemas(&schema).await;
}

#[tokio::test]
async fn a_store_from_before_the_chain_is_chained_at_first_use_and_verifies() {
    let schema = common::unique_schema("chainm");
    let ids = {
        let s = PostgresStore::new(&settings(&schema)).unwrap();
        populate(&s).await
    };
    // What version 5 left: no chain tables, no backfill recorded.
    common::client()
        .await
        .batch_execute(&format!(
            "SET search_path TO \"{schema}\", public; DROP TABLE erased_rows; DROP TABLE erasures; ALTER TABLE memories DROP COLUMN erased_by; ALTER TABLE memories DROP COLUMN valid_from; ALTER TABLE memories DROP COLUMN valid_to; \
             DROP TABLE history_chain; DROP TABLE chain_heads; \
             DELETE FROM mnemo_schema_versions WHERE component = 'store_history_chain'; \
             UPDATE mnemo_schema_versions SET version = 5 WHERE component = 'store';"
        ))
        .await
        .unwrap();
    let s = PostgresStore::new(&settings(&schema)).unwrap();
    // A write after the upgrade continues the backfilled chain.
    s.apply(&ns("alpha"), Timestamp(4_000), vec![WriteOp::Reinforce { id: ids[2], source: "erp".into(), turn: None }])
        .await
        .unwrap();
    let r = s.verify_history().await.unwrap().unwrap();
    for r in &r {
        assert!(r.ok(), "{r:?}");
    }
    assert_eq!(alpha(&r).entries, 11);
    assert_eq!(r.iter().find(|r| r.namespace == "beta").unwrap().entries, 10);
    // Backfilled by time, turns before events, then id.
    let kinds: Vec<EntryKind> =
        s.history_chain(&ns("alpha"), 0, 100).await.unwrap().unwrap().iter().map(|r| r.entry).collect();
    use EntryKind::{Event as E, Turn as T};
    assert_eq!(kinds, [T, E, E, T, E, E, E, E, T, E, E]);
    // Opened again: not chained twice.
    drop(s);
    let r = reports(&schema).await;
    assert_eq!(alpha(&r).entries, 11);
    common::drop_schemas(&schema).await;
}
