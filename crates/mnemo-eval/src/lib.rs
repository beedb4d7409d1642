//! Mnemo evaluation harness (`mnemo eval`).
//!
//! Scenario files (docs/scenarios.md) are data: a timeline of turns, system-of-record changes and
//! probes. Each scenario runs under each config in a fresh temporary data directory, and the
//! same timeline is replayed through two baselines (NaiveRAG, RecentOnly) that see the raw chat
//! history of the same namespaces. Metrics follow docs/metrics.md exactly; every rate carries its n
//! and a 95% Wilson interval; "all" pools the counts.
#![deny(missing_docs)]

pub mod answer;
pub mod assessor;
pub mod baselines;
pub mod error;
pub mod extraction;
pub mod history;
pub mod loader;
pub mod metrics;
pub mod outcome;
pub mod report;
pub mod runner;
pub mod scenario;

use std::path::PathBuf;

use mnemo_agent::Config;
use mnemo_report::{fnv1a_hex, RunProvenance};

pub use error::{EvalError, Result};
pub use outcome::ScenarioRun;
pub use report::{ConfigInfo, EvalOutcome};
pub use scenario::Scenario;

/// What `mnemo eval` was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalArgs {
    /// Directories of `*.toml` scenarios (a `.toml` file path is accepted too).
    pub scenario_dirs: Vec<PathBuf>,
    /// Config files compared side by side, each merged over the embedded default on its own;
    /// empty: the embedded default alone.
    pub configs: Vec<PathBuf>,
    /// Write the JSON report here (`-`: the caller prints `EvalOutcome::json_string`).
    pub json: Option<PathBuf>,
    /// Keep the result in `results_dir` and regenerate `LATEST.md` there.
    pub publish: bool,
    /// Where published results go (default `eval/results`).
    pub results_dir: PathBuf,
    /// Run Mnemo alone, without the NaiveRAG and RecentOnly baselines.
    pub no_baselines: bool,
}

impl EvalArgs {
    /// Scenarios from these directories, the default config, nothing written.
    pub fn new(scenario_dirs: Vec<PathBuf>) -> Self {
        EvalArgs {
            scenario_dirs,
            configs: vec![],
            json: None,
            publish: false,
            results_dir: PathBuf::from("eval/results"),
            no_baselines: false,
        }
    }
}

/// The configs to compare, named uniquely (a repeated name gets `#2`, `#3`, …).
pub fn load_configs(paths: &[PathBuf]) -> Result<Vec<(ConfigInfo, Config)>> {
    let configs = if paths.is_empty() {
        vec![Config::embedded_default().map_err(|e| EvalError::Config(e.to_string()))?]
    } else {
        paths
            .iter()
            .map(|p| Config::load(std::slice::from_ref(p)).map_err(|e| EvalError::Config(e.to_string())))
            .collect::<Result<Vec<_>>>()?
    };
    let mut out: Vec<(ConfigInfo, Config)> = Vec::new();
    for c in configs {
        let mut name = c.name();
        let mut n = 1;
        while out.iter().any(|(i, _)| i.name == name) {
            n += 1;
            name = format!("{}#{n}", c.name());
        }
        out.push((ConfigInfo { name, hash: c.hash(), files: c.files().to_vec() }, c));
    }
    Ok(out)
}

/// Run every scenario under every config, with both baselines; write the JSON and publish as
/// asked. `progress` is called after each (config, scenario) run.
pub async fn run_eval_with_progress(
    args: &EvalArgs,
    mut provenance: RunProvenance,
    progress: &(dyn Fn(&ScenarioRun) + Send + Sync),
) -> Result<EvalOutcome> {
    let scenarios = loader::load_dirs(&args.scenario_dirs)?;
    let configs = load_configs(&args.configs)?;
    // Check every scenario's [settings] against every config before running anything.
    for (_, c) in &configs {
        for s in &scenarios {
            runner::scenario_config(s, c)?;
        }
    }
    let mut runs = Vec::new();
    for (info, c) in &configs {
        for s in &scenarios {
            let run = runner::run_scenario_with(s, c, &info.name, !args.no_baselines).await?;
            progress(&run);
            runs.push(run);
        }
    }
    // The models that really answered, as the answers said: they replace what the wired
    // components announced before the run (a live or replayed model may echo another name).
    let echoed: std::collections::BTreeSet<&str> =
        runs.iter().flat_map(|r: &ScenarioRun| r.echoed_models.iter().map(String::as_str)).collect();
    if !echoed.is_empty() {
        let clients: std::collections::BTreeSet<&str> =
            echoed.iter().filter_map(|e| e.split_once(':')).map(|(c, _)| c).collect();
        let models: std::collections::BTreeSet<&str> =
            echoed.iter().filter_map(|e| e.split_once(':')).map(|(_, m)| m).collect();
        provenance.client = clients.into_iter().collect::<Vec<_>>().join(",");
        provenance.model = models.into_iter().collect::<Vec<_>>().join(",");
    }
    if provenance.config_hash.is_empty() {
        let joined: Vec<&str> = configs.iter().map(|(i, _)| i.hash.as_str()).collect();
        provenance.config_hash = fnv1a_hex(joined.join(",").as_bytes());
    }
    let mut outcome = EvalOutcome {
        provenance,
        configs: configs.into_iter().map(|(i, _)| i).collect(),
        scenarios: scenarios.iter().map(|s| s.name.clone()).collect(),
        runs,
        published: None,
    };
    if let Some(path) = args.json.as_ref().filter(|p| p.as_os_str() != "-") {
        std::fs::write(path, outcome.json_string() + "\n").map_err(|e| EvalError::io(path, e))?;
    }
    if args.publish {
        outcome.published = Some(history::publish(&outcome, &args.results_dir)?);
    }
    Ok(outcome)
}

/// `run_eval_with_progress` without progress.
pub async fn run_eval(args: &EvalArgs, provenance: RunProvenance) -> Result<EvalOutcome> {
    run_eval_with_progress(args, provenance, &|_| {}).await
}
