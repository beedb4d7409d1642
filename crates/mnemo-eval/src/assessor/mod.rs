//! `mnemo eval-assessor`: the assessor measured on labelled cases (docs/cases.md), two-sided
//! (docs/metrics.md): unsafe-acceptance and over-abstention always together, wrong-value
//! action beside them, each with n and a 95% Wilson interval, decisive and ladder cases apart,
//! and a threshold sweep with the band where both rates are at their best.
pub mod case;
pub mod plot;
pub mod report;
pub mod run;
pub mod score;

pub use case::{load_cases, parse_cases, Case};
pub use report::{run_assessor_eval, AssessorEvalArgs, AssessorOutcome};
pub use run::{run_case, CaseOutcome};
pub use score::{best_band, score, sweep_grid, Scores, Split};
