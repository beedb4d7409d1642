//! Command-line arguments.
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// Mnemo: long-term memory for AI agents that audits what it recalls.
///
/// Memories are typed (semantic, procedural, episodic), forgotten on contradiction, on command
/// and by decay (tombstones with reasons, never deletes), recalled into a token budget with
/// per-kind quotas and a trace, and graded before the agent acts. Offline by default: the
/// deterministic fake model reads tagged lines such as `[SEM] Northwind Labs | owner | Ben`,
/// and keeps a turn with no tagged line as one episodic memory of its words.
#[derive(Debug, Parser)]
#[command(name = "mnemo", version = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("MNEMO_BUILD_COMMIT"), ")"), propagate_version = true)]
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
    /// Simulated time instead of the wall clock: RFC 3339 (2026-07-01T09:00:00Z) or a date alone
    /// (2026-07-01, midnight UTC).
    #[arg(long, global = true)]
    pub at: Option<String>,
    /// Accept an `--at` further ahead of the real clock than `[time] max_future_skew_secs`
    /// (default 5 minutes; time only moves forward in a namespace, so one far-future turn
    /// would block every later one).
    #[arg(long, global = true)]
    pub allow_future: bool,
    /// Use the live model client ([llm] client = "live"): needs the API key variable named by
    /// [llm] api_key_env (default DASHSCOPE_API_KEY); never falls back to the fake.
    #[arg(long, global = true)]
    pub live: bool,
    /// More log output on stderr (-v: info, -vv: debug, -vvv: trace). RUST_LOG wins.
    #[arg(long, short = 'v', global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors on stderr (no start-up line, no warnings).
    #[arg(long, short = 'q', global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Log line format on stderr: text or json.
    #[arg(long, global = true, default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// Whether stdout carries JSON (`--json`, or `--json -` for the reports written to a file):
    /// a failure is then also said there, as one JSON object. Every command is listed, so a
    /// new one must say.
    pub fn json_output(&self) -> bool {
        let to_stdout = |file: &Option<PathBuf>| file.as_deref() == Some(std::path::Path::new("-"));
        match &self.command {
            Command::Remember(a) => a.out.json,
            Command::Recall(a) => a.out.json,
            Command::Turn(a) => a.out.json,
            Command::Forget(a) => a.out.json,
            Command::Erase(a) => a.out.json,
            Command::Why(a) => a.out.json,
            Command::History(a) => a.out.json,
            Command::Decay(j) | Command::Reindex(j) | Command::Plugins(j) => j.json,
            Command::Reextract(a) => a.json,
            Command::List(a) => a.out.json,
            Command::Export(a) => a.json,
            Command::Restore(a) => a.out.json,
            Command::Escalations(a) => a.out.json,
            Command::Answer(a) => a.out.json,
            Command::Dismiss(a) => a.out.json,
            Command::Backup(BackupCommand::Create { out, .. } | BackupCommand::Restore { out, .. }) => out.json,
            Command::Demo(a) => a.json,
            Command::Migrate(a) => a.json,
            Command::Models(m) => m.json(),
            Command::Verify(a) => a.json,
            Command::Stats(j) => j.json,
            Command::Eval(a) => to_stdout(&a.json),
            Command::EvalAssessor(a) => to_stdout(&a.json),
            Command::Reliability(a) => to_stdout(&a.json),
            Command::Bench(
                BenchCommand::Locomo { json, .. }
                | BenchCommand::Longmemeval { json, .. }
                | BenchCommand::Answerability { json, .. }
                | BenchCommand::Poisoning { json, .. }
                | BenchCommand::Tokens { json, .. }
                | BenchCommand::Extraction { json, .. }
                | BenchCommand::Scale { json, .. }
                | BenchCommand::CliChurn { json, .. },
            ) => to_stdout(json),
            Command::Bench(BenchCommand::Serve(a)) => to_stdout(&a.json),
            // stdout is the protocol's (mcp), the script's (completions) or nobody's (serve).
            Command::Serve(_) | Command::Mcp(_) | Command::Completions(_) => false,
        }
    }
}

