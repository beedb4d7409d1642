//! `mnemo reliability`: the reliability harness. It runs the `mnemo` binary itself as the
//! process under test:
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
//! Figures are JSON rows with a provenance block (`--json FILE`); a summary goes to stdout.
use anyhow::{Context as _, Result};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{Cli, ReliabilityArgs};

mod damage;
mod fuzz;
mod kill;
mod rng;
mod use_trials;
mod world;

pub use rng::Rng;

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

/// Run the harness.
pub async fn run(cli: &Cli, args: &ReliabilityArgs) -> Result<ExitCode> {
    let exe = match &args.mnemo {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("locating the mnemo binary")?,
    };
    // Taken first: the commit and start time are those of the run, not of its end.
    let provenance = crate::provenance::run_provenance("fake", "fake-qwen", "fake", "-");
    let work = tempfile::tempdir().context("creating the work directory")?;
    let mut rng = Rng::new(args.seed);
    let mut rows = Vec::new();
    if args.kill > 0 {
        rows.extend(kill::run(&exe, work.path(), args.kill, &mut rng, &cli.config).await?);
    }
    if args.damage > 0 {
        rows.extend(damage::run(&exe, work.path(), args.damage, &mut rng, &cli.config).await?);
    }
    if args.churn > 0 {
        rows.push(use_trials::churn(&exe, work.path(), args.churn, &config_args(&cli.config))?);
    }
    if args.readers > 0 {
        rows.push(use_trials::readers(
            &exe,
            work.path(),
            args.readers,
            args.reader_memories,
            &config_args(&cli.config),
        )?);
    }
    if args.fuzz > 0 {
        rows.extend(fuzz::run(args.fuzz, &mut rng));
    }
    let mut failed = false;
    for r in &rows {
        let counts: Vec<String> = r.counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out!("{:<7} {:<24} runs {:>8}  passed {:>8}  {}", r.suite, r.case, r.runs, r.passed, counts.join(" "));
        for f in r.failures.iter().take(3) {
            out!("        failure: {f}");
        }
        failed |= r.passed != r.runs;
    }
    if let Some(path) = &args.json {
        let doc = serde_json::json!({ "provenance": provenance, "seed": args.seed, "rows": rows });
        write_json(path, &doc)?;
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

fn write_json(path: &Path, doc: &serde_json::Value) -> Result<()> {
    let text = serde_json::to_string_pretty(doc)?;
    if path == Path::new("-") {
        out!("{text}");
        return Ok(());
    }
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

/// The config arguments to pass on to child commands.
fn config_args(config: &[PathBuf]) -> Vec<String> {
    config.iter().flat_map(|c| ["--config".to_string(), c.display().to_string()]).collect()
}
