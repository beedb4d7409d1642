//! The recall planner: pack the best candidates under a hard token budget with per-kind
//! quotas, pinned first, and a trace entry for every candidate.
//!
//! Algorithm:
//! 1. Candidates that are tombstoned, or of a decaying kind with salience below the decay
//!    threshold (faded, not yet swept), are excluded.
//! 2. Rank: pinned first, then score = relevance × salience (descending), ties to the newest
//!    `last_confirmed_at`, then the higher id.
//! 3. Pinned memories are packed first, counted against the global budget.
//! 4. The rest of the budget R is split into quotas `floor(R × share)` per kind; in rank order,
//!    a candidate is packed when it fits its kind's remaining quota (pass 1).
//! 5. Unused quota flows: in rank order, deferred candidates are packed while they fit what is
//!    left of the global budget (pass 2).
//!
//! So no kind is starved by another below `quota − (its largest candidate)`, and the pack
//! never exceeds the budget.
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

use crate::model::{Memory, MemoryKind};

/// A candidate for the pack, already scored.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanCandidate {
    /// The memory.
    pub memory: Memory,
    /// Relevance to the query, 0..=1.
    pub relevance: f64,
    /// Salience at recall time.
    pub salience: f64,
    /// Its token cost.
    pub tokens: usize,
    /// Whether its kind decays (only decaying kinds are cut below the salience threshold).
    pub decays: bool,
}

impl PlanCandidate {
    /// relevance × salience.
    pub fn score(&self) -> f64 {
        self.relevance * self.salience
    }
}

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
    /// Relevance.
    pub relevance: f64,
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
    /// The memory.
    pub memory: Memory,
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
}

impl Pack {
    /// The packed memories.
    pub fn memories(&self) -> impl Iterator<Item = &Memory> {
        self.items.iter().map(|i| &i.memory)
    }
}

/// Quota shares per kind (semantic, procedural, episodic).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quotas {
    /// Shares in `MemoryKind::ALL` order.
    pub shares: [f64; 3],
}

fn kind_index(k: MemoryKind) -> usize {
    match k {
        MemoryKind::Semantic => 0,
        MemoryKind::Procedural => 1,
        MemoryKind::Episodic => 2,
    }
}

/// Rank order: pinned first, score descending, newest confirmation, higher id.
pub fn rank_cmp(a: &PlanCandidate, b: &PlanCandidate) -> Ordering {
    b.memory
        .pinned
        .cmp(&a.memory.pinned)
        .then_with(|| b.score().partial_cmp(&a.score()).unwrap_or(Ordering::Equal))
        .then_with(|| b.memory.last_confirmed_at.cmp(&a.memory.last_confirmed_at))
        .then_with(|| b.memory.id.cmp(&a.memory.id))
}

/// Pack `candidates` under `budget` tokens.
pub fn plan(mut candidates: Vec<PlanCandidate>, budget: usize, quotas: Quotas, salience_threshold: f64) -> Pack {
    candidates.sort_by(rank_cmp);
    let n = candidates.len();
    let mut reasons: Vec<Option<(TraceReason, String)>> = vec![None; n];
    let mut used = 0usize;

    // 1. hard exclusions
    for (i, c) in candidates.iter().enumerate() {
        if !c.memory.status.is_active() {
            reasons[i] = Some((TraceReason::Tombstoned, "tombstoned before recall".into()));
        } else if c.decays && !c.memory.pinned && c.salience < salience_threshold {
            reasons[i] = Some((
                TraceReason::BelowThreshold,
                format!("salience {:.3} < threshold {:.3}", c.salience, salience_threshold),
            ));
        }
    }
    // 2. pinned first, against the global budget
    for (i, c) in candidates.iter().enumerate() {
        if reasons[i].is_some() || !c.memory.pinned {
            continue;
        }
        if used + c.tokens <= budget {
            used += c.tokens;
            reasons[i] = Some((TraceReason::Pinned, format!("pinned; {used}/{budget} tokens")));
        } else {
            reasons[i] =
                Some((TraceReason::Budget, format!("pinned but {} tokens do not fit: {used}/{budget} used", c.tokens)));
        }
    }
    // 3. pass 1: per-kind quotas of what is left
    let rest = budget - used;
    let quota: Vec<usize> =
        quotas.shares.iter().map(|s| ((rest as f64) * s.clamp(0.0, 1.0)).floor() as usize).collect();
    let mut kind_used = [0usize; 3];
    let mut deferred = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        if reasons[i].is_some() {
            continue;
        }
        let k = kind_index(c.memory.kind);
        if kind_used[k] + c.tokens <= quota[k] && used + c.tokens <= budget {
            kind_used[k] += c.tokens;
            used += c.tokens;
            reasons[i] = Some((
                TraceReason::WithinQuota,
                format!("{} quota {}/{} tokens", c.memory.kind, kind_used[k], quota[k]),
            ));
        } else {
            deferred.push(i);
        }
    }
    // 4. pass 2: unused quota flows to whoever still has candidates
    for i in deferred {
        let c = &candidates[i];
        let k = kind_index(c.memory.kind);
        if used + c.tokens <= budget {
            used += c.tokens;
            kind_used[k] += c.tokens;
            reasons[i] = Some((
                TraceReason::QuotaFlow,
                format!(
                    "over {} quota ({} tokens), packed from unused quota; {used}/{budget}",
                    c.memory.kind, quota[k]
                ),
            ));
        } else {
            // Bigger than the whole budget, or its kind had room: the budget is what binds.
            // Otherwise its kind's quota was full and no unused budget was left to flow to it.
            let reason = if c.tokens > budget || kind_used[k] + c.tokens <= quota[k] {
                TraceReason::Budget
            } else {
                TraceReason::Quota
            };
            reasons[i] = Some((
                reason,
                format!(
                    "{} tokens; {} quota {}/{} used; budget {used}/{budget} used",
                    c.tokens, c.memory.kind, kind_used[k], quota[k]
                ),
            ));
        }
    }

    let mut pack = Pack { budget, used, ..Pack::default() };
    for (c, r) in candidates.into_iter().zip(reasons) {
        let (reason, detail) = r.unwrap_or((TraceReason::Budget, "not reached".into()));
        pack.trace.push(TraceEntry {
            id: c.memory.id,
            kind: c.memory.kind,
            pinned: c.memory.pinned,
            relevance: c.relevance,
            salience: c.salience,
            score: c.score(),
            tokens: c.tokens,
            included: reason.included(),
            reason,
            detail,
        });
        if reason.included() {
            let score = c.score();
            pack.items.push(PackItem { memory: c.memory, score, tokens: c.tokens });
        }
    }
    pack
}
