//! Rendering: flat JSON rows `{"provenance": {...}, "rows": [...]}`, a markdown table (rows =
//! system × config), a per-scenario table, and the reasons of every failure.
use std::fmt::Write as _;

use mnemo_report::{Report, RunProvenance};
use serde::Serialize;
use serde_json::{json, Value};

use crate::metrics::{Counts, Rate};
use crate::outcome::{Evidence, ScenarioRun, SystemOutcome, MNEMO};

/// What the codes of a failing cell in the per-scenario table mean.
pub const LEGEND: &str = "Codes of a FAIL cell (counts in that scenario): w = probes answered with a wrong value, \
m = probes missed (expected value not asserted, or `in_pack` content missing), d = probes whose act/escalate \
decision differs from the probe's `decision`, a = probes failing only on `absent` content, fp = forgetting \
precision below 1 (tombstoned memories a `forgotten` matcher explains / all tombstoned), fr = forgetting recall \
below 1 (`forgotten` matchers met / all), k = `kept` matchers met / all. Definitions: docs/metrics.md.";

/// The systems, in report order.
pub const SYSTEMS: [&str; 3] = [MNEMO, "naive_rag", "recent_only"];

/// A config that took part.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ConfigInfo {
    /// Its name in the report.
    pub name: String,
    /// Hash of the resolved config (before any scenario `[settings]`).
    pub hash: String,
    /// The files merged over the default.
    pub files: Vec<String>,
}

/// Everything one `mnemo eval` produced.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EvalOutcome {
    /// Who and what produced it.
    pub provenance: RunProvenance,
    /// The configs, in the order given.
    pub configs: Vec<ConfigInfo>,
    /// Scenario names, in load order.
    pub scenarios: Vec<String>,
    /// One entry per (config, scenario).
    pub runs: Vec<ScenarioRun>,
    /// The result file written by `--publish`, if any.
    pub published: Option<std::path::PathBuf>,
}

const METRICS: [&str; 4] = ["wrong_fact_rate", "miss_rate", "forgetting_precision", "forgetting_recall"];

fn rates(c: &Counts) -> [Rate; 4] {
    [c.wrong_fact_rate(), c.miss_rate(), c.forgetting_precision(), c.forgetting_recall()]
}

impl EvalOutcome {
    /// One system's outcome on one scenario under one config.
    pub fn outcome(&self, system: &str, config: &str, scenario: &str) -> Option<&SystemOutcome> {
        self.runs
            .iter()
            .find(|r| r.config == config && r.scenario == scenario)
            .and_then(|r| r.systems.iter().find(|s| s.system == system))
    }

    /// Counts pooled over every scenario for one system and config.
    pub fn pooled(&self, system: &str, config: &str) -> Counts {
        Counts::pooled(
            self.runs
                .iter()
                .filter(|r| r.config == config)
                .flat_map(|r| r.systems.iter().filter(|s| s.system == system))
                .map(|s| &s.counts),
        )
    }

    /// Whether Mnemo passed every scenario under every config.
    pub fn mnemo_passed_all(&self) -> bool {
        self.runs.iter().all(|r| r.systems.iter().filter(|s| s.system == MNEMO).all(|s| s.pass))
    }

    /// Flat rows: per system, config and scenario (and "all"), one figure each.
    pub fn rows(&self) -> Vec<Value> {
        let mut rows = Vec::new();
        for c in &self.configs {
            for system in self.systems() {
                for scenario in &self.scenarios {
                    let Some(o) = self.outcome(system, &c.name, scenario) else { continue };
                    let base = |metric: &str| json!({"system": system, "config": c.name, "scenario": scenario, "metric": metric});
                    let mut row = base("pass");
                    row["value"] = json!(o.pass);
                    row["n"] = json!(1);
                    rows.push(row);
                    for (metric, r) in METRICS.iter().zip(rates(&o.counts)) {
                        rows.push(rate_row(base(metric), &r));
                    }
                }
                let all = self.pooled(system, &c.name);
                let base =
                    |metric: &str| json!({"system": system, "config": c.name, "scenario": "all", "metric": metric});
                rows.push(rate_row(base("pass"), &all.pass_rate()));
                for (metric, r) in METRICS.iter().zip(rates(&all)) {
                    rows.push(rate_row(base(metric), &r));
                }
            }
        }
        rows
    }

    /// The report object.
    pub fn report(&self) -> Report {
        Report { provenance: self.provenance.clone(), rows: self.rows() }
    }

    /// `{"provenance": {...}, "rows": [...]}`, pretty-printed.
    pub fn json_string(&self) -> String {
        serde_json::to_string_pretty(&self.report()).unwrap_or_else(|e| format!("{{\"error\": {:?}}}", e.to_string()))
    }