/// Subcommands.
// Parsed once per process: the size of its largest variant (bench's settings) costs nothing,
// and boxing it would only add indirection to every match on it.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run an offline supply-chain agent turn and print the recall trace, trust and decision.
    Demo(DemoArgs),
    /// Remember a turn (tagged lines: [SEM] e | a | v, [PROC] …, [EPI] …, [FORGET] …; offline, a
    /// turn with no tagged line is kept as one episode of its words). The JSON's `status` says
    /// what became of it: extracted, nothing_extracted or already_recorded.
    Remember(RememberArgs),
    /// Recall a pack under a token budget, ground and grade it, and decide ACT or ESCALATE.
    ///
    /// Every recall is assessed: verifiable claims are re-checked against the configured
    /// grounders (a stale value is substituted and written back), the rest scored from
    /// provenance; the JSON's `verdict` gives the value(s) to act on or, on ESCALATE, the weak
    /// memories and why. The rule is described in docs/assessor.md. `--raw` skips assessment.
    Recall(RecallArgs),
    /// The agent turn: remember TEXT, recall with it as the task, assess, and on ACT plan from
    /// the assessed pack and check the plan against it; a refused plan, or ESCALATE, records
    /// an escalation a human answers (`mnemo answer`).
    ///
    /// Prints what the text wrote, the decision, the checked plan or the escalation id, and the
    /// memory lines within the budget (the compact view every door returns; --json for it as
    /// JSON, --json --detail full for the whole turn).
    Turn(TurnArgs),
    /// Forget exactly what a command designates: `entity | attribute`, or free text.
    Forget(ForgetArgs),
    /// Erase for good — unlike forget, which only tombstones: a memory (m42), a turn (t17),
    /// every version of a claim (`entity | attribute`), or every memory and turn of a subject
    /// (--subject ENTITY).
    ///
    /// The content is removed from the store (every content column overwritten, the file
    /// compacted), from the index (rebuilt) and from the recall cache; the erased values are
    /// cut out of the raw turns. A content-free record stays (time, reason, who, the rows'
    /// hashes), so `why`, `list --all` and the history chain say that something was erased and
    /// when (`mnemo verify` still passes). IRREVERSIBLE: try --dry-run first. Backups made
    /// before still hold the content; restoring one re-applies the erasures (see
    /// docs/erasure.md).
    Erase(EraseArgs),
    /// Explain a memory: where it came from, what reinforced it, why it was tombstoned.
    Why(WhyArgs),
    /// The values a claim has had (`entity | attribute`), oldest first: when memory recorded
    /// each, when and why it stopped holding it (superseded, forgotten), and its sources.
    History(HistoryArgs),
    /// List the escalations of the namespace (or show one): what the agent asked a human,
    /// why, and what became of it.
    ///
    /// A recall (or agent turn) that decides ESCALATE records an escalation (`e1`, `e2`… per
    /// namespace, never reused), or reuses the open one on the same task, and sends it to the
    /// sinks of `[[escalation.sinks]]` (a signed webhook, a JSON-lines file). `mnemo answer`
    /// or `mnemo dismiss` closes it.
    Escalations(EscalationsArgs),
    /// Answer an open escalation as a human: the answer is recorded as a turn from
    /// `human:NAME` and extracted like any turn; the claim it states counts as verified until
    /// it ages (docs/assessor.md), so the same task then acts on it.
    ///
    /// For an escalation about a claim, the value alone ("Carla") or a short sentence stating
    /// it ("it is Carla", "the approver is Carla") is recorded as `[SEM] entity | attribute |
    /// value`, which works offline; other prose is recorded as written (the offline model keeps
    /// it as an episode with no claim, so the task may escalate again: the output says so).
    Answer(AnswerArgs),
    /// Dismiss an open escalation as a human: it is closed and nothing is recorded in memory.
    Dismiss(DismissArgs),
    /// Run a decay sweep: tombstone decaying memories whose salience fell below the threshold.
    Decay(JsonFlag),
    /// Rebuild the index from the store (after changing the index or the embedder).
    Reindex(JsonFlag),
    /// Extract again the turns that were recorded but not extracted (the model failed).
    ///
    /// `--list` shows them without retrying; `--discard ID` takes a turn that can never be
    /// extracted off the list (it stays recorded, it is no longer retried).
    Reextract(ReextractArgs),
    /// List the registered plugin kinds per role.
    Plugins(JsonFlag),
    /// Copy a data directory's store into PostgreSQL (ids, history kept), proven by counts
    /// and a checksum per namespace. [cargo feature `postgres`]
    Migrate(MigrateArgs),
    /// Run the scenario evaluation: Mnemo vs NaiveRAG vs RecentOnly (docs/metrics.md).
    ///
    /// Every *.toml scenario in the given directories (format: docs/scenarios.md) runs on
    /// simulated time through the real engine (offline fake model unless a config says
    /// otherwise), once per --config file (each merged over the embedded default on its own,
    /// compared side by side). A probe may assert the agent's decision (`decision = "act"` or
    /// `"escalate"`). The per-scenario table's codes are explained under it. Exits non-zero
    /// when Mnemo fails a scenario.
    Eval(EvalArgs),
    /// Measure the assessor on labelled cases: unsafe-acceptance, over-abstention and
    /// wrong-value action, with n and Wilson 95% intervals, decisive and ladder cases apart,
    /// and a threshold sweep with the band where both rates are at their best.
    ///
    /// Case files: docs/cases.md; metric definitions: docs/metrics.md. Each --config file is
    /// measured on its own (default: the embedded default). Exits non-zero when any decisive
    /// case is unsafely accepted or a value other than the world's is acted on.
    EvalAssessor(EvalAssessorArgs),
    /// Benchmarks: retrieval under a budget on LoCoMo, and ingest/recall/RSS at scale
    /// (definitions: docs/metrics.md).
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Local model files (for `[embedder] kind = "local"`): fetch and list.
    #[command(subcommand)]
    Models(crate::commands::models::ModelsCommand),
    /// Reliability harness: SIGKILL trials, damage trials and a fuzz driver (see RELIABILITY.md).
    Reliability(ReliabilityArgs),
    /// Check the store file in full (SQLite's integrity_check, read-only) and say what is
    /// damaged and how to fix it; then check the tamper-evident history of every namespace
    /// (SQLite and PostgreSQL): every turn and memory event is an entry of its namespace's hash
    /// chain, and a changed, removed, inserted or reordered entry is named (namespace, entry
    /// number, event or turn, its id, what is wrong). Prints each namespace's entries checked
    /// and its chain head. Exits 0 when sound, 1 when damaged or the history does not verify.
    ///
    /// `--export FILE` checks a history export offline instead (see `mnemo export --history`
    /// and docs/history-chain.md).
    ///
    /// A damaged SQLite index is rebuilt from its table by `--repair` (the next command that
    /// opens the store does the same when it checks in full: see RELIABILITY.md); a damaged
    /// table needs the store restored from a backup (`mnemo backup restore BACKUP`).
    Verify(VerifyArgs),
    /// What the data directory holds, over every namespace: memories by kind (active and
    /// tombstoned), namespaces, the store's revision and the index's lag behind it (and what
    /// catching up did when this command opened it), open escalations, bytes on disk.
    ///
    /// These are the figures that outlive a process (`mnemo serve`'s GET /metrics exports the
    /// same, beside the counts of what the server did since it started: requests, remembers,
    /// recalls, decisions, lookups). It only reads, beside a running server too.
    Stats(JsonFlag),
    /// Serve the HTTP JSON API over the data directory (README: "HTTP API"); bearer tokens
    /// come from `[[serve.tokens]]`. Prints the bound address on stderr; ctrl-c or SIGTERM
    /// stops it gracefully. [cargo feature `server`]
    ///
    /// Plain HTTP/1.1 on loopback by default: for TLS put a reverse proxy in front
    /// (docs/serving.md). Its guards are `[serve]` keys: header_read_timeout_secs (10: a
    /// request head must arrive whole), idle_timeout_secs (75: an idle kept-alive connection
    /// is closed), request_body_timeout_secs (30: then 408), max_connections (1024: more are
    /// closed at accept), max_in_flight (64: more get 503 overloaded with Retry-After, never
    /// queued), rate_limit_requests per rate_limit_window_secs (0, off: per token, 429 with
    /// Retry-After), cors_origins ([]: no CORS), metrics_public (false: GET /metrics needs a
    /// token reaching "*").
    Serve(ServeArgs),
    /// List the namespace's memories by id, a page at a time (active ones unless --all).
    List(ListArgs),
    /// Export the namespace's memories as JSON lines on stdout, one memory per line (no vectors).
    Export(ExportArgs),
    /// Restore a tombstoned memory as a NEW active memory ("restored from memory ID"); the
    /// tombstone stays. Restoring an active memory is an error.
    Restore(RestoreArgs),
    /// Back up the whole store (every namespace) to a file, or replace the store's content with
    /// a backup (the index is then rebuilt: it never serves the content before).
    #[command(subcommand)]
    Backup(BackupCommand),
    /// Serve remember, recall, forget and why as MCP tools over stdio, bound to --namespace
    /// (for Claude Desktop, Cursor or any MCP client; README "MCP"). stdout carries only
    /// protocol messages; logs go to stderr. [cargo feature `mcp`]
    Mcp(McpArgs),
    /// Print a shell completion script on stdout, e.g. `mnemo completions bash >
    /// ~/.local/share/bash-completion/completions/mnemo`, or `source <(mnemo completions zsh)`.
    Completions(CompletionsArgs),
}

