//! Assessors: grade a recall pack and gate the agent.
//!
//! - `provenance`: every memory is scored from its provenance (see [`provenance_trust`]).
//! - `grounding`: verifiable claims (those a configured grounder holds) are re-checked against
//!   the system of record first: a confirmed value gets trust 1.0 (and the confirmation is
//!   written back); a stale value is caught, the fresh one substituted in the pack and the
//!   correction written back through reconcile; the rest are scored from provenance.
//!
//! Pack trust = min over load-bearing memories: the claim the task is about, every verifiable
//! claim, and every memory of importance ≥ 0.5. Below the threshold the agent escalates.
mod grade;
mod provenance;

pub use grade::{AssessorSettings, GroundingAssessor};
pub use provenance::provenance_trust;
