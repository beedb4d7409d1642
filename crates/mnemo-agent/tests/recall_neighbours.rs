//! `[recall] neighbour_share`: a memory from the turn next to a strong match shares its
//! relevance, so the reply to a matching question is packed; off, the pack keeps the weaker
//! but directly matching turn instead.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;

use std::sync::Arc;

use mnemo_contract::*;
use mnemo_core::engine::{EngineParts, RecallOptions};
use mnemo_core::Engine;
use mnemo_llm::{FakeQwen, LlmReasoner};
use mnemo_store::brute::BruteForceIndex;
use mnemo_store::sqlite::SqliteStore;

const TURNS: [&str; 4] = [
    "Ann: What did you research last week?",
    "Bob: Adoption agencies, mostly, last time.",
    "Ann: research research methods research.",
    "Bob: The garden is green and quiet.",
];

async fn packed(share: f64) -> Vec<String> {
    let fake = Arc::new(FakeQwen::new(64).unwrap());
    let mut policy = EnginePolicy::default();
    policy.recall.neighbour_share = share;
    policy.recall.neighbour_turns = 1;
    let clock = Arc::new(SimClock::new(Timestamp(1_780_000_000_000)));
    let e = Engine::new(EngineParts {
        store: Arc::new(SqliteStore::open_in_memory().unwrap()),
        index: Arc::new(BruteForceIndex::new()),
        embedder: fake.clone(),
        reasoner: Arc::new(LlmReasoner::new(fake)),
        clock: clock.clone(),
        tokens: Arc::new(CharTokenCounter),
        policy,
    })
    .unwrap();
    let ns = Namespace::new("t").unwrap();
    let at = clock.now();
    let items = TURNS
        .iter()
        .map(|text| {
            let turn =
                NewTurn { namespace: ns.clone(), source: "chat".into(), at, text: text.to_string(), external_id: None };
            let mem = NewMemory {
                validity: Default::default(),
                namespace: ns.clone(),
                kind: MemoryKind::Episodic,
                content: text.to_string(),
                claim: None,
                entities: vec![],
                importance: 0.5,
                sources: vec!["chat".into()],
                provenance: Provenance { turns: vec![], client: ClientKind::Rules, model: "test".into() },
                created_at: at,
                pinned: false,
                embedding: None,
            };
            (turn, mem)
        })
        .collect();
    e.ingest(&ns, items).await.unwrap();
    // Room for two of the turns.
    let opts =
        RecallOptions { budget: Some(21), mode: Some(SearchMode::Lexical), candidates: Some(10), no_touch: true };
    let pack = e.recall(&ns, "research last week", &opts).await.unwrap();
    pack.memories().map(|m| m.content.clone()).collect()
}

#[tokio::test]
async fn the_reply_next_to_the_matching_question_is_packed_with_sharing_only() {
    let off = packed(0.0).await;
    assert!(off.contains(&TURNS[0].to_string()) && off.contains(&TURNS[2].to_string()), "{off:?}");
    assert!(!off.contains(&TURNS[1].to_string()), "{off:?}");
    let on = packed(0.5).await;
    assert!(on.contains(&TURNS[0].to_string()) && on.contains(&TURNS[1].to_string()), "{on:?}");
    assert!(!on.contains(&TURNS[2].to_string()), "{on:?}");
}

#[tokio::test]
async fn a_bad_share_is_refused_naming_the_key() {
    let mut policy = EnginePolicy::default();
    policy.recall.neighbour_share = -1.0;
    let e = policy.validate().unwrap_err();
    assert!(e.to_string().contains("recall.neighbour_share"), "{e}");
}