/// `mnemo escalations`.
#[derive(Debug, Args)]
pub struct EscalationsArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// Show this escalation only (e3, as listed).
    #[arg(value_name = "ID", value_parser = parse_escalation_id, conflicts_with = "open")]
    pub id: Option<mnemo_agent::EscalationId>,
    /// Only the open ones (waiting for a human).
    #[arg(long)]
    pub open: bool,
}

/// `mnemo answer`.
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// The open escalation (e3, as `mnemo escalations` lists it).
    #[arg(value_name = "ID", value_parser = parse_escalation_id)]
    pub id: mnemo_agent::EscalationId,
    /// The answer: the value alone ("Carla"), a short sentence, tagged lines, or prose.
    pub text: String,
    /// Who answers (recorded as the principal human:NAME).
    #[arg(long, value_name = "NAME", required = true)]
    pub by: String,
}

/// `mnemo dismiss`.
#[derive(Debug, Args)]
pub struct DismissArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// The open escalation (e3, as `mnemo escalations` lists it).
    #[arg(value_name = "ID", value_parser = parse_escalation_id)]
    pub id: mnemo_agent::EscalationId,
    /// Who dismisses it (kept as human:NAME on the escalation).
    #[arg(long, value_name = "NAME", required = true)]
    pub by: String,
}

