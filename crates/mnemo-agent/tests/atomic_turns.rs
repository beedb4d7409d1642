//! A turn's derived changes land as one atomic batch, planned in turn order.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The built-in kinds: linked here (the library links none), so their registrations are kept.
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;
use std::sync::Arc;

use mnemo_contract::*;
use mnemo_core::engine::{EngineParts, OutcomeKind};
use mnemo_core::Engine;
use mnemo_llm::{FakeQwen, LlmReasoner};
use mnemo_store::brute::BruteForceIndex;
use mnemo_store::sqlite::SqliteStore;

mod common;
use common::FailsOnBoom;

fn engine() -> Engine {
    let fake = Arc::new(FakeQwen::new(64).unwrap());
    Engine::new(EngineParts {
        store: Arc::new(SqliteStore::open_in_memory().unwrap()),
        index: Arc::new(BruteForceIndex::new()),
        embedder: fake.clone(),
        reasoner: Arc::new(FailsOnBoom(LlmReasoner::new(fake))),
        clock: Arc::new(SimClock::new(Timestamp(1_780_000_000_000))),
        tokens: Arc::new(CharTokenCounter),
        policy: EnginePolicy::default(),
    })
    .unwrap()
}

#[tokio::test]
async fn a_failure_anywhere_in_a_turn_writes_no_memory() {
    let e = engine();
    let ns = Namespace::new("t").unwrap();
    e.remember(&ns, "user", "[PROC] Ship on Fridays BOOM.").await.unwrap(); // no neighbours: no reconcile call
    let before = e.all_memories(&ns).await.unwrap();
    let err = e
        .remember(&ns, "user", "[SEM] Ben | phone | 555\n[EPI] Met Ana.\n[PROC] Ship on Fridays BOOM again.")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("scripted failure"), "{err}");
    assert_eq!(e.all_memories(&ns).await.unwrap(), before, "nothing of the failed turn was applied");
    assert_eq!(e.turns(&ns).await.unwrap().len(), 2, "but the raw turn was recorded first");
}

#[tokio::test]
async fn a_value_contradicted_within_its_own_turn_is_tombstoned_and_explained() {
    let e = engine();
    let ns = Namespace::new("t").unwrap();
    let r = e.remember(&ns, "user", "[SEM] Ben | phone | 555-0100\n[SEM] Ben | phone | 555-0199").await.unwrap();
    let (first, second) = (r.outcomes[0].memory.unwrap(), r.outcomes[1].memory.unwrap());
    assert!(first.0 > 0 && second.0 > 0, "ids are the store's, not virtual: {r:?}");
    assert_eq!(r.outcomes[1].kind, OutcomeKind::Superseded);
    assert_eq!(r.outcomes[1].tombstoned, vec![first]);
    assert!(r.outcomes[1].detail.contains(&first.to_string()), "{}", r.outcomes[1].detail);
    let why = e.why(&ns, first).await.unwrap();
    assert_eq!(why.superseded_by.unwrap().id, second);
    let active = e.active_memories(&ns).await.unwrap();
    assert_eq!(active.len(), 1);
    assert_eq!(active[0].claim.as_ref().unwrap().value, "555-0199");
}

#[tokio::test]
async fn a_line_repeated_within_a_turn_is_one_memory() {
    let e = engine();
    let ns = Namespace::new("t").unwrap();
    let r =
        e.remember(&ns, "user", "[PROC] Always add a 5-day buffer.\n[PROC] Always add a 5-day buffer.").await.unwrap();
    assert_eq!(r.outcomes[1].kind, OutcomeKind::Reinforced);
    assert_eq!(r.outcomes[1].memory, r.outcomes[0].memory);
    assert_eq!(e.active_memories(&ns).await.unwrap().len(), 1);
}
