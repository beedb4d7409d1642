//! The latest migration steps of each component on a database that already holds rows at an
//! older version: the index's V1 → V2 (postings table filled from the documents, the GIN index
//! dropped), V2 → V3 (postings weighted), V3 → V4 (the HNSW graph over half-precision
//! vectors instead of f32) and V4 → V5 (stale postings an older version left are deleted: the
//! lexical search now ranks from the postings alone), V5 → V6 (the table of the index's stamp,
//! see `index_stamp`), and the store's V4 → V5 (entity rows
//! filled from the memories). Each older
//! schema is what that version left: made with the current code, then its last step undone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use mnemo_contract::conformance::index::{axis, doc, query};
use mnemo_contract::{
    ClientKind, Index, MemoryId, Namespace, NewMemory, Provenance, SearchMode, Store, Timestamp, WriteOp,
};
use mnemo_store_postgres::index::IndexSettings;
use mnemo_store_postgres::{PgSettings, PostgresIndex, PostgresStore};

async fn version(schema: &str, component: &str) -> i32 {
    common::client()
        .await
        .query_one(
            &format!("SELECT version FROM \"{schema}\".mnemo_schema_versions WHERE component = $1"),
            &[&component],
        )
        .await
        .unwrap()
        .get(0)
}

async fn count(schema: &str, table: &str) -> i64 {
    common::client().await.query_one(&format!("SELECT count(*) FROM \"{schema}\".{table}"), &[]).await.unwrap().get(0)
}

/// Documents in two namespaces written by the current code, then `downgrade` (what an older
/// version left) and the index opened again: the lexical ranking (ids and scores) is what it
/// was, the postings are complete, dense search works and a later write is found.
async fn index_migrates_with_its_documents(prefix: &str, downgrade: &str, old_version: i32) {
    let schema = common::unique_schema(prefix);
    let settings = IndexSettings { schema: schema.clone(), pool_size: 2, ..IndexSettings::new(&common::url()) };
    let texts = ["amber falcon river", "quiet stone garden", "falcon over the river river"];
    let ranked = |hits: &[mnemo_contract::Hit]| hits.iter().map(|h| (h.id.0, h.score)).collect::<Vec<_>>();
    let lexical = query("a", "falcon river amber", None, SearchMode::Lexical, 10);
    let before = {
        let idx = PostgresIndex::new(&settings).unwrap();
        let docs =
            texts.iter().enumerate().map(|(i, t)| doc(i as i64 + 1, "a", t, Some(axis(i, i + 1, 0.1)))).collect();
        idx.upsert(docs).await.unwrap();
        idx.upsert(vec![doc(9, "b", "amber stone", Some(axis(5, 6, 0.1)))]).await.unwrap();
        idx.set_watermark(9).await.unwrap();
        idx.search(&lexical).await.unwrap()
    };
    assert_eq!(before.len(), 2, "{before:?}");
    common::client()
        .await
        .batch_execute(&format!(
            "SET search_path TO \"{schema}\", public; {downgrade} \
             UPDATE mnemo_schema_versions SET version = {old_version} WHERE component = 'index';"
        ))
        .await
        .unwrap();
    let idx = PostgresIndex::new(&settings).unwrap();
    let after = idx.search(&lexical).await.unwrap();
    assert_eq!(ranked(&after), ranked(&before), "the same ranking after migrating from version {old_version}");
    assert_eq!(version(&schema, "index").await, 6);
    // The stamp table (version 6) is there, empty after a downgrade that dropped it, and takes
    // a stamp.
    let stamp = mnemo_contract::IndexStamp { store: None, fingerprint: None, embedder: None };
    idx.set_stamp(stamp.clone()).await.unwrap();
    assert_eq!(idx.stamp().await.unwrap(), Some(stamp));
    // One posting per distinct lexeme of every document: "the" and "over" are stop words
    // (and none of the stale ones a downgrade may have added).
    assert_eq!(count(&schema, "index_terms").await, 3 + 3 + 2 + 2, "postings of both namespaces");
    let other = idx.search(&query("b", "amber falcon", None, SearchMode::Lexical, 10)).await.unwrap();
    assert_eq!(other.iter().map(|h| h.id).collect::<Vec<_>>(), vec![MemoryId(9)], "namespaces stay apart");
    let dense = idx.search(&query("a", "", Some(axis(1, 2, 0.1)), SearchMode::Dense, 1)).await.unwrap();
    assert_eq!(dense.first().map(|h| h.id), Some(MemoryId(2)), "{dense:?}");
    // The dense search built the half-precision graph; no f32 graph is left behind.
    let exists = |name: &str| {
        let sql = format!("SELECT to_regclass('\"{schema}\".{name}') IS NOT NULL");
        async move { common::client().await.query_one(&sql, &[]).await.unwrap().get::<_, bool>(0) }
    };
    assert!(exists(mnemo_store_postgres::index::HNSW_INDEX).await, "the half-precision HNSW graph is built");
    assert!(!exists("index_docs_hnsw").await, "the f32 graph of versions 1-3 is dropped");
    assert!(!exists("index_docs_tsv").await, "no GIN index after version 2");
    // A write after the migration keeps the postings current.
    idx.upsert(vec![doc(4, "a", "saffron river", None)]).await.unwrap();
    let hits = idx.search(&query("a", "saffron", None, SearchMode::Lexical, 10)).await.unwrap();
    assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), vec![MemoryId(4)]);
    drop(idx);
    common::drop_schemas(&schema).await;
}

