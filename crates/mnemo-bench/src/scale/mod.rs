//! `bench scale`: synthetic memories with precomputed embeddings on the embedded default
//! (SQLite store + tantivy index on disk), at several sizes N. For each N, in a fresh
//! directory:
//! - batched ingest: batches of `--batch` inserts through the engine's bulk load
//!   (`Engine::apply_batches`: the store applies a batch while the index syncs the one before;
//!   each batch acknowledged once durable and searchable), timed without the corpus
//!   generation, its final flush included;
//! - one-at-a-time ingest: `--single` more memories, each its own apply + sync (a sample on
//!   top of N, not N of them), after any background IVF training the load started has ended;
//! - recall latency: `--queries` full engine recalls (hybrid search + get_many + pack, budget
//!   1024, 64 candidates, no_touch) after 20 warm-up queries; and the bare index search per
//!   mode, to show where the time goes;
//! - index rebuild: clear the index and replay the whole store into it; reopen: load the
//!   persisted index (vectors included) without re-embedding;
//! - dense quality: recall@10 (and @128, the depth hybrid fusion takes) of the index's dense
//!   search against the exact scan, so that speed is never bought silently with quality; and
//!   the time of one IVF training at N;
//! - peak RSS (`VmHWM`, reset per N where the kernel allows) and bytes on disk per memory;
//! - the decay sweep with none due, the full scan it replaced, and with k due (see `decay`).
//!
//! `--dense-only` measures the dense side alone (see [`dense`]).
pub mod backend;
mod decay;
mod dense;
mod depth;
mod pg_site;
pub mod stages;
pub mod synth;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mnemo_contract::time::DAY_MS;
use mnemo_contract::{
    CharTokenCounter, ClientKind, Clock, Embedding, EnginePolicy, Index, IndexState, MemoryId, MemoryKind, Namespace,
    NewMemory, Provenance, SearchMode, SearchQuery, Store, SystemClock, TokenCounter, WriteOp,
};
use mnemo_core::engine::{EngineParts, RecallOptions};
use mnemo_core::Engine;
use mnemo_report::RunProvenance;
use mnemo_store::tantivy_index::TantivySettings;
use mnemo_store::vector::AnnKind;
use serde_json::json;
use tracing::instrument::WithSubscriber as _;

use crate::error::{BenchError, Result};
use crate::report::{provenance_md, table, BenchReport};
use crate::util::{bar, peak_rss_mib, percentile, reset_peak_rss, NoReasoner};
pub use backend::{Backend, Component};
use synth::{Corpus, Rng, SynthEmbedder};

/// The first query number of the stage pass (the warm-up asks from 1,000,000, the timed pass
/// from 0): queries none of the earlier passes asked.
const STAGE_QUERIES_FROM: u64 = 2_000_000;

/// Arguments of `bench scale`.
#[derive(Clone, Debug, clap::Args)]
pub struct ScaleArgs {
    /// Corpus sizes (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,1000000")]
    pub n: Vec<usize>,
    /// Embedding dimensions.
    #[arg(long, default_value_t = 256)]
    pub dims: usize,
    /// Namespaces the memories are spread over (1: one big namespace, the worst case for a
    /// search, which scans only its own namespace).
    #[arg(long, default_value_t = 1)]
    pub namespaces: usize,
    /// Recall queries timed per N.
    #[arg(long, default_value_t = 300)]
    pub queries: usize,
    /// Memories ingested one at a time per N (a sample on top of N).
    #[arg(long, default_value_t = 1000)]
    pub single: usize,
    /// Inserts per batch in the batched ingest.
    #[arg(long, default_value_t = 5000)]
    pub batch: usize,
    /// Where to create the data directories (default: the system temp dir); removed after.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seed of the synthetic corpus.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// `[index] ann`: "ivf" or "exact" (default: the index's default).
    #[arg(long)]
    pub ann: Option<String>,
    /// `[index] ann_min_vectors` (default: the index's default).
    #[arg(long)]
    pub ann_min_vectors: Option<usize>,
    /// `[index] ivf_lists`, 0 = automatic (default: the index's default).
    #[arg(long)]
    pub ivf_lists: Option<usize>,
    /// `[index] ivf_nprobe` (default: the index's default).
    #[arg(long)]
    pub ivf_nprobe: Option<usize>,
    /// `[index] ivf_recall_target`, 0 = off (default: the index's default).
    #[arg(long)]
    pub ivf_recall_target: Option<f64>,
    /// Queries whose dense top 10 / 128 are compared with the exact scan's.
    #[arg(long, default_value_t = 200)]
    pub recall_queries: usize,
    /// Measure the dense side alone: vectors in one namespace, no store, no tantivy.
    #[arg(long)]
    pub dense_only: bool,
    /// With --dense-only: uniformly random unit vectors instead of the topic corpus's.
    #[arg(long)]
    pub uniform: bool,
    /// Skip the index rebuild and reopen (a second full load: on a server backend at large N
    /// they take as long as the ingest).
    #[arg(long)]
    pub no_rebuild: bool,
    /// The engine's recall cache, in memories (0: off, every recall reads its candidates from
    /// the store; default: the engine's default).
    #[arg(long)]
    pub recall_cache: Option<usize>,
    /// How much the corpus's word vectors lean towards their topics' directions (0: the
    /// nearly structureless vectors of earlier runs; see `synth`).
    #[arg(long, default_value_t = 0.6)]
    pub topic_weight: f32,
    /// PostgreSQL: run in the schema of this name (`_<N>` appended) and keep it afterwards;
    /// when it already holds the memories of an earlier run with the same corpus arguments,
    /// the ingest is skipped and the reads are measured on them. The decay rows (which write)
    /// are skipped with this flag, so that every run reads the same data.
    #[arg(long)]
    pub pg_keep_schema: Option<String>,
}