fn parse_escalation_id(s: &str) -> Result<mnemo_agent::EscalationId, String> {
    s.parse().map_err(|e: mnemo_agent::escalation::BadEscalationId| e.to_string())
}

/// `mnemo serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on (`127.0.0.1:0` picks a free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: String,
}

/// `mnemo list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// Tombstoned memories too.
    #[arg(long)]
    pub all: bool,
    /// Only memories after this one (the `--after` the previous page printed, e.g. m100).
    #[arg(long, value_name = "ID")]
    pub after: Option<mnemo_contract::IdRef>,
    /// Page size (1 to 1000).
    #[arg(long, default_value_t = 100)]
    pub limit: usize,
}

/// `mnemo export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Accepted for uniformity: the export is JSON lines either way.
    #[arg(long)]
    pub json: bool,
    /// Tombstoned memories too.
    #[arg(long)]
    pub all: bool,
    /// Export the namespace's tamper-evident history instead: one JSON line per chain entry
    /// (the turn or event as stored, its content hash, the previous entry's hash, its entry
    /// hash), then a last line {"chain_head": {namespace, seq, hash}}. Check it offline with
    /// `mnemo verify --export FILE`, or recompute the hashes with any SHA-256 tool
    /// (docs/history-chain.md).
    #[arg(long, conflicts_with = "all")]
    pub history: bool,
}

/// `mnemo restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// The tombstoned memory's id (m42, as list and why show it).
    pub id: mnemo_contract::IdRef,
}

