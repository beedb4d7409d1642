//! `bench cli-churn`: does the on-disk index stay healthy when every write is a process of its
//! own, as with the CLI (issue 42)? `--writes` single writes, each one process (a spawned
//! `mnemo remember`, or an in-process emulation of it: the store and index opened, synced,
//! one memory written, everything closed), then the index's shape (segments in its last
//! commit, files, temporary files left anywhere in the data directory) and the recall p50 of
//! `--queries` recalls, each one process too; then the index is rebuilt (`mnemo reindex`) and
//! the recalls are timed again. The run passes when the churned index has at most
//! [`MAX_SEGMENTS`] segments, no temporary file is left, and its recall p50 is within
//! [`MAX_P50_RATIO`] × the rebuilt index's.
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use mnemo_contract::{
    CharTokenCounter, ClientKind, Clock, Embedding, EnginePolicy, MemoryKind, Namespace, NewMemory, Provenance,
    SystemClock, TokenCounter, WriteOp,
};
use mnemo_core::engine::{EngineParts, RecallOptions};
use mnemo_core::Engine;
use mnemo_report::RunProvenance;
use mnemo_store::sqlite::SqliteStore;
use mnemo_store::tantivy_index::{TantivyIndex, TantivySettings};
use serde_json::json;

use crate::error::{BenchError, Result};
use crate::report::{provenance_md, table, BenchReport};
use crate::scale::synth::{Corpus, SynthEmbedder};
use crate::util::{bar, percentile, NoReasoner};

/// Segments the churned index may have (issue 42: ≤ 10).
pub const MAX_SEGMENTS: usize = 10;
/// How much slower than a rebuilt index the churned index's recall p50 may be.
pub const MAX_P50_RATIO: f64 = 1.5;
/// Recalls before each timed pass (not timed).
const WARM_UP: usize = 3;

/// Arguments of `bench cli-churn`.
#[derive(Clone, Debug, clap::Args)]
pub struct ChurnArgs {
    /// Single writes, each its own process.
    #[arg(long, default_value_t = 2000)]
    pub writes: usize,
    /// Recalls timed on the churned index and again on the rebuilt one, each its own process.
    #[arg(long, default_value_t = 100)]
    pub queries: usize,
    /// Emulate each process in this one (open, sync, write or recall, close) instead of
    /// spawning the mnemo binary.
    #[arg(long)]
    pub in_process: bool,
    /// Embedding dimensions of the in-process emulation (a spawned mnemo uses its configured
    /// embedder).
    #[arg(long, default_value_t = 256)]
    pub dims: usize,
    /// Where to create the data directory (default: the system temp dir); removed after.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Seed of the synthetic texts.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// No progress bars.
    #[arg(long)]
    pub quiet: bool,
}

impl Default for ChurnArgs {
    fn default() -> Self {
        ChurnArgs { writes: 2000, queries: 100, in_process: false, dims: 256, dir: None, seed: 42, quiet: false }
    }
}

/// Who does each write and recall.
enum Churner {
    /// `PROGRAM [ARGS] --data-dir D remember TEXT`, `recall --raw QUERY`, `reindex`.
    Program(Vec<OsString>),
    /// The store and index opened in this process for each operation.
    InProcess(Arc<SynthEmbedder>, Arc<Corpus>),
}

/// What one state of the index looks like and how fast it recalls.
struct Shape {
    segments: usize,
    files: usize,
    tmp_files: Vec<String>,
    p50_ms: f64,
    p99_ms: f64,
}

