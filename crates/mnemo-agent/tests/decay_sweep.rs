//! The decay sweep reads only due memories (`Store::due_for_decay` on SQLite's range query)
//! and still tombstones exactly what the old full scan did: compared over pseudo-random
//! namespaces, write histories and sweep times.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;
use std::collections::BTreeMap;
use std::sync::Arc;

use mnemo_contract::salience::salience;
use mnemo_contract::time::DAY_MS;
use mnemo_contract::*;
use mnemo_core::engine::EngineParts;
use mnemo_core::Engine;
use mnemo_llm::{FakeQwen, LlmReasoner};
use mnemo_store::brute::BruteForceIndex;
use mnemo_store::sqlite::SqliteStore;

const T0: i64 = 1_780_000_000_000;

/// An engine and its store: the tests write memories straight into the store (as another
/// writer would) to set up ages and reinforcements the write path would not produce.
fn engine(clock: Arc<SimClock>, policy: EnginePolicy) -> (Engine, Arc<SqliteStore>) {
    let fake = Arc::new(FakeQwen::new(64).unwrap());
    let store = Arc::new(SqliteStore::open_in_memory().unwrap());
    let engine = Engine::new(EngineParts {
        store: store.clone(),
        index: Arc::new(BruteForceIndex::new()),
        embedder: fake.clone(),
        reasoner: Arc::new(LlmReasoner::new(fake)),
        clock,
        tokens: Arc::new(CharTokenCounter),
        policy,
    })
    .unwrap();
    (engine, store)
}

/// A small deterministic generator (the test must be reproducible).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn unit(&mut self) -> f64 {
        self.below(1_000_000) as f64 / 1_000_000.0
    }
}

fn new_memory(ns: &Namespace, i: u64, kind: MemoryKind, importance: f32, pinned: bool, at: Timestamp) -> WriteOp {
    WriteOp::Insert {
        memory: NewMemory {
            validity: Default::default(),
            namespace: ns.clone(),
            kind,
            content: format!("memory {i}"),
            claim: None,
            entities: vec![],
            importance,
            sources: vec!["user".into()],
            provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "fake".into() },
            created_at: at,
            pinned,
            embedding: None,
        },
        turn: None,
    }
}

/// What the sweep did before due times: every active memory of a decaying kind, unpinned,
/// with salience below the threshold at `now`.
fn full_scan(active: &[Memory], now: Timestamp, policy: &EnginePolicy) -> BTreeMap<MemoryId, f64> {
    active
        .iter()
        .filter(|m| policy.kinds.of(m.kind).decays && !m.pinned)
        .map(|m| (m.id, salience(m, now, policy)))
        .filter(|(_, s)| *s < policy.decay.threshold)
        .collect()
}

