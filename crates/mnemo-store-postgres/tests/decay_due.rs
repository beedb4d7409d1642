//! Decay due times on PostgreSQL: the conformance check, a store of schema 3 (before due
//! times) migrated and its old rows given due times at the first sweep, and the range query
//! answered by its index.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use mnemo_contract::conformance::decay as suite;
use mnemo_contract::time::DAY_MS;
use mnemo_contract::{
    ClientKind, DecayRule, DuePage, MemoryKind, Namespace, NewMemory, Provenance, Store, Timestamp, WriteOp,
};
use mnemo_store_postgres::{PgSettings, PostgresStore};

fn episode(ns: &Namespace, i: usize, importance: f32, kind: MemoryKind) -> WriteOp {
    WriteOp::Insert {
        memory: NewMemory {
            validity: Default::default(),
            namespace: ns.clone(),
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

async fn due_count(s: &PostgresStore, ns: &Namespace, days: i64) -> usize {
    let page = DuePage { now: Timestamp(days * DAY_MS), after: None, limit: 100 };
    s.due_for_decay(ns, &DecayRule::default(), &page).await.unwrap().len()
}

#[tokio::test]
async fn due_for_decay_matches_the_scan() {
    let store = PostgresStore::new(&common::throwaway("decay")).unwrap();
    suite::due_for_decay_matches_the_scan(&store).await;
}

#[tokio::test]
async fn a_schema_3_store_gets_due_times_at_its_first_sweep() {
    let schema = common::unique_schema("decaymig");
    let settings = PgSettings { url: common::url(), schema: schema.clone(), throwaway: false, pool_size: 2 };
    let ns = Namespace::new("alpha").unwrap();
    {
        let s = PostgresStore::new(&settings).unwrap();
        let ops = vec![
            episode(&ns, 0, 0.5, MemoryKind::Episodic),
            episode(&ns, 1, 0.1, MemoryKind::Episodic),
            episode(&ns, 2, 0.1, MemoryKind::Semantic),
        ];
        s.apply(&ns, Timestamp(0), ops).await.unwrap();
    }
    // Turn it back into what schema 3 wrote: no due column, no index, no rules table (and
    // none of schema 5's entity rows or schema 6's history chain).
    let c = common::client().await;
    c.batch_execute(&format!(
        "SET search_path TO \"{schema}\"; DROP TABLE erased_rows; DROP TABLE erasures; ALTER TABLE memories DROP COLUMN erased_by; \
         ALTER TABLE memories DROP COLUMN valid_from; ALTER TABLE memories DROP COLUMN valid_to; DROP TRIGGER memories_entities ON memories; \
         DROP FUNCTION memory_entities_of_row(); DROP TABLE memory_entities; DROP TABLE decay_rules; DROP INDEX memories_decay_due; DROP INDEX turns_external_id; \
         ALTER TABLE memories DROP COLUMN decay_due; DROP TABLE history_chain; DROP TABLE chain_heads; \
         DELETE FROM mnemo_schema_versions WHERE component = 'store_history_chain'; \
         UPDATE mnemo_schema_versions SET version = 3 WHERE component = 'store';"
    ))
    .await
    .unwrap();
    let s = PostgresStore::new(&settings).unwrap();
    assert_eq!(due_count(&s, &ns, 3).await, 0);
    assert_eq!(due_count(&s, &ns, 6).await, 1, "importance 0.1 fades after ~5 days");
    assert_eq!(due_count(&s, &ns, 38).await, 2, "importance 0.5 after ~37; the fact never");
    let nulls: i64 = c
        .query_one(
            &format!("SELECT count(*) FROM \"{schema}\".memories WHERE kind = 'episodic' AND decay_due IS NULL"),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(nulls, 0, "every old decaying row has a due time");
    common::drop_schemas(&schema).await;
}

#[tokio::test]
async fn the_due_query_can_use_its_index() {
    let schema = common::unique_schema("decayplan");
    let settings = PgSettings { url: common::url(), schema: schema.clone(), throwaway: false, pool_size: 2 };
    let ns = Namespace::new("alpha").unwrap();
    let s = PostgresStore::new(&settings).unwrap();
    s.apply(&ns, Timestamp(0), vec![episode(&ns, 0, 0.5, MemoryKind::Episodic)]).await.unwrap();
    let c = common::client().await;
    // A one-row table is scanned whatever the indexes: forbid that to see the range plan.
    c.batch_execute(&format!("SET search_path TO \"{schema}\"; SET enable_seqscan = off;")).await.unwrap();
    let plan: Vec<String> = c
        .query(
            "EXPLAIN SELECT id FROM memories WHERE namespace = 'alpha' AND status = 'active' \
             AND decay_due IS NOT NULL AND decay_due <= 100 AND (decay_due, id) > (-1, 0) \
             ORDER BY decay_due, id LIMIT 10",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect();
    let plan = plan.join("\n");
    assert!(plan.contains("memories_decay_due"), "{plan}");
    assert!(!plan.contains("Sort"), "the index gives the order: {plan}");
    common::drop_schemas(&schema).await;
}