/// Run the benchmark; `program` is the command spawned for each operation (the mnemo binary
/// and the arguments it gets before `--data-dir`, e.g. `--config FILE`) unless `--in-process`
/// (the CLI passes itself and its config files).
pub async fn cli_churn(
    args: &ChurnArgs,
    mut provenance: RunProvenance,
    program: Option<Vec<OsString>>,
) -> Result<BenchReport> {
    if args.writes == 0 || args.queries == 0 || args.dims == 0 {
        return Err(BenchError::Arg("--writes, --queries and --dims must be positive".into()));
    }
    let corpus = Arc::new(Corpus::with_topic_weight(args.seed, args.dims, 5_000, 500, 40, 0.6));
    let churner = match (args.in_process, program) {
        (false, Some(p)) if !p.is_empty() => Churner::Program(p),
        (false, _) => return Err(BenchError::Arg("no mnemo binary to spawn: use --in-process".into())),
        (true, _) => {
            let embedder = Arc::new(SynthEmbedder::new(corpus.clone()));
            provenance.embedder = mnemo_contract::Embedder::model_id(embedder.as_ref()).to_string();
            provenance.token_counter = CharTokenCounter.name().to_string();
            Churner::InProcess(embedder, corpus.clone())
        }
    };
    let base = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let tmp = tempfile::Builder::new()
        .prefix("mnemo-churn-")
        .tempdir_in(&base)
        .map_err(|e| BenchError::Io { path: base.clone(), source: e })?;
    let dir = tmp.path();

    let pb = bar(args.writes as u64, "single writes", args.quiet);
    let started = Instant::now();
    for i in 0..args.writes {
        churner.write(dir, &corpus.memory_text(i as u64)).await?;
        pb.inc(1);
    }
    pb.finish_and_clear();
    let write_secs = started.elapsed().as_secs_f64();
    let churned = shape(&churner, dir, args, &corpus, "recalls (churned)").await?;
    churner.rebuild(dir).await?;
    let rebuilt = shape(&churner, dir, args, &corpus, "recalls (rebuilt)").await?;

    let ratio = churned.p50_ms / rebuilt.p50_ms;
    let pass = churned.segments <= MAX_SEGMENTS && churned.tmp_files.is_empty() && ratio <= MAX_P50_RATIO;
    let how = match &churner {
        Churner::Program(p) => {
            // The program by its file name: a result file names no path of the machine it ran on.
            let mut words: Vec<String> = p.iter().map(|a| a.to_string_lossy().into_owned()).collect();
            if let Some(name) = p.first().and_then(|b| std::path::Path::new(b).file_name()) {
                words[0] = name.to_string_lossy().into_owned();
            }
            format!("process per operation: {}", words.join(" "))
        }
        Churner::InProcess(..) => "in-process emulation (open, sync, operate, close)".to_string(),
    };
    // One figure per row: {n (the writes), index, metric, value, unit, note}.
    let mut rows = Vec::new();
    let mut push = |index: &str, metric: &str, value: f64, unit: &str, note: &str| {
        rows.push(json!({
            "bench": "cli-churn", "n": args.writes, "index": index, "metric": metric,
            "value": value, "unit": unit, "note": note,
        }))
    };
    let writes_per_s = args.writes as f64 / write_secs;
    push("churned", "write_throughput", writes_per_s, "writes/s", &how);
    for (name, s) in [("churned", &churned), ("rebuilt", &rebuilt)] {
        push(name, "segments", s.segments as f64, "segments", "in the index's last commit (meta.json)");
        push(name, "files", s.files as f64, "files", "in index/tantivy");
        push(name, "tmp_files", s.tmp_files.len() as f64, "files", &s.tmp_files.join(", "));
        let note = format!("{} recalls, each one process ({how})", args.queries);
        push(name, "recall_p50", s.p50_ms, "ms", &note);
        push(name, "recall_p99", s.p99_ms, "ms", &note);
    }
    push("churned", "recall_p50_vs_rebuilt", ratio, "ratio", &format!("at most {MAX_P50_RATIO}"));
    push(
        "churned",
        "pass",
        if pass { 1.0 } else { 0.0 },
        "bool",
        &format!("segments ≤ {MAX_SEGMENTS}, no temporary file, recall p50 ≤ {MAX_P50_RATIO} × rebuilt"),
    );
    let cells = |name: &str, s: &Shape| {
        vec![
            name.to_string(),
            s.segments.to_string(),
            s.files.to_string(),
            s.tmp_files.len().to_string(),
            format!("{:.1}", s.p50_ms),
            format!("{:.1}", s.p99_ms),
        ]
    };
    let mut md = format!("# bench cli-churn\n\n{}\n", provenance_md(&provenance));
    md.push_str(&format!(
        "{} single writes ({how}; {writes_per_s:.1} writes/s), then {} recalls on each index.\n\n",
        args.writes, args.queries
    ));
    md.push_str(&table(
        &["index", "segments", "files", ".tmp files", "recall p50 ms", "recall p99 ms"],
        &[cells("after the writes", &churned), cells("rebuilt (reindex)", &rebuilt)],
    ));
    md.push_str(&format!(
        "\nrecall p50 churned / rebuilt: {ratio:.2} (at most {MAX_P50_RATIO}); segments {} (at most {MAX_SEGMENTS}); \
         .tmp files {}: **{}**\n",
        churned.segments,
        churned.tmp_files.len(),
        if pass { "pass" } else { "FAIL" }
    ));
    Ok(BenchReport::new(provenance, rows, md))
}

