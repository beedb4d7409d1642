//! Salience: importance × boost × recency, for the decay sweep and recall scoring.
//!
//! salience = importance × (1 + rw·ln(1 + reinforcements) + cw·(sources − 1)) × 0.5^(Δt / half-life)
//! with Δt since `last_confirmed_at`; kinds that do not decay use a recency factor of 1.
use crate::model::Memory;
use crate::policy::EnginePolicy;
use crate::time::Timestamp;

/// The boost from reinforcement and corroboration.
pub fn boost(m: &Memory, policy: &EnginePolicy) -> f64 {
    let sources = m.sources.len().max(1) as f64;
    1.0 + policy.decay.reinforcement_weight * (1.0 + f64::from(m.reinforcements)).ln()
        + policy.decay.corroboration_weight * (sources - 1.0)
}

/// The recency factor at `now` (1 for kinds that do not decay).
pub fn recency(m: &Memory, now: Timestamp, policy: &EnginePolicy) -> f64 {
    if !policy.kinds.of(m.kind).decays {
        return 1.0;
    }
    let dt = now.days_since(m.last_confirmed_at).max(0.0);
    0.5f64.powf(dt / policy.decay.half_life_days)
}

/// Salience at `now`.
pub fn salience(m: &Memory, now: Timestamp, policy: &EnginePolicy) -> f64 {
    f64::from(m.importance) * boost(m, policy) * recency(m, now, policy)
}

/// Whether a decaying memory has faded below the threshold at `now`.
pub fn has_decayed(m: &Memory, now: Timestamp, policy: &EnginePolicy) -> bool {
    policy.kinds.of(m.kind).decays && salience(m, now, policy) < policy.decay.threshold
}
