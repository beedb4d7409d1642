//! `bench scale` on PostgreSQL + pgvector (the `postgres` Store and Index), for each N on
//! fresh throw-away schemas of the configured server: batched and one-at-a-time ingest,
//! full engine recall p50/p99 and the bare index search per mode, the store's share of a
//! recall, bytes per memory (tables and indexes of both schemas) and the server's memory
//! (proportional set size of the postmaster and its children, when the server runs on this
//! machine and its data directory is readable).
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use mnemo_core::engine::RecallOptions;
use mnemo_core::report::RunProvenance;
use mnemo_core::{
    CharTokenCounter, Clock, Index, Namespace, SearchMode, SearchQuery, Store, SystemClock, TokenCounter, WriteOp,
};
use mnemo_store_postgres::index::IndexSettings;
use mnemo_store_postgres::{PgSettings, PostgresIndex, PostgresStore};
use serde_json::json;

use crate::error::{BenchError, Result};
use crate::report::{provenance_md, table, BenchReport};
use crate::scale::synth::{Corpus, SynthEmbedder};
use crate::scale::{engine, fmt, memory, ns_of, Row, ScaleArgs};
use crate::util::{bar, percentile};

/// Run the scale benchmark against the `postgres` Store and Index of these settings (each N
/// on throw-away schemas, whatever `throwaway` says).
pub async fn scale_postgres(
    args: &ScaleArgs,
    mut provenance: RunProvenance,
    store: &PgSettings,
    index: &IndexSettings,
) -> Result<BenchReport> {
    if args.n.is_empty() || args.n.contains(&0) || args.dims == 0 || args.batch == 0 || args.namespaces == 0 {
        return Err(BenchError::Arg("--n, --dims, --batch and --namespaces must be positive".into()));
    }
    let corpus = Arc::new(Corpus::with_topic_weight(args.seed, args.dims, 20_000, 2_000, 60, args.topic_weight));
    let embedder = Arc::new(SynthEmbedder::new(corpus.clone()));
    provenance.embedder = mnemo_core::Embedder::model_id(embedder.as_ref()).to_string();
    provenance.token_counter = CharTokenCounter.name().to_string();
    let mut rows = Vec::new();
    for &n in &args.n {
        rows.extend(one_size(args, n, &corpus, &embedder, store, index).await?);
    }
    let json_rows = rows
        .iter()
        .map(|r| json!({"n": r.n, "metric": r.metric, "value": r.value, "unit": r.unit, "note": r.note}))
        .collect();
    let mut md = format!("# Scale (PostgreSQL)\n\n{}\n", provenance_md(&provenance));
    md.push_str(&format!(
        "{} dims, {} namespace(s), PostgreSQL store + index (full text + pgvector HNSW, ef_search {}), batch {}, \
         {} recall queries per N, {} one-at-a-time inserts per N.\n\n",
        args.dims, args.namespaces, index.ef_search, args.batch, args.queries, args.single
    ));
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| vec![r.n.to_string(), r.metric.to_string(), fmt(r.value), r.unit.to_string(), r.note.clone()])
        .collect();
    md.push_str(&table(&["n", "metric", "value", "unit", "note"], &body));
    Ok(BenchReport::new(provenance, json_rows, md))
}

