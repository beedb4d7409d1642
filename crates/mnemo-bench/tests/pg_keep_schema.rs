//! `bench scale --pg-keep-schema` on PostgreSQL (`MNEMO_POSTGRES_URL`, as `scripts/test` sets
//! it): the first run loads and keeps the schema, a second run reuses the load (no ingest) and
//! measures the same data, a run with other corpus arguments is refused.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;

use mnemo_bench::scale::{Backend, Component};
use mnemo_bench::{scale, BenchReport, ScaleArgs};
use mnemo_report::RunProvenance;
use mnemo_store_postgres::{Db, PgSettings};

fn prov() -> RunProvenance {
    RunProvenance {
        client: "fake".into(),
        model: "fake".into(),
        embedder: String::new(),
        offline: true,
        cassette: None,
        run_id: "test".into(),
        config_hash: "test".into(),
        git_commit: "unknown".into(),
        command: "test".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        cores: 1,
        token_counter: String::new(),
    }
}

fn postgres() -> Backend {
    // url "": the server named by MNEMO_POSTGRES_URL.
    let section = |pairs: &[(&str, &str)]| -> toml::Table {
        pairs.iter().map(|(k, v)| (k.to_string(), toml::Value::String(v.to_string()))).collect()
    };
    let c = |name: &str| Component::new("postgres", section(&[("url", "")]), name, Path::new("."));
    Backend { store: c("test [store]"), index: c("test [index]") }
}

fn value(r: &BenchReport, metric: &str) -> Option<f64> {
    r.report.rows.iter().find(|row| row["metric"] == metric).and_then(|row| row["value"].as_f64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kept_schema_is_reused_by_the_next_run_and_refused_for_another_corpus() {
    let name = format!("bench_keep_{}", std::process::id());
    let args = ScaleArgs {
        n: vec![200],
        dims: 16,
        queries: 3,
        single: 0,
        batch: 100,
        recall_queries: 3,
        no_rebuild: true,
        quiet: true,
        pg_keep_schema: Some(name.clone()),
        ..Default::default()
    };
    let first = scale(&args, prov(), &postgres()).await.unwrap();
    assert!(value(&first, "ingest_batched").is_some() && value(&first, "ingest_skipped").is_none());
    let second = scale(&args, prov(), &postgres()).await.unwrap();
    assert_eq!(value(&second, "ingest_skipped"), Some(200.0));
    assert!(value(&second, "ingest_batched").is_none(), "the second run must not load again");
    let recall = |r: &BenchReport| value(r, "dense_recall_at_10_vs_exact").unwrap();
    assert_eq!(recall(&first), recall(&second), "the same data, matched to the same corpus order");
    assert!(recall(&second) > 0.5, "ids matched to the corpus: {}", recall(&second));
    let other = ScaleArgs { single: 5, ..args.clone() };
    let e = match scale(&other, prov(), &postgres()).await {
        Ok(_) => panic!("a schema holding another corpus must be refused"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("--pg-keep-schema") && e.contains("200"), "{e}");
    // The kept schema is the test's to drop.
    let keep = format!("{name}_200");
    let db = Db::connect(&PgSettings { url: String::new(), schema: keep, throwaway: false, pool_size: 2 }).unwrap();
    db.client().await.unwrap().batch_execute(&format!("DROP SCHEMA {} CASCADE", db.quoted_schema())).await.unwrap();
}
