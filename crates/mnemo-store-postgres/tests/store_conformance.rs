//! The Store conformance suite (mnemo_contract::conformance::store) against `PostgresStore`, each
//! test on a fresh throw-away schema; plus the checks specific to PostgreSQL: row-level
//! security, throw-away schemas being dropped, a newer schema version refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use mnemo_contract::conformance::store as suite;
use mnemo_contract::{ClientKind, Namespace, NewMemory, Provenance, Store, Timestamp, WriteOp};
use mnemo_store_postgres::{PgSettings, PostgresStore};

fn fresh() -> PostgresStore {
    PostgresStore::new(&common::throwaway("conf")).unwrap()
}

mnemo_contract::store_conformance_tests!(store = fresh() => &store);

#[tokio::test]
async fn run_all_on_throwaway_schemas() {
    suite::run_all(|| async { Arc::new(fresh()) as Arc<dyn Store> }).await;
}

fn memory(ns: &Namespace, text: &str) -> NewMemory {
    NewMemory {
        validity: Default::default(),
        namespace: ns.clone(),
        kind: mnemo_contract::MemoryKind::Semantic,
        content: text.to_string(),
        claim: None,
        entities: vec!["acme".into()],
        importance: 0.5,
        sources: vec!["user".into()],
        provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "m".into() },
        created_at: Timestamp(1),
        pinned: false,
        embedding: None,
    }
}

/// A query that forgets its namespace filter still sees only the transaction's namespace:
/// the row-level policy holds for the role queries run as (even when the login role is a
/// superuser, as on the test server).
#[tokio::test]
async fn row_level_security_partitions_unfiltered_queries() {
    let store = fresh();
    let (a, b) = (Namespace::new("alpha").unwrap(), Namespace::new("beta").unwrap());
    store.apply(&a, Timestamp(1), vec![WriteOp::Insert { memory: memory(&a, "a1"), turn: None }]).await.unwrap();
    store.apply(&a, Timestamp(1), vec![WriteOp::Insert { memory: memory(&a, "a2"), turn: None }]).await.unwrap();
    store.apply(&b, Timestamp(1), vec![WriteOp::Insert { memory: memory(&b, "b1"), turn: None }]).await.unwrap();
    let db = store.db();
    let mut client = db.client().await.unwrap();
    for (scope_ns, want) in [(&a, 2i64), (&b, 1)] {
        let tx = db.begin(&mut client, mnemo_store_postgres::db::Scope::Namespace(scope_ns)).await.unwrap();
        let n: i64 = tx.query_one("SELECT count(*) FROM memories", &[]).await.unwrap().get(0);
        assert_eq!(n, want, "an unfiltered count in {scope_ns} must see only {scope_ns}'s rows");
        let n: i64 = tx.query_one("SELECT count(*) FROM memory_events", &[]).await.unwrap().get(0);
        assert_eq!(n, want, "events are partitioned too");
        // Writing a row of another namespace is refused by the policy's WITH CHECK.
        let other = if scope_ns == &a { "beta" } else { "alpha" };
        let r = tx
            .execute("INSERT INTO turns (namespace, source, at, text) VALUES ($1, 'x', 0, 'smuggled')", &[&other])
            .await;
        assert!(r.is_err(), "inserting a row of {other} from a {scope_ns} transaction must fail");
        drop(tx);
    }
    // And nothing is hard-deleted: the query role has no DELETE.
    let tx = db.begin(&mut client, mnemo_store_postgres::db::Scope::Namespace(&a)).await.unwrap();
    assert!(tx.execute("DELETE FROM memories", &[]).await.is_err(), "the query role must not delete");
}

/// A throw-away schema is gone once its store is dropped.
#[tokio::test]
async fn throwaway_schema_is_dropped() {
    let store = fresh();
    let ns = Namespace::new("alpha").unwrap();
    store.apply(&ns, Timestamp(1), vec![WriteOp::Insert { memory: memory(&ns, "x"), turn: None }]).await.unwrap();
    let schema = store.db().schema().to_string();
    let c = common::client().await;
    let sql = "SELECT count(*) FROM pg_namespace WHERE nspname = $1";
    let n: i64 = c.query_one(sql, &[&schema]).await.unwrap().get(0);
    assert_eq!(n, 1, "the schema exists while the store lives");
    drop(store);
    let n: i64 = c.query_one(sql, &[&schema]).await.unwrap().get(0);
    assert_eq!(n, 0, "the throw-away schema {schema} must be dropped with the store");
}

/// Migrations are versioned in the database: reopening keeps the data; a newer version is
/// refused with a message naming it.
#[tokio::test]
async fn schema_versions_are_kept_and_newer_refused() {
    let schema = common::unique_schema("ver");
    let settings = PgSettings { url: common::url(), schema: schema.clone(), throwaway: false, pool_size: 2 };
    let ns = Namespace::new("alpha").unwrap();
    {
        let s = PostgresStore::new(&settings).unwrap();
        s.apply(&ns, Timestamp(1), vec![WriteOp::Insert { memory: memory(&ns, "kept"), turn: None }]).await.unwrap();
    }
    let s = PostgresStore::new(&settings).unwrap();
    assert_eq!(s.active(&ns).await.unwrap().len(), 1, "a reopened store keeps its data");
    let c = common::client().await;
    c.batch_execute(&format!("UPDATE \"{schema}\".mnemo_schema_versions SET version = 99 WHERE component = 'store'"))
        .await
        .unwrap();
    let e = PostgresStore::new(&settings).unwrap().max_rev().await.unwrap_err().to_string();
    assert!(e.contains("99") && e.contains("newer"), "{e}");
    common::drop_schemas(&schema).await;
}