async fn one_size(
    args: &ScaleArgs,
    n: usize,
    corpus: &Arc<Corpus>,
    embedder: &Arc<SynthEmbedder>,
    store_settings: &PgSettings,
    index_settings: &IndexSettings,
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let mut push = |metric, value, unit, note: &str| rows.push(Row { n, metric, value, unit, note: note.to_string() });
    let pg = Arc::new(PostgresStore::new(&PgSettings { throwaway: true, ..store_settings.clone() }).map_err(core)?);
    let pgi = Arc::new(PostgresIndex::new(&IndexSettings { throwaway: true, ..index_settings.clone() }).map_err(core)?);
    let store: Arc<dyn Store> = pg.clone();
    let index: Arc<dyn Index> = pgi.clone();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let model = mnemo_core::Embedder::model_id(embedder.as_ref()).to_string();
    let eng = engine(store.clone(), index.clone(), embedder.clone())?;
    eng.sync_index(&|_, _| {}).await?;
    let now = clock.now();

    let pb = bar(n as u64, &format!("ingest {n}"), args.quiet);
    let (mut t_store, mut t_index) = (0.0f64, 0.0f64);
    let mut i = 0;
    while i < n {
        let end = (i + args.batch).min(n);
        let mut by_ns: BTreeMap<Namespace, Vec<WriteOp>> = BTreeMap::new();
        for j in i..end {
            let ns = ns_of(j, args.namespaces)?;
            let m = memory(corpus, j, ns.clone(), now, &model);
            by_ns.entry(ns).or_default().push(WriteOp::Insert { memory: m, turn: None });
        }
        let t0 = Instant::now();
        for (ns, ops) in by_ns {
            store.apply(&ns, now, ops).await?;
        }
        let t1 = Instant::now();
        eng.sync_index(&|_, _| {}).await?;
        t_index += t1.elapsed().as_secs_f64();
        t_store += (t1 - t0).as_secs_f64();
        pb.inc((end - i) as u64);
        i = end;
    }
    pb.finish_and_clear();
    let total = t_store + t_index;
    push(
        "ingest_batched",
        n as f64 / total,
        "memories/s",
        &format!("store {t_store:.1}s + index {t_index:.1}s, batches of {}", args.batch),
    );
    push("ingest_batched_store_share", t_store / total, "fraction", "");

    if args.single > 0 {
        let pb = bar(args.single as u64, "one at a time", args.quiet);
        let mut secs = 0.0;
        for k in 0..args.single {
            let j = n + k;
            let ns = ns_of(j, args.namespaces)?;
            let m = memory(corpus, j, ns.clone(), now, &model);
            let t0 = Instant::now();
            store.apply(&ns, now, vec![WriteOp::Insert { memory: m, turn: None }]).await?;
            eng.sync_index(&|_, _| {}).await?;
            secs += t0.elapsed().as_secs_f64();
            pb.inc(1);
        }
        pb.finish_and_clear();
        push(
            "ingest_one_at_a_time",
            args.single as f64 / secs,
            "memories/s",
            &format!("sample of {} on top of n, apply + index sync each", args.single),
        );
    }

    let opts = RecallOptions { no_touch: true, ..Default::default() };
    for q in 0..20u64 {
        let ns = ns_of(q as usize, args.namespaces)?;
        eng.recall(&ns, &corpus.query_text(q + 1_000_000), &opts).await?;
    }
    let mut lat = Vec::with_capacity(args.queries);
    let mut packed = 0usize;
    for q in 0..args.queries as u64 {
        let ns = ns_of(q as usize, args.namespaces)?;
        let text = corpus.query_text(q);
        let t0 = Instant::now();
        let pack = eng.recall(&ns, &text, &opts).await?;
        lat.push(t0.elapsed().as_secs_f64() * 1000.0);
        packed += pack.items.len();
    }
    lat.sort_by(f64::total_cmp);
    let note = format!(
        "full engine recall, hybrid, budget 1024, 64 candidates; {:.1} memories packed on average",
        packed as f64 / args.queries.max(1) as f64
    );
    push("recall_p50", percentile(&lat, 50.0), "ms", &note);
    push("recall_p99", percentile(&lat, 99.0), "ms", &note);
    for (mode, p50, p99) in [
        (SearchMode::Lexical, "search_lexical_p50", "search_lexical_p99"),
        (SearchMode::Dense, "search_dense_p50", "search_dense_p99"),
        (SearchMode::Hybrid, "search_hybrid_p50", "search_hybrid_p99"),
    ] {
        let mut lat = Vec::with_capacity(args.queries);
        for q in 0..args.queries as u64 {
            let ns = ns_of(q as usize, args.namespaces)?;
            let text = corpus.query_text(q);
            let embedding = Some(corpus.embed(&text));
            let t0 = Instant::now();
            index.search(&SearchQuery { namespace: ns, text, embedding, limit: 64, mode }).await?;
            lat.push(t0.elapsed().as_secs_f64() * 1000.0);
        }
        lat.sort_by(f64::total_cmp);
        push(p50, percentile(&lat, 50.0), "ms", "index search only, 64 hits");
        push(p99, percentile(&lat, 99.0), "ms", "index search only, 64 hits");
    }
    let mut get_lat = Vec::with_capacity(args.queries);
    for q in 0..args.queries as u64 {
        let ns = ns_of(q as usize, args.namespaces)?;
        let text = corpus.query_text(q);
        let embedding = Some(corpus.embed(&text));
        let hits = index
            .search(&SearchQuery { namespace: ns.clone(), text, embedding, limit: 64, mode: SearchMode::Hybrid })
            .await?;
        let ids: Vec<_> = hits.iter().map(|h| h.id).collect();
        let t0 = Instant::now();
        store.get_many(&ns, &ids).await?;
        get_lat.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    get_lat.sort_by(f64::total_cmp);
    push("store_get_many_p50", percentile(&get_lat, 50.0), "ms", "Store::get_many of the 64 hybrid hits");

    // Dense quality: the HNSW answer against the exact scan of the namespace.
    let mut overlap = 0.0;
    let recall_queries = args.recall_queries.min(args.queries.max(1));
    for q in 0..recall_queries as u64 {
        let ns = ns_of(q as usize, args.namespaces)?;
        let e = corpus.embed(&corpus.query_text(q));
        let got = index
            .search(&SearchQuery {
                namespace: ns.clone(),
                text: String::new(),
                embedding: Some(e.clone()),
                limit: 10,
                mode: SearchMode::Dense,
            })
            .await?;
        let exact = pgi.dense_exact(&ns, &e, 10).await?;
        let want: std::collections::HashSet<_> = exact.iter().map(|h| h.id).collect();
        overlap += got.iter().filter(|h| want.contains(&h.id)).count() as f64 / want.len().max(1) as f64;
    }
    push(
        "dense_recall_at_10_vs_exact",
        overlap / recall_queries.max(1) as f64,
        "fraction",
        &format!("HNSW (iterative scan) against the exact scan; {recall_queries} queries"),
    );

    let total_n = n + args.single;
    let bytes_store = pg.db().schema_bytes().await?;
    let bytes_index = pgi.db().schema_bytes().await?;
    push(
        "bytes_per_memory",
        (bytes_store + bytes_index) as f64 / total_n as f64,
        "bytes",
        &format!("tables + indexes: store {bytes_store} + index {bytes_index} bytes"),
    );
    let (mib, note) = match pg.db().server_memory_bytes().await? {
        Some(b) => (
            b as f64 / (1024.0 * 1024.0),
            "PSS of the postmaster and its children (shared buffers counted once)".to_string(),
        ),
        None => {
            (f64::NAN, "unknown: the server is not on this machine or its data directory is unreadable".to_string())
        }
    };
    push("server_memory", mib, "MiB", &note);
    drop(eng);
    Ok(rows)
}

fn core(e: mnemo_store_postgres::PgError) -> BenchError {
    BenchError::Core(e.into())
}