    /// The summary table (rows = system × config).
    pub fn table_markdown(&self) -> String {
        let mut out = String::from(
            "| system | config | scenarios passed | wrong-fact rate | miss rate | forgetting precision | forgetting recall |\n|---|---|---|---|---|---|---|\n",
        );
        for c in &self.configs {
            for system in self.systems() {
                let all = self.pooled(system, &c.name);
                let [w, m, p, r] = rates(&all);
                let pass = all.pass_rate();
                let _ = writeln!(
                    out,
                    "| {system} | {} | {}/{} = {} | {} | {} | {} | {} |",
                    c.name,
                    pass.k,
                    pass.n,
                    pass.cell(),
                    w.cell(),
                    m.cell(),
                    p.cell(),
                    r.cell()
                );
            }
        }
        for c in &self.configs {
            let f = self.pooled(MNEMO, &c.name).plan_faithfulness();
            let _ = writeln!(
                out,
                "\nPlans (mnemo, {}): {} of {} ACT probes planned faithfully = {} (the full agent turn plans from the \
                 assessed pack; a plan citing what the pack does not hold, or another value, is refused and escalates)",
                c.name,
                f.k,
                f.n,
                f.cell()
            );
        }
        out
    }

    /// The systems that took part (Mnemo, and the baselines unless they were left out).
    pub fn systems(&self) -> Vec<&'static str> {
        SYSTEMS.into_iter().filter(|s| self.runs.iter().any(|r| r.systems.iter().any(|o| o.system == *s))).collect()
    }

    /// Per scenario: pass, or what failed (codes in [`LEGEND`]).
    pub fn scenario_markdown(&self) -> String {
        let systems = self.systems();
        let cols: Vec<(String, &str)> =
            self.configs.iter().flat_map(|c| systems.iter().map(move |s| (c.name.clone(), *s))).collect();
        let mut out = String::from("| scenario |");
        for (c, s) in &cols {
            let _ = write!(out, " {s} ({c}) |");
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(cols.len()));
        out.push('\n');
        for scenario in &self.scenarios {
            let _ = write!(out, "| {scenario} |");
            for (c, s) in &cols {
                let cell = self.outcome(s, c, scenario).map_or_else(|| "—".to_string(), cell_of);
                let _ = write!(out, " {cell} |");
            }
            out.push('\n');
        }
        out
    }

    /// Why each failing scenario failed: full detail for Mnemo, one line per failing probe or
    /// matcher for the baselines.
    pub fn failures_markdown(&self) -> String {
        let mut out = String::new();
        for run in &self.runs {
            for o in run.systems.iter().filter(|o| !o.pass) {
                let _ = writeln!(out, "\n#### {} — {} ({}) FAILED\n", run.scenario, o.system, run.config);
                explain(&mut out, o, o.system == MNEMO);
            }
        }
        if out.is_empty() {
            "\nEvery system passed every scenario.\n".to_string()
        } else {
            out
        }
    }

    /// The provenance as a markdown list.
    pub fn provenance_markdown(&self) -> String {
        let p = &self.provenance;
        let mut out = String::new();
        let _ = writeln!(out, "- run id: `{}`, started {}", p.run_id, p.started_at);
        let _ = writeln!(out, "- git commit: `{}`", p.git_commit);
        let _ = writeln!(
            out,
            "- client: {} (model `{}`, embedder `{}`, offline: {})",
            p.client, p.model, p.embedder, p.offline
        );
        if let Some(c) = &p.cassette {
            let _ = writeln!(out, "- cassette: `{c}`");
        }
        let _ = writeln!(out, "- config hash: `{}`; configs: {}", p.config_hash, config_list(&self.configs));
        let _ = writeln!(out, "- token counter: {}; cores: {}", p.token_counter, p.cores);
        let _ = writeln!(out, "- command: `{}`", p.command);
        out
    }

    /// Everything: the summary table, provenance, the per-scenario table and the failures.
    pub fn markdown(&self) -> String {
        format!(
            "### Scenario evaluation ({} scenarios)\n\n{}\n{}\n#### Per scenario\n\n{}\n{LEGEND}\n\n#### Failures\n{}",
            self.scenarios.len(),
            self.table_markdown(),
            self.provenance_markdown(),
            self.scenario_markdown(),
            self.failures_markdown()
        )
    }
}

