//! `mnemo reliability`: the door of the reliability harness (`mnemo_bench::reliability`). The
//! harness runs this binary (or `--mnemo`) as the process under test and returns its rows; here
//! they are printed as a summary, written as JSON with a provenance block (`--json FILE`), and
//! a failed check becomes the exit code.
use anyhow::{Context as _, Result};
use std::path::Path;
use std::process::ExitCode;

use crate::cli::{Cli, ReliabilityArgs};

/// Run the harness.
pub async fn run(cli: &Cli, args: &ReliabilityArgs) -> Result<ExitCode> {
    let exe = match &args.mnemo {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("locating the mnemo binary")?,
    };
    // Taken first: the commit and start time are those of the run, not of its end.
    let provenance = crate::provenance::run_provenance("fake", "fake-qwen", "fake", "-");
    let rows = mnemo_bench::reliability::run(&args.trials, &exe, &cli.config).await?;
    let mut failed = false;
    for r in &rows {
        let counts: Vec<String> = r.counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out!("{:<7} {:<24} runs {:>8}  passed {:>8}  {}", r.suite, r.case, r.runs, r.passed, counts.join(" "));
        for f in r.failures.iter().take(3) {
            out!("        failure: {f}");
        }
        failed |= !r.held();
    }
    if let Some(path) = &args.json {
        let doc = serde_json::json!({ "provenance": provenance, "seed": args.trials.seed, "rows": rows });
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