#[tokio::test]
async fn an_index_of_schema_5_gains_its_stamp_table() {
    // Version 5: no stamp kept (the index records none: the engine rebuilds it once).
    index_migrates_with_its_documents("idxmig5", "DROP TABLE index_stamp;", 5).await;
}

#[tokio::test]
async fn an_index_of_schema_1_with_documents_is_searchable_after_migrating() {
    // Version 1: no postings table, a GIN index on the tsvector.
    let v1 = "DROP TABLE index_terms; CREATE INDEX index_docs_tsv ON index_docs USING gin (tsv);";
    index_migrates_with_its_documents("idxmig1", v1, 1).await;
}

#[tokio::test]
async fn an_index_of_schema_2_with_documents_ranks_the_same_after_migrating() {
    // Version 2: postings without their weights.
    let v2 = "ALTER TABLE index_terms DROP CONSTRAINT index_terms_pkey; ALTER TABLE index_terms DROP COLUMN weight; \
              ALTER TABLE index_terms ADD PRIMARY KEY (namespace, term, id);";
    index_migrates_with_its_documents("idxmig2", v2, 2).await;
}

/// Postings an index of version 3 could be left with by two processes writing one document
/// before index writes took the namespace lock: a lexeme the document no longer holds, and a
/// removed document's; and a stored vector beyond half precision's range (versions before 5
/// stored vectors unscaled), which the half-precision graph could not be built over.
const STALE_POSTINGS: &str = "INSERT INTO index_docs (namespace, id, removed) VALUES ('a', 7, true); \
     INSERT INTO index_terms (namespace, term, id, weight) VALUES ('a', 'falcon', 2, 0.1), ('a', 'river', 7, 0.1); \
     UPDATE index_docs SET embedding = (SELECT array_agg(x * 1e6)::vector FROM unnest(embedding::real[]) x) \
     WHERE namespace = 'a' AND id = 1;";

/// A schema's graph put back to the f32 one of older versions (under its old name, with
/// `options`), and the stale postings above.
fn with_f32_graph_and_stale_postings(options: &str) -> String {
    format!(
        "DROP INDEX IF EXISTS {}; CREATE INDEX index_docs_hnsw ON index_docs USING hnsw \
         ((embedding::vector({})) vector_cosine_ops) {options}; {STALE_POSTINGS}",
        mnemo_store_postgres::index::HNSW_INDEX,
        mnemo_contract::conformance::index::DIMS
    )
}

#[tokio::test]
async fn an_index_of_schema_3_with_an_f32_graph_and_stale_postings_migrates() {
    // Version 3: the HNSW graph over the f32 vectors, under its old name; stale postings.
    index_migrates_with_its_documents("idxmig3", &with_f32_graph_and_stale_postings(""), 3).await;
}

