//! Group commit: concurrent remembers written as one batch per commit give what remembering
//! them one after another gives, each caller with its own result, each answer given only once
//! the turn is committed and recallable.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The built-in kinds: linked here (the library links none), so their registrations are kept.
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;
use std::sync::Arc;

use mnemo_contract::*;
use mnemo_core::engine::{EngineParts, GroupCommit, OutcomeKind, RecallOptions, TurnRequest};
use mnemo_core::Engine;
use mnemo_llm::{FakeQwen, LlmReasoner};
use mnemo_store::brute::BruteForceIndex;
use mnemo_store::sqlite::SqliteStore;

mod common;
use common::FailsOnBoom;

const T0: i64 = 1_780_000_000_000;

fn engine_on(store: Arc<dyn Store>) -> Engine {
    let fake = Arc::new(FakeQwen::new(64).unwrap());
    Engine::new(EngineParts {
        store,
        index: Arc::new(BruteForceIndex::new()),
        embedder: fake.clone(),
        reasoner: Arc::new(FailsOnBoom(LlmReasoner::new(fake))),
        clock: Arc::new(SimClock::new(Timestamp(T0))),
        tokens: Arc::new(CharTokenCounter),
        policy: EnginePolicy::default(),
    })
    .unwrap()
}

fn engine() -> Engine {
    engine_on(Arc::new(SqliteStore::open_in_memory().unwrap()))
}

fn ns() -> Namespace {
    Namespace::new("t").unwrap()
}

fn request(text: &str) -> TurnRequest {
    TurnRequest { namespace: ns(), source: "user".into(), text: text.into(), external_id: None, at: None }
}

/// What a store holds, ids and history included, by the ids a tenant reads (the store-wide
/// ids carry a tag of the store's own).
fn state(memories: &[Memory]) -> Vec<String> {
    memories
        .iter()
        .map(|m| {
            let status = match &m.status {
                Status::Active => "active".to_string(),
                Status::Tombstoned { reason, at, superseded_by } => {
                    format!("tombstoned {at} {reason:?} by {:?}", superseded_by.map(|s| s.short()))
                }
            };
            let turns: Vec<String> = m.provenance.turns.iter().map(|t| t.short()).collect();
            format!(
                "{} {:?} {:?} r{} {turns:?} confirmed {} {status}",
                m.id.short(),
                m.content,
                m.sources,
                m.reinforcements,
                m.last_confirmed_at
            )
        })
        .collect()
}

/// A report's outcomes by the ids a tenant reads.
fn outcomes(r: &mnemo_core::engine::RememberReport) -> Vec<String> {
    r.outcomes
        .iter()
        .map(|o| {
            let tombstoned: Vec<String> = o.tombstoned.iter().map(|t| t.short()).collect();
            format!("{:?} {:?} {tombstoned:?} {}", o.kind, o.memory.map(|m| m.short()), o.detail)
        })
        .collect()
}

/// Turns touching one claim (a contradiction, a restatement), a claim-less turn, a forget and
/// independent turns, in one order.
const TURNS: &[&str] = &[
    "[SEM] Ben | phone | 555-0100",
    "[SEM] Ann | phone | 555-0200",
    "[SEM] Ben | phone | 555-0199",
    "[SEM] Cal | phone | 555-0300",
    "[SEM] Ben | phone | 555-0199",
    "[EPI] Met Ana at the trade fair in Lyon.",
    "[SEM] Dee | phone | 555-0400",
    "[FORGET] Ann | phone",
    "[SEM] Ann | phone | 555-0201",
    "[PROC] Ship orders on Fridays.",
    "[PROC] Ship orders on Fridays.",
];

