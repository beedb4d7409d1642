//! When a memory's salience crosses the decay threshold, computed once per write instead of
//! once per memory per sweep.
//!
//! salience(t) = I × B × 0.5^(Δt / H) with Δt = t − last_confirmed_at (see `salience`), so
//! for a decaying, unpinned memory with peak I × B ≥ θ the salience is below θ exactly when
//! Δt > H × log2(I × B / θ). Every input (importance, reinforcements, sources, confirmation
//! time, kind, pinned) changes only on a write, so a store keeps this instant beside the
//! memory ("decay due") and a sweep reads only the memories whose instant has passed.
//!
//! The stored instant is [`DUE_MARGIN_MS`] before the computed crossing, so floating-point
//! rounding can only make a memory due early, never late; the sweep re-checks the real
//! salience and tombstones only what is below the threshold now. Guarantee: a sweep at `now`
//! tombstones exactly the memories a full scan at `now` would (never early), so no memory
//! outlives its crossing by more than the time to the next sweep.
use serde::{Deserialize, Serialize};

use crate::model::{Memory, MemoryId, MemoryKind};
use crate::policy::EnginePolicy;
use crate::time::{Timestamp, DAY_MS};

/// How much earlier than the computed crossing a memory is made due (absorbs rounding).
pub const DUE_MARGIN_MS: i64 = 1_000;

/// The part of the policy a decay due time depends on. A store records the rule its due
/// times were computed with; when the engine sweeps with another rule (the config changed),
/// the store recomputes them first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecayRule {
    /// `decay.half_life_days`.
    pub half_life_days: f64,
    /// `decay.threshold`.
    pub threshold: f64,
    /// `decay.reinforcement_weight`.
    pub reinforcement_weight: f64,
    /// `decay.corroboration_weight`.
    pub corroboration_weight: f64,
    /// The kinds whose `decays` is true.
    pub decaying_kinds: Vec<MemoryKind>,
}

impl Default for DecayRule {
    /// The rule of the default policy (what a store uses until an engine sweeps with another).
    fn default() -> Self {
        DecayRule::of(&EnginePolicy::default())
    }
}

/// The inputs of a memory's salience (what a store reads to compute its due time, and what
/// recall scores a memory by without its full row).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DecayInputs {
    /// Its kind.
    pub kind: MemoryKind,
    /// Pinned memories never decay.
    pub pinned: bool,
    /// Importance.
    pub importance: f32,
    /// Reinforcement count.
    pub reinforcements: u32,
    /// Number of distinct sources.
    pub sources: usize,
    /// Last confirmation (recency is measured from it).
    pub last_confirmed_at: Timestamp,
}

impl DecayInputs {
    /// The inputs of a memory.
    pub fn of(m: &Memory) -> Self {
        DecayInputs {
            kind: m.kind,
            pinned: m.pinned,
            importance: m.importance,
            reinforcements: m.reinforcements,
            sources: m.sources.len(),
            last_confirmed_at: m.last_confirmed_at,
        }
    }
}

impl DecayRule {
    /// The rule of a policy.
    pub fn of(policy: &EnginePolicy) -> Self {
        DecayRule {
            half_life_days: policy.decay.half_life_days,
            threshold: policy.decay.threshold,
            reinforcement_weight: policy.decay.reinforcement_weight,
            corroboration_weight: policy.decay.corroboration_weight,
            decaying_kinds: MemoryKind::ALL.into_iter().filter(|k| policy.kinds.of(*k).decays).collect(),
        }
    }

    /// Whether memories of `kind` decay.
    pub fn decays(&self, kind: MemoryKind) -> bool {
        self.decaying_kinds.contains(&kind)
    }

    /// The boost from reinforcement and corroboration (the same arithmetic as `salience::boost`).
    pub fn boost(&self, reinforcements: u32, sources: usize) -> f64 {
        let sources = sources.max(1) as f64;
        1.0 + self.reinforcement_weight * (1.0 + f64::from(reinforcements)).ln()
            + self.corroboration_weight * (sources - 1.0)
    }

    /// The instant from which the memory may be below the threshold: None when it never
    /// decays (pinned, a kind that does not decay, a zero threshold, or a crossing beyond the
    /// representable time); `Timestamp(i64::MIN)` when it is below the threshold already at
    /// its peak. Never later than the true crossing (see the module docs).
    pub fn due(&self, i: &DecayInputs) -> Option<Timestamp> {
        if i.pinned || !self.decays(i.kind) || self.threshold.is_nan() || self.threshold <= 0.0 {
            return None;
        }
        let peak = f64::from(i.importance) * self.boost(i.reinforcements, i.sources);
        if peak.is_nan() || peak < self.threshold {
            return Some(Timestamp(i64::MIN));
        }
        let days = self.half_life_days * (peak / self.threshold).log2();
        let at = i.last_confirmed_at.0 as f64 + days * DAY_MS as f64 - DUE_MARGIN_MS as f64;
        if at.is_nan() || at >= i64::MAX as f64 {
            return None;
        }
        // `as` saturates; `at` is below i64::MAX here.
        Some(Timestamp(at.floor() as i64))
    }

    /// `due` of a memory.
    pub fn due_of(&self, m: &Memory) -> Option<Timestamp> {
        self.due(&DecayInputs::of(m))
    }
}