#[tokio::test]
async fn an_index_of_the_development_schema_4_drops_its_f32_graph_and_stale_postings() {
    // What a development build (03aff11) left at version 4: the f32 graph rebuilt with m = 8.
    index_migrates_with_its_documents("idxmig4", &with_f32_graph_and_stale_postings("WITH (m = 8)"), 4).await;
}

fn fact(ns: &Namespace, content: &str, entities: &[&str]) -> WriteOp {
    WriteOp::Insert {
        memory: NewMemory {
            validity: Default::default(),
            namespace: ns.clone(),
            kind: mnemo_contract::MemoryKind::Semantic,
            content: content.to_string(),
            claim: None,
            entities: entities.iter().map(|e| e.to_string()).collect(),
            importance: 0.8,
            sources: vec!["user".to_string()],
            provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "fake".to_string() },
            created_at: Timestamp(0),
            pinned: false,
            embedding: None,
        },
        turn: None,
    }
}

fn sorted(ms: &[mnemo_contract::Memory]) -> Vec<MemoryId> {
    let mut ids: Vec<MemoryId> = ms.iter().map(|m| m.id).collect();
    ids.sort_unstable();
    ids
}

#[tokio::test]
async fn a_store_of_schema_4_with_memories_finds_them_by_entity_after_migrating() {
    let schema = common::unique_schema("storemig");
    let settings = PgSettings { url: common::url(), schema: schema.clone(), throwaway: false, pool_size: 2 };
    let (a, b) = (Namespace::new("alpha").unwrap(), Namespace::new("beta").unwrap());
    let (ids_a, ids_b) = {
        let s = PostgresStore::new(&settings).unwrap();
        let ids_a = s
            .apply(
                &a,
                Timestamp(0),
                vec![fact(&a, "Ada likes tea", &["Ada"]), fact(&a, "Bob and Ada met", &["Bob", "Ada"])],
            )
            .await
            .unwrap();
        let ids_b = s.apply(&b, Timestamp(0), vec![fact(&b, "Ada of beta", &["Ada"])]).await.unwrap();
        (ids_a, ids_b)
    };
    // What version 4 left: no entity rows, no trigger, the GIN index on the names.
    common::client()
        .await
        .batch_execute(&format!(
            "SET search_path TO \"{schema}\", public; DROP TABLE erased_rows; DROP TABLE erasures; ALTER TABLE memories DROP COLUMN erased_by; \
         ALTER TABLE memories DROP COLUMN valid_from; ALTER TABLE memories DROP COLUMN valid_to; DROP TRIGGER memories_entities ON memories; \
             DROP FUNCTION memory_entities_of_row(); DROP TABLE memory_entities; \
             CREATE INDEX memories_entities ON memories USING gin (entities_norm); \
             DROP TABLE history_chain; DROP TABLE chain_heads; \
             DELETE FROM mnemo_schema_versions WHERE component = 'store_history_chain'; \
             UPDATE mnemo_schema_versions SET version = 4 WHERE component = 'store';"
        ))
        .await
        .unwrap();
    let s = PostgresStore::new(&settings).unwrap();
    let found = s.active_by_entities(&a, &["ada".to_string()]).await.unwrap();
    let mut both = ids_a.clone();
    both.sort_unstable();
    assert_eq!(sorted(&found), both, "both of alpha's memories naming Ada");
    let bob = s.active_by_entities(&a, &["Bob".to_string()]).await.unwrap();
    assert_eq!(sorted(&bob), vec![ids_a[1]]);
    let beta = s.active_by_entities(&b, &["Ada".to_string()]).await.unwrap();
    assert_eq!(sorted(&beta), ids_b, "namespaces stay apart");
    assert_eq!(version(&schema, "store").await, 8);
    assert_eq!(count(&schema, "memory_entities").await, 4);
    // The trigger is back: a write after the migration is found by its entity too.
    let new = s.apply(&a, Timestamp(1), vec![fact(&a, "Cy", &["Cy"])]).await.unwrap();
    assert_eq!(sorted(&s.active_by_entities(&a, &["cy".to_string()]).await.unwrap()), new);
    drop(s);
    common::drop_schemas(&schema).await;
}
