//! Running the case set under each config, and the report: JSON rows with provenance
//! (default threshold first, then the band, then the sweep) and markdown.
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;

use mnemo_report::{Report, RunProvenance};

use super::case::load_cases;
use super::run::{check_sweepable, run_case, CaseOutcome};
use super::score::{best_band, score, sweep_grid, Scores, Split};
use crate::error::{EvalError, Result};
use crate::metrics::Rate;
use crate::report::ConfigInfo;

/// What `mnemo eval-assessor` was asked to do.
#[derive(Clone, Debug, PartialEq)]
pub struct AssessorEvalArgs {
    /// Case directories or files.
    pub cases: Vec<PathBuf>,
    /// Configs measured one by one (empty: the embedded default).
    pub configs: Vec<PathBuf>,
    /// Write the JSON report here (`-`: the caller prints it).
    pub json: Option<PathBuf>,
    /// Write the SVG plot here.
    pub plot: Option<PathBuf>,
    /// Plan each ACT case with the configured reasoner (the model seam) instead of the offline
    /// planner.
    pub plan_with_model: bool,
}

/// One config's results.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigResult {
    /// The config.
    pub info: ConfigInfo,
    /// Its threshold.
    pub threshold: f64,
    /// Every case's outcome.
    pub outcomes: Vec<CaseOutcome>,
    /// At the configured threshold: decisive, then ladder.
    pub at_default: Vec<Scores>,
    /// The sweep over decisive cases.
    pub sweep: Vec<Scores>,
    /// The sweep over ladder cases.
    pub ladder_sweep: Vec<Scores>,
    /// Where both decisive rates are at their best.
    pub band: Vec<(f64, f64)>,
}

/// Everything one run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct AssessorOutcome {
    /// Who and what produced it.
    pub provenance: RunProvenance,
    /// Per config.
    pub results: Vec<ConfigResult>,
}

/// Load the cases, assess each under each config, score, sweep; write the JSON and the plot.
pub async fn run_assessor_eval(args: &AssessorEvalArgs, provenance: RunProvenance) -> Result<AssessorOutcome> {
    let cases = load_cases(&args.cases)?;
    let configs = crate::load_configs(&args.configs)?;
    let mut results = Vec::new();
    for (info, config) in configs {
        let planner = match args.plan_with_model {
            true => {
                let dir = std::env::temp_dir();
                Some(
                    mnemo_agent::runtime::build_reasoner(&config, &dir)
                        .map_err(|e| EvalError::Config(e.to_string()))?,
                )
            }
            false => None,
        };
        let mut outcomes = Vec::new();
        for c in &cases {
            outcomes.push(run_case(c, &config, planner.as_deref()).await?);
        }
        check_sweepable(&outcomes)?;
        let threshold = outcomes.first().map_or(0.55, |o| o.threshold);
        let at_default = vec![score(&outcomes, Split::Decisive, threshold), score(&outcomes, Split::Ladder, threshold)];
        let sweep: Vec<Scores> = sweep_grid().into_iter().map(|t| score(&outcomes, Split::Decisive, t)).collect();
        let ladder_sweep: Vec<Scores> = sweep_grid().into_iter().map(|t| score(&outcomes, Split::Ladder, t)).collect();
        let band = best_band(&sweep);
        results.push(ConfigResult { info, threshold, outcomes, at_default, sweep, ladder_sweep, band });
    }
    let outcome = AssessorOutcome { provenance, results };
    if let Some(path) = args.json.as_ref().filter(|p| p.as_os_str() != "-") {
        std::fs::write(path, outcome.json_string() + "\n").map_err(|e| EvalError::io(path, e))?;
    }
    if let Some(path) = &args.plot {
        super::plot::write_svg(&outcome, path)?;
    }
    Ok(outcome)
}

const METRICS: [&str; 3] = ["unsafe_acceptance", "over_abstention", "wrong_value_action"];

fn rates(s: &Scores) -> [&Rate; 3] {
    [&s.unsafe_acceptance, &s.over_abstention, &s.wrong_value_action]
}

fn band_text(band: &[(f64, f64)]) -> String {
    if band.is_empty() {
        return "none: no swept threshold has both rates at their best at once".into();
    }
    band.iter().map(|(lo, hi)| format!("{lo:.2}–{hi:.2}")).collect::<Vec<_>>().join(", ")
}

impl AssessorOutcome {
    /// Flat rows: every config's default-threshold rows first, then the bands, then the sweeps.
    pub fn rows(&self) -> Vec<Value> {
        let row = |r: &ConfigResult, s: &Scores, metric: &str, rate: &Rate, default: bool| {
            json!({
                "config": r.info.name, "metric": metric, "value": rate.value, "k": rate.k, "n": rate.n,
                "lo": rate.lo, "hi": rate.hi, "split": s.split.as_str(), "threshold": s.threshold,
                "default_threshold": default,
            })
        };
        let mut rows = Vec::new();
        for r in &self.results {
            for s in &r.at_default {
                for (m, rate) in METRICS.iter().zip(rates(s)) {
                    rows.push(row(r, s, m, rate, true));
                }
            }
        }
        for r in &self.results {
            let planned = r.outcomes.iter().filter(|o| o.plan_faithful.is_some()).count();
            let faithful = r.outcomes.iter().filter(|o| o.plan_faithful == Some(true)).count();
            let rate = Rate::new(faithful, planned, 1.0);
            let mut by: Vec<&str> = r.outcomes.iter().filter_map(|o| o.plan_model.as_deref()).collect();
            by.sort_unstable();
            by.dedup();
            let refused: Vec<Value> = r
                .outcomes
                .iter()
                .filter(|o| o.plan_faithful == Some(false))
                .map(|o| json!({"case": o.name, "why": o.plan_refused}))
                .collect();
            rows.push(json!({
                "config": r.info.name, "metric": "plan_faithfulness", "value": rate.value, "k": rate.k, "n": rate.n,
                "lo": rate.lo, "hi": rate.hi, "split": "acted", "threshold": null, "default_threshold": true,
                "planned_by": by, "refused": refused,
            }));
        }
        for r in &self.results {
            let ranges: Vec<[f64; 2]> = r.band.iter().map(|(a, b)| [*a, *b]).collect();
            rows.push(json!({
                "config": r.info.name, "metric": "best_band", "value": band_text(&r.band), "ranges": ranges,
                "n": r.outcomes.iter().filter(|o| o.decisive).count(), "split": "decisive", "threshold": null,
                "default_threshold": false,
            }));
        }
        for r in &self.results {
            for s in r.sweep.iter().chain(&r.ladder_sweep) {
                for (m, rate) in METRICS.iter().zip(rates(s)) {
                    rows.push(row(r, s, m, rate, false));
                }
            }
        }
        rows
    }