/// `mnemo bench serve`.
#[derive(Debug, Args)]
pub struct ServeBenchArgs {
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// How long the load runs (e.g. 60s, 2m).
    #[arg(long, default_value = "60s")]
    pub duration: String,
    /// Use this running server instead of starting `mnemo serve` (token in MNEMO_TOKEN).
    #[arg(long)]
    pub url: Option<String>,
    /// The namespace written with --url (a fresh one is best: the check recalls what it wrote).
    #[arg(long, default_value = "load")]
    pub namespace: String,
    /// Write this many memories into the server's store before the load (through the engine's
    /// write path), so the load runs against a store of that size (not with --url).
    #[arg(long, default_value_t = 0)]
    pub prefill: usize,
    /// Every n-th operation of a client is a remember, the others assessed recalls (2: half
    /// and half; 1: remembers only). A request the server sheds (503 or 429) is retried after
    /// its Retry-After and counted as shed, not as an error.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub remember_every: u32,
    /// What a recall asks for: `full` (the pack with its trace, the assessment and the
    /// verdict, as the published figures were measured) or `agent` (what an agent reads).
    #[arg(long, default_value = "full", value_parser = ["full", "agent"])]
    pub recall_detail: String,
    /// Every n-th operation of a client is an agent turn (`/turn`: remember its message,
    /// recall, assess, plan or escalate); the others follow --remember-every. 0: no turns.
    #[arg(long, default_value_t = 0)]
    pub turn_every: u32,
    /// A pause after each operation of a client (e.g. 50ms): a paced load, as for a soak.
    /// Without it each client sends its next request as soon as it is answered.
    #[arg(long, value_name = "DURATION")]
    pub pace: Option<String>,
    /// How often the server's resident memory (RSS) is sampled while the load runs (only a
    /// server the bench starts; Linux).
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub sample_every: String,
    /// The soak's warm-up: resident memory growth is measured from the first sample at or after
    /// it to the last one.
    #[arg(long, default_value = "60s", value_name = "DURATION")]
    pub warm_up: String,
    /// Fail (exit 1) when the server's resident memory grows more than this many MiB after the
    /// warm-up: the soak's bound.
    #[arg(long, value_name = "MIB")]
    pub max_rss_growth_mib: Option<f64>,
    /// Write the JSON report ({"provenance", "rows"}) to FILE; `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// `mnemo backup …`.
#[derive(Debug, Subcommand)]
pub enum BackupCommand {
    /// Write a consistent copy of the store to FILE (a new file; never overwritten) while it
    /// keeps serving: SQLite `VACUUM INTO`, fsynced, renamed into place when complete.
    Create {
        /// The backup file to write.
        file: PathBuf,
        /// Output options.
        #[command(flatten)]
        out: JsonFlag,
    },
    /// Replace the whole store's content with the backup FILE (every namespace; checked first:
    /// a Mnemo store, not damaged, not newer than this build). The store's generation moves on,
    /// so the index is rebuilt from the restored content, and the output says so. What was
    /// written after the backup was taken is gone from the store: back it up first if needed.
    Restore {
        /// The backup file (written by `mnemo backup create`).
        file: PathBuf,
        /// Leave in the restored store what was erased after the backup was made (by default
        /// every erasure of the store replaced is applied again); the report lists what comes
        /// back.
        #[arg(long)]
        keep_erased: bool,
        /// Output options.
        #[command(flatten)]
        out: JsonFlag,
    },
}

/// `mnemo completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    pub shell: clap_complete::Shell,
}

/// `mnemo mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Keep embedding vectors in tool results (left out by default).
    #[arg(long)]
    pub with_vectors: bool,
}

