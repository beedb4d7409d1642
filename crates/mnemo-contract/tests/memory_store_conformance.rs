//! The Store conformance suite (`conformance::store`, with the decay and bounded look-up
//! checks it runs) against the reference in-memory store: one test per suite function, and
//! `run_all` itself.
#![cfg(feature = "conformance")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemo_contract::conformance::store as suite;
use mnemo_contract::test_support::MemoryStore;
use mnemo_contract::Store;

mnemo_contract::store_conformance_tests!(store = MemoryStore::new() => &store);

#[tokio::test]
async fn due_for_decay_matches_the_scan() {
    mnemo_contract::conformance::decay::due_for_decay_matches_the_scan(&MemoryStore::new()).await;
}

#[tokio::test]
async fn bounded_turn_lookups() {
    mnemo_contract::conformance::bounded::bounded_turn_lookups(&MemoryStore::new()).await;
}

#[tokio::test]
async fn run_all() {
    suite::run_all(|| async { Arc::new(MemoryStore::new()) as Arc<dyn Store> }).await;
}

/// The erasure leaves the history verifiable, and an erased memory is never changed again
/// (beyond the suite: a reinforcement of it is refused like any tombstone's).
#[tokio::test]
async fn an_erased_memory_is_a_final_tombstone() {
    use mnemo_contract::erase::ErasePlan;
    use mnemo_contract::*;
    let s = MemoryStore::new();
    let ns = Namespace::new("erase").unwrap();
    let m = NewMemory {
        namespace: ns.clone(),
        kind: MemoryKind::Semantic,
        content: "Ben | phone | 555".into(),
        claim: Some(Claim::new("Ben", "phone", "555")),
        entities: vec!["ben".into()],
        importance: 0.5,
        sources: vec!["user".into()],
        provenance: Provenance { turns: vec![], client: ClientKind::Rules, model: "t".into() },
        created_at: Timestamp(1),
        pinned: true,
        embedding: None,
        validity: Default::default(),
    };
    let id = s.apply(&ns, Timestamp(1), vec![WriteOp::Insert { memory: m, turn: None }]).await.unwrap()[0];
    let plan = ErasePlan { target: "memory".into(), reason: "asked".into(), memories: vec![id], ..Default::default() };
    s.erase(&ns, Timestamp(2), plan).await.unwrap();
    let again = s.apply(&ns, Timestamp(3), vec![WriteOp::Reinforce { id, source: "x".into(), turn: None }]).await;
    assert!(matches!(again, Err(CoreError::InvalidInput(_))), "{again:?}");
    assert!(s.pinned(&ns).await.unwrap().is_empty(), "an erased memory is not pinned");
    let reports = s.verify_history().await.unwrap().unwrap();
    assert!(reports.iter().all(|r| r.ok()) && reports[0].entries == 3, "created, erased, the erasure: {reports:?}");
}

/// No file backups: a clear refusal, not a file half written.
#[tokio::test]
async fn file_backups_are_refused_with_a_reason() {
    let s = MemoryStore::new();
    let dest = std::env::temp_dir().join("mnemo-memory-store-never-written.json");
    for r in [s.backup_to(&dest).await, s.replace_from_backup(&dest).await] {
        match r {
            Err(mnemo_contract::CoreError::InvalidInput(m)) => assert!(m.contains("in-memory reference store"), "{m}"),
            other => panic!("a file backup of the in-memory store must be refused, got {other:?}"),
        }
    }
    assert!(!dest.exists());
}
