//! The Index conformance suite against `PostgresIndex` (persistent: a slot is a schema,
//! reopened by name), plus the checks specific to it: the namespace filter never loses dense
//! candidates, a removed document is never revived by a replayed older upsert, dimension
//! mismatches are named.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use mnemo_contract::conformance::index::{self as suite, doc, query};
use mnemo_contract::{Index, IndexDoc, MemoryId, SearchMode};
use mnemo_store_postgres::index::IndexSettings;
use mnemo_store_postgres::PostgresIndex;

fn settings(schema: &str) -> IndexSettings {
    IndexSettings { schema: schema.to_string(), pool_size: 2, ..IndexSettings::new(&common::url()) }
}

#[tokio::test]
async fn postgres_index_conforms() {
    let prefix = common::unique_schema("ixconf");
    let p = prefix.clone();
    suite::run_all(
        move |slot: usize| Arc::new(PostgresIndex::new(&settings(&format!("{p}_s{slot}"))).unwrap()) as Arc<dyn Index>,
        true,
    )
    .await;
    common::drop_schemas(&prefix).await;
}

/// A unit vector in `dims` dimensions from a seed (deterministic, spread over the sphere).
fn vector(seed: u64, dims: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let mut v: Vec<f32> = (0..dims)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        })
        .collect();
    let n = v.iter().map(|a| a * a).sum::<f32>().sqrt();
    v.iter_mut().for_each(|a| *a /= n);
    v
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// A small namespace beside a large one: with a tiny `ef_search`, a filtered HNSW scan
/// without iterative scans would return at most ef_search rows of the whole table and mostly
/// lose the small namespace's; here every query returns min(limit, namespace size) hits,
/// and exactly the true nearest ones.
#[tokio::test]
async fn namespace_filter_never_loses_dense_candidates() {
    let schema = common::unique_schema("ixfilter");
    let s = IndexSettings { ef_search: 4, ..settings(&schema) };
    let idx = PostgresIndex::new(&s).unwrap();
    idx.clear().await.unwrap();
    let dims = 16;
    let big: Vec<IndexDoc> = (0..3000).map(|i| doc(i, "big", "filler", Some(vector(i as u64, dims)))).collect();
    idx.upsert(big).await.unwrap();
    let small: Vec<IndexDoc> =
        (0..12).map(|i| doc(100_000 + i, "small", "rare", Some(vector(50_000 + i as u64, dims)))).collect();
    idx.upsert(small.clone()).await.unwrap();
    for probe in 0..5u64 {
        let q = vector(900_000 + probe, dims);
        for limit in [1usize, 5, 12, 30] {
            let h = idx.search(&query("small", "", Some(q.clone()), SearchMode::Dense, limit)).await.unwrap();
            assert_eq!(h.len(), limit.min(12), "limit {limit}: the small namespace lost candidates: {h:?}");
            let mut want: Vec<(i64, f32)> =
                small.iter().map(|d| (d.id.0, cosine(d.embedding.as_ref().unwrap(), &q))).collect();
            want.sort_by(|a, b| b.1.total_cmp(&a.1));
            let want: Vec<i64> = want.iter().take(limit.min(12)).map(|w| w.0).collect();
            let got: Vec<i64> = h.iter().map(|x| x.id.0).collect();
            assert_eq!(got, want, "limit {limit}: the exact nearest neighbours, in order");
        }
    }
    common::drop_schemas(&schema).await;
}

/// Two processes syncing one shared index: a replayed older version of a document neither
/// overwrites a newer one nor revives a removed one.
#[tokio::test]
async fn older_upserts_never_overwrite_or_revive() {
    let schema = common::unique_schema("ixrev");
    let idx = PostgresIndex::new(&settings(&schema)).unwrap();
    idx.clear().await.unwrap();
    let mut newer = doc(1, "a", "vermilion", None);
    newer.rev = 10;
    let mut older = doc(1, "a", "turquoise", None);
    older.rev = 5;
    idx.upsert(vec![newer]).await.unwrap();
    idx.upsert(vec![older.clone()]).await.unwrap();
    let ids = |h: Vec<mnemo_contract::Hit>| h.iter().map(|x| x.id.0).collect::<Vec<_>>();
    let lex = |t: &str| query("a", t, None, SearchMode::Lexical, 5);
    assert_eq!(ids(idx.search(&lex("vermilion")).await.unwrap()), vec![1], "the newer version stays");
    assert!(idx.search(&lex("turquoise")).await.unwrap().is_empty(), "the older version must not overwrite it");
    idx.remove(&suite::ns("a"), &[MemoryId(1), MemoryId(2)]).await.unwrap();
    older.rev = 50;
    let mut two = doc(2, "a", "turquoise", None);
    two.rev = 3;
    idx.upsert(vec![older, two]).await.unwrap();
    assert!(idx.search(&lex("turquoise vermilion")).await.unwrap().is_empty(), "a removed document is never revived");
    common::drop_schemas(&schema).await;
}