/// `mnemo reliability`.
#[derive(Debug, Args)]
pub struct ReliabilityArgs {
    /// Trials and seed.
    #[command(flatten)]
    pub trials: mnemo_bench::reliability::TrialArgs,
    /// The mnemo binary under test (default: this one).
    #[arg(long)]
    pub mnemo: Option<PathBuf>,
    /// Write the JSON report ({"provenance", "seed", "rows"}) to FILE; `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
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
        /// Then regenerate the LoCoMo table of this README (the block between its
        /// `<!-- locomo:begin …` and `<!-- locomo:end -->` lines) from the `--json` FILE.
        #[arg(long, value_name = "README", requires = "json")]
        readme: Option<PathBuf>,
    },
    /// LongMemEval retrieval: session recall@k (any / all evidence sessions), turn recall@k,
    /// NDCG@10 and evidence recall within each budget, per question type, for BM25, dense and
    /// hybrid; abstention (`_abs`) questions apart.
    ///
    /// Each question's haystack goes into its own namespace, one episodic memory per turn
    /// (role, session id and the session's date kept); the question is recalled with the clock
    /// at its question_date. Engine, index and fusion as `bench locomo` (the configured
    /// [embedder] and [index]).
    Longmemeval {
        /// Benchmark settings.
        #[command(flatten)]
        args: mnemo_bench::LongMemEvalArgs,
        /// Write the JSON report ({"provenance", "rows"}) to FILE; `-` for stdout.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Answerability: does the trust gate ESCALATE on questions memory cannot answer and ACT on
    /// those it can?
    ///
    /// LoCoMo and LongMemEval haystacks are ingested one namespace each (one episodic memory
    /// per turn); every question is recalled and assessed as the doors do it (the configured
    /// [index], [embedder], [recall] and [assessor], no `about`): answerable questions in their
    /// own haystack (over-abstention: ESCALATE with the evidence packed), the same questions in
    /// another haystack, LongMemEval `_abs` questions (unsafe acceptance: ACT), LoCoMo category 5
    /// apart; each rate with n and a Wilson interval, and the gate swept over relevance_floor.
    Answerability {
        /// Benchmark settings.
        #[command(flatten)]
        args: mnemo_bench::AnswerabilityArgs,
        /// Write the JSON report ({"provenance", "rows"}) to FILE; `-` for stdout.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Memory poisoning: attacks through the normal write path against benign look-alikes.
    ///
    /// A generated, seeded case set: per family (instructions hidden in a value, an
    /// authority-spoofed source, overwrites repeated by one principal, belief drift over many
    /// turns), attacks and benign look-alikes of the same shape. Each case writes its turns
    /// through the doors' rules with the configured model seam (offline fake; a live model or a
    /// cassette with MNEMO_RECORD / MNEMO_REPLAY and --prose), then asks the question an agent
    /// acts on. Reports attack success (ACT on the attacker's value) and benign false rejection
    /// (not ACT on the benign value), with n and Wilson 95% intervals, under each defence arm:
    /// none, [assessor] quarantine_instructions (the default), supersession_limit = 3,
    /// protect_authoritative_values, all three (docs/poisoning.md). The markdown goes to stdout.
    Poisoning {
        /// Benchmark settings.
        #[command(flatten)]
        args: mnemo_bench::PoisoningArgs,
        /// Write the JSON report ({"provenance", "rows"}) to FILE; `-` for stdout.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// What a model makes of prose: conversations whose facts are written down
    /// (eval/real-model/README.md) are told turn by turn, at their own times, to a fresh data
    /// directory through the configured model seam (fake, live, MNEMO_RECORD / MNEMO_REPLAY);
    /// reports facts kept, wrong tombstones (the bar: 0), facts that should stand and do not,
    /// replaced values still active, and claims per semantic memory, per conversation and model.
    Extraction {
        /// Conversation files, or directories of them (*.toml).
        #[arg(long, value_name = "PATH", required = true, num_args = 1..)]
        conversations: Vec<PathBuf>,
        /// Write the JSON report ({"provenance", "rows"}) to FILE; `-` for stdout.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Token cost: replay the prose demo from a cassette and report prompt and completion
    /// tokens per call kind and per agent turn, with the cassette's provenance.
    Tokens {
        /// Benchmark settings.
        #[command(flatten)]
        args: mnemo_bench::TokensArgs,
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
    /// Does the index stay healthy under CLI use? N single writes, each a `mnemo remember`
    /// process of its own (or `--in-process`, emulated here), then the index's segments and
    /// leftover `.tmp` files and the recall p50 (each recall a process too) against the same
    /// index rebuilt by `mnemo reindex`. Passes at ≤ 10 segments, no `.tmp` file and a p50
    /// within 1.5× of the rebuilt index's. Use a release build.
    CliChurn {
        /// Benchmark settings.
        #[command(flatten)]
        args: mnemo_bench::ChurnArgs,
        /// Write the JSON report ({"provenance", "rows"}) to FILE; `-` for stdout.
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Load on the HTTP API: N concurrent clients mixing remember, recall and agent turns
    /// against `mnemo serve` on loopback for a bounded time; throughput, p50/p99 per operation,
    /// errors, requests shed (503/429, retried after Retry-After), a check that every
    /// acknowledged remember is in the store and recallable afterwards, and the server's
    /// resident memory over the run (a soak). [cargo feature `server`]
    Serve(ServeBenchArgs),
}

/// `mnemo verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Machine-readable JSON on stdout; a failure is one line there too:
    /// {"error": {"kind", "message"}}.
    #[arg(long)]
    pub json: bool,
    /// Rebuild damaged SQLite indexes from their tables (REINDEX) under the data directory's
    /// lock, then check again. A damaged table is not touched.
    #[arg(long, conflicts_with = "export")]
    pub repair: bool,
    /// Check a history export (`mnemo export --history > FILE`) offline instead of the store:
    /// every entry's content hash, its link to the previous entry and the chain head the
    /// export ends with. Needs no data directory. Exits 0 when it verifies, 1 naming the first
    /// bad entry.
    #[arg(long, value_name = "FILE")]
    pub export: Option<PathBuf>,
}

/// `--json`: machine-readable output on stdout.
#[derive(Debug, Args)]
pub struct JsonFlag {
    /// Machine-readable JSON on stdout; a failure is one line there too:
    /// {"error": {"kind", "message"}}.
    #[arg(long)]
    pub json: bool,
}

/// `mnemo reextract`'s arguments.
#[derive(Debug, Args)]
pub struct ReextractArgs {
    /// Machine-readable JSON on stdout; a failure is one line there too:
    /// {"error": {"kind", "message"}}.
    #[arg(long)]
    pub json: bool,
    /// List the namespace's unextracted turns (id and why the last extraction failed) without
    /// retrying them.
    #[arg(long, conflicts_with = "discard")]
    pub list: bool,
    /// Take this turn off the unextracted turns instead of retrying any (a poison turn that can
    /// never be extracted): it stays recorded, it is no longer retried. An id that is not
    /// listed is refused.
    #[arg(long, value_name = "ID")]
    pub discard: Option<mnemo_contract::IdRef>,
}

/// `--json` for output that holds memories (recall, why).
#[derive(Debug, Args)]
pub struct MemoryJsonFlags {
    /// Machine-readable JSON on stdout (embedding vectors left out: `"embedding": {"model",
    /// "dims"}`); a failure is one line there too: {"error": {"kind", "message"}}.
    #[arg(long)]
    pub json: bool,
    /// Keep each memory's embedding vector in the JSON.
    #[arg(long, requires = "json")]
    pub with_vectors: bool,
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
    /// Run Mnemo alone, without the NaiveRAG and RecentOnly baselines.
    #[arg(long)]
    pub no_baselines: bool,
}

/// `mnemo eval-assessor`.
#[derive(Debug, Args)]
pub struct EvalAssessorArgs {
    /// Directory (or file) of case files (repeatable; default: eval/cases).
    #[arg(long = "cases")]
    pub cases: Vec<PathBuf>,
    /// Write the JSON report ({"provenance", "rows"}) to FILE; `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write an SVG plot of both rates against the threshold to FILE.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Plan each case the agent acts on with the configured reasoner (the model seam: fake,
    /// live, MNEMO_RECORD / MNEMO_REPLAY) and report how many plans pass the check; default:
    /// the offline planner, no model call.
    #[arg(long)]
    pub plan_with_model: bool,
}

/// `mnemo migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// The data directory to copy (its [store] must be sqlite).
    #[arg(long)]
    pub from: PathBuf,
    /// The PostgreSQL server: postgres://user:password@host:port/db.
    #[arg(long)]
    pub to: String,
    /// The PostgreSQL schema to copy into (must be empty).
    #[arg(long, default_value = "mnemo")]
    pub schema: String,
    /// Machine-readable JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// `mnemo demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the demo store in this directory (default: a temporary one, removed after).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// One JSON document on stdout: every write report, both agent turns and the history of
    /// the superseded memory (embedding vectors left out).
    #[arg(long)]
    pub json: bool,
}

/// `mnemo remember`.
#[derive(Debug, Args)]
pub struct RememberArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// The turn text; `-` reads it from stdin (bytes must be UTF-8).
    pub text: OsString,
    /// Who said it. Only sources declared in config (`[sources] declared`) count as distinct
    /// corroboration; any other label is the operator's own word and counts as "user", once.
    #[arg(long, default_value = "user")]
    pub source: String,
    /// A key making the write idempotent: a retry with the same key in the same namespace
    /// writes nothing again and reports the turn first recorded.
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
}

/// `mnemo recall`.
#[derive(Debug, Args)]
pub struct RecallArgs {
    /// Output options.
    #[command(flatten)]
    pub out: MemoryJsonFlags,
    /// The query.
    pub query: String,
    /// Token budget (default from config: 1024). Must be ≥ 0; above 16,000,000 it is clamped
    /// (and the pack's notes say so).
    #[arg(long, allow_negative_numbers = true)]
    pub budget: Option<String>,
    /// Retrieval signals: lexical (or bm25), dense (or vector) or hybrid.
    #[arg(long)]
    pub mode: Option<String>,
    /// The claim the task is about, `entity | attribute`: it is load-bearing, and the agent
    /// escalates when nothing recalled asserts it.
    #[arg(long)]
    pub about: Option<String>,
    /// Plain retrieval: no grounding, no grade, no decision.
    #[arg(long, conflicts_with_all = ["about", "exit_code"])]
    pub raw: bool,
    /// How much --json shows: compact (the default: the packed memories as prompt-ready
    /// lines within the budget, and the decision) or full (the pack with its whole trace and
    /// provenance, the assessment, the verdict and the action).
    #[arg(long, requires = "json", value_name = "compact|full", value_parser = |s: &str| s.parse::<mnemo_agent::Detail>())]
    pub detail: Option<mnemo_agent::Detail>,
    /// With --json: the full result (the same as --detail full).
    #[arg(long, requires = "json", conflicts_with = "detail")]
    pub full: bool,
    /// Exit with status 3 when the decision is ESCALATE (0 on ACT; 1 on errors).
    #[arg(long)]
    pub exit_code: bool,
    /// Recall what memory held at this past time instead of now (RFC 3339 or a date): memories
    /// recorded later are absent, those superseded or forgotten later are present. Graded as of
    /// then without asking the systems of record (they answer for now); no escalation is raised
    /// and no access recorded. A time before the namespace's first memory, or after now, is
    /// said in the notes (docs/time.md).
    #[arg(long, value_name = "TIME")]
    pub as_of: Option<String>,
    /// Only episodes recorded at or after this time (RFC 3339 or a date, midnight UTC); facts
    /// and rules are not windowed (docs/time.md).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only episodes recorded before this time (a date alone is its midnight: `--until
    /// 2026-02-01` takes all of January).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    /// Recall what was true in the world at this time (RFC 3339 or a date), by the validity
    /// intervals the turns stated ("I lived in Lisbon from 2019 to 2021"; the fake grammar's
    /// `[SEM from=2019 to=2021]`): replaced values are included where they held, a memory that
    /// states no interval is taken as true throughout. Graded without asking the systems of
    /// record; no escalation. With `--as-of`, by what memory knew then (docs/time.md).
    #[arg(long, value_name = "TIME")]
    pub valid_at: Option<String>,
}

/// `mnemo history`.
#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// The claim, `entity | attribute` (e.g. "Northwind Labs | lead time").
    pub claim: String,
}

/// `mnemo turn`.
#[derive(Debug, Args)]
pub struct TurnArgs {
    /// Output options.
    #[command(flatten)]
    pub out: MemoryJsonFlags,
    /// The message (remembered as a turn said by --source, then used as the task).
    pub text: String,
    /// Who said it (a source declared in config counts as itself; any other as the operator).
    #[arg(long, default_value = "user")]
    pub source: String,
    /// The claim the task is about, `entity | attribute`.
    #[arg(long)]
    pub about: Option<String>,
    /// Token budget of the recall (default from config).
    #[arg(long, allow_negative_numbers = true)]
    pub budget: Option<String>,
    /// How much --json shows: compact (the default) or full (the whole turn: pack with its
    /// trace, assessment, verdict, plan, escalation).
    #[arg(long, requires = "json", value_name = "compact|full", value_parser = |s: &str| s.parse::<mnemo_agent::Detail>())]
    pub detail: Option<mnemo_agent::Detail>,
    /// Exit with status 3 when the decision is ESCALATE (0 on ACT; 1 on errors).
    #[arg(long)]
    pub exit_code: bool,
}

/// `mnemo forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// `entity | attribute`, or free text designating the memories.
    pub command: String,
    /// Write nothing: list what the command would tombstone and what it keeps, and why each
    /// matched (no turn is recorded, nothing is tombstoned).
    #[arg(long)]
    pub dry_run: bool,
    /// Let a free-text command take pinned memories too (an exact `entity | attribute` takes a
    /// pinned claim without it).
    #[arg(long)]
    pub include_pinned: bool,
}

/// `mnemo erase`.
#[derive(Debug, Args)]
pub struct EraseArgs {
    /// Output options.
    #[command(flatten)]
    pub out: JsonFlag,
    /// A memory id (m42), a turn id (t17), `entity | attribute`, or with --subject an entity.
    pub what: String,
    /// WHAT is a subject entity: erase every memory about it or naming it, and its name and
    /// values out of the raw turns.
    #[arg(long)]
    pub subject: bool,
    /// Why (required; kept in the erasure record, so write no erased value into it).
    #[arg(long)]
    pub reason: String,
    /// Write nothing: list what would be erased (the memories with their content, the turns).
    #[arg(long)]
    pub dry_run: bool,
}

/// `mnemo why`.
#[derive(Debug, Args)]
pub struct WhyArgs {
    /// Output options.
    #[command(flatten)]
    pub out: MemoryJsonFlags,
    /// The memory's id, as remember, recall and list show it (m42).
    pub id: mnemo_contract::IdRef,
}
