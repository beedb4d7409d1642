//! `[recall] neighbour_share`: a candidate's conversational neighbours share its relevance.
//!
//! An answer often sits in the turn next to the one that matches the question ("What did you
//! research?" — "Adoption agencies."). Each candidate whose first source turn lies within
//! `neighbour_turns` turns of another candidate's gains `neighbour_share` × that candidate's
//! relevance (the best such), and every relevance r becomes (r + bonus) / (1 + share), so it
//! stays within 0..=1. Only the candidates the index returned take part (no extra store read);
//! turns are neighbours by their ids, which the store assigns in the order turns are recorded.
//! On LoCoMo it lifted evidence recall at every budget (bench/RESULTS.md); off (0) by default.
use std::collections::HashMap;

use crate::planner::{PlanCandidate, Plannable};

/// Share relevance between candidates whose source turns are within `window` of each other.
pub(crate) fn share<M: Plannable>(candidates: &mut [PlanCandidate<M>], share: f64, window: usize) {
    if share <= 0.0 || window == 0 {
        return;
    }
    let turn_of = |c: &PlanCandidate<M>| c.memory.first_turn().map(|t| t.0);
    let by_turn: HashMap<i64, f64> = candidates.iter().filter_map(|c| turn_of(c).map(|t| (t, c.relevance))).collect();
    let w = i64::try_from(window).unwrap_or(i64::MAX);
    for c in candidates.iter_mut() {
        let bonus = turn_of(c).map_or(0.0, |t| {
            (1..=w)
                .flat_map(|d| [t.checked_sub(d), t.checked_add(d)])
                .flatten()
                .filter_map(|u| by_turn.get(&u))
                .fold(0.0f64, |best, r| best.max(share * r))
        });
        c.relevance = ((c.relevance + bonus) / (1.0 + share)).clamp(0.0, 1.0);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mnemo_contract::model::{ClientKind, Memory, MemoryId, MemoryKind, Namespace, Provenance, Status, TurnId};
    use mnemo_contract::Timestamp;

    fn cand(id: i64, turn: Option<i64>, relevance: f64) -> PlanCandidate {
        let at = Timestamp::from_millis(0);
        let memory = Memory {
            validity: Default::default(),
            id: MemoryId(id),
            namespace: Namespace::default(),
            kind: MemoryKind::Episodic,
            content: "x".into(),
            claim: None,
            entities: vec![],
            importance: 0.5,
            reinforcements: 0,
            sources: vec![],
            provenance: Provenance {
                turns: turn.map(TurnId).into_iter().collect(),
                client: ClientKind::Rules,
                model: "t".into(),
            },
            created_at: at,
            last_confirmed_at: at,
            last_accessed_at: None,
            pinned: false,
            embedding: None,
            status: Status::Active,
            rev: 1,
        };
        PlanCandidate { memory: memory.into(), relevance, salience: 1.0, tokens: 1, decays: false }
    }

    #[test]
    fn neighbours_gain_a_share_of_the_best_nearby_relevance() {
        let mut c = vec![cand(1, Some(10), 0.8), cand(2, Some(11), 0.2), cand(3, Some(14), 0.4), cand(4, None, 0.5)];
        share(&mut c, 0.5, 2);
        let r: Vec<f64> = c.iter().map(|c| c.relevance).collect();
        // 1: its own .8 + .5·.2 (turn 11); 2: .2 + .5·.8; 3: nothing within 2 turns; 4: no turn.
        let want = [(0.8 + 0.1) / 1.5, (0.2 + 0.4) / 1.5, 0.4 / 1.5, 0.5 / 1.5];
        for (got, want) in r.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{r:?}");
        }
        assert!(c[1].relevance > c[3].relevance, "the neighbour of the best hit passes an isolated .5");
        let mut off = vec![cand(1, Some(10), 0.8), cand(2, Some(11), 0.1)];
        share(&mut off, 0.0, 2);
        assert_eq!((off[0].relevance, off[1].relevance), (0.8, 0.1));
    }
}
