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
//!
//! [`decide`] makes these decisions for any [`Plannable`] candidate; [`plan`] is it over whole
//! memories. Recall plans with the recall cache's compact cards and reads full rows only for
//! what it packs.
use std::cmp::Ordering;
use std::sync::Arc;

use mnemo_contract::model::{Memory, MemoryId, MemoryKind, TurnId};
use mnemo_contract::time::Timestamp;
// The pack types are part of the contract (an assessor reads a pack); the planner builds them.
use mnemo_contract::pack::{Pack, PackItem, TraceEntry, TraceReason};

/// What the planner (and recall's neighbour sharing) reads of a candidate: a whole memory, or
/// the engine's compact card of one, so that recall reads full rows only for what it packs.
pub trait Plannable {
    /// Its id.
    fn id(&self) -> MemoryId;
    /// Its kind.
    fn kind(&self) -> MemoryKind;
    /// Whether it is pinned.
    fn pinned(&self) -> bool;
    /// Whether it is active (not tombstoned).
    fn is_active(&self) -> bool;
    /// When it was last confirmed (the tie-break after the score).
    fn last_confirmed_at(&self) -> Timestamp;
    /// The first turn it was drawn from, if any.
    fn first_turn(&self) -> Option<TurnId>;
}

impl Plannable for Arc<Memory> {
    fn id(&self) -> MemoryId {
        self.id
    }
    fn kind(&self) -> MemoryKind {
        self.kind
    }
    fn pinned(&self) -> bool {
        self.pinned
    }
    fn is_active(&self) -> bool {
        self.status.is_active()
    }
    fn last_confirmed_at(&self) -> Timestamp {
        self.last_confirmed_at
    }
    fn first_turn(&self) -> Option<TurnId> {
        self.provenance.turns.first().copied()
    }
}

/// A candidate for the pack, already scored.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanCandidate<M = Arc<Memory>> {
    /// The memory (or what the planner reads of it), shared with the recall cache (scoring 64
    /// candidates copied each one, its vector included: 0.11–0.16 ms of a 100k recall, now
    /// 0.012–0.016).
    pub memory: M,
    /// Relevance to the query, 0..=1.
    pub relevance: f64,
    /// Salience at recall time.
    pub salience: f64,
    /// Its token cost.
    pub tokens: usize,
    /// Whether its kind decays (only decaying kinds are cut below the salience threshold).
    pub decays: bool,
}

impl<M> PlanCandidate<M> {
    /// relevance × salience.
    pub fn score(&self) -> f64 {
        self.relevance * self.salience
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
pub fn rank_cmp<M: Plannable>(a: &PlanCandidate<M>, b: &PlanCandidate<M>) -> Ordering {
    b.memory
        .pinned()
        .cmp(&a.memory.pinned())
        .then_with(|| b.score().partial_cmp(&a.score()).unwrap_or(Ordering::Equal))
        .then_with(|| b.memory.last_confirmed_at().cmp(&a.memory.last_confirmed_at()))
        .then_with(|| b.memory.id().cmp(&a.memory.id()))
}

/// What the planner decided: the trace of every candidate and the ones packed, in rank order.
#[derive(Clone, Debug, PartialEq)]
pub struct Planned<M> {
    /// The budget used for packing.
    pub budget: usize,
    /// Tokens used.
    pub used: usize,
    /// Every candidate, included or excluded, in rank order.
    pub trace: Vec<TraceEntry>,
    /// The packed candidates with their score and tokens, in rank order (pinned first).
    pub packed: Vec<(M, f64, usize)>,
}

/// Pack `candidates` under `budget` tokens.
pub fn plan(candidates: Vec<PlanCandidate>, budget: usize, quotas: Quotas, salience_threshold: f64) -> Pack {
    let p = decide(candidates, budget, quotas, salience_threshold);
    let items = p.packed.into_iter().map(|(memory, score, tokens)| PackItem { memory, score, tokens }).collect();
    Pack {
        valid_at: Default::default(),
        items,
        trace: p.trace,
        budget: p.budget,
        used: p.used,
        notes: Vec::new(),
        as_of: None,
    }
}

/// What `plan` decides, for candidates of any form (see [`Plannable`]).
pub fn decide<M: Plannable>(
    mut candidates: Vec<PlanCandidate<M>>,
    budget: usize,
    quotas: Quotas,
    salience_threshold: f64,
) -> Planned<M> {
    candidates.sort_by(rank_cmp);
    let n = candidates.len();
    let mut reasons: Vec<Option<(TraceReason, String)>> = vec![None; n];
    let mut used = 0usize;

    // 1. hard exclusions
    for (i, c) in candidates.iter().enumerate() {
        if !c.memory.is_active() {
            reasons[i] = Some((TraceReason::Tombstoned, "tombstoned before recall".into()));
        } else if c.decays && !c.memory.pinned() && c.salience < salience_threshold {
            reasons[i] = Some((
                TraceReason::BelowThreshold,
                format!("salience {:.3} < threshold {:.3}", c.salience, salience_threshold),
            ));
        }
    }
    // 2. pinned first, against the global budget
    for (i, c) in candidates.iter().enumerate() {
        if reasons[i].is_some() || !c.memory.pinned() {
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
        let k = kind_index(c.memory.kind());
        if kind_used[k] + c.tokens <= quota[k] && used + c.tokens <= budget {
            kind_used[k] += c.tokens;
            used += c.tokens;
            reasons[i] = Some((
                TraceReason::WithinQuota,
                format!("{} quota {}/{} tokens", c.memory.kind(), kind_used[k], quota[k]),
            ));
        } else {
            deferred.push(i);
        }
    }
    // 4. pass 2: unused quota flows to whoever still has candidates
    for i in deferred {
        let c = &candidates[i];
        let k = kind_index(c.memory.kind());
        if used + c.tokens <= budget {
            used += c.tokens;
            kind_used[k] += c.tokens;
            reasons[i] = Some((
                TraceReason::QuotaFlow,
                format!(
                    "over {} quota ({} tokens), packed from unused quota; {used}/{budget}",
                    c.memory.kind(),
                    quota[k]
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
                    c.tokens,
                    c.memory.kind(),
                    kind_used[k],
                    quota[k]
                ),
            ));
        }
    }

    let mut planned = Planned { budget, used, trace: Vec::with_capacity(n), packed: Vec::new() };
    for (c, r) in candidates.into_iter().zip(reasons) {
        let (reason, detail) = r.unwrap_or((TraceReason::Budget, "not reached".into()));
        planned.trace.push(TraceEntry {
            id: c.memory.id(),
            kind: c.memory.kind(),
            pinned: c.memory.pinned(),
            relevance: c.relevance,
            evidence: None,
            salience: c.salience,
            score: c.score(),
            tokens: c.tokens,
            included: reason.included(),
            reason,
            detail,
        });
        if reason.included() {
            let score = c.score();
            planned.packed.push((c.memory, score, c.tokens));
        }
    }
    planned
}
