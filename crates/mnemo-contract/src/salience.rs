//! Salience: importance × boost × recency, for the decay sweep and recall scoring.
//!
//! salience = importance × (1 + rw·ln(1 + reinforcements) + cw·(sources − 1)) × 0.5^(Δt / half-life)
//! with Δt since `last_confirmed_at`; kinds that do not decay use a recency factor of 1.
use crate::decay_due::DecayInputs;
use crate::model::Memory;
use crate::policy::EnginePolicy;
use crate::time::Timestamp;

/// The boost from reinforcement and corroboration.
pub fn boost(m: &Memory, policy: &EnginePolicy) -> f64 {
    boost_of(&DecayInputs::of(m), policy)
}

/// The recency factor at `now` (1 for kinds that do not decay).
pub fn recency(m: &Memory, now: Timestamp, policy: &EnginePolicy) -> f64 {
    recency_of(&DecayInputs::of(m), now, policy)
}

/// Salience at `now`.
pub fn salience(m: &Memory, now: Timestamp, policy: &EnginePolicy) -> f64 {
    salience_of(&DecayInputs::of(m), now, policy)
}

/// `boost` from a memory's salience inputs alone (recall keeps them for memories whose full
/// rows it does not read: see the engine's recall cache).
pub fn boost_of(i: &DecayInputs, policy: &EnginePolicy) -> f64 {
    let sources = i.sources.max(1) as f64;
    1.0 + policy.decay.reinforcement_weight * (1.0 + f64::from(i.reinforcements)).ln()
        + policy.decay.corroboration_weight * (sources - 1.0)
}

/// `recency` from a memory's salience inputs alone.
pub fn recency_of(i: &DecayInputs, now: Timestamp, policy: &EnginePolicy) -> f64 {
    if !policy.kinds.of(i.kind).decays {
        return 1.0;
    }
    let dt = now.days_since(i.last_confirmed_at).max(0.0);
    0.5f64.powf(dt / policy.decay.half_life_days)
}

/// `salience` from a memory's salience inputs alone.
pub fn salience_of(i: &DecayInputs, now: Timestamp, policy: &EnginePolicy) -> f64 {
    f64::from(i.importance) * boost_of(i, policy) * recency_of(i, now, policy)
}

/// Whether a decaying memory has faded below the threshold at `now`.
pub fn has_decayed(m: &Memory, now: Timestamp, policy: &EnginePolicy) -> bool {
    policy.kinds.of(m.kind).decays && salience(m, now, policy) < policy.decay.threshold
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::*;
    use crate::time::DAY_MS;

    fn episode(importance: f32) -> Memory {
        Memory {
            validity: Default::default(),
            id: MemoryId(1),
            namespace: Namespace::default(),
            kind: MemoryKind::Episodic,
            content: "e".into(),
            claim: None,
            entities: vec![],
            importance,
            reinforcements: 0,
            sources: vec!["user".into()],
            provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "f".into() },
            created_at: Timestamp(0),
            last_confirmed_at: Timestamp(0),
            last_accessed_at: None,
            pinned: false,
            embedding: None,
            status: Status::Active,
            rev: 1,
        }
    }

    /// docs/metrics.md: an untouched episode of importance 0.5 fades after about 37 days, one of
    /// importance 0.1 after about 5; facts and procedures do not decay by default.
    #[test]
    fn metrics_md_anchor_points() {
        let p = EnginePolicy::default();
        let day = |d: f64| Timestamp((d * DAY_MS as f64) as i64);
        let half = episode(0.5);
        assert!(!has_decayed(&half, day(36.0), &p));
        assert!(has_decayed(&half, day(38.0), &p));
        let low = episode(0.1);
        assert!(!has_decayed(&low, day(4.0), &p));
        assert!(has_decayed(&low, day(6.0), &p));
        let mut fact = episode(0.1);
        fact.kind = MemoryKind::Semantic;
        assert!(!has_decayed(&fact, day(10_000.0), &p));
        // reinforcement and corroboration slow the fade
        let mut held = episode(0.5);
        held.reinforcements = 3;
        held.sources.push("erp".into());
        assert!(!has_decayed(&held, day(40.0), &p));
    }
}