/// The index's shape in `dir` and the recall times over it.
async fn shape(churner: &Churner, dir: &Path, args: &ChurnArgs, corpus: &Corpus, what: &str) -> Result<Shape> {
    let (segments, files) = index_files(dir)?;
    let tmp_files = temporary_files(dir);
    for q in 0..WARM_UP {
        churner.recall(dir, &corpus.query_text(1_000_000 + q as u64)).await?;
    }
    let pb = bar(args.queries as u64, what, args.quiet);
    let mut ms = Vec::with_capacity(args.queries);
    for q in 0..args.queries {
        let t = Instant::now();
        churner.recall(dir, &corpus.query_text(q as u64)).await?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        pb.inc(1);
    }
    pb.finish_and_clear();
    ms.sort_by(f64::total_cmp);
    Ok(Shape { segments, files, tmp_files, p50_ms: percentile(&ms, 50.0), p99_ms: percentile(&ms, 99.0) })
}

/// Segments of the index's last commit (`index/tantivy/meta.json`) and files in its directory.
pub fn index_files(dir: &Path) -> Result<(usize, usize)> {
    let tdir = dir.join("index").join("tantivy");
    let meta_path = tdir.join("meta.json");
    let text =
        std::fs::read_to_string(&meta_path).map_err(|e| BenchError::Io { path: meta_path.clone(), source: e })?;
    let meta: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| BenchError::Data { file: meta_path.clone(), what: format!("not JSON: {e}") })?;
    let segments = meta["segments"]
        .as_array()
        .ok_or_else(|| BenchError::Data { file: meta_path.clone(), what: "no segments list".into() })?
        .len();
    let files = std::fs::read_dir(&tdir).map_err(|e| BenchError::Io { path: tdir.clone(), source: e })?.count();
    Ok((segments, files))
}

/// Files anywhere under `dir` named `.tmp…` (tantivy's atomic writes) or `….tmp`.
pub fn temporary_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            } else if name.starts_with(".tmp") || name.ends_with(".tmp") {
                out.push(e.path().strip_prefix(dir).unwrap_or(&e.path()).display().to_string());
            }
        }
    }
    out.sort();
    out
}

fn churn_ns() -> Result<Namespace> {
    Ok(Namespace::new("churn")?)
}

impl Churner {
    async fn write(&self, dir: &Path, text: &str) -> Result<()> {
        match self {
            Churner::Program(p) => run(p, dir, &["remember", text]),
            Churner::InProcess(embedder, corpus) => {
                let e = open(dir, embedder)?;
                e.sync_index(&|_, _| {}).await?;
                let ns = churn_ns()?;
                let memory = NewMemory {
                    validity: Default::default(),
                    namespace: ns.clone(),
                    kind: MemoryKind::Episodic,
                    content: text.to_string(),
                    claim: None,
                    entities: vec![],
                    importance: 0.5,
                    sources: vec!["user".into()],
                    provenance: Provenance { turns: vec![], client: ClientKind::Rules, model: "synthetic".into() },
                    created_at: SystemClock.now(),
                    pinned: false,
                    embedding: Some(Embedding {
                        model: mnemo_contract::Embedder::model_id(embedder.as_ref()).to_string(),
                        vector: corpus.embed(text),
                    }),
                };
                let mut ack = |_: usize, _: Vec<mnemo_contract::MemoryId>| {};
                e.apply_batches(&ns, vec![vec![WriteOp::Insert { memory, turn: None }]], &mut ack).await?;
                Ok(())
            }
        }
    }

