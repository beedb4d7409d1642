//! Which turns of a group commit can be planned against the same store state and applied in
//! one transaction, giving exactly what applying them one after another would.
//!
//! A turn's plan reads the store (and, for a candidate without a claim, the index) for the
//! active memories it may restate, supersede or forget. Two turns of a batch are independent
//! when neither can be among what the other reads:
//! - a candidate WITH a claim reconciles by rule against the active memories sharing one of
//!   its entities (`active_by_entities`) and nothing else: turns whose entity sets are disjoint
//!   never read each other's memories;
//! - a candidate WITHOUT a claim also searches the index for paraphrases, which may be any
//!   memory of the namespace: its turn is planned only after every earlier turn of the batch is
//!   applied and in the index (it starts a segment);
//! - a forget command may tombstone any memory: its turn is planned after every earlier turn
//!   is applied, and no later turn is planned before it is (a segment of its own).
//!
//! Turns with different times are not grouped either (one store batch has one time, the
//! time of its events). A segment is a maximal run of consecutive turns, in arrival order,
//! that are pairwise independent; segments are planned and applied in order.
use std::collections::BTreeSet;

use mnemo_contract::text::norm_name;
use mnemo_contract::time::Timestamp;
use mnemo_contract::{ExtractedItem, Extraction};

/// What a turn's plan may read and write, as far as grouping needs to know.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Footprint {
    /// The normalised entities of its candidates (claims' entities included).
    entities: BTreeSet<String>,
    /// It must see every earlier turn applied and indexed (a candidate without a claim).
    after_all: bool,
    /// No turn may be grouped with it (a forget command).
    alone: bool,
    /// Its time.
    at: Timestamp,
}

impl Footprint {
    /// The footprint of a turn at `at` whose extraction is `extraction`.
    pub(crate) fn of(extraction: &Extraction, at: Timestamp) -> Footprint {
        let mut f = Footprint { entities: BTreeSet::new(), after_all: false, alone: false, at };
        for item in &extraction.items {
            match item {
                ExtractedItem::Forget(_) => f.alone = true,
                ExtractedItem::Memory(c) => {
                    f.after_all |= c.claim.is_none();
                    f.entities.extend(c.entities.iter().map(|e| norm_name(e)).filter(|e| !e.is_empty()));
                    if let Some(claim) = &c.claim {
                        f.entities.insert(norm_name(&claim.entity));
                    }
                }
            }
        }
        f
    }

    /// Whether its plan needs every earlier turn of the batch in the index.
    pub(crate) fn needs_index(&self) -> bool {
        self.after_all || self.alone
    }
}

/// Split turns (their footprints, in arrival order) into segments: lists of positions, in
/// order; every position is in exactly one segment.
pub(crate) fn segments(footprints: &[Footprint]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut held: BTreeSet<String> = BTreeSet::new();
    let mut closed = true;
    let mut at = None;
    for (k, f) in footprints.iter().enumerate() {
        let joins = !closed && !f.needs_index() && at == Some(f.at) && f.entities.is_disjoint(&held);
        if joins {
            held.extend(f.entities.iter().cloned());
            if let Some(last) = out.last_mut() {
                last.push(k);
            }
        } else {
            out.push(vec![k]);
            held = f.entities.clone();
            at = Some(f.at);
        }
        closed = f.alone;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(entities: &[&str], after_all: bool, alone: bool, at: i64) -> Footprint {
        Footprint { entities: entities.iter().map(|e| e.to_string()).collect(), after_all, alone, at: Timestamp(at) }
    }

    #[test]
    fn independent_claim_turns_form_one_segment() {
        let f = [fp(&["a"], false, false, 1), fp(&["b"], false, false, 1), fp(&[], false, false, 1)];
        assert_eq!(segments(&f), vec![vec![0, 1, 2]]);
    }

    #[test]
    fn a_shared_entity_starts_a_new_segment() {
        let f = [fp(&["a"], false, false, 1), fp(&["b"], false, false, 1), fp(&["a", "c"], false, false, 1)];
        assert_eq!(segments(&f), vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn a_claimless_turn_starts_a_segment_and_a_forget_stands_alone() {
        let f = [
            fp(&["a"], false, false, 1),
            fp(&["b"], true, false, 1),
            fp(&["c"], false, false, 1),
            fp(&[], false, true, 1),
            fp(&["d"], false, false, 1),
        ];
        assert_eq!(segments(&f), vec![vec![0], vec![1, 2], vec![3], vec![4]]);
    }

    #[test]
    fn another_time_starts_a_new_segment() {
        let f = [fp(&["a"], false, false, 1), fp(&["b"], false, false, 2)];
        assert_eq!(segments(&f), vec![vec![0], vec![1]]);
    }
}
