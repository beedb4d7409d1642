//! Metric arithmetic, exactly as docs/metrics.md defines it: probe correctness, wrong-fact and miss
//! rates over probes, forgetting precision over tombstoned memories and recall over
//! `forgotten` matchers, each with its n and a 95% Wilson interval. Pooling adds the counts
//! (it never averages rates).
use mnemo_contract::text::norm_value;
use mnemo_report::wilson95;
use serde::Serialize;

use crate::scenario::Probe;

/// A rate k/n with its Wilson 95% interval.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rate {
    /// Numerator.
    pub k: usize,
    /// Denominator.
    pub n: usize,
    /// k/n, or the defined value when n = 0.
    pub value: f64,
    /// Wilson lower bound ((0, 1) when n = 0).
    pub lo: f64,
    /// Wilson upper bound.
    pub hi: f64,
}

impl Rate {
    /// k/n; `if_empty` is the value docs/metrics.md defines for n = 0.
    pub fn new(k: usize, n: usize, if_empty: f64) -> Rate {
        let value = if n == 0 { if_empty } else { k as f64 / n as f64 };
        let (lo, hi) = wilson95(k, n);
        Rate { k, n, value, lo, hi }
    }
    /// `0.250 [0.089, 0.532] n=12`.
    pub fn cell(&self) -> String {
        format!("{:.3} [{:.3}, {:.3}] n={}", self.value, self.lo, self.hi, self.n)
    }
}

/// Values compare after trimming and folding white space, case-sensitively.
pub fn same_value(a: &str, b: &str) -> bool {
    norm_value(a) == norm_value(b)
}

/// How one probe scored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProbeScore {
    /// The answer given (None: nothing asserted on the probed claim).
    pub answer: Option<String>,
    /// Correct per docs/metrics.md (plus the `absent` extension).
    pub correct: bool,
    /// Counted in the wrong-fact rate: an answer that is not `expect`.
    pub wrong: bool,
    /// Counted in the miss rate: `expect` set and no answer, or `in_pack` unmet.
    pub missed: bool,
    /// `in_pack` substrings found in no memory of the pack.
    pub missing_in_pack: Vec<String>,
    /// `absent` substrings found in some memory of the pack.
    pub present_absent: Vec<String>,
    /// The answer is one of the probe's known `stale` values.
    pub stale_answer: bool,
    /// The agent's decision ("act" | "escalate"), when one was made (Mnemo only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// The probe asserts a decision and the agent decided otherwise.
    pub wrong_decision: bool,
    /// On ACT, the full agent turn's plan passed the faithfulness check (None: not planned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan_faithful: Option<bool>,
}

/// Score a probe from its answer and the texts of the pack's memories (or turns).
pub fn score_probe(probe: &Probe, answer: Option<&str>, pack_texts: &[&str]) -> ProbeScore {
    let in_some = |s: &String| pack_texts.iter().any(|t| t.contains(s.as_str()));
    let missing_in_pack: Vec<String> = probe.in_pack.iter().filter(|s| !in_some(s)).cloned().collect();
    let present_absent: Vec<String> = probe.absent.iter().filter(|s| in_some(s)).cloned().collect();
    let answer_ok = match (answer, &probe.expect) {
        (None, None) => true,
        (Some(a), Some(e)) => same_value(a, e),
        _ => false,
    };
    let wrong = answer.is_some_and(|a| !probe.expect.as_ref().is_some_and(|e| same_value(a, e)));
    let missed = (probe.expect.is_some() && answer.is_none()) || !missing_in_pack.is_empty();
    ProbeScore {
        answer: answer.map(str::to_string),
        correct: answer_ok && missing_in_pack.is_empty() && present_absent.is_empty(),
        wrong,
        missed,
        stale_answer: answer.is_some_and(|a| probe.stale.iter().any(|s| same_value(a, s))),
        missing_in_pack,
        present_absent,
        decision: None,
        wrong_decision: false,
        plan_faithful: None,
    }
}