#[tokio::test]
async fn dimension_mismatch_is_named() {
    let schema = common::unique_schema("ixdims");
    let idx = PostgresIndex::new(&settings(&schema)).unwrap();
    idx.clear().await.unwrap();
    idx.upsert(vec![doc(1, "a", "x", Some(vec![1.0, 0.0]))]).await.unwrap();
    let e = idx.upsert(vec![doc(2, "a", "y", Some(vec![1.0, 0.0, 0.0]))]).await.unwrap_err().to_string();
    assert!(e.contains("dimensions"), "{e}");
    let e = idx.search(&query("a", "x", Some(vec![1.0; 5]), SearchMode::Dense, 3)).await.unwrap_err().to_string();
    assert!(e.contains("dimensions"), "{e}");
    // clear() forgets the dimensions: another embedder may fill it.
    idx.clear().await.unwrap();
    idx.upsert(vec![doc(3, "a", "z", Some(vec![0.0, 0.0, 1.0]))]).await.unwrap();
    common::drop_schemas(&schema).await;
}

async fn hnsw_exists(schema: &str) -> bool {
    let c = common::client().await;
    let name = format!("\"{schema}\".{}", mnemo_store_postgres::index::HNSW_INDEX);
    c.query_one("SELECT to_regclass($1) IS NOT NULL", &[&name]).await.unwrap().get(0)
}

/// A bulk load defers the HNSW build to the next flush, and the built index finds the true
/// nearest neighbours, also for another process that did not build it.
#[tokio::test]
async fn bulk_load_builds_hnsw_at_flush() {
    let schema = common::unique_schema("ixbulk");
    let idx = PostgresIndex::new(&settings(&schema)).unwrap();
    idx.clear().await.unwrap();
    let dims = 8;
    let n = mnemo_store_postgres::index::BULK_UPSERT as i64 + 200;
    let docs: Vec<IndexDoc> = (0..n).map(|i| doc(i, "a", "filler", Some(vector(i as u64, dims)))).collect();
    idx.upsert(docs.clone()).await.unwrap();
    assert!(!hnsw_exists(&schema).await, "a bulk upsert does not build HNSW row by row");
    let q = vector(777_777, dims);
    let mut want: Vec<(i64, f32)> = docs.iter().map(|d| (d.id.0, cosine(d.embedding.as_ref().unwrap(), &q))).collect();
    want.sort_by(|a, b| b.1.total_cmp(&a.1));
    let want: Vec<i64> = want.iter().take(10).map(|w| w.0).collect();
    // A second index on the same schema (another process): it has not seen the build yet.
    let other = PostgresIndex::new(&settings(&schema)).unwrap();
    idx.flush().await.unwrap();
    assert!(hnsw_exists(&schema).await, "flush builds the deferred HNSW index");
    for i in [&idx, &other] {
        let got: Vec<i64> = i
            .search(&query("a", "", Some(q.clone()), SearchMode::Dense, 10))
            .await
            .unwrap()
            .iter()
            .map(|h| h.id.0)
            .collect();
        let overlap = got.iter().filter(|g| want.contains(g)).count();
        assert!(overlap >= 9, "HNSW top 10 {got:?} against the exact {want:?}");
    }
    // clear() drops it; a small upsert builds it at once.
    idx.clear().await.unwrap();
    assert!(!hnsw_exists(&schema).await);
    idx.upsert(vec![doc(1, "a", "x", Some(vector(1, dims)))]).await.unwrap();
    assert!(hnsw_exists(&schema).await, "a small upsert builds the index at once");
    common::drop_schemas(&schema).await;
}