impl ScaleArgs {
    /// The index settings: the defaults with the ANN overrides given.
    pub fn index_settings(&self) -> Result<TantivySettings> {
        let mut s = TantivySettings::default();
        if let Some(a) = &self.ann {
            s.ann = match a.as_str() {
                "ivf" => AnnKind::Ivf,
                "exact" => AnnKind::Exact,
                other => return Err(BenchError::Arg(format!("--ann must be ivf or exact, not {other:?}"))),
            };
        }
        s.ann_min_vectors = self.ann_min_vectors.unwrap_or(s.ann_min_vectors);
        s.ivf_lists = self.ivf_lists.unwrap_or(s.ivf_lists);
        s.ivf_nprobe = self.ivf_nprobe.unwrap_or(s.ivf_nprobe);
        s.ivf_recall_target = self.ivf_recall_target.unwrap_or(s.ivf_recall_target);
        s.validate()?;
        Ok(s)
    }

    /// `backend` with the ANN overrides given written into its `[index]` settings (they are
    /// the tantivy index's keys: an error for another index kind).
    pub fn with_overrides(&self, backend: &Backend) -> Result<Backend> {
        let given = [
            ("ann", self.ann.clone().map(toml::Value::String)),
            ("ann_min_vectors", self.ann_min_vectors.map(|v| toml::Value::Integer(v as i64))),
            ("ivf_lists", self.ivf_lists.map(|v| toml::Value::Integer(v as i64))),
            ("ivf_nprobe", self.ivf_nprobe.map(|v| toml::Value::Integer(v as i64))),
            ("ivf_recall_target", self.ivf_recall_target.map(toml::Value::Float)),
        ];
        let mut b = backend.clone();
        for (key, value) in given {
            let Some(value) = value else { continue };
            if b.index.kind != "tantivy" {
                return Err(BenchError::Arg(format!(
                    "--{} is a setting of the tantivy index, not of [index] kind {:?}",
                    key.replace('_', "-"),
                    b.index.kind
                )));
            }
            b.index.settings.insert(key.to_string(), value);
        }
        Ok(b)
    }
}

impl Default for ScaleArgs {
    fn default() -> Self {
        ScaleArgs {
            n: vec![10_000, 100_000, 1_000_000],
            dims: 256,
            namespaces: 1,
            queries: 300,
            single: 1000,
            batch: 5000,
            dir: None,
            seed: 42,
            quiet: false,
            ann: None,
            ann_min_vectors: None,
            ivf_lists: None,
            ivf_nprobe: None,
            ivf_recall_target: None,
            recall_queries: 200,
            dense_only: false,
            uniform: false,
            no_rebuild: false,
            topic_weight: 0.6,
            pg_keep_schema: None,
            recall_cache: None,
        }
    }
}

pub(crate) struct Row {
    pub(crate) n: usize,
    pub(crate) metric: &'static str,
    pub(crate) value: f64,
    pub(crate) unit: &'static str,
    pub(crate) note: String,
}

pub(crate) fn ns_of(i: usize, k: usize) -> Result<Namespace> {
    Ok(Namespace::new(&format!("scale-{}", i % k.max(1)))?)
}