    async fn recall(&self, dir: &Path, query: &str) -> Result<()> {
        match self {
            Churner::Program(p) => run(p, dir, &["recall", "--raw", query]),
            Churner::InProcess(embedder, _) => {
                let e = open(dir, embedder)?;
                e.sync_index(&|_, _| {}).await?;
                let opts = RecallOptions { no_touch: true, ..Default::default() };
                e.recall(&churn_ns()?, query, &opts).await?;
                Ok(())
            }
        }
    }

    async fn rebuild(&self, dir: &Path) -> Result<()> {
        match self {
            Churner::Program(p) => run(p, dir, &["reindex"]),
            Churner::InProcess(embedder, _) => {
                let e = open(dir, embedder)?;
                e.rebuild_index(&|_, _| {}).await?;
                Ok(())
            }
        }
    }
}

/// The engine of the data directory `dir` as a command opens it (the default index settings).
fn open(dir: &Path, embedder: &Arc<SynthEmbedder>) -> Result<Engine> {
    let store = Arc::new(SqliteStore::open(&dir.join("mnemo.db"))?);
    let index = Arc::new(TantivyIndex::open(&dir.join("index"), TantivySettings::default(), Arc::new(SystemClock))?);
    Ok(Engine::new(EngineParts {
        store,
        index,
        embedder: embedder.clone(),
        reasoner: Arc::new(NoReasoner),
        clock: Arc::new(SystemClock),
        tokens: Arc::new(CharTokenCounter),
        policy: EnginePolicy::default(),
    })?)
}

/// Run `PROGRAM [ARGS] --data-dir dir ARGS` to completion; a failure is an error with its
/// stderr.
fn run(command: &[OsString], dir: &Path, args: &[&str]) -> Result<()> {
    let Some((program, before)) = command.split_first() else {
        return Err(BenchError::Arg("no program to spawn".into()));
    };
    let program = Path::new(program);
    let out = Command::new(program)
        .args(before)
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| BenchError::Io { path: program.to_path_buf(), source: e })?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(BenchError::Arg(format!(
            "{} {}: {} ({})",
            program.display(),
            args.first().copied().unwrap_or_default(),
            out.status,
            err.trim()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn provenance() -> RunProvenance {
        serde_json::from_value(json!({
            "client": "none", "model": "none", "embedder": "synthetic", "offline": true, "run_id": "t",
            "config_hash": "-", "git_commit": "-", "command": "test", "started_at": "-", "cores": 1,
            "token_counter": "chars"
        }))
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_small_in_process_churn_passes_and_reports_both_indexes() {
        let dir = tempfile::tempdir().unwrap();
        let args = ChurnArgs {
            writes: 60,
            queries: 8,
            in_process: true,
            dims: 32,
            dir: Some(dir.path().to_path_buf()),
            quiet: true,
            ..Default::default()
        };
        let report = cli_churn(&args, provenance(), None).await.unwrap();
        let rows = &report.report.rows;
        let figure = |index: &str, metric: &str| -> f64 {
            rows.iter()
                .find(|r| r["index"] == index && r["metric"] == metric)
                .and_then(|r| r["value"].as_f64())
                .unwrap_or_else(|| panic!("no {index} {metric} in {rows:?}"))
        };
        assert!(rows.iter().all(|r| r["n"] == 60 && r["bench"] == "cli-churn"));
        assert!(figure("churned", "segments") <= MAX_SEGMENTS as f64, "{rows:?}");
        assert_eq!(figure("churned", "tmp_files"), 0.0, "{rows:?}");
        assert_eq!(figure("rebuilt", "segments"), 1.0, "a rebuilt index is one segment: {rows:?}");
        assert!(figure("churned", "recall_p50") > 0.0 && figure("rebuilt", "recall_p50") > 0.0);
        let ratio = figure("churned", "recall_p50_vs_rebuilt");
        assert!((ratio - figure("churned", "recall_p50") / figure("rebuilt", "recall_p50")).abs() < 1e-9);
        assert!(report.markdown.contains("cli-churn"));
        // The data directory is removed after.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn without_a_program_or_in_process_it_says_what_to_do() {
        let e = cli_churn(&ChurnArgs::default(), provenance(), None).await.err().unwrap().to_string();
        assert!(e.contains("--in-process"), "{e}");
    }
}
