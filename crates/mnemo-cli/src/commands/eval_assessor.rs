//! `mnemo eval-assessor`: the assessor measured on labelled cases.
use anyhow::Result;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Cli, EvalAssessorArgs};
use crate::provenance::run_provenance;

pub async fn run(cli: &Cli, args: &EvalAssessorArgs) -> Result<ExitCode> {
    let cases = if args.cases.is_empty() { vec![PathBuf::from("eval/cases")] } else { args.cases.clone() };
    let eval_args = mnemo_eval::assessor::AssessorEvalArgs {
        cases,
        configs: cli.config.clone(),
        json: args.json.clone(),
        plot: args.plot.clone(),
        plan_with_model: args.plan_with_model,
    };
    let configs = mnemo_eval::load_configs(&cli.config)?;
    let hash =
        mnemo_report::fnv1a_hex(configs.iter().map(|(i, _)| i.hash.as_str()).collect::<Vec<_>>().join(",").as_bytes());
    // The assessor makes no model call: grounding and provenance are rules in code. Planning
    // with the model is the reasoner's seam, and the provenance says which client answered.
    let provenance = match (args.plan_with_model, configs.first()) {
        (true, Some((_, config))) => {
            let r = mnemo_agent::runtime::build_reasoner(config, &std::env::temp_dir())?;
            let m = r.model_info();
            run_provenance(m.client.as_str(), &m.model, "none", &hash)
        }
        _ => run_provenance("rules", "none", "none", &hash),
    };
    let outcome = mnemo_eval::assessor::run_assessor_eval(&eval_args, provenance).await?;
    if args.json.as_deref() == Some(std::path::Path::new("-")) {
        out!("{}", outcome.json_string());
    } else {
        out!("{}", outcome.markdown());
    }
    if let Some(p) = &args.plot {
        eprintln!("plot written to {}", p.display());
    }
    Ok(if outcome.safe() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