/// Which page of due memories `Store::due_for_decay` returns: those due at or before `now`,
/// in (due, id) order, after the key `after` (the last of the previous page), at most `limit`.
#[derive(Clone, Debug, PartialEq)]
pub struct DuePage {
    /// The sweep's time.
    pub now: Timestamp,
    /// Only keys above this (due, id); None: from the start.
    pub after: Option<(Timestamp, MemoryId)>,
    /// At most this many.
    pub limit: usize,
}

/// A memory whose decay due time has passed.
#[derive(Clone, Debug, PartialEq)]
pub struct DueMemory {
    /// Its due time under the rule asked for.
    pub due: Timestamp,
    /// The memory.
    pub memory: Memory,
}

/// Answer a `DuePage` from a namespace's active memories by computing every due time (the
/// fallback of `Store::due_for_decay` for a store that does not keep them; cost grows with
/// the namespace).
pub fn due_by_scan(active: Vec<Memory>, rule: &DecayRule, page: &DuePage) -> Vec<DueMemory> {
    let mut due: Vec<DueMemory> = active
        .into_iter()
        .filter(|m| m.status.is_active())
        .filter_map(|m| rule.due_of(&m).map(|due| DueMemory { due, memory: m }))
        .filter(|d| d.due <= page.now && page.after.is_none_or(|a| (d.due, d.memory.id) > a))
        .collect();
    due.sort_by_key(|d| (d.due, d.memory.id));
    due.truncate(page.limit);
    due
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::model::*;
    use crate::salience::{has_decayed, salience};
    use proptest::prelude::*;

    fn memory(kind: MemoryKind, importance: f32, reinforcements: u32, sources: usize, lc: i64, pinned: bool) -> Memory {
        Memory {
            validity: Default::default(),
            id: MemoryId(1),
            namespace: Namespace::default(),
            kind,
            content: "m".into(),
            claim: None,
            entities: vec![],
            importance,
            reinforcements,
            sources: (0..sources).map(|i| format!("s{i}")).collect(),
            provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "f".into() },
            created_at: Timestamp(0),
            last_confirmed_at: Timestamp(lc),
            last_accessed_at: None,
            pinned,
            embedding: None,
            status: Status::Active,
            rev: 1,
        }
    }

    #[test]
    fn pinned_and_lasting_kinds_are_never_due() {
        let rule = DecayRule::default();
        assert_eq!(rule.due_of(&memory(MemoryKind::Episodic, 0.5, 0, 1, 0, true)), None);
        assert_eq!(rule.due_of(&memory(MemoryKind::Semantic, 0.01, 0, 1, 0, false)), None);
        assert!(rule.due_of(&memory(MemoryKind::Episodic, 0.5, 0, 1, 0, false)).is_some());
        let zero = DecayRule { threshold: 0.0, ..DecayRule::default() };
        assert_eq!(zero.due_of(&memory(MemoryKind::Episodic, 0.0, 0, 1, 0, false)), None);
    }

    #[test]
    fn below_the_threshold_at_its_peak_is_due_at_once() {
        let m = memory(MemoryKind::Episodic, 0.01, 0, 1, 5 * DAY_MS, false);
        assert_eq!(DecayRule::default().due_of(&m), Some(Timestamp(i64::MIN)));
    }

    /// docs/metrics.md's anchor: an untouched episode of importance 0.5 fades after ~37 days.
    #[test]
    fn the_anchor_point() {
        let due = DecayRule::default().due_of(&memory(MemoryKind::Episodic, 0.5, 0, 1, 0, false)).unwrap();
        let days = due.0 as f64 / DAY_MS as f64;
        assert!((36.9..37.1).contains(&days), "{days}");
    }

    fn kind() -> impl Strategy<Value = MemoryKind> {
        prop_oneof![Just(MemoryKind::Episodic), Just(MemoryKind::Semantic), Just(MemoryKind::Procedural)]
    }

    proptest! {
        /// Decayed at `now` ⇒ due at or before `now` (never missed by a range sweep), and
        /// decayed a little after the due time (the margin is small).
        #[test]
        fn due_time_brackets_the_crossing(
            kind in kind(),
            importance in 0.0f32..=1.0,
            reinforcements in 0u32..50,
            sources in 1usize..6,
            lc in -1_000_000_000_000i64..3_000_000_000_000,
            offset in -400i64 * DAY_MS..4000 * DAY_MS,
            half_life in 0.01f64..1000.0,
            threshold in 0.0001f64..1.0,
            pinned in proptest::bool::weighted(0.1),
        ) {
            let mut policy = EnginePolicy::default();
            policy.decay.half_life_days = half_life;
            policy.decay.threshold = threshold;
            let rule = DecayRule::of(&policy);
            let m = memory(kind, importance, reinforcements, sources, lc, pinned);
            let now = Timestamp(lc + offset);
            let due = rule.due_of(&m);
            let decayed = !pinned && has_decayed(&m, now, &policy);
            if decayed {
                prop_assert!(due.is_some_and(|d| d <= now), "decayed at {now:?} but due {due:?}");
            }
            if let Some(d) = due.filter(|d| d.0 > i64::MIN) {
                let later = Timestamp(d.0 + 2 * DUE_MARGIN_MS);
                prop_assert!(salience(&m, later, &policy) < threshold, "due {d:?} but not decayed 2 s later");
            }
        }
    }
}
