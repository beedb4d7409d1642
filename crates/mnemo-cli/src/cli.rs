//! Command-line arguments.
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// Mnemo: long-term memory for AI agents that audits what it recalls.
///
/// Memories are typed (semantic, procedural, episodic), forgotten on contradiction, on command
/// and by decay (tombstones with reasons, never deletes), recalled into a token budget with
/// per-kind quotas and a trace, and graded before the agent acts. Offline by default: the
/// deterministic fake model reads tagged lines such as `[SEM] Northwind Labs | owner | Ben`.
#[derive(Debug, Parser)]
#[command(name = "mnemo", version, propagate_version = true)]
pub struct Cli {
    /// Data directory (store and index live here).
    #[arg(long, global = true, env = "MNEMO_DATA_DIR", default_value = "mnemo-data")]
    pub data_dir: PathBuf,
    /// Namespace (tenant / user / agent scope); a hard partition.
    #[arg(long, short = 'n', global = true, env = "MNEMO_NAMESPACE", default_value = "default")]
    pub namespace: String,
    /// Config file(s) merged over the embedded default, in order.
    #[arg(long, global = true)]
    pub config: Vec<PathBuf>,
    /// Simulated time (RFC 3339, e.g. 2026-07-01T09:00:00Z) instead of the wall clock.
    #[arg(long, global = true)]
    pub at: Option<String>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an offline supply-chain agent turn and print the recall trace, trust and decision.
    Demo(DemoArgs),
    /// Remember a turn (tagged lines: [SEM] e | a | v, [PROC] …, [EPI] …, [FORGET] …).
    Remember(RememberArgs),
    /// Recall a pack for a query under a token budget, with its trace.
    Recall(RecallArgs),
    /// Forget exactly what a command designates: `entity | attribute`, or free text.
    Forget(ForgetArgs),
    /// Explain a memory: where it came from, what reinforced it, why it was tombstoned.
    Why(WhyArgs),
    /// Run a decay sweep: tombstone decaying memories whose salience fell below the threshold.
    Decay(JsonFlag),
    /// Rebuild the index from the store (after changing the index or the embedder).
    Reindex,
    /// List the registered plugin kinds per role.
    Plugins(JsonFlag),
    /// Run the scenario evaluation: Mnemo vs NaiveRAG vs RecentOnly, metrics per METRICS.md.
    ///
    /// Every *.toml scenario in the given directories runs on simulated time through the real
    /// engine (offline fake model unless a config says otherwise), once per --config file
    /// (each merged over the embedded default on its own, compared side by side). Exits
    /// non-zero when Mnemo fails a scenario.
    Eval(EvalArgs),
    /// Benchmarks: retrieval under a budget on LoCoMo, and ingest/recall/RSS at scale.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Local model files (for `[embedder] kind = "local"`): fetch and list.
    #[command(subcommand)]
    Models(crate::commands::models::ModelsCommand),
}

/// `mnemo bench …`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Evidence recall@budget, R@k and MRR per category for BM25, dense, hybrid and RecentOnly.
    ///
    /// Each conversation goes into its own namespace, one episodic memory per turn (keeping its
    /// dia_id, speaker and session date); every question is recalled under each budget. The
    /// embedder is the configured one ([embedder], offline fake by default); the index is an
    /// in-RAM tantivy (or brute) index with the fusion settings below.
    Locomo {
        /// Benchmark settings.
        #[command(flatten)]
        args: mnemo_bench::LocomoArgs,
        /// Write the JSON report ({"provenance", "rows"}) to FILE; `-` for stdout.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Synthetic memories with precomputed embeddings: ingest throughput, recall p50/p99,
    /// rebuild time, peak RSS and bytes on disk per memory, at each N. Use a release build.
    Scale {
        /// Benchmark settings.
        #[command(flatten)]
        args: mnemo_bench::ScaleArgs,
        /// Write the JSON report ({"provenance", "rows"}) to FILE; `-` for stdout.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
}

/// `--json`: machine-readable output on stdout.
#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Machine-readable JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `mnemo eval`.
#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Directory of scenario files (repeatable; default: eval/scenarios).
    #[arg(long = "scenarios")]
    pub scenarios: Vec<PathBuf>,
    /// Write the JSON report ({"provenance", "rows"}) to FILE; `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Keep the result under --results-dir (never overwritten) and regenerate LATEST.md there.
    #[arg(long)]
    pub publish: bool,
    /// Where published results go.
    #[arg(long, default_value = "eval/results")]
    pub results_dir: PathBuf,
}

/// `mnemo demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the demo store in this directory (default: a temporary one, removed after).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// `mnemo remember`.
#[derive(Debug, Args)]
pub struct RememberArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// The turn text; `-` reads it from stdin (bytes must be UTF-8).
    pub text: OsString,
    /// Who said it (a corroboration source).
    #[arg(long, default_value = "user")]
    pub source: String,
}

/// `mnemo recall`.
#[derive(Debug, Args)]
pub struct RecallArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// The query.
    pub query: String,
    /// Token budget (default from config: 1024). Must be ≥ 0; above 16,000,000 it is clamped
    /// (and the pack's notes say so).
    #[arg(long, allow_negative_numbers = true)]
    pub budget: Option<String>,
    /// Retrieval signals: lexical, dense or hybrid.
    #[arg(long)]
    pub mode: Option<String>,
    /// Also grade the pack (assessor) for a task about `entity | attribute`.
    #[arg(long)]
    pub about: Option<String>,
}

/// `mnemo forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// `entity | attribute`, or free text designating the memories.
    pub command: String,
}

/// `mnemo why`.
#[derive(Debug, Args)]
pub struct WhyArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// The memory id.
    pub id: i64,
}