fn config_list(configs: &[ConfigInfo]) -> String {
    configs
        .iter()
        .map(|c| {
            if c.files.is_empty() {
                format!("{} (`{}`)", c.name, c.hash)
            } else {
                format!("{} = {} (`{}`)", c.name, c.files.join(" + "), c.hash)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn rate_row(mut row: Value, r: &Rate) -> Value {
    row["value"] = json!(r.value);
    row["k"] = json!(r.k);
    row["n"] = json!(r.n);
    row["lo"] = json!(r.lo);
    row["hi"] = json!(r.hi);
    row
}

fn cell_of(o: &SystemOutcome) -> String {
    if o.pass {
        return "pass".into();
    }
    let c = &o.counts;
    let mut why = Vec::new();
    if c.wrong > 0 {
        why.push(format!("w{}", c.wrong));
    }
    if c.missed > 0 {
        why.push(format!("m{}", c.missed));
    }
    let decisions = o.probes.iter().filter(|p| p.score.wrong_decision).count();
    if decisions > 0 {
        why.push(format!("d{decisions}"));
    }
    let other = o
        .probes
        .iter()
        .filter(|p| !p.score.correct && !p.score.wrong && !p.score.missed && !p.score.wrong_decision)
        .count();
    if other > 0 {
        why.push(format!("a{other}"));
    }
    if c.tombstoned_matched < c.tombstoned {
        why.push(format!("fp{}/{}", c.tombstoned_matched, c.tombstoned));
    }
    if c.forgotten_met < c.forgotten_matchers {
        why.push(format!("fr{}/{}", c.forgotten_met, c.forgotten_matchers));
    }
    if c.kept_met < c.kept_matchers {
        why.push(format!("k{}/{}", c.kept_met, c.kept_matchers));
    }
    format!("FAIL {}", why.join(" "))
}

fn explain(out: &mut String, o: &SystemOutcome, detailed: bool) {
    for p in o.probes.iter().filter(|p| !p.score.correct) {
        let s = &p.score;
        let head = format!("- {} (line {}, namespace {})", p.probe.label(), p.probe.line, p.probe.namespace);
        match &p.probe.about {
            Some((e, a)) => {
                let expect = p.probe.expect.as_deref().map_or("nothing asserted".to_string(), |e| format!("{e:?}"));
                let answer = s.answer.as_deref().map_or("nothing".to_string(), |a| format!("{a:?}"));
                let stale = if s.stale_answer { " (a known stale value)" } else { "" };
                let _ = writeln!(out, "{head} on {e} | {a}: expected {expect}, answered {answer}{stale}");
            }
            None => {
                let _ = writeln!(out, "{head}: the pack's content is not as expected");
            }
        }
        if !s.missing_in_pack.is_empty() {
            let _ = writeln!(out, "  - in_pack not found in the pack: {:?}", s.missing_in_pack);
        }
        if !s.present_absent.is_empty() {
            let _ = writeln!(out, "  - absent but found in the pack: {:?}", s.present_absent);
        }
        if s.wrong_decision {
            let want = if p.probe.decision == Some(true) { "act" } else { "escalate" };
            let _ = writeln!(
                out,
                "  - decision: expected {want}, the agent decided {}",
                s.decision.as_deref().unwrap_or("nothing")
            );
        }
        match &p.evidence {
            Evidence::Memory { id, content, history } => {
                let _ = writeln!(out, "  - from memory {id}: {content:?}");
                for h in history {
                    let _ = writeln!(out, "    - {h}");
                }
            }
            Evidence::Turn { rank, at, text } => {
                let line = asserting_line(text, p.probe.about.as_ref())
                    .unwrap_or_else(|| text.lines().next().unwrap_or("").to_string());
                let _ = writeln!(out, "  - from retrieved turn #{rank} said at {at}: {line:?}");
            }
            Evidence::None => {}
        }
        if detailed && !p.pack.is_empty() {
            let _ = writeln!(out, "  - final pack: {}", p.pack.join("; "));
        } else if detailed {
            let _ = writeln!(out, "  - final pack: empty");
        }
    }
    let unmet: Vec<_> = o.matchers.iter().filter(|m| !m.met).collect();
    if !detailed && unmet.iter().any(|m| m.list == "forgotten") {
        let n = unmet.iter().filter(|m| m.list == "forgotten").count();
        let _ = writeln!(out, "- {n} `forgotten` matcher(s) unmet: this system tombstones nothing");
    }
    for m in unmet.iter().filter(|m| detailed || m.list == "kept") {
        let _ = writeln!(out, "- {} matcher unmet: {}", m.list, m.matcher);
        if m.matched.is_empty() {
            let _ = writeln!(out, "  - matched no memory");
        }
        for x in &m.matched {
            let _ = writeln!(out, "  - matched {x}");
        }
    }
    for c in &o.collateral {
        let _ = writeln!(out, "- collateral forget (no `forgotten` matcher matches it): {c}");
    }
}

/// The last line of a turn that asserts a claim on `about` (what the baseline answered from).
fn asserting_line(text: &str, about: Option<&(String, String)>) -> Option<String> {
    let (e, a) = about?;
    text.lines().rfind(|l| crate::answer::turn_claim(l, e, a).is_some()).map(|l| l.trim().to_string())
}