/// `hnsw_m` is the graph's links per node when it is built, and a value out of pgvector's
/// range is refused with the key named.
#[tokio::test]
async fn hnsw_m_sets_the_links_per_node_of_the_graph() {
    let schema = common::unique_schema("ixhnswm");
    let idx = PostgresIndex::new(&IndexSettings { hnsw_m: 8, ..settings(&schema) }).unwrap();
    idx.clear().await.unwrap();
    let dims = 8;
    let docs: Vec<IndexDoc> = (0..20).map(|i| doc(i, "a", "filler", Some(vector(i as u64, dims)))).collect();
    idx.upsert(docs.clone()).await.unwrap();
    let q = docs[3].embedding.clone().unwrap();
    let h = idx.search(&query("a", "", Some(q), SearchMode::Dense, 1)).await.unwrap();
    assert_eq!(h.first().map(|x| x.id), Some(MemoryId(3)), "{h:?}");
    let options: Option<Vec<String>> = common::client()
        .await
        .query_one(
            &format!(
                "SELECT reloptions FROM pg_class WHERE oid = to_regclass('\"{schema}\".{}')",
                mnemo_store_postgres::index::HNSW_INDEX
            ),
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(options, Some(vec!["m=8".to_string()]), "the graph is built with the configured links");
    drop(idx);
    for bad in [1, 101] {
        let err = PostgresIndex::new(&IndexSettings { hnsw_m: bad, ..settings(&schema) }).unwrap_err();
        assert!(err.to_string().contains("hnsw_m"), "{err}");
    }
    common::drop_schemas(&schema).await;
}

/// Vectors wider than the half-precision HNSW takes are refused with the limit named, and
/// vectors whose components exceed half precision's range (65504) are indexed all the same:
/// the graph holds them scaled to unit length.
#[tokio::test]
async fn vector_width_is_bounded_and_large_components_are_indexed() {
    let schema = common::unique_schema("ixwide");
    let idx = PostgresIndex::new(&settings(&schema)).unwrap();
    idx.clear().await.unwrap();
    let wide = mnemo_store_postgres::index::MAX_DIMS + 1;
    let err = idx.upsert(vec![doc(1, "a", "wide", Some(vec![0.5; wide]))]).await.unwrap_err();
    assert!(err.to_string().contains("at most 4000"), "{err}");
    let dims = 8;
    let mut big: Vec<IndexDoc> = (0..20).map(|i| doc(i, "a", "filler", Some(vector(i as u64, dims)))).collect();
    for d in &mut big {
        if let Some(v) = d.embedding.as_mut() {
            v.iter_mut().for_each(|x| *x *= 1.0e6);
        }
    }
    idx.upsert(big.clone()).await.unwrap();
    assert!(hnsw_exists(&schema).await, "the graph is built over vectors beyond half precision's range");
    let q = big[5].embedding.clone().unwrap();
    let h = idx.search(&query("a", "", Some(q), SearchMode::Dense, 3)).await.unwrap();
    assert_eq!(h.first().map(|x| x.id), Some(MemoryId(5)), "{h:?}");
    assert!((h[0].score - 1.0).abs() < 1e-4, "exact cosine of a vector with itself: {h:?}");
    common::drop_schemas(&schema).await;
}

/// The stamp is kept in the database, so every server sharing the index reads the one the
/// last sync recorded (which embedder made its vectors): it round-trips, another connection
/// (another server) reads it, a change by one is seen by the other, `clear` removes it, and a
/// stamp written before it named the embedder reads with none.
#[tokio::test]
async fn the_stamp_round_trips_and_is_shared() {
    use mnemo_contract::{EmbedderIdentity, IndexStamp, StoreIdentity};
    let schema = common::unique_schema("ixstamp");
    let a = PostgresIndex::new(&settings(&schema)).unwrap();
    let b = PostgresIndex::new(&settings(&schema)).unwrap();
    a.clear().await.unwrap();
    assert_eq!(a.stamp().await.unwrap(), None, "a new index records none");
    let stamp = |model: &str, dims| IndexStamp {
        store: Some(StoreIdentity { id: "store-1".into(), generation: 2 }),
        fingerprint: Some("f00d".into()),
        embedder: Some(EmbedderIdentity { model: model.into(), dims }),
    };
    a.set_stamp(stamp("model-a", 384)).await.unwrap();
    assert_eq!(a.stamp().await.unwrap(), Some(stamp("model-a", 384)));
    assert_eq!(b.stamp().await.unwrap(), Some(stamp("model-a", 384)), "another server reads the same");
    // Written twice by the same process: the second is not needed, the stamp stays.
    a.set_stamp(stamp("model-a", 384)).await.unwrap();
    // Another server's stamp replaces it for everyone (one row).
    b.set_stamp(stamp("model-b", 256)).await.unwrap();
    assert_eq!(a.stamp().await.unwrap(), Some(stamp("model-b", 256)));
    let rows: i64 = common::client()
        .await
        .query_one(&format!("SELECT count(*) FROM \"{schema}\".index_stamp"), &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(rows, 1);
    // A server that wrote model-a before writes it again after the other's change.
    a.set_stamp(stamp("model-a", 384)).await.unwrap();
    assert_eq!(b.stamp().await.unwrap(), Some(stamp("model-a", 384)));
    // Cleared: the stamp goes with the documents, for every server; a new one can be written.
    b.clear().await.unwrap();
    assert_eq!(a.stamp().await.unwrap(), None);
    a.set_stamp(stamp("model-a", 384)).await.unwrap();
    assert_eq!(b.stamp().await.unwrap(), Some(stamp("model-a", 384)));
    // A stamp of before the embedder was recorded reads with none.
    common::client()
        .await
        .execute(
            &format!("UPDATE \"{schema}\".index_stamp SET stamp = $1"),
            &[&r#"{"store":null,"fingerprint":"f00d"}"#],
        )
        .await
        .unwrap();
    let old = a.stamp().await.unwrap().unwrap();
    assert_eq!((old.store, old.fingerprint.as_deref(), old.embedder), (None, Some("f00d"), None));
    // A damaged one is an error that says what to do, never a panic.
    common::client()
        .await
        .execute(&format!("UPDATE \"{schema}\".index_stamp SET stamp = 'not json'"), &[])
        .await
        .unwrap();
    let e = a.stamp().await.unwrap_err().to_string();
    assert!(e.contains("rebuild the index"), "{e}");
    drop((a, b));
    common::drop_schemas(&schema).await;
}