pub(crate) fn memory(
    corpus: &Corpus,
    i: usize,
    ns: Namespace,
    now: mnemo_contract::Timestamp,
    model: &str,
) -> NewMemory {
    let mut rng = Rng::new(i as u64 ^ 0xABCD);
    let content = corpus.memory_text(i as u64);
    let vector = corpus.embed(&content);
    let kind = match i % 10 {
        0..=5 => MemoryKind::Episodic,
        6..=8 => MemoryKind::Semantic,
        _ => MemoryKind::Procedural,
    };
    NewMemory {
        validity: Default::default(),
        namespace: ns,
        kind,
        content,
        claim: None,
        entities: vec![],
        importance: if kind == MemoryKind::Episodic { 0.5 } else { 0.8 },
        sources: vec!["user".into()],
        provenance: Provenance { turns: vec![], client: ClientKind::Rules, model: "synthetic".into() },
        created_at: now.plus_millis(-((rng.below(21) as i64) * DAY_MS)),
        pinned: false,
        embedding: Some(Embedding { model: model.to_string(), vector }),
    }
}

/// Run the scale benchmark (the provenance's `embedder` and `token_counter` are set from what
/// was used).
pub async fn scale(args: &ScaleArgs, mut provenance: RunProvenance, backend: &Backend) -> Result<BenchReport> {
    if args.n.is_empty() || args.n.contains(&0) || args.dims == 0 || args.batch == 0 || args.namespaces == 0 {
        return Err(BenchError::Arg("--n, --dims, --batch and --namespaces must be positive".into()));
    }
    let corpus = Arc::new(Corpus::with_topic_weight(args.seed, args.dims, 20_000, 2_000, 60, args.topic_weight));
    let embedder = Arc::new(SynthEmbedder::new(corpus.clone()));
    provenance.embedder = mnemo_contract::Embedder::model_id(embedder.as_ref()).to_string();
    provenance.token_counter = CharTokenCounter.name().to_string();
    let settings = args.index_settings()?;
    let backend = args.with_overrides(backend)?;
    let mut rows = Vec::new();
    for &n in &args.n {
        if args.dense_only {
            rows.extend(dense::dense_only(args, n, &corpus, &settings.ann())?);
        } else {
            rows.extend(one_size(args, &backend, n, &corpus, &embedder).await?);
        }
    }
    let json_rows = rows
        .iter()
        .map(|r| json!({"n": r.n, "metric": r.metric, "value": r.value, "unit": r.unit, "note": r.note}))
        .collect();
    let mut md = format!("# Scale\n\n{}\n", provenance_md(&provenance));
    let a = settings.ann();
    let ann = format!(
        "dense: ann = {:?}, ann_min_vectors = {}, ivf_lists = {} (0 = auto), ivf_nprobe = {}",
        a.kind, a.min_vectors, a.lists, a.nprobe
    );
    if args.dense_only {
        md.push_str(&format!(
            "Dense side only: {} dims, one namespace, {} vectors, {} queries per N; corpus topic weight {}; {ann}.\n\n",
            args.dims,
            if args.uniform { "uniformly random" } else { "topic-corpus" },
            args.queries,
            args.topic_weight
        ));
    } else {
        md.push_str(&format!(
            "{} dims, {} namespace(s), {} built from config through the registry, batch {}, {} recall queries per N, \
             {} one-at-a-time inserts per N; corpus topic weight {}; recall cache {}; [index] settings {}.\n\n",
            args.dims,
            args.namespaces,
            backend.describe(),
            args.batch,
            args.queries,
            args.single,
            args.topic_weight,
            args.recall_cache.map_or("default".to_string(), |m| format!("{m} memories")),
            settings_line(&backend.index.settings)
        ));
    }
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|r| vec![r.n.to_string(), r.metric.to_string(), fmt(r.value), r.unit.to_string(), r.note.clone()])
        .collect();
    md.push_str(&table(&["n", "metric", "value", "unit", "note"], &body));
    Ok(BenchReport::new(provenance, json_rows, md))
}

/// `key = value` pairs of a section, without connection URLs (they may hold a password).
fn settings_line(t: &toml::Table) -> String {
    let parts: Vec<String> = t.iter().filter(|(k, _)| k.as_str() != "url").map(|(k, v)| format!("{k} = {v}")).collect();
    if parts.is_empty() {
        "(defaults)".to_string()
    } else {
        parts.join(", ")
    }
}

