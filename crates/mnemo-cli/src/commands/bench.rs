//! `mnemo bench locomo | longmemeval | scale | cli-churn | …`: figures come from a benchmark program, never a timed test.
use anyhow::Result;
use std::path::Path;
use std::process::ExitCode;

use crate::cli::{BenchCommand, Cli};
use crate::context;
use crate::provenance::run_provenance;

pub async fn run(cli: &Cli, cmd: &BenchCommand) -> Result<ExitCode> {
    if let BenchCommand::Tokens { args, json } = cmd {
        return emit(&tokens(cli, args).await?, json);
    }
    let config = context::config(cli)?;
    let (report, json) = match cmd {
        BenchCommand::Locomo { args, json, .. } => {
            let embedder = context::embedder(&config).await?;
            // The configured [index] whole: the bench's flags are laid over it, the factory checks it.
            let (kind, index, origin) = config.plugin("index")?;
            let args =
                &args.clone().with_index_config(&kind, index, &origin).with_recall_policy(&config.policy().recall);
            let provenance =
                run_provenance("none (retrieval only: no model call)", "none", embedder.model_id(), &config.hash());
            (mnemo_bench::locomo(args, provenance, embedder).await?, json)
        }
        BenchCommand::Longmemeval { args, json } => {
            let embedder = context::embedder(&config).await?;
            let (kind, settings, origin) = config.plugin("index")?;
            let index = mnemo_bench::ConfiguredIndex { kind, settings, origin };
            let args = args.clone().with_config(index, &config.policy().recall);
            let provenance =
                run_provenance("none (retrieval only: no model call)", "none", embedder.model_id(), &config.hash());
            (mnemo_bench::longmemeval(&args, provenance, embedder).await?, json)
        }
        BenchCommand::Answerability { args, json } => {
            let embedder = context::embedder(&config).await?;
            let (index_kind, index_settings, _) = config.plugin("index")?;
            let (assessor_kind, assessor_settings, _) = config.plugin("assessor")?;
            let gate = mnemo_bench::GateConfig {
                index_kind,
                index_settings,
                assessor_kind,
                assessor_settings,
                policy: config.policy().clone(),
            };
            let provenance = run_provenance(
                "none (retrieval and assessment only: no model call)",
                "none",
                embedder.model_id(),
                &config.hash(),
            );
            (mnemo_bench::answerability(args, provenance, embedder, &gate).await?, json)
        }
        BenchCommand::Poisoning { args, json } => {
            let seam = context::seam(&config)?;
            eprintln!("bench poisoning: {} cases per family and side ({})", args.per_family, seam.describe());
            // The model: as echoed by the calls (filled in by the bench).
            let provenance = run_provenance(seam.mode.name(), "none", "the configured embedder", &config.hash());
            (mnemo_bench::poisoning(args, provenance, &config).await?, json)
        }
        BenchCommand::Scale { args, json } => {
            let provenance =
                run_provenance("none (synthetic vectors: no model call)", "none", "synthetic", &config.hash());
            // The configured [store] and [index], built by the bench through the registry.
            let component = |section: &str| -> Result<mnemo_bench::scale::Component> {
                let (kind, settings, origin) = config.plugin(section)?;
                Ok(mnemo_bench::scale::Component::new(&kind, settings, &origin, &config.section_dir(section)))
            };
            let backend = mnemo_bench::scale::Backend { store: component("store")?, index: component("index")? };
            (mnemo_bench::scale(args, provenance, &backend).await?, json)
        }
        BenchCommand::CliChurn { args, json } => {
            let (client, embedder) = if args.in_process {
                ("none (in-process emulation: memories written directly)".to_string(), "synthetic".to_string())
            } else {
                // What each spawned `mnemo remember` uses: this config.
                (
                    context::seam(&config)?.mode.name().to_string(),
                    context::embedder(&config).await?.model_id().to_string(),
                )
            };
            let provenance = run_provenance(&client, "none", &embedder, &config.hash());
            // Each write and recall is this very binary, spawned with the same config files.
            let program = if args.in_process {
                None
            } else {
                let mut command = vec![std::env::current_exe()?.into_os_string()];
                for c in &cli.config {
                    command.push("--config".into());
                    command.push(std::path::absolute(c)?.into_os_string());
                }
                Some(command)
            };
            (mnemo_bench::cli_churn(args, provenance, program).await?, json)
        }
        BenchCommand::Extraction { conversations, json } => {
            let conversations = mnemo_eval::extraction::Conversation::load_all(conversations)?;
            let seam = context::seam(&config)?;
            let mut rows = Vec::new();
            for c in &conversations {
                eprintln!("bench extraction: {} ({} turns; {})", c.name, c.turns.len(), seam.describe());
                rows.push(mnemo_eval::extraction::run_conversation(&config, c).await?);
            }
            let models: Vec<String> = rows
                .iter()
                .flat_map(|r| r["models"].as_array().cloned().unwrap_or_default())
                .filter_map(|m| m.as_str().map(str::to_string))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            let provenance =
                run_provenance(seam.mode.name(), &models.join(", "), "the configured embedder", &config.hash());
            let markdown = mnemo_eval::extraction::markdown(&rows);
            (mnemo_bench::BenchReport::new(provenance, rows, markdown), json)
        }
        BenchCommand::Tokens { .. } | BenchCommand::Serve(_) => return Ok(ExitCode::SUCCESS),
    };
    emit(&report, json)?;
    if let (BenchCommand::Locomo { readme: Some(readme), .. }, Some(json)) = (cmd, json) {
        regenerate_readme(readme, json)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `mnemo bench tokens`: record the cassette if asked, then replay it. The benchmark picks its
/// own client (record against the mock, then replay): the configured [llm] client is not used,
/// so it is not announced.
async fn tokens(cli: &Cli, args: &mnemo_bench::TokensArgs) -> Result<mnemo_bench::BenchReport> {
    let config = mnemo_agent::Config::load(&cli.config)?;
    if !cli.quiet {
        eprintln!("mnemo: model client: replay (from {}; no network)", args.cassette.display());
    }
    let policy = config.policy().clone();
    if args.record {
        mnemo_bench::tokens::record(&args.cassette, policy.clone()).await?;
        eprintln!("recorded {} against the in-process mock", args.cassette.display());
    }
    let provenance =
        |client: &str, model: &str, embedder: &str| run_provenance(client, model, embedder, &config.hash());
    Ok(mnemo_bench::tokens::replay(args, policy, provenance).await?)
}

/// Replace README's LoCoMo block with the table of the result file just written (read back
/// from the file, so the README shows what the file holds).
fn regenerate_readme(readme: &Path, json: &Path) -> Result<()> {
    if json == Path::new("-") {
        anyhow::bail!("--readme needs --json FILE (a result file for the README to name), not -");
    }
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(json)?)
        .map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", json.display()))?;
    let body = mnemo_bench::locomo::readme::render(&report, &json.display().to_string())?;
    let text = std::fs::read_to_string(readme).map_err(|e| anyhow::anyhow!("{}: {e}", readme.display()))?;
    let new = mnemo_bench::locomo::readme::splice(&text, &body, &readme.display().to_string())?;
    let tmp = readme.with_extension("md.tmp");
    std::fs::write(&tmp, new)?;
    std::fs::rename(&tmp, readme)?;
    eprintln!("{}: LoCoMo table regenerated from {}", readme.display(), json.display());
    Ok(())
}

fn emit(report: &mnemo_bench::BenchReport, json: &Option<std::path::PathBuf>) -> Result<ExitCode> {
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
