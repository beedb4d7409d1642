//! What became of a turn is in the structured report (`status`), not only in its notes:
//! offline, an untagged turn is kept as one episode; a turn the model extracted nothing from
//! says so; a replayed idempotency key says it wrote nothing again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The built-in kinds: linked here (the library links none), so their registrations are kept.
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;
use std::sync::Arc;

use mnemo_contract::*;
use mnemo_core::engine::{EngineParts, OutcomeKind, RememberReport, TurnStatus};
use mnemo_core::Engine;
use mnemo_llm::{FakeQwen, LlmReasoner};
use mnemo_store::brute::BruteForceIndex;
use mnemo_store::sqlite::SqliteStore;

fn engine() -> Engine {
    let fake = Arc::new(FakeQwen::new(64).unwrap());
    Engine::new(EngineParts {
        store: Arc::new(SqliteStore::open_in_memory().unwrap()),
        index: Arc::new(BruteForceIndex::new()),
        embedder: fake.clone(),
        reasoner: Arc::new(LlmReasoner::new(fake)),
        clock: Arc::new(SimClock::new(Timestamp(1_780_000_000_000))),
        tokens: Arc::new(CharTokenCounter),
        policy: EnginePolicy::default(),
    })
    .unwrap()
}

fn status_json(r: &RememberReport) -> serde_json::Value {
    serde_json::to_value(r).unwrap()["status"].clone()
}

#[tokio::test]
async fn an_untagged_turn_is_kept_offline_as_one_episode_and_says_extracted() {
    let e = engine();
    let ns = Namespace::new("t").unwrap();
    let r = e.remember(&ns, "user", "The user said their favourite colour is teal.").await.unwrap();
    assert_eq!(r.status(), TurnStatus::Extracted);
    assert_eq!(status_json(&r), "extracted");
    assert_eq!(r.outcomes.len(), 1);
    assert_eq!(r.outcomes[0].kind, OutcomeKind::Inserted);
    let all = e.all_memories(&ns).await.unwrap();
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].kind, MemoryKind::Episodic);
    assert_eq!(all[0].content, "The user said their favourite colour is teal.");
}

#[tokio::test]
async fn a_turn_with_nothing_extracted_says_so_in_its_status_and_a_note() {
    let e = engine();
    let ns = Namespace::new("t").unwrap();
    // A malformed tag is a grammar mistake (a note), not prose to keep.
    let r = e.remember(&ns, "user", "[NOPE] the standup moved").await.unwrap();
    assert_eq!(r.status(), TurnStatus::NothingExtracted);
    assert_eq!(status_json(&r), "nothing_extracted");
    assert!(r.outcomes.is_empty());
    assert!(r.notes.iter().any(|n| n.contains("unknown tag [NOPE]")), "{:?}", r.notes);
    assert!(r.notes.iter().any(|n| n.contains("extracted nothing from turn")), "{:?}", r.notes);
    assert!(e.all_memories(&ns).await.unwrap().is_empty());
    assert_eq!(e.turns(&ns).await.unwrap().len(), 1, "the turn is recorded all the same");
}

#[tokio::test]
async fn a_replayed_idempotency_key_says_already_recorded() {
    let e = engine();
    let ns = Namespace::new("t").unwrap();
    let first = e.remember(&ns, "user", "[SEM] Ben | phone | 555").await.unwrap();
    let r = RememberReport::already_recorded(first.turn.clone(), e.reasoner_model());
    assert_eq!(r.status(), TurnStatus::AlreadyRecorded);
    assert_eq!(status_json(&r), "already_recorded");
    assert_eq!(r.turn.id, first.turn.id);
    // A report read back keeps its status (it is derived from what the report holds).
    let back: RememberReport = serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
    assert_eq!(back.status(), TurnStatus::AlreadyRecorded);
}