/// Score the agent's decision (`acted`) against the probe's `decision`, if it asserts one: a
/// probe with `decision` is correct only if the decision matches too.
pub fn score_decision(probe: &Probe, score: &mut ProbeScore, acted: bool) {
    score.decision = Some(if acted { "act" } else { "escalate" }.to_string());
    if probe.decision.is_some_and(|want| want != acted) {
        score.wrong_decision = true;
        score.correct = false;
    }
}

/// Counts from which every reported rate is computed; pooled by adding.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Counts {
    /// Scenarios counted.
    pub scenarios: usize,
    /// Scenarios passed.
    pub passed: usize,
    /// Probes.
    pub probes: usize,
    /// Probes with a wrong answer.
    pub wrong: usize,
    /// Probes missed.
    pub missed: usize,
    /// Memories tombstoned during the scenario.
    pub tombstoned: usize,
    /// Of those, matched by some `forgotten` matcher.
    pub tombstoned_matched: usize,
    /// `forgotten` matchers.
    pub forgotten_matchers: usize,
    /// `forgotten` matchers met.
    pub forgotten_met: usize,
    /// `kept` matchers.
    pub kept_matchers: usize,
    /// `kept` matchers met.
    pub kept_met: usize,
    /// Probes the agent acted on, and so planned (Mnemo only).
    pub planned: usize,
    /// Of those, plans that passed the faithfulness check.
    pub faithful: usize,
}

impl Counts {
    /// Add another scenario's (or pool's) counts.
    pub fn add(&mut self, o: &Counts) {
        self.scenarios += o.scenarios;
        self.passed += o.passed;
        self.probes += o.probes;
        self.wrong += o.wrong;
        self.missed += o.missed;
        self.tombstoned += o.tombstoned;
        self.tombstoned_matched += o.tombstoned_matched;
        self.forgotten_matchers += o.forgotten_matchers;
        self.forgotten_met += o.forgotten_met;
        self.kept_matchers += o.kept_matchers;
        self.kept_met += o.kept_met;
        self.planned += o.planned;
        self.faithful += o.faithful;
    }
    /// Pool many.
    pub fn pooled<'a>(all: impl IntoIterator<Item = &'a Counts>) -> Counts {
        let mut c = Counts::default();
        for x in all {
            c.add(x);
        }
        c
    }
    /// Scenarios passed ÷ scenarios.
    pub fn pass_rate(&self) -> Rate {
        Rate::new(self.passed, self.scenarios, 0.0)
    }
    /// Wrong answers ÷ probes (0 when there are no probes).
    pub fn wrong_fact_rate(&self) -> Rate {
        Rate::new(self.wrong, self.probes, 0.0)
    }
    /// Missed ÷ probes (0 when there are no probes).
    pub fn miss_rate(&self) -> Rate {
        Rate::new(self.missed, self.probes, 0.0)
    }
    /// Faithful plans ÷ plans (1.0 when nothing was planned).
    pub fn plan_faithfulness(&self) -> Rate {
        Rate::new(self.faithful, self.planned, 1.0)
    }
    /// Tombstoned and matched ÷ tombstoned (1.0 when nothing was tombstoned).
    pub fn forgetting_precision(&self) -> Rate {
        Rate::new(self.tombstoned_matched, self.tombstoned, 1.0)
    }
    /// Matchers met ÷ `forgotten` matchers (1.0 when there are none).
    pub fn forgetting_recall(&self) -> Rate {
        Rate::new(self.forgotten_met, self.forgotten_matchers, 1.0)
    }
    /// Whether one scenario's counts pass: every probe correct (`correct_probes` of them),
    /// precision and recall 1.0, every `kept` matcher met.
    pub fn passes(&self, correct_probes: usize) -> bool {
        correct_probes == self.probes
            && self.tombstoned_matched == self.tombstoned
            && self.forgotten_met == self.forgotten_matchers
            && self.kept_met == self.kept_matchers
    }
}
