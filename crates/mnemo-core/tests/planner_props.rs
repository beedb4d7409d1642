//! Properties of the recall planner.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use mnemo_contract::TraceReason;
use mnemo_contract::*;
use mnemo_core::planner::{plan, PlanCandidate, Quotas};
use proptest::prelude::*;

fn memory(id: i64, kind: MemoryKind, pinned: bool, confirmed: i64) -> Memory {
    Memory {
        validity: Default::default(),
        id: MemoryId(id),
        namespace: Namespace::default(),
        kind,
        content: format!("memory {id}"),
        claim: None,
        entities: vec![],
        importance: 0.5,
        reinforcements: 0,
        sources: vec!["user".into()],
        provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "fake".into() },
        created_at: Timestamp(confirmed),
        last_confirmed_at: Timestamp(confirmed),
        last_accessed_at: None,
        pinned,
        embedding: None,
        status: Status::Active,
        rev: id as u64,
    }
}

fn kind_of(k: u8) -> MemoryKind {
    MemoryKind::ALL[usize::from(k % 3)]
}

prop_compose! {
    fn candidate(id: i64)(k in 0u8..3, pinned in prop::bool::weighted(0.1), rel in 0.0f64..1.0, sal in 0.0f64..1.5, tokens in 0usize..300, t in 0i64..1000)
        -> PlanCandidate {
        PlanCandidate { memory: memory(id, kind_of(k), pinned, t).into(), relevance: rel, salience: sal, tokens, decays: k % 3 == 2 }
    }
}

fn candidates() -> impl Strategy<Value = Vec<PlanCandidate>> {
    (0usize..40).prop_flat_map(|n| (0..n).map(|i| candidate(i as i64)).collect::<Vec<_>>())
}

const Q: Quotas = Quotas { shares: [0.45, 0.25, 0.30] };

proptest! {
    #[test]
    fn never_exceeds_budget(c in candidates(), budget in 0usize..3000) {
        let p = plan(c.clone(), budget, Q, 0.08);
        let used: usize = p.items.iter().map(|i| i.tokens).sum();
        prop_assert!(used <= budget);
        prop_assert_eq!(used, p.used);
        // every candidate has exactly one trace entry, and included ⇔ in the pack
        prop_assert_eq!(p.trace.len(), c.len());
        prop_assert_eq!(p.trace.iter().filter(|t| t.included).count(), p.items.len());
    }

    #[test]
    fn zero_budget_gives_empty_pack(c in candidates()) {
        let c: Vec<_> = c.into_iter().map(|mut x| { x.tokens = x.tokens.max(1); x }).collect();
        let p = plan(c.clone(), 0, Q, 0.08);
        prop_assert!(p.items.is_empty());
        prop_assert_eq!(p.trace.len(), c.len());
        prop_assert!(p.trace.iter().all(|t| !t.included));
    }

    #[test]
    fn pinned_come_first(c in candidates(), budget in 0usize..3000) {
        let p = plan(c, budget, Q, 0.08);
        let first_unpinned = p.items.iter().position(|i| !i.memory.pinned).unwrap_or(p.items.len());
        prop_assert!(p.items[first_unpinned..].iter().all(|i| !i.memory.pinned));
        // a pinned memory is only left out when it does not fit the budget
        for t in p.trace.iter().filter(|t| t.pinned && !t.included) {
            prop_assert_eq!(t.reason, TraceReason::Budget);
        }
    }

    #[test]
    fn quotas_hold_when_every_kind_has_candidates(c in candidates(), budget in 1usize..3000) {
        let c: Vec<_> = c.into_iter().map(|mut x| { x.salience = x.salience.max(0.1); x }).collect();
        for k in MemoryKind::ALL {
            prop_assume!(c.iter().any(|x| x.memory.kind == k && !x.memory.pinned));
        }
        let p = plan(c.clone(), budget, Q, 0.08);
        let pinned_used: usize = p.items.iter().filter(|x| x.memory.pinned).map(|x| x.tokens).sum();
        let rest = budget - pinned_used;
        for (i, k) in MemoryKind::ALL.iter().enumerate() {
            let quota = (rest as f64 * Q.shares[i]).floor() as usize;
            let of_kind: Vec<_> = c.iter().filter(|x| x.memory.kind == *k && !x.memory.pinned).collect();
            let total: usize = of_kind.iter().map(|x| x.tokens).sum();
            let largest = of_kind.iter().map(|x| x.tokens).max().unwrap_or(0);
            let used: usize = p.items.iter().filter(|x| x.memory.kind == *k && !x.memory.pinned).map(|x| x.tokens).sum();
            // no kind is starved by the others below its quota (less one item that did not fit)
            prop_assert!(used >= total.min(quota.saturating_sub(largest)), "{k}: used {used}, quota {quota}, total {total}, largest {largest}");
        }
    }

    #[test]
    fn pack_is_in_rank_order(c in candidates(), budget in 0usize..3000) {
        let p = plan(c, budget, Q, 0.08);
        for w in p.items.windows(2) {
            let (a, b) = (&w[0], &w[1]);
            prop_assert!(a.memory.pinned >= b.memory.pinned);
            if a.memory.pinned == b.memory.pinned {
                prop_assert!(a.score >= b.score);
            }
        }
    }
}

#[test]
fn below_threshold_and_tombstoned_are_traced() {
    let mut dead = memory(1, MemoryKind::Semantic, false, 0);
    dead.status = Status::Tombstoned { reason: "x".into(), at: Timestamp(1), superseded_by: None };
    let faded = memory(2, MemoryKind::Episodic, false, 0);
    let c = vec![
        PlanCandidate { memory: dead.into(), relevance: 1.0, salience: 1.0, tokens: 1, decays: false },
        PlanCandidate { memory: faded.into(), relevance: 1.0, salience: 0.01, tokens: 1, decays: true },
    ];
    let p = plan(c, 100, Q, 0.08);
    assert!(p.items.is_empty());
    let reasons: Vec<_> = p.trace.iter().map(|t| t.reason).collect();
    assert!(reasons.contains(&TraceReason::Tombstoned));
    assert!(reasons.contains(&TraceReason::BelowThreshold));
}

#[test]
fn only_decaying_kinds_are_cut_below_the_threshold() {
    // a low-importance fact does not decay: it is recalled however small its salience
    let fact = memory(1, MemoryKind::Semantic, false, 0);
    let p = plan(
        vec![PlanCandidate { memory: fact.into(), relevance: 1.0, salience: 0.05, tokens: 1, decays: false }],
        100,
        Q,
        0.08,
    );
    assert_eq!(p.items.len(), 1);
}

#[test]
fn unused_quota_flows_to_other_kinds() {
    // only episodic candidates: they may use the whole budget, not just 30 %
    let c: Vec<_> = (0..10)
        .map(|i| PlanCandidate {
            memory: memory(i, MemoryKind::Episodic, false, 0).into(),
            relevance: 1.0,
            salience: 1.0,
            tokens: 10,
            decays: true,
        })
        .collect();
    let p = plan(c, 100, Q, 0.08);
    assert_eq!(p.used, 100);
    assert!(p.trace.iter().any(|t| t.reason == TraceReason::QuotaFlow));
}