#[tokio::test]
async fn one_batch_gives_what_the_same_turns_one_after_another_give() {
    let one_by_one = engine();
    let mut sequential = Vec::new();
    for t in TURNS {
        sequential.push(one_by_one.remember(&ns(), "user", t).await.unwrap());
    }
    let grouped = engine();
    let batch: Vec<_> = grouped.remember_batch(TURNS.iter().map(|t| request(t)).collect()).await;
    for (k, (s, b)) in sequential.iter().zip(&batch).enumerate() {
        let b = b.as_ref().unwrap();
        assert_eq!(outcomes(s), outcomes(b), "turn {k}: {}", TURNS[k]);
        assert_eq!((s.turn.id.short(), s.status, &s.notes), (b.turn.id.short(), b.status, &b.notes), "turn {k}");
    }
    let kinds: Vec<OutcomeKind> =
        batch.iter().flat_map(|r| r.as_ref().unwrap().outcomes.iter().map(|o| o.kind)).collect();
    assert!(kinds.contains(&OutcomeKind::Superseded) && kinds.contains(&OutcomeKind::Reinforced), "{kinds:?}");
    assert!(kinds.contains(&OutcomeKind::Forgotten), "{kinds:?}");
    let (a, b) = (one_by_one.all_memories(&ns()).await.unwrap(), grouped.all_memories(&ns()).await.unwrap());
    assert_eq!(state(&a), state(&b));
    // A history's details name memories by their store-wide ids: read as tenant ids.
    let events = |w: &mnemo_core::engine::WhyReport, all: &[Memory]| {
        let detail = |d: &str| all.iter().fold(d.to_string(), |d, m| d.replace(&m.id.0.to_string(), &m.id.short()));
        w.events
            .iter()
            .map(|e| (e.at, e.event.clone(), e.turn.map(|t| t.short()), detail(&e.detail)))
            .collect::<Vec<_>>()
    };
    for (x, y) in a.iter().zip(&b) {
        let (x, y) = (one_by_one.why(&ns(), x.id).await.unwrap(), grouped.why(&ns(), y.id).await.unwrap());
        assert_eq!(events(&x, &a), events(&y, &b), "history of {}", x.memory.id);
    }
}

#[tokio::test]
async fn a_failing_turn_fails_alone_and_each_caller_gets_its_own_result() {
    let e = engine();
    // A neighbour for the next BOOM candidate, so that its reconcile (scripted to fail) is called.
    e.remember(&ns(), "user", "[PROC] Ship on Fridays BOOM.").await.unwrap();
    let mut past = request("[SEM] Eve | phone | 1");
    past.at = Some(Timestamp(T0 - 1_000));
    let results = e
        .remember_batch(vec![
            request("[SEM] Ben | phone | 555"),
            request("[PROC] Ship on Fridays BOOM again."),
            request("   "),
            past,
            request("[SEM] Ann | phone | 777"),
        ])
        .await;
    assert_eq!(results.len(), 5);
    assert!(results[0].is_ok() && results[4].is_ok(), "{results:?}");
    let boom = results[1].as_ref().unwrap_err();
    assert!(matches!(boom, CoreError::Unextracted { .. }) && boom.to_string().contains("scripted failure"), "{boom}");
    assert!(results[2].as_ref().unwrap_err().to_string().contains("empty"), "{:?}", results[2]);
    assert!(results[3].as_ref().unwrap_err().to_string().contains("time only moves forward"), "{:?}", results[3]);
    let contents: Vec<String> = e.active_memories(&ns()).await.unwrap().into_iter().map(|m| m.content).collect();
    assert!(contents.iter().any(|c| c.contains("Ben")) && contents.iter().any(|c| c.contains("Ann")), "{contents:?}");
    assert!(!contents.iter().any(|c| c.contains("again")), "nothing of the failed turn: {contents:?}");
    assert_eq!(e.turns(&ns()).await.unwrap().len(), 4, "the failed turn stays recorded, the refused ones are not");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_remembers_are_all_answered_durable_and_recalled() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let engine = Arc::new(engine_on(Arc::new(SqliteStore::open(&path).unwrap())));
    let writer = Arc::new(GroupCommit::start(&engine).unwrap());
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let writer = writer.clone();
            tokio::spawn(async move { writer.remember(request(&format!("[SEM] Load{i} | slot | V{i}"))).await })
        })
        .collect();
    let mut answered = Vec::new();
    for t in tasks {
        answered.push(t.await.unwrap().unwrap());
    }
    // Acknowledged ⇒ committed: another connection to the file reads every answered memory.
    let other = SqliteStore::open_read_only(&path).unwrap();
    for (i, r) in answered.iter().enumerate() {
        let id = r.outcomes[0].memory.unwrap();
        let found = other.get_many(&ns(), &[id]).await.unwrap();
        assert_eq!(found.len(), 1, "memory {id} of turn {i} answered but not committed");
        assert_eq!(found[0].content, format!("Load{i} | slot | V{i}"));
    }
    // Read-your-writes: each is recalled first for its own query.
    for i in 0..64 {
        let pack = engine.recall(&ns(), &format!("Load{i} slot"), &RecallOptions::default()).await.unwrap();
        assert_eq!(pack.items[0].memory.content, format!("Load{i} | slot | V{i}"), "recall of turn {i}");
    }
    let turns = engine.turns(&ns()).await.unwrap();
    assert_eq!(turns.len(), 64);
}
