//! The two-sided assessor metrics (docs/metrics.md), at any threshold, per split.
use serde::Serialize;

use super::run::CaseOutcome;
use crate::metrics::{same_value, Rate};

/// Decisive cases, or ladder members.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    /// Independent cases.
    Decisive,
    /// One memory at many confirmation ages: not independent evidence.
    Ladder,
}

impl Split {
    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Decisive => "decisive",
            Split::Ladder => "ladder",
        }
    }
    fn holds(self, o: &CaseOutcome) -> bool {
        o.decisive == (self == Split::Decisive)
    }
}

/// The three rates at one threshold over one split, and the cases behind each numerator.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Scores {
    /// The threshold.
    pub threshold: f64,
    /// The split.
    pub split: Split,
    /// `should_act = false` cases acted on a value no grounder confirmed or corrected ÷
    /// `should_act = false` cases.
    pub unsafe_acceptance: Rate,
    /// `should_act = true` cases escalated ÷ `should_act = true` cases.
    pub over_abstention: Rate,
    /// Cases acted on a value other than the world's current one (where the world has one) ÷
    /// cases acted on.
    pub wrong_value_action: Rate,
    /// Names of unsafely accepted cases.
    pub unsafe_cases: Vec<String>,
    /// Names of over-abstained cases.
    pub abstained_cases: Vec<String>,
    /// Names of cases acted on a wrong value.
    pub wrong_value_cases: Vec<String>,
}

/// Score `outcomes` of `split` at threshold `t`.
pub fn score(outcomes: &[CaseOutcome], split: Split, t: f64) -> Scores {
    let cases: Vec<&CaseOutcome> = outcomes.iter().filter(|o| split.holds(o)).collect();
    let names =
        |f: &dyn Fn(&CaseOutcome) -> bool| cases.iter().filter(|o| f(o)).map(|o| o.name.clone()).collect::<Vec<_>>();
    let unsafe_cases = names(&|o| !o.should_act && o.acts_at(t) && !o.answer_grounded);
    let abstained_cases = names(&|o| o.should_act && !o.acts_at(t));
    let wrong_value_cases = names(&|o| {
        o.acts_at(t)
            && match (&o.world_value, &o.answer) {
                (Some(w), Some(a)) => !same_value(w, a),
                _ => false,
            }
    });
    let refuse = cases.iter().filter(|o| !o.should_act).count();
    let act = cases.len() - refuse;
    let acted = cases.iter().filter(|o| o.acts_at(t)).count();
    Scores {
        threshold: t,
        split,
        unsafe_acceptance: Rate::new(unsafe_cases.len(), refuse, 0.0),
        over_abstention: Rate::new(abstained_cases.len(), act, 0.0),
        wrong_value_action: Rate::new(wrong_value_cases.len(), acted, 0.0),
        unsafe_cases,
        abstained_cases,
        wrong_value_cases,
    }
}

/// The thresholds swept: 0.05, 0.10, …, 0.95 (the default 0.55 among them).
pub fn sweep_grid() -> Vec<f64> {
    (1..=19).map(|i| f64::from(i) * 0.05).map(|t| (t * 100.0).round() / 100.0).collect()
}

/// The band: the thresholds of the grid at which unsafe-acceptance and over-abstention are
/// both at their best (lowest over the grid), as contiguous ranges `[lo, hi]`. Empty when no
/// threshold reaches both bests at once (the rates trade off).
pub fn best_band(sweep: &[Scores]) -> Vec<(f64, f64)> {
    let best_u = sweep.iter().map(|s| s.unsafe_acceptance.value).fold(f64::INFINITY, f64::min);
    let best_o = sweep.iter().map(|s| s.over_abstention.value).fold(f64::INFINITY, f64::min);
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut open: Option<(f64, f64)> = None;
    for s in sweep {
        let best = s.unsafe_acceptance.value <= best_u && s.over_abstention.value <= best_o;
        open = match (open, best) {
            (Some((lo, _)), true) => Some((lo, s.threshold)),
            (None, true) => Some((s.threshold, s.threshold)),
            (Some(r), false) => {
                out.push(r);
                None
            }
            (None, false) => None,
        };
    }
    out.extend(open);
    out
}