    /// `{"provenance": {...}, "rows": [...]}`, pretty-printed.
    pub fn json_string(&self) -> String {
        let report = Report { provenance: self.provenance.clone(), rows: self.rows() };
        serde_json::to_string_pretty(&report).unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()))
    }

    /// Whether every config has no unsafe acceptance and no wrong-value action on decisive
    /// cases at its threshold.
    pub fn safe(&self) -> bool {
        self.results.iter().all(|r| {
            r.at_default
                .iter()
                .filter(|s| s.split == Split::Decisive)
                .all(|s| s.unsafe_acceptance.k == 0 && s.wrong_value_action.k == 0)
        })
    }

    /// The human report.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for r in &self.results {
            let decisive = r.outcomes.iter().filter(|o| o.decisive).count();
            let ladders: std::collections::BTreeSet<&str> =
                r.outcomes.iter().filter_map(|o| o.ladder.as_deref()).collect();
            let _ = writeln!(
                out,
                "### Assessor evaluation — config {} (threshold {:.2})\n\n{} decisive cases; {} ladder cases in {} ladder(s)\n",
                r.info.name,
                r.threshold,
                decisive,
                r.outcomes.len() - decisive,
                ladders.len()
            );
            out.push_str("| split | threshold | unsafe-acceptance | over-abstention | wrong-value action |\n|---|---|---|---|---|\n");
            for s in &r.at_default {
                let _ = writeln!(
                    out,
                    "| {} | {:.2} (default) | {} | {} | {} |",
                    s.split.as_str(),
                    s.threshold,
                    s.unsafe_acceptance.cell(),
                    s.over_abstention.cell(),
                    s.wrong_value_action.cell()
                );
            }
            let planned = r.outcomes.iter().filter(|o| o.plan_faithful.is_some()).count();
            let faithful = r.outcomes.iter().filter(|o| o.plan_faithful == Some(true)).count();
            let mut by: Vec<&str> = r.outcomes.iter().filter_map(|o| o.plan_model.as_deref()).collect();
            by.sort_unstable();
            by.dedup();
            let _ = writeln!(
                out,
                "\nPlans on ACT (by {}, checked as the agent checks before acting): {faithful} of {planned} faithful = {}",
                if by.is_empty() { "nobody".to_string() } else { by.join(", ") },
                crate::metrics::Rate::new(faithful, planned, 1.0).cell()
            );
            for o in r.outcomes.iter().filter(|o| o.plan_faithful == Some(false)) {
                let _ = writeln!(out, "- plan refused on {}: {}", o.name, o.plan_refused.join("; "));
            }
            let _ = writeln!(
                out,
                "\nBand where decisive unsafe-acceptance and over-abstention are both at their best: **{}**\n",
                band_text(&r.band)
            );
            for s in &r.at_default {
                for (what, names) in [
                    ("unsafely accepted", &s.unsafe_cases),
                    ("over-abstained", &s.abstained_cases),
                    ("acted on a wrong value", &s.wrong_value_cases),
                ] {
                    if !names.is_empty() {
                        let _ = writeln!(out, "- {} {what}: {}", s.split.as_str(), names.join(", "));
                    }
                }
            }
            out.push_str("\n#### Threshold sweep (decisive cases)\n\n| threshold | unsafe-acceptance | over-abstention | wrong-value action |\n|---|---|---|---|\n");
            for s in &r.sweep {
                let _ = writeln!(
                    out,
                    "| {:.2} | {} | {} | {} |",
                    s.threshold,
                    s.unsafe_acceptance.cell(),
                    s.over_abstention.cell(),
                    s.wrong_value_action.cell()
                );
            }
            out.push('\n');
        }
        let p = &self.provenance;
        let _ = writeln!(out, "- run id: `{}`, started {}", p.run_id, p.started_at);
        let _ = writeln!(out, "- git commit: `{}`", p.git_commit);
        let _ = writeln!(out, "- client: {} (no model call is made by the assessor)", p.client);
        let configs: Vec<String> =
            self.results.iter().map(|r| format!("{} (`{}`)", r.info.name, r.info.hash)).collect();
        let _ = writeln!(out, "- config hash: `{}`; configs: {}", p.config_hash, configs.join(", "));
        let _ = writeln!(out, "- command: `{}`", p.command);
        let _ = writeln!(out, "- definitions: docs/metrics.md; case format: docs/cases.md");
        out
    }
}
