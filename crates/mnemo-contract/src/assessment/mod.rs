//! What grounding and assessment exchange: a system of record's value and how its lookup ended,
//! the task, the grades and the decision, and (in `correction`) what an assessor asks to have
//! written back.
use serde::{Deserialize, Serialize};

use crate::model::*;
use crate::pack::Pack;
use crate::time::Timestamp;

pub mod correction;

/// A value read from a system of record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroundedValue {
    /// The current value.
    pub value: String,
    /// The source's name (e.g. "erp").
    pub source: String,
    /// When the source says it was last updated, if it says.
    pub as_of: Option<Timestamp>,
}

/// How one system-of-record lookup ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum LookupOutcome {
    /// The source holds this value.
    Held {
        /// The value it holds.
        value: String,
    },
    /// The source does not hold the claim.
    NotHeld,
    /// No answer within the timeout: the claim stays unverified for this recall.
    Timeout,
    /// The source failed (down, unreadable): unverified for this recall.
    Error {
        /// What failed.
        message: String,
    },
    /// The source answered something that cannot be a value (empty, multi-line, too long,
    /// several values): unverified for this recall, and never written to memory.
    Garbage {
        /// What was wrong with it.
        message: String,
    },
}

impl LookupOutcome {
    /// Whether the lookup failed (timeout, error or garbage).
    pub fn is_fault(&self) -> bool {
        matches!(self, LookupOutcome::Timeout | LookupOutcome::Error { .. } | LookupOutcome::Garbage { .. })
    }
}

/// One lookup the assessor made, for the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroundingLookup {
    /// The memory whose claim was looked up.
    pub memory: MemoryId,
    /// The claim's entity.
    pub entity: String,
    /// The claim's attribute.
    pub attribute: String,
    /// The grounder's source name.
    pub source: String,
    /// How long it took, in milliseconds (elapsed time, not simulated time).
    pub took_ms: f64,
    /// How it ended.
    #[serde(flatten)]
    pub outcome: LookupOutcome,
}

/// What the agent should do with a pack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "lowercase")]
pub enum Decision {
    /// Trust is at or above the threshold.
    Act,
    /// Below the threshold: hand to a human, with reasons.
    Escalate {
        /// Why.
        reasons: Vec<String>,
    },
}

/// The grade of one memory in a pack.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryGrade {
    /// The memory.
    pub id: MemoryId,
    /// Trust in 0..=1.
    pub trust: f64,
    /// Whether it bears on the decision (counted in the pack's min).
    pub load_bearing: bool,
    /// How the trust was reached.
    pub basis: String,
}

/// A grounding substitution: a stale value caught and replaced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Substitution {
    /// The stale memory (now tombstoned).
    pub stale: MemoryId,
    /// The corrected memory.
    pub fresh: MemoryId,
    /// The source that corrected it.
    pub source: String,
    /// Old value.
    pub old_value: String,
    /// New value.
    pub new_value: String,
}

/// What the agent's turn is about, for the assessor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// The query / instruction.
    pub query: String,
    /// The claim the task is about, if known: `(entity, attribute)`.
    pub about: Option<(String, String)>,
}

/// The assessor's verdict on a pack, with the corrections it asks for. As the assessor returns
/// it, `pack` is the pack it was given; once the corrections are applied
/// ([`Assessment::settle`]), `pack` is the final pack (corrected memories in place).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Assessment {
    /// The pack: as assessed, then (settled) as corrected.
    pub pack: Pack,
    /// Pack trust = min over load-bearing memories.
    pub trust: f64,
    /// The threshold used.
    pub threshold: f64,
    /// Act or escalate.
    pub decision: Decision,
    /// Per-memory grades.
    pub grades: Vec<MemoryGrade>,
    /// Grounding substitutions made (filled when the corrections are applied).
    pub substitutions: Vec<Substitution>,
    /// Every system-of-record lookup made (source, time taken, outcome).
    #[serde(default)]
    pub lookups: Vec<GroundingLookup>,
    /// The write-backs the assessor asks for, in pack order (applied after assessment).
    #[serde(default)]
    pub corrections: Vec<crate::correction::Correction>,
    /// The claim `(entity, attribute)` the assessor took the task to be about when the task
    /// named none (`Task::about` empty): the query names a recalled claim's entity and
    /// attribute. None when the task named its claim, or the query names none.
    #[serde(default)]
    pub inferred_about: Option<(String, String)>,
}
