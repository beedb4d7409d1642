//! What recall returns: the pack of memories under the budget and the trace of every
//! candidate, included or excluded (the engine's planner builds it; an assessor reads it).
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::model::{Memory, MemoryKind};
use crate::time::Timestamp;

/// Why a candidate was or was not packed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceReason {
    /// Pinned, packed first.
    Pinned,
    /// Packed within its kind's quota.
    WithinQuota,
    /// Packed from quota other kinds left unused.
    QuotaFlow,
    /// Excluded: it did not fit the global budget.
    Budget,
    /// Excluded: its kind's quota was used and no unused budget was left to flow to it.
    Quota,
    /// Excluded: tombstoned.
    Tombstoned,
    /// Excluded: salience below the decay threshold.
    BelowThreshold,
}

impl TraceReason {
    /// Whether this reason means "included".
    pub fn included(self) -> bool {
        matches!(self, TraceReason::Pinned | TraceReason::WithinQuota | TraceReason::QuotaFlow)
    }
}

/// One line of the trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceEntry {
    /// The memory.
    pub id: crate::model::MemoryId,
    /// Its kind.
    pub kind: MemoryKind,
    /// Pinned.
    pub pinned: bool,
    /// The fused rank score, 0..=1: relative to the other candidates (the best hit scores ≈ 1
    /// however poor a match it is), so it ranks but does not say whether anything matches.
    pub relevance: f64,
    /// Absolute relevance evidence (see [`crate::relevance`]): what the assessor reads.
    /// None where recall did not hold the memory's row (a candidate neither packed nor cached).
    #[serde(default)]
    pub evidence: Option<crate::relevance::RelevanceEvidence>,
    /// Salience.
    pub salience: f64,
    /// relevance × salience.
    pub score: f64,
    /// Token cost.
    pub tokens: usize,
    /// Included?
    pub included: bool,
    /// Why.
    pub reason: TraceReason,
    /// Human-readable detail.
    pub detail: String,
}

/// One packed memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PackItem {
    /// The memory, shared with the engine's recall cache (a pack costs no copy of what it
    /// packs; `Arc::make_mut` gives a copy of one's own to change). Serialised as the memory.
    pub memory: Arc<Memory>,
    /// Its score.
    pub score: f64,
    /// Its token cost.
    pub tokens: usize,
}

/// The result of recall.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Pack {
    /// Packed memories in final rank order (pinned first).
    pub items: Vec<PackItem>,
    /// Every candidate, included or excluded, in rank order.
    pub trace: Vec<TraceEntry>,
    /// The budget used for packing (after any clamp).
    pub budget: usize,
    /// Tokens used.
    pub used: usize,
    /// Notes (e.g. a clamped budget).
    pub notes: Vec<String>,
    /// The system time the pack is of, when it is not now: an as-of recall packs what memory
    /// held then (and the assessor grades it as of then, without re-grounding).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of: Option<Timestamp>,
    /// The world time the pack is of: a valid-at recall packs what was true in the world then,
    /// by the validity intervals memory holds (its `as_of` is then memory's time it is graded at).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_at: Option<Timestamp>,
}

impl Pack {
    /// The packed memories.
    pub fn memories(&self) -> impl Iterator<Item = &Memory> {
        self.items.iter().map(|i| &*i.memory)
    }
}