#[tokio::test]
async fn the_range_sweep_tombstones_exactly_what_the_full_scan_did() {
    for seed in 1..=12u64 {
        let mut rng = Lcg(seed);
        let mut policy = EnginePolicy::default();
        if seed % 3 == 0 {
            policy.decay.half_life_days = 3.0 + rng.unit() * 30.0;
            policy.decay.threshold = 0.02 + rng.unit() * 0.2;
        }
        if seed % 4 == 0 {
            policy.kinds.procedural.decays = true;
        }
        let clock = Arc::new(SimClock::new(Timestamp(T0)));
        let (e, store) = engine(clock.clone(), policy.clone());
        let ns = Namespace::new(&format!("n{seed}")).unwrap();
        let mut now = T0;
        let mut ids: Vec<MemoryId> = Vec::new();
        let mut sweeps_with_decay = 0;
        for step in 0..40u64 {
            now += rng.below(6 * DAY_MS as u64) as i64;
            clock.set(Timestamp(now));
            let mut ops = Vec::new();
            for i in 0..rng.below(8) {
                let kind = [MemoryKind::Episodic, MemoryKind::Episodic, MemoryKind::Semantic, MemoryKind::Procedural]
                    [rng.below(4) as usize];
                let importance = (rng.unit() as f32).powi(2);
                ops.push(new_memory(&ns, step * 100 + i, kind, importance, rng.below(10) == 0, Timestamp(now)));
            }
            if !ops.is_empty() {
                ids.extend(store.apply(&ns, Timestamp(now), ops).await.unwrap());
            }
            // Reinforce or confirm a few still-active memories.
            let active: Vec<MemoryId> = store.active(&ns).await.unwrap().iter().map(|m| m.id).collect();
            let mut ops = Vec::new();
            for _ in 0..rng.below(4) {
                if active.is_empty() {
                    break;
                }
                let id = active[rng.below(active.len() as u64) as usize];
                if ops.iter().any(
                    |op| matches!(op, WriteOp::Reinforce { id: x, .. } | WriteOp::Confirm { id: x, .. } if *x == id),
                ) {
                    continue;
                }
                ops.push(if rng.below(2) == 0 {
                    WriteOp::Reinforce { id, source: format!("s{}", rng.below(3)), turn: None }
                } else {
                    WriteOp::Confirm { id, source: "erp".into() }
                });
            }
            if !ops.is_empty() {
                store.apply(&ns, Timestamp(now), ops).await.unwrap();
            }
            if rng.below(3) == 0 {
                let active = store.active(&ns).await.unwrap();
                let expected = full_scan(&active, Timestamp(now), &policy);
                let report = e.decay_sweep(&ns).await.unwrap();
                let got: BTreeMap<MemoryId, f64> = report.decayed.iter().copied().collect();
                assert_eq!(got, expected, "seed {seed} step {step}: the same tombstones as the full scan");
                assert!(report.examined <= active.len(), "seed {seed} step {step}");
                assert!(
                    report.examined >= expected.len(),
                    "seed {seed} step {step}: every decayed memory was examined"
                );
                if !expected.is_empty() {
                    sweeps_with_decay += 1;
                }
                let after: Vec<MemoryId> = store.active(&ns).await.unwrap().iter().map(|m| m.id).collect();
                assert!(expected.keys().all(|id| !after.contains(id)), "seed {seed}: the decayed are tombstoned");
            }
        }
        assert!(!ids.is_empty());
        assert!(sweeps_with_decay > 0, "seed {seed}: the history must exercise decay");
    }
}

#[tokio::test]
async fn a_sweep_examines_only_the_due_memories() {
    let clock = Arc::new(SimClock::new(Timestamp(T0)));
    let (e, store) = engine(clock.clone(), EnginePolicy::default());
    let ns = Namespace::new("due").unwrap();
    // 300 lasting episodes (importance 1: ~51 days) and 7 faint ones (importance 0.1: ~5 days),
    // plus facts and a pinned faint episode that never decay.
    let mut ops: Vec<WriteOp> =
        (0..300).map(|i| new_memory(&ns, i, MemoryKind::Episodic, 1.0, false, Timestamp(T0))).collect();
    ops.extend((300..307).map(|i| new_memory(&ns, i, MemoryKind::Episodic, 0.1, false, Timestamp(T0))));
    ops.extend((307..350).map(|i| new_memory(&ns, i, MemoryKind::Semantic, 0.01, false, Timestamp(T0))));
    ops.push(new_memory(&ns, 350, MemoryKind::Episodic, 0.01, true, Timestamp(T0)));
    store.apply(&ns, Timestamp(T0), ops).await.unwrap();

    clock.set(Timestamp(T0 + DAY_MS));
    let r = e.decay_sweep(&ns).await.unwrap();
    assert_eq!((r.examined, r.decayed.len()), (0, 0), "nothing due: nothing read");

    clock.set(Timestamp(T0 + 10 * DAY_MS));
    let r = e.decay_sweep(&ns).await.unwrap();
    assert_eq!((r.examined, r.decayed.len()), (7, 7), "only the 7 due ones are read, and all fade");
    let r = e.decay_sweep(&ns).await.unwrap();
    assert_eq!(r.examined, 0, "tombstoned ones are not due again");

    // Reinforcing one lasting episode at day 40 moves its due time to ~94 days.
    let keep =
        store.active(&ns).await.unwrap().into_iter().find(|m| m.kind == MemoryKind::Episodic && !m.pinned).unwrap();
    store
        .apply(
            &ns,
            Timestamp(T0 + 40 * DAY_MS),
            vec![WriteOp::Reinforce { id: keep.id, source: "user".into(), turn: None }],
        )
        .await
        .unwrap();
    clock.set(Timestamp(T0 + 60 * DAY_MS));
    let r = e.decay_sweep(&ns).await.unwrap();
    assert_eq!((r.examined, r.decayed.len()), (299, 299), "the others fade; the reinforced one is not due");
    assert!(store.active(&ns).await.unwrap().iter().any(|m| m.id == keep.id));
}
