//! Assessors: grade a recall pack and gate the agent.
//!
//! - `provenance`: every memory is scored from its provenance (see [`provenance_trust`]).
//! - `grounding`: verifiable claims (those a configured grounder holds) are re-checked against
//!   the system of record first: a confirmed value gets trust 1.0 (and a confirmation is asked
//!   for); a stale value is caught and a supersede with the fresh value asked for; the rest are
//!   scored from provenance.
//!
//! An assessor never writes: it returns the corrections it wants (`Assessment::corrections`),
//! and [`settle`] applies them through the engine (one batch, under the namespace's write lock)
//! and puts the corrected memories in the pack. An assessor from a plugin library corrects the
//! same way.
//!
//! Lookups run concurrently, each under its grounder's timeout (default
//! `grounder_timeout_ms`), and each is traced (`Assessment::lookups`: source, time taken,
//! outcome). A source that is down, slow or answers garbage leaves the claim **unverified for
//! this recall**: it is scored from provenance like any unverifiable claim, never counted as a
//! confirmation, never written to memory, and the recall goes on.
//!
//! Relevance is **absolute**: the recall trace's `evidence.absolute` for each memory (query-term
//! coverage, dense similarity calibrated per embedder, a named entity: `mnemo_contract::relevance`),
//! never the fused rank score, which is relative to the other candidates (the best of nothing
//! scores ≈ 1). A memory is *relevant* when it is at or above `relevance_floor` (0.5).
//!
//! The task's claim is `Task::about`, or, when the task names none, the claim the query names
//! (a packed claim whose entity and attribute the query holds; `Assessment::inferred_about`).
//!
//! Pack trust = min over **load-bearing** memories:
//! - the claim the task is about;
//! - every relevant verifiable claim (a grounder holds it);
//! - every relevant memory of importance ≥ `load_bearing_importance` (0.5).
//!
//! A task naming no claim, on which nothing recalled is relevant, escalates with "memory holds
//! nothing on this task".
//!
//! A claim whose sources include a human (`human:*`, an answer to an escalation) and that no
//! grounder holds counts as verified while fresh: trust = freshness of its last confirmation
//! ([`human_trust`]); a grounder holding the claim still decides it first.
//!
//! Everything else is *colour*: graded and shown, but it never drags pack trust down and never
//! forces escalation. Trust comes only from grounding and provenance (sources, restatements,
//! age): a memory's content is never read, so instructions written inside it cannot raise it.
//! Below the threshold, or when nothing recalled asserts the task's claim, the agent escalates.
//!
//! Against poisoning through the write path ([`poison`]): an instruction-shaped memory is
//! quarantined (trust 0, never acted on), and the runtime holds as unconfirmed a value one
//! principal replaced `supersession_limit` times in a row (off by default).
mod grade;
mod lookup;
pub mod poison;
mod provenance;
mod settle;

pub use grade::{AssessorSettings, GroundingAssessor};
pub use lookup::{garbage, ground_all, ClaimGrounding, MAX_VALUE_CHARS};
pub use provenance::{freshness, human_source, human_trust, provenance_trust, HUMAN_PRINCIPAL_PREFIX};
pub use settle::settle;
