//! `--neighbours N`: neighbouring-turn expansion, measured against its own control.
//!
//! A LoCoMo answer often spans a turn and the reply next to it. The variant takes the hybrid
//! ranking and follows each hit with the turns within N of it in the same session (nearest
//! first, each turn once), then packs that order greedily under each budget (a turn that does
//! not fit is skipped, the next one tried). The control packs the plain hybrid ranking with the
//! same packer, so the two rows differ only by the expansion (the engine's own `recall` packing
//! weighs relevance with salience and is the "hybrid" row). Rows: `hybrid_pack` and
//! `hybrid_pack_nb<N>`; R@k and MRR of the expanded order count a neighbour at its place in it.
//!
//! `--neighbour-share A` instead shares scores ([`share`]): each turn within N of a hit (same
//! session) gains A × that hit's fused score, and the turns are re-ranked (row
//! `hybrid_share<A>_nb<N>`, packed by the same packer). Either is a re-ranking by the bench over
//! the index's hybrid hits, using the turn order the bench knows; neither is in the engine.
use std::collections::{HashMap, HashSet};

/// `ranking` with each hit followed by its same-session neighbours within `n` turns (nearest
/// first, earlier before later), every turn once. `session_of[t]` is turn t's session.
pub fn expand(ranking: &[usize], session_of: &[u32], n: usize) -> Vec<usize> {
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(ranking.len() * (1 + 2 * n));
    for &t in ranking {
        let Some(&s) = session_of.get(t) else { continue };
        let mut group = vec![t];
        for d in 1..=n {
            if let Some(u) = t.checked_sub(d) {
                group.push(u);
            }
            group.push(t + d);
        }
        for u in group {
            if session_of.get(u) == Some(&s) && seen.insert(u) {
                out.push(u);
            }
        }
    }
    out
}

/// Score sharing: every turn within `n` of a hit in the same session gains `alpha` × the best
/// such hit's score (a hit keeps its own score and may gain from a better neighbour); the
/// result re-ranked, best first (ties: the earlier turn), `limit` long. `hits`: (turn, score)
/// from the index, best first.
pub fn share(hits: &[(usize, f32)], session_of: &[u32], n: usize, alpha: f32, limit: usize) -> Vec<usize> {
    let mut score: HashMap<usize, f32> = hits.iter().copied().collect();
    let mut bonus: HashMap<usize, f32> = HashMap::new();
    for &(t, s) in hits {
        let Some(&sess) = session_of.get(t) else { continue };
        for d in 1..=n {
            for u in [t.checked_sub(d), Some(t + d)].into_iter().flatten() {
                if session_of.get(u) == Some(&sess) {
                    let b = bonus.entry(u).or_insert(0.0);
                    *b = b.max(alpha * s);
                }
            }
        }
    }
    // A zero bonus (alpha 0, or a hit scored 0) adds no turn that was not a hit.
    for (u, b) in bonus.into_iter().filter(|(_, b)| *b > 0.0) {
        *score.entry(u).or_insert(0.0) += b;
    }
    let mut ranked: Vec<(usize, f32)> = score.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.into_iter().take(limit).map(|(t, _)| t).collect()
}

/// The turns of `order` that fit `budget` tokens, taken greedily (`tokens[t]`: turn t's size).
pub fn pack_greedy(order: &[usize], tokens: &[usize], budget: usize) -> HashSet<usize> {
    let mut used = 0usize;
    let mut out = HashSet::new();
    for &t in order {
        let Some(&size) = tokens.get(t) else { continue };
        if used + size <= budget {
            used += size;
            out.insert(t);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_follow_their_hit_within_the_session_once() {
        // Turns 0-3 in session 1, 4-6 in session 2.
        let sessions = [1, 1, 1, 1, 2, 2, 2];
        assert_eq!(expand(&[4, 2], &sessions, 1), vec![4, 5, 2, 1, 3]);
        assert_eq!(expand(&[3, 2], &sessions, 1), vec![3, 2, 1]);
        assert_eq!(expand(&[5], &sessions, 2), vec![5, 4, 6]);
        assert_eq!(expand(&[1, 9], &sessions, 0), vec![1], "an unknown turn is dropped");
    }

    #[test]
    fn shared_scores_lift_neighbours_within_the_session() {
        // Turns 0-3 in session 1, 4-6 in session 2; hits 1 (0.9) and 5 (0.5).
        let sessions = [1, 1, 1, 1, 2, 2, 2];
        let hits = [(1, 0.9), (5, 0.5)];
        // alpha 0.5: 0 and 2 gain .45, 4 and 6 gain .25; 3 is in no window of 1.
        assert_eq!(share(&hits, &sessions, 1, 0.5, 10), vec![1, 5, 0, 2, 4, 6]);
        // A neighbour's bonus adds to its own score: 5 (0.5) gains 0.45 from 4 (0.9) and
        // passes 3 (0.8), which gets nothing across the session boundary from 4.
        let hits = [(4, 0.9), (5, 0.5), (3, 0.8)];
        assert_eq!(share(&hits, &sessions, 1, 0.5, 3), vec![4, 5, 3]);
        assert_eq!(share(&hits, &sessions, 1, 0.5, 2), vec![4, 5], "the limit applies after");
        assert_eq!(share(&hits, &sessions, 1, 0.0, 10), vec![4, 3, 5]);
    }

    #[test]
    fn greedy_packing_skips_what_does_not_fit() {
        let tokens = [10, 50, 20, 5];
        assert_eq!(pack_greedy(&[1, 0, 2, 3], &tokens, 65), HashSet::from([1, 0, 3]));
        assert!(pack_greedy(&[1], &tokens, 49).is_empty());
    }
}
