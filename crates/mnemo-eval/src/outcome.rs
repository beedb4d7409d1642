//! What one run of one scenario produced, per system: counts for the metrics, and the evidence
//! a failure report needs (the answer, where it came from, its history; matcher details).
use serde::Serialize;

use crate::metrics::{Counts, ProbeScore};
use crate::scenario::Probe;

/// Mnemo, or a baseline.
pub const MNEMO: &str = "mnemo";

/// Where a probe's answer came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Evidence {
    /// Nothing asserted.
    None,
    /// A Mnemo memory, with its `why` history (one line per event, with reasons).
    Memory {
        /// Memory id.
        id: i64,
        /// Its content.
        content: String,
        /// Its history, oldest first.
        history: Vec<String>,
    },
    /// A baseline's retrieved turn.
    Turn {
        /// Its rank among the retrieved turns (0 = best).
        rank: usize,
        /// When it was said.
        at: String,
        /// Its text.
        text: String,
    },
}

/// One probe's result for one system.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProbeOutcome {
    /// The probe.
    #[serde(skip)]
    pub probe: Probe,
    /// How it scored.
    pub score: ProbeScore,
    /// Where the answer came from (filled for failing probes).
    pub evidence: Evidence,
    /// What the pack held (memory ids or turn ranks), for failing probes.
    pub pack: Vec<String>,
}

/// One `forgotten` / `kept` matcher's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MatcherOutcome {
    /// "forgotten" or "kept".
    pub list: &'static str,
    /// The matcher, described.
    pub matcher: String,
    /// Met?
    pub met: bool,
    /// What it matched: `memory 12 "…" (active | tombstoned: reason)`.
    pub matched: Vec<String>,
}

/// One system's result on one scenario.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SystemOutcome {
    /// mnemo | naive_rag | recent_only.
    pub system: String,
    /// Passed?
    pub pass: bool,
    /// Counts (scenarios = 1).
    pub counts: Counts,
    /// Every probe.
    pub probes: Vec<ProbeOutcome>,
    /// Every matcher.
    pub matchers: Vec<MatcherOutcome>,
    /// Tombstoned memories no `forgotten` matcher matches (collateral forgets).
    pub collateral: Vec<String>,
}

impl SystemOutcome {
    /// Assemble from probe and matcher results; computes pass and counts.
    pub fn new(
        system: &str,
        probes: Vec<ProbeOutcome>,
        matchers: Vec<MatcherOutcome>,
        tombstoned: usize,
        collateral: Vec<String>,
    ) -> Self {
        let count = |l: &str, met_only: bool| matchers.iter().filter(|m| m.list == l && (m.met || !met_only)).count();
        let counts = Counts {
            scenarios: 1,
            passed: 0,
            probes: probes.len(),
            wrong: probes.iter().filter(|p| p.score.wrong).count(),
            missed: probes.iter().filter(|p| p.score.missed).count(),
            tombstoned,
            tombstoned_matched: tombstoned.saturating_sub(collateral.len()),
            forgotten_matchers: count("forgotten", false),
            forgotten_met: count("forgotten", true),
            kept_matchers: count("kept", false),
            kept_met: count("kept", true),
            planned: probes.iter().filter(|p| p.score.plan_faithful.is_some()).count(),
            faithful: probes.iter().filter(|p| p.score.plan_faithful == Some(true)).count(),
        };
        let pass = counts.passes(probes.iter().filter(|p| p.score.correct).count());
        let counts = Counts { passed: usize::from(pass), ..counts };
        SystemOutcome { system: system.to_string(), pass, counts, probes, matchers, collateral }
    }
}

/// One scenario under one config: Mnemo and both baselines.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScenarioRun {
    /// Scenario name.
    pub scenario: String,
    /// Its file.
    pub file: String,
    /// Config name.
    pub config: String,
    /// Resolved config hash (after the scenario's `[settings]`).
    pub config_hash: String,
    /// Mnemo first, then naive_rag, recent_only.
    pub systems: Vec<SystemOutcome>,
    /// Who answered the extraction calls, as each answer said (`client:model`), sorted, once
    /// each: the run's provenance is taken from these, never from config.
    pub echoed_models: Vec<String>,
}
