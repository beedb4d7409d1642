//! `mnemo bench locomo | scale`: figures come from a benchmark program, never a timed test.
use anyhow::Result;
use std::path::Path;
use std::process::ExitCode;

use crate::cli::{BenchCommand, Cli};
use crate::context;
use crate::provenance::run_provenance;

pub async fn run(cli: &Cli, cmd: &BenchCommand) -> Result<ExitCode> {
    let config = context::config(cli)?;
    let (report, json) = match cmd {
        BenchCommand::Locomo { args, json } => {
            let embedder = context::embedder(&config).await?;
            let provenance =
                run_provenance("none (retrieval only: no model call)", "none", embedder.model_id(), &config.hash());
            (mnemo_bench::locomo(args, provenance, embedder).await?, json)
        }
        BenchCommand::Scale { args, json } => {
            let provenance =
                run_provenance("none (synthetic vectors: no model call)", "none", "synthetic", &config.hash());
            (mnemo_bench::scale(args, provenance).await?, json)
        }
    };
    match json.as_deref() {
        Some(p) if p == Path::new("-") => out!("{}", report.to_json()),
        Some(p) => {
            out!("{}", report.markdown);
            std::fs::write(p, report.to_json())?;
            eprintln!("wrote {}", p.display());
        }
        None => out!("{}", report.markdown),
    }
    Ok(ExitCode::SUCCESS)
}
