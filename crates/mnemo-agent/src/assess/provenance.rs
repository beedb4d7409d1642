//! Provenance scoring for claims no grounder can check.
use mnemo_contract::{Memory, Timestamp};

/// The principal prefix of a human's word: an answer to an escalation is recorded from
/// `human:NAME` (see `crate::escalation`).
pub const HUMAN_PRINCIPAL_PREFIX: &str = "human:";

/// The first `human:*` principal among a memory's sources, if any.
pub fn human_source(m: &Memory) -> Option<&str> {
    m.sources.iter().map(String::as_str).find(|s| s.starts_with(HUMAN_PRINCIPAL_PREFIX))
}

/// How fresh a memory's last confirmation is: 0.5^(days since it / half_life_days), in 0..=1.
pub fn freshness(m: &Memory, now: Timestamp, half_life_days: f64) -> f64 {
    let age = now.days_since(m.last_confirmed_at).max(0.0);
    0.5f64.powf(age / half_life_days).clamp(0.0, 1.0)
}

/// Trust of a memory a human confirmed (a `human:*` source): a verified source while fresh,
/// ageing like any confirmation — `freshness` alone, i.e. the provenance formula with full
/// corroboration. With the default 180-day half-life it is above the 0.55 threshold for
/// about 155 days after the human's word (or a later restatement), then below it.
pub fn human_trust(m: &Memory, now: Timestamp, half_life_days: f64) -> f64 {
    freshness(m, now, half_life_days)
}

/// Trust from provenance, in 0..=1:
///
/// `(0.25 + 0.75 · min(1, corroboration + reinforcement)) · freshness` with
/// corroboration = 1 − 0.5^sources (one source 0.5, two 0.75, three 0.875 — the single-source
/// penalty), reinforcement = min(0.1, 0.03 · restatements), and
/// freshness = 0.5^(days since last confirmation / half_life_days).
///
/// With the default 180-day half-life: two sources confirmed within 7 days score ≥ 0.79 (above
/// the 0.55 threshold); one source unconfirmed for 180 days scores ≤ 0.32 (below it).
pub fn provenance_trust(m: &Memory, now: Timestamp, half_life_days: f64) -> f64 {
    let sources = m.sources.len().max(1) as i32;
    let corroboration = 1.0 - 0.5f64.powi(sources);
    let reinforcement = (0.03 * f64::from(m.reinforcements)).min(0.1);
    let freshness = freshness(m, now, half_life_days);
    ((0.25 + 0.75 * (corroboration + reinforcement).min(1.0)) * freshness).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_contract::*;

    fn mem(sources: usize, confirmed_days_ago: f64) -> (Memory, Timestamp) {
        let now = Timestamp::parse_rfc3339("2026-07-10T00:00:00Z").unwrap();
        let at = now.plus_millis(-(confirmed_days_ago * 86_400_000.0) as i64);
        let m = Memory {
            validity: Default::default(),
            id: MemoryId(1),
            namespace: Namespace::default(),
            kind: MemoryKind::Semantic,
            content: "x".into(),
            claim: None,
            entities: vec![],
            importance: 0.8,
            reinforcements: 0,
            sources: (0..sources).map(|i| format!("s{i}")).collect(),
            provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "f".into() },
            created_at: at,
            last_confirmed_at: at,
            last_accessed_at: None,
            pinned: false,
            embedding: None,
            status: Status::Active,
            rev: 1,
        };
        (m, now)
    }

    #[test]
    fn metrics_md_anchor_points() {
        let (m, now) = mem(2, 7.0);
        assert!(provenance_trust(&m, now, 180.0) >= 0.55);
        let (m, now) = mem(1, 180.0);
        assert!(provenance_trust(&m, now, 180.0) < 0.55);
        let (fresh, now) = mem(1, 0.0);
        let (old, _) = mem(1, 60.0);
        assert!(provenance_trust(&fresh, now, 180.0) > provenance_trust(&old, now, 180.0));
    }

    #[test]
    fn a_human_confirmation_is_verified_until_it_ages() {
        let (mut m, now) = mem(1, 0.0);
        assert_eq!(human_source(&m), None);
        m.sources = vec!["buyer".into(), "human:carla".into()];
        assert_eq!(human_source(&m), Some("human:carla"));
        assert!((human_trust(&m, now, 180.0) - 1.0).abs() < 1e-9, "fresh: as verified");
        let (mut old, now) = mem(1, 160.0);
        old.sources = vec!["human:carla".into()];
        assert!(human_trust(&old, now, 180.0) < 0.55, "aged past the threshold");
        assert!(human_trust(&old, now, 180.0) >= provenance_trust(&old, now, 180.0));
    }
}