pub(crate) fn fmt(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

pub(crate) fn engine(store: Arc<dyn Store>, index: Arc<dyn Index>, embedder: Arc<SynthEmbedder>) -> Result<Engine> {
    Ok(Engine::new(EngineParts {
        store,
        index,
        embedder,
        reasoner: Arc::new(NoReasoner),
        clock: Arc::new(SystemClock),
        tokens: Arc::new(CharTokenCounter),
        policy: EnginePolicy::default(),
    })?)
}

async fn one_size(
    args: &ScaleArgs,
    backend: &Backend,
    n: usize,
    corpus: &Arc<Corpus>,
    embedder: &Arc<SynthEmbedder>,
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    let mut push = |metric, value, unit, note: &str| rows.push(Row { n, metric, value, unit, note: note.to_string() });
    let rss_reset = reset_peak_rss();
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let keep = args.pg_keep_schema.as_ref().map(|s| format!("{s}_{n}"));
    let site = backend.site(&base, keep.as_deref())?;
    if keep.is_some() && !site.on_postgres() {
        return Err(BenchError::Arg("--pg-keep-schema needs a PostgreSQL [store] or [index]".into()));
    }
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let model = mnemo_contract::Embedder::model_id(embedder.as_ref()).to_string();
    let dyn_embedder: Arc<dyn mnemo_contract::Embedder> = embedder.clone();
    let (store, index) = backend.build(&site, clock.clone(), dyn_embedder.clone())?;
    let mut eng = engine(store.clone(), index.clone(), embedder.clone())?;
    if let Some(memories) = args.recall_cache {
        eng = eng.with_recall_cache(memories);
    }
    eng.sync_index(&|_, _| {}).await?;
    let now = clock.now();
    // The id of memory j (in corpus order; its namespace is `ns_of(j)`), for the exact dense
    // scan at the end. Ids only: a namespace per memory cost this process ~64 MB at 1M, counted
    // in the peak RSS the engine is measured by.
    let mut ids: Vec<MemoryId> = Vec::with_capacity(n + args.single);
    let reused = match &keep {
        Some(_) => loaded_ids(args, n, corpus, &store).await?,
        None => None,
    };
    if let Some(found) = reused {
        ids = found;
        push(
            "ingest_skipped",
            (n + args.single) as f64,
            "memories",
            "--pg-keep-schema: read from an earlier run's schema",
        );
    } else {
        ingest(args, n, corpus, &store, &index, &eng, now, &model, &mut ids, &mut push).await?;
    }
    // Steady state: a background IVF training started by the last batches is let finish (and
    // put in place by a flush) before reads are timed; else they time the previous, smaller
    // training's lists (searched with more rows per list) while the training takes a core.
    settle_dense_timed(&index, args, "dense_training_wait", "after the ingest", &mut push).await?;
    // The same for the database server: the load's tables vacuumed and analysed now, not by
    // the server's autovacuum while the reads below are timed.
    if let Some(secs) = site.settle_server().await? {
        push("pg_vacuum_analyze", secs, "s", "VACUUM (ANALYZE) of the schema's tables before the timed reads");
    }
    // Recall latency.
    let opts = RecallOptions { no_touch: true, ..Default::default() };
    for q in 0..20u64 {
        let ns = ns_of(q as usize, args.namespaces)?;
        eng.recall(&ns, &corpus.query_text(q + 1_000_000), &opts).await?;
    }
    let cpu_before = (site.server_cpu_ns().await?, client_cpu_ns());
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
    let per_recall = |a: u64, b: u64| b.saturating_sub(a) as f64 / 1e6 / args.queries.max(1) as f64;
    if let (Some(a), Some(b)) = (cpu_before.0, site.server_cpu_ns().await?) {
        let note = "the database server's CPU time per recall (its processes' run time over the recalls)";
        push("recall_server_cpu_ms", per_recall(a, b), "ms", note);
    }
    if let (Some(a), Some(b)) = (cpu_before.1, client_cpu_ns()) {
        push("recall_client_cpu_ms", per_recall(a, b), "ms", "this process's CPU time per recall (all threads)");
    }
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
    // Why the dense search costs what it does: the state of the first namespace's structure.
    for f in index.figures(&ns_of(0, args.namespaces)?).await? {
        push(f.name, f.value, f.unit, &format!("{} (namespace 0, as the searches above found it)", f.note));
    }

    // Where a recall's time goes: as many fresh queries (of the same kind, none asked before,
    // so their hits are no more cached than the first pass's were), each stage timed by the
    // engine's own spans (recorded by a layer of this pass only; the recall's `touch`
    // included). The first pass's queries again would find what they read still cached.
    let times = stages::StageTimes::default();
    let traced = stages::dispatch(&times);
    let touching = RecallOptions { no_touch: false, ..Default::default() };
    for q in 0..args.queries as u64 {
        let ns = ns_of(q as usize, args.namespaces)?;
        let text = corpus.query_text(STAGE_QUERIES_FROM + q);
        eng.recall(&ns, &text, &touching).with_subscriber(traced.clone()).await?;
    }
    let times = times.sorted();
    for (stage, p50, p99) in stages::STAGE_METRICS {
        let Some(t) = times.get(stage) else { continue };
        let note =
            format!("stage of a full recall (engine span `{stage}`, {} timed, fresh queries), with touch", t.len());
        push(p50, percentile(t, 50.0), "ms", &note);
        push(p99, percentile(t, 99.0), "ms", &note);
    }

    // The store's share of a recall: fetching the hits, and the pinned memories.
    let mut get_lat = Vec::with_capacity(args.queries);
    let mut pin_lat = Vec::with_capacity(args.queries);
    for q in 0..args.queries as u64 {
        let ns = ns_of(q as usize, args.namespaces)?;
        let text = corpus.query_text(q);
        let embedding = Some(corpus.embed(&text));
        let hits = index
            .search(&SearchQuery { namespace: ns.clone(), text, embedding, limit: 64, mode: SearchMode::Hybrid })
            .await?;
        let hit_ids: Vec<_> = hits.iter().map(|h| h.id).collect();
        let t0 = Instant::now();
        store.get_many(&ns, &hit_ids).await?;
        get_lat.push(t0.elapsed().as_secs_f64() * 1000.0);
        let t0 = Instant::now();
        store.pinned(&ns).await?;
        pin_lat.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    get_lat.sort_by(f64::total_cmp);
    pin_lat.sort_by(f64::total_cmp);
    push("store_get_many_p50", percentile(&get_lat, 50.0), "ms", "Store::get_many of the 64 hybrid hits");
    push("store_pinned_p50", percentile(&pin_lat, 50.0), "ms", "Store::pinned of the namespace (none are pinned)");

    let total_n = n + args.single;
    let (bytes, note) = site.bytes().await?;
    push("disk_bytes_per_memory", bytes as f64 / total_n as f64, "bytes", &note);
    for (part, b) in site.bytes_by_part() {
        let metric = match part {
            "vectors" => "disk_bytes_per_memory_vectors",
            "tantivy" => "disk_bytes_per_memory_tantivy",
            _ => "disk_bytes_per_memory_store",
        };
        let what = match part {
            "vectors" => "the index's vector log (codes, IVF lists)",
            "tantivy" => "tantivy's files (postings, fast fields)",
            _ => "the rest of the data directory (the SQLite store, WAL included)",
        };
        push(metric, b as f64 / total_n as f64, "bytes", what);
    }
    if let Some((mib, note)) = site.server_memory_mib().await? {
        push("server_memory", mib, "MiB", &note);
    }

    let index = if args.no_rebuild {
        drop(eng);
        index
    } else {
        rebuild_and_reopen(args, backend, &site, &mut push, total_n, &store, index, eng, embedder, corpus).await?
    };

    let (mib, note) = peak_rss_mib(rss_reset);
    push("peak_rss", mib, "MiB", note);

    // Dense quality: the index's dense top k against the exact scan of the same vectors
    // (computed here from the corpus, so every backend is held to the same truth).
    let mut vectors: HashMap<Namespace, Vec<(MemoryId, Vec<f32>)>> = HashMap::new();
    for (j, id) in ids.into_iter().enumerate() {
        let v = corpus.embed(&corpus.memory_text(j as u64));
        vectors.entry(ns_of(j, args.namespaces)?).or_default().push((id, v));
    }
    for (k, metric) in [(10usize, "dense_recall_at_10_vs_exact"), (128, "dense_recall_at_128_vs_exact")] {
        let mut recall = 0.0;
        for q in 0..args.recall_queries as u64 {
            let ns = ns_of(q as usize, args.namespaces)?;
            let text = corpus.query_text(q);
            let e = corpus.embed(&text);
            let got = index
                .search(&SearchQuery {
                    namespace: ns.clone(),
                    text,
                    embedding: Some(e.clone()),
                    limit: k,
                    mode: SearchMode::Dense,
                })
                .await?;
            let got: Vec<(MemoryId, f32)> = got.iter().map(|h| (h.id, h.score)).collect();
            recall += dense::overlap(&got, &exact_top(vectors.get(&ns).map_or(&[][..], |v| &v[..]), &e, k));
        }
        push(
            metric,
            recall / args.recall_queries.max(1) as f64,
            "fraction",
            &format!("the index's dense search against the exact scan; {} queries", args.recall_queries),
        );
    }
    depth::overlap_rows(args, &index, corpus, &[64, 100], &mut push).await?;
    if keep.is_none() {
        decay::decay_rows(args, n, total_n, now, &model, corpus, &store, &index, embedder, &mut push).await?;
    }
    drop(index);
    drop(store);
    drop(site);
    Ok(rows)
}

/// The batched and the one-at-a-time ingest of one N (their rows pushed); `ids` gets the id
/// of every memory in corpus order.
#[allow(clippy::too_many_arguments)]
async fn ingest(
    args: &ScaleArgs,
    n: usize,
    corpus: &Arc<Corpus>,
    store: &Arc<dyn Store>,
    index: &Arc<dyn Index>,
    eng: &Engine,
    now: mnemo_contract::Timestamp,
    model: &str,
    ids: &mut Vec<MemoryId>,
    push: &mut impl FnMut(&'static str, f64, &'static str, &str),
) -> Result<()> {
    let pb = bar(n as u64, &format!("ingest {n}"), args.quiet);
    // Where the time goes: the engine's bulk-load and sync spans, summed over the ingest.
    let ingest_times = stages::StageTimes::default();
    let ingest_traced = stages::dispatch(&ingest_times);
    // Building the synthetic memories (text, vector) is the corpus's work, not the engine's:
    // it runs inside the load (batch by batch, so a 1M run never holds them all) and is
    // subtracted from the wall time.
    let build_nanos = AtomicU64::new(0);
    let mut by_ns: BTreeMap<Namespace, Vec<usize>> = BTreeMap::new();
    for j in 0..n {
        by_ns.entry(ns_of(j, args.namespaces)?).or_default().push(j);
    }
    let mut written: Vec<(usize, MemoryId)> = Vec::with_capacity(n);
    let t0 = Instant::now();
    for (ns, js) in &by_ns {
        let chunks: Vec<&[usize]> = js.chunks(args.batch.max(1)).collect();
        let batches = chunks.clone().into_iter().map(|chunk| {
            let b0 = Instant::now();
            let ops: Vec<WriteOp> = chunk
                .iter()
                .map(|&j| WriteOp::Insert { memory: memory(corpus, j, ns.clone(), now, model), turn: None })
                .collect();
            build_nanos.fetch_add(b0.elapsed().as_nanos() as u64, Ordering::Relaxed);
            ops
        });
        let mut ack = |k: usize, got: Vec<MemoryId>| {
            let chunk = chunks.get(k).copied().unwrap_or_default();
            pb.inc(chunk.len() as u64);
            written.extend(chunk.iter().zip(got).map(|(&j, id)| (j, id)));
        };
        eng.apply_batches(ns, batches, &mut ack).with_subscriber(ingest_traced.clone()).await?;
    }
    let total = t0.elapsed().as_secs_f64() - build_nanos.load(Ordering::Relaxed) as f64 / 1e9;
    if written.len() != n {
        let what = format!("the bulk load acknowledged {} of {n} memories", written.len());
        return Err(BenchError::Core(mnemo_contract::CoreError::store_message(
            mnemo_contract::StoreErrorKind::Other,
            what,
        )));
    }
    written.sort_by_key(|w| w.0);
    ids.extend(written.into_iter().map(|(_, id)| id));
    pb.finish_and_clear();
    let ingest_times = ingest_times.sorted();
    for (stage, metric) in stages::INGEST_STAGES {
        let Some(t) = ingest_times.get(stage) else { continue };
        let secs = t.iter().sum::<f64>() / 1000.0;
        push(metric, secs, "s", &format!("batched ingest: engine span `{stage}`, {} times, total", t.len()));
    }
    for (stage, metric) in stages::INGEST_STAGE_MAX {
        let Some(longest) = ingest_times.get(stage).and_then(|t| t.last()) else { continue };
        push(metric, *longest, "ms", &format!("batched ingest: the longest engine span `{stage}`"));
    }
    let stage_secs = |stage: &str| ingest_times.get(stage).map_or(0.0, |t| t.iter().sum::<f64>() / 1000.0);
    let (t_store, t_index) = (stage_secs("bulk_apply"), stage_secs("bulk_sync"));
    push(
        "ingest_batched",
        n as f64 / total,
        "memories/s",
        &format!(
            "{total:.1}s: store {t_store:.1}s overlapped with index {t_index:.1}s (Engine::apply_batches), batches of {}",
            args.batch
        ),
    );
    push("ingest_batched_store_share", t_store / total, "fraction", "the store's apply time over the load's wall time");
    let sync_ms = ingest_times.get("bulk_sync").cloned().unwrap_or_default();
    let note = format!(
        "the engine's index sync of one batch of {} (IVF trainings at {} vectors and each 4x after)",
        args.batch,
        args.ann_min_vectors.map_or("the default".to_string(), |m| m.to_string())
    );
    push("index_sync_batch_p50", percentile(&sync_ms, 50.0), "ms", &note);
    push("index_sync_batch_p99", percentile(&sync_ms, 99.0), "ms", &note);
    push("index_sync_batch_max", sync_ms.last().copied().unwrap_or(0.0), "ms", &note);

    // One at a time, in steady state: a background IVF training started by the last batches
    // is let finish first. On two cores it takes one of them for seconds (at 100k it outlasted
    // a 1,000-write sample), so the writes would time the training's share of the machine.
    if args.single > 0 {
        settle_dense_timed(index, args, "single_training_wait", "after the batched ingest", push).await?;
        let pb = bar(args.single as u64, "one at a time", args.quiet);
        let (mut secs, mut apply_secs, mut apply_max_ms) = (0.0, 0.0, 0.0f64);
        let mut one_ms = Vec::with_capacity(args.single);
        let single_times = stages::StageTimes::default();
        let single_traced = stages::dispatch(&single_times);
        for k in 0..args.single {
            let j = n + k;
            let ns = ns_of(j, args.namespaces)?;
            let m = memory(corpus, j, ns.clone(), now, model);
            let t0 = Instant::now();
            let got = store.apply(&ns, now, vec![WriteOp::Insert { memory: m, turn: None }]).await?;
            apply_secs += t0.elapsed().as_secs_f64();
            apply_max_ms = apply_max_ms.max(t0.elapsed().as_secs_f64() * 1000.0);
            eng.sync_index(&|_, _| {}).with_subscriber(single_traced.clone()).await?;
            secs += t0.elapsed().as_secs_f64();
            one_ms.push(t0.elapsed().as_secs_f64() * 1000.0);
            ids.extend(got);
            pb.inc(1);
        }
        index.flush().await?;
        pb.finish_and_clear();
        push(
            "ingest_one_at_a_time",
            args.single as f64 / secs,
            "memories/s",
            &format!("sample of {} on top of n, apply + index sync each", args.single),
        );
        let per_write = |total_secs: f64| total_secs * 1e6 / args.single as f64;
        push("single_apply_us", per_write(apply_secs), "us", "one at a time: the store's apply, mean per write");
        let single_times = single_times.sorted();
        for (stage, metric) in stages::SINGLE_STAGES {
            let Some(t) = single_times.get(stage) else { continue };
            let note = format!("one at a time: engine span `{stage}`, {} times, mean per write", t.len());
            push(metric, per_write(t.iter().sum::<f64>() / 1000.0), "us", &note);
        }
        // What the slowest writes waited for: the longest of each stage (the store's apply and
        // the index sync's spans).
        push("single_max_apply_ms", apply_max_ms, "ms", "one at a time: the longest store apply");
        for (stage, metric) in stages::SINGLE_STAGE_MAX {
            let Some(longest) = single_times.get(stage).and_then(|t| t.last()) else { continue };
            push(metric, *longest, "ms", &format!("one at a time: the longest engine span `{stage}`"));
        }
        one_ms.sort_by(f64::total_cmp);
        let note = "one write: apply + index sync";
        push("ingest_one_p99", percentile(&one_ms, 99.0), "ms", note);
        push("ingest_one_max", one_ms.last().copied().unwrap_or(0.0), "ms", note);
    }

    Ok(())
}

/// With `--pg-keep-schema`: the ids of the memories an earlier run left in the schema, in
/// corpus order (matched by content); None when the schema is empty; an error when it holds
/// something other than this run's corpus.
async fn loaded_ids(
    args: &ScaleArgs,
    n: usize,
    corpus: &Corpus,
    store: &Arc<dyn Store>,
) -> Result<Option<Vec<MemoryId>>> {
    let total = n + args.single;
    let mut by_text: HashMap<(Namespace, String), Vec<MemoryId>> = HashMap::new();
    let mut held = 0;
    for k in 0..args.namespaces {
        let ns = ns_of(k, args.namespaces)?;
        for m in store.all_memories(&ns).await? {
            held += 1;
            by_text.entry((ns.clone(), m.content)).or_default().push(m.id);
        }
    }
    if held == 0 {
        return Ok(None);
    }
    let mismatch = || {
        BenchError::Arg(format!(
            "--pg-keep-schema: the schema holds {held} memories that are not this run's {total} \
             (other --n, --single, --seed, --dims or --namespaces?): drop the schema or choose another name"
        ))
    };
    if held != total {
        return Err(mismatch());
    }
    for list in by_text.values_mut() {
        list.sort_unstable_by(|a, b| b.cmp(a));
    }
    let mut ids = Vec::with_capacity(total);
    for j in 0..total {
        let ns = ns_of(j, args.namespaces)?;
        let id =
            by_text.get_mut(&(ns.clone(), corpus.memory_text(j as u64))).and_then(Vec::pop).ok_or_else(mismatch)?;
        ids.push(id);
    }
    Ok(Some(ids))
}

/// Clear the index and replay the store into it; then close it and build it again from
/// its persisted state. Returns the reopened index.
#[allow(clippy::too_many_arguments)]
async fn rebuild_and_reopen(
    args: &ScaleArgs,
    backend: &Backend,
    site: &backend::Site,
    push: &mut impl FnMut(&'static str, f64, &'static str, &str),
    total_n: usize,
    store: &Arc<dyn Store>,
    index: Arc<dyn Index>,
    eng: Engine,
    embedder: &Arc<SynthEmbedder>,
    corpus: &Arc<Corpus>,
) -> Result<Arc<dyn Index>> {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let dyn_embedder: Arc<dyn mnemo_contract::Embedder> = embedder.clone();
    // Rebuild: clear the index and replay the store into it.
    let pb = bar(total_n as u64, "rebuild", args.quiet);
    let t0 = Instant::now();
    index.clear().await?;
    let eng2 = engine(store.clone(), index.clone(), embedder.clone())?;
    let rep = eng2.sync_index(&|done, _| pb.set_position(done)).await?;
    index.flush().await?;
    let secs = t0.elapsed().as_secs_f64();
    pb.finish_and_clear();
    push("index_rebuild", secs, "s", &format!("{} documents, {:.0} docs/s", rep.upserted, rep.upserted as f64 / secs));
    drop(eng2);
    drop(eng);

    // Reopen: the persisted index, without re-embedding: it must stand where it stood and
    // answer the same dense query the same way.
    let probe = |ns: Namespace| SearchQuery {
        namespace: ns,
        text: String::new(),
        embedding: Some(corpus.embed(&corpus.query_text(0))),
        limit: 10,
        mode: SearchMode::Dense,
    };
    let ns0 = ns_of(0, args.namespaces)?;
    let before: Vec<MemoryId> = index.search(&probe(ns0.clone())).await?.iter().map(|h| h.id).collect();
    let state_before = index.state().await?;
    drop(index);
    let t0 = Instant::now();
    let reopened = backend.build_index(site, clock.clone(), dyn_embedder.clone())?;
    let state = reopened.state().await?;
    let secs = t0.elapsed().as_secs_f64();
    let after: Vec<MemoryId> = reopened.search(&probe(ns0)).await?.iter().map(|h| h.id).collect();
    let ok = matches!(state, IndexState::UpTo(r) if r > 0) && state == state_before && after == before;
    push(
        "index_reopen",
        secs,
        "s",
        &format!(
            "state {state:?}; the same {} dense hits as before closing{}",
            after.len(),
            if ok { "" } else { " (UNEXPECTED)" }
        ),
    );
    Ok(reopened)
}

/// Wait until `ns`'s index reports no dense training in flight (a flush puts a finished one
/// in place); true if there was one. Indexes that report no such figure return at once.
async fn settle_dense(index: &Arc<dyn Index>, ns: &Namespace) -> Result<bool> {
    // A training takes seconds at 100k, a minute or two at 1M on two busy cores; past this
    // the reads are timed anyway (the row then shows the wait).
    const PATIENCE: std::time::Duration = std::time::Duration::from_secs(900);
    let t0 = Instant::now();
    let mut waited = false;
    while t0.elapsed() < PATIENCE {
        index.flush().await?;
        let figures = index.figures(ns).await?;
        let busy = figures.iter().any(|f| f.name == "dense_training_in_flight" && f.value > 0.0);
        if !busy {
            return Ok(waited);
        }
        waited = true;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok(waited)
}

/// `settle_dense` on the first namespace, its wait pushed as row `metric` (`after`: what the
/// training in flight followed).
async fn settle_dense_timed(
    index: &Arc<dyn Index>,
    args: &ScaleArgs,
    metric: &'static str,
    after: &str,
    push: &mut impl FnMut(&'static str, f64, &'static str, &str),
) -> Result<()> {
    let t0 = Instant::now();
    let trained = settle_dense(index, &ns_of(0, args.namespaces)?).await?;
    let note = if trained {
        format!("waited for the background IVF training in flight {after}")
    } else {
        "none in flight".to_string()
    };
    push(metric, t0.elapsed().as_secs_f64(), "s", &note);
    Ok(())
}

/// Nanoseconds this process's threads have run on a CPU, from /proc (None where unreadable).
fn client_cpu_ns() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let text = std::fs::read_to_string(task.path().join("schedstat")).ok()?;
        total += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(total)
}

/// The exact `k` nearest of `vectors` to `e` (cosine of unit vectors: the dot product).
fn exact_top(vectors: &[(MemoryId, Vec<f32>)], e: &[f32], k: usize) -> Vec<(MemoryId, f32)> {
    let mut scored: Vec<(MemoryId, f32)> =
        vectors.iter().map(|(id, v)| (*id, v.iter().zip(e).map(|(a, b)| a * b).sum())).collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
    scored.truncate(k);
    scored
}
