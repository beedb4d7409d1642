//! The reliability harness behind `mnemo reliability`. It runs a `mnemo` binary (its path is
//! given) as the process under test:
//!
//! - kill trials: a command (a one-line remember, a 200-line turn, a decay sweep, a reindex)
//!   is SIGKILLed at a random moment; then every acknowledged write must be in the store and
//!   found by a search of the index, the store must pass `PRAGMA integrity_check`, a turn must
//!   be all or nothing, and the next commands must all succeed;
//! - damage trials: an index file is removed, garbled or cut, or the store file is emptied,
//!   cut, garbled or replaced by an older backup; the directory must stay usable (index damage)
//!   or be refused clearly (store damage), and an old index must never be served;
//! - use trials: 2,000 single-memory CLI writes must leave a healthy index (segments merged,
//!   no `.tmp` file), and recalls beside a running `reindex` must answer within 1 s;
//! - a fuzz driver: mutated inputs through the tagged-line grammar, the config merger and the
//!   scenario loader, in process, counting executions and panics.
//!
//! [`run`] returns one [`Row`] per suite and case; the CLI prints them, writes the JSON report
//! (`{"provenance", "seed", "rows"}`) and turns a failed check into its exit code.
use clap::Args;
use serde::Serialize;
use std::path::{Path, PathBuf};

use crate::error::{BenchError, Result};

mod damage;
mod fuzz;
mod kill;
mod use_trials;
mod world;

pub use crate::rng::Rng;

/// `mnemo reliability` settings: how many trials of each kind, and the seed.
#[derive(Debug, Clone, Args)]
pub struct TrialArgs {
    /// SIGKILL trials (cycling remember, a 200-line turn, decay, reindex).
    #[arg(long, default_value_t = 100)]
    pub kill: usize,
    /// Damage trials (cycling index-file and store-file damage).
    #[arg(long, default_value_t = 40)]
    pub damage: usize,
    /// Fuzz executions in all (shared by the parsers).
    #[arg(long, default_value_t = 1_000_000)]
    pub fuzz: usize,
    /// Single-memory `remember` processes into one directory (then: at most 10 index segments,
    /// no `.tmp` file left, every memory found); 0 skips the churn.
    #[arg(long, default_value_t = 2_000)]
    pub churn: usize,
    /// Reader trials: recall again and again while `reindex` rebuilds the index (each recall
    /// within 1 s, none building an index of its own); 0 skips them.
    #[arg(long, default_value_t = 5)]
    pub readers: usize,
    /// Memories in the readers' store (a bigger store makes each reindex last longer).
    #[arg(long, default_value_t = 20_000)]
    pub reader_memories: usize,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// One figure row.
#[derive(Debug, Serialize)]
pub struct Row {
    /// kill | damage | churn | readers | fuzz.
    pub suite: &'static str,
    /// What was done (op, damage kind, fuzz target).
    pub case: String,
    /// Trials or executions.
    pub runs: u64,
    /// Runs where every check held.
    pub passed: u64,
    /// Counters (acknowledged writes lost, stores unopenable, commands failing after, panics…).
    pub counts: serde_json::Map<String, serde_json::Value>,
    /// The first failures, for a human to reproduce.
    pub failures: Vec<String>,
}

/// A row's counters from (name, value) pairs.
pub fn counts<V: Into<serde_json::Value>>(
    pairs: impl IntoIterator<Item = (&'static str, V)>,
) -> serde_json::Map<String, serde_json::Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v.into())).collect()
}

impl Row {
    /// Whether every run passed.
    pub fn held(&self) -> bool {
        self.passed == self.runs
    }
}

/// Run the suites `args` asks for against the binary `exe`, each child command given the
/// config files `config`; the trials' directories live in a temporary directory removed after.
pub async fn run(args: &TrialArgs, exe: &Path, config: &[PathBuf]) -> Result<Vec<Row>> {
    let work = tempfile::tempdir().map_err(BenchError::io_at("creating a work directory in", &std::env::temp_dir()))?;
    let mut rng = Rng::from_state(args.seed);
    let cfg = config_args(config);
    let mut rows = Vec::new();
    if args.kill > 0 {
        rows.extend(kill::run(exe, work.path(), args.kill, &mut rng, &cfg).await?);
    }
    if args.damage > 0 {
        rows.extend(damage::run(exe, work.path(), args.damage, &mut rng, &cfg).await?);
    }
    if args.churn > 0 {
        rows.push(use_trials::churn(exe, work.path(), args.churn, &cfg)?);
    }
    if args.readers > 0 {
        rows.push(use_trials::readers(exe, work.path(), args.readers, args.reader_memories, &cfg)?);
    }
    if args.fuzz > 0 {
        rows.extend(fuzz::run(args.fuzz, &mut rng));
    }
    Ok(rows)
}

/// The config arguments to pass on to child commands.
fn config_args(config: &[PathBuf]) -> Vec<String> {
    config.iter().flat_map(|c| ["--config".to_string(), c.display().to_string()]).collect()
}
