//! The Store conformance suite (`conformance::store`, with the decay and bounded look-up
//! checks it runs) against the reference in-memory store: one test per suite function, and
//! `run_all` itself.
#![cfg(feature = "conformance")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemo_contract::conformance::store as suite;
use mnemo_contract::test_support::MemoryStore;
use mnemo_contract::Store;

macro_rules! conformance {
    ($($name:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $name() {
                suite::$name(&MemoryStore::new()).await;
            }
        )*
    };
}

conformance!(
    empty_store,
    record_turn_assigns_increasing_ids,
    insert_round_trips_every_field,
    get_many_leaves_out_missing_ids,
    namespace_partition,
    apply_is_atomic,
    reinforce_and_confirm,
    tombstone_keeps_the_row,
    claim_memories_hold_every_value_of_a_claim,
    validity_round_trips_and_stays_on_a_tombstone,
    tombstone_new_within_a_batch,
    tombstone_is_final,
    rev_increases_on_every_change,
    changed_since_pages_by_rev,
    changes_since_is_the_four_lookups,
    history_in_order,
    touch_does_not_bump_rev,
    active_by_entities_matches_any,
    ids_reveal_nothing_of_other_namespaces,
    list_memories_pages_by_id,
    short_ids_find_their_own_namespace,
    history_chain_covers_every_write,
    erase_empties_content_and_keeps_a_record,
);

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
