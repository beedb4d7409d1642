//! A model's "contradicts" is applied only where the engine's own rules allow: a shared
//! subject, the same kind, a stored memory (not another item of the same turn). Whatever a
//! model answers, a memory about something else is never tombstoned; a refusal is said in the
//! turn's notes, and a supersession the model decided names the model and its reason in `why`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use async_trait::async_trait;
use mnemo_grounders as _;
use mnemo_store as _;
use std::sync::{Arc, Mutex};

use mnemo_contract::*;
use mnemo_core::engine::{EngineParts, OutcomeKind};
use mnemo_core::Engine;
use mnemo_llm::chat::{ChatModel, ChatRequest, ChatResponse};
use mnemo_llm::prompts::Task;
use mnemo_llm::{FakeQwen, LlmError, LlmReasoner};
use mnemo_store::brute::BruteForceIndex;
use mnemo_store::sqlite::SqliteStore;
use serde_json::{json, Value};

/// A model that extracts what the test scripts for each turn text and answers every reconcile
/// with "contradicts" of the first neighbour (what Qwen2.5 1.5B answered 8 times in 8).
struct AlwaysContradicts {
    extractions: Vec<(&'static str, Value)>,
    reconciles: Mutex<Vec<Value>>,
}

#[async_trait]
impl ChatModel for AlwaysContradicts {
    async fn chat(&self, req: &ChatRequest) -> std::result::Result<ChatResponse, LlmError> {
        let content = match Task::of_system_prompt(&req.system) {
            Some(Task::Extract) => {
                let input: Value = serde_json::from_str(&req.user).unwrap();
                let text = input["turn"]["text"].as_str().unwrap().to_string();
                let items = self.extractions.iter().find(|(t, _)| *t == text).map(|(_, v)| v.clone());
                json!({"items": items.unwrap_or_else(|| panic!("no script for {text:?}"))}).to_string()
            }
            Some(Task::Reconcile) => {
                self.reconciles.lock().unwrap().push(serde_json::from_str(&req.user).unwrap());
                json!({"verdict": "contradicts", "ids": [1], "reason": "the values differ"}).to_string()
            }
            _ => json!({"ids": []}).to_string(),
        };
        Ok(ChatResponse { content, model: "small-model-q4".into(), client: ClientKind::Live, usage: None })
    }
    fn configured(&self) -> ModelInfo {
        ModelInfo { client: ClientKind::Live, model: "small-model-q4".into() }
    }
}

fn sem(content: &str, entities: &[&str]) -> Value {
    json!({"memory": {"kind": "semantic", "content": content, "entities": entities}})
}

fn engine(model: Arc<AlwaysContradicts>) -> Engine {
    let fake = Arc::new(FakeQwen::new(64).unwrap());
    Engine::new(EngineParts {
        store: Arc::new(SqliteStore::open_in_memory().unwrap()),
        index: Arc::new(BruteForceIndex::new()),
        embedder: fake,
        reasoner: Arc::new(LlmReasoner::new(model)),
        clock: Arc::new(SimClock::new(Timestamp(1_780_000_000_000))),
        tokens: Arc::new(CharTokenCounter),
        policy: EnginePolicy::default(),
    })
    .unwrap()
}

async fn active(e: &Engine, ns: &Namespace) -> Vec<String> {
    e.all_memories(ns).await.unwrap().into_iter().filter(|m| m.status.is_active()).map(|m| m.content).collect()
}

#[tokio::test]
async fn contradicts_between_different_subjects_tombstones_nothing_and_says_why() {
    // The sanity check reads the turn's words: the scripted turns say what they extract.
    let t1 = "Ana prefers email for invoices and quotes.";
    let t2 = "Ben prefers email for invoices and quotes.";
    let model2 = Arc::new(AlwaysContradicts {
        extractions: vec![(t1, json!([sem(t1, &["Ana"])])), (t2, json!([sem(t2, &["Ben"])]))],
        reconciles: Mutex::new(vec![]),
    });
    let ns = Namespace::new("t").unwrap();
    let e = engine(model2.clone());
    e.remember(&ns, "user", t1).await.unwrap();
    let r = e.remember(&ns, "user", t2).await.unwrap();
    assert_eq!(model2.reconciles.lock().unwrap().len(), 1, "the look-alike reached the model");
    assert_eq!(r.outcomes[0].kind, OutcomeKind::Inserted, "{r:?}");
    assert!(r.outcomes[0].tombstoned.is_empty());
    let note = r.notes.iter().find(|n| n.contains("not applied")).unwrap_or_else(|| panic!("{:?}", r.notes));
    assert!(
        note.contains("share no subject") && note.contains("small-model-q4") && note.contains("the values differ"),
        "{note}"
    );
    assert_eq!(active(&e, &ns).await.len(), 2, "both memories stay active");
}

#[tokio::test]
async fn a_turn_the_model_did_not_extract_from_its_words_is_refused_per_item() {
    let model = Arc::new(AlwaysContradicts {
        extractions: vec![(
            "The lead time from S-208 is 35 days.",
            json!([sem("Tom Becker is allergic to nuts.", &["Tom Becker"])]),
        )],
        reconciles: Mutex::new(vec![]),
    });
    let e = engine(model);
    let ns = Namespace::new("t").unwrap();
    let r = e.remember(&ns, "user", "The lead time from S-208 is 35 days.").await.unwrap();
    assert_eq!(r.outcomes[0].kind, OutcomeKind::Unsupported, "{r:?}");
    assert!(r.outcomes[0].detail.contains("does not support"), "{}", r.outcomes[0].detail);
    assert!(active(&e, &ns).await.is_empty(), "the copied example was not written");
}

#[tokio::test]
async fn far_neighbours_never_reach_the_model_and_items_of_one_turn_never_supersede_each_other() {
    let t1 = "Northwind Labs ships from Leeds.";
    let t2 = "Maria Lopez is allergic to penicillin. Maria Lopez is also allergic to latex.";
    let model = Arc::new(AlwaysContradicts {
        extractions: vec![
            (t1, json!([sem(t1, &["Northwind Labs"])])),
            (
                t2,
                json!([
                    sem("Maria Lopez is allergic to penicillin.", &["Maria Lopez"]),
                    sem("Maria Lopez is also allergic to latex.", &["Maria Lopez"])
                ]),
            ),
        ],
        reconciles: Mutex::new(vec![]),
    });
    let e = engine(model.clone());
    let ns = Namespace::new("t").unwrap();
    e.remember(&ns, "user", t1).await.unwrap();
    let r = e.remember(&ns, "user", t2).await.unwrap();
    let seen = model.reconciles.lock().unwrap().clone();
    // The first allergy had no relevant neighbour (the best of nothing is not sent); the
    // second was compared with the first, of the same turn, only.
    assert_eq!(seen.len(), 1, "{seen:?}");
    let neighbours = seen[0]["neighbours"].as_array().unwrap();
    assert_eq!(neighbours.len(), 1, "{seen:?}");
    assert_eq!(neighbours[0]["id"], json!(1), "neighbours are numbered in the prompt, not by store id");
    assert!(neighbours[0]["content"].as_str().unwrap().contains("penicillin"));
    assert!(r.outcomes.iter().all(|o| o.kind == OutcomeKind::Inserted), "{r:?}");
    assert!(r.notes.iter().any(|n| n.contains("same turn")), "{:?}", r.notes);
    assert_eq!(active(&e, &ns).await.len(), 3);
}

#[tokio::test]
async fn a_supersession_the_model_decided_names_the_model_and_its_reason_in_why() {
    let t1 = "Maria Lopez takes 500 mg metformin daily.";
    let t2 = "Maria Lopez now takes 1000 mg metformin daily.";
    let model = Arc::new(AlwaysContradicts {
        extractions: vec![(t1, json!([sem(t1, &["Maria Lopez"])])), (t2, json!([sem(t2, &["Maria Lopez"])]))],
        reconciles: Mutex::new(vec![]),
    });
    let e = engine(model);
    let ns = Namespace::new("t").unwrap();
    let first = e.remember(&ns, "user", t1).await.unwrap();
    let old = first.outcomes[0].memory.unwrap();
    let r = e.remember(&ns, "user", t2).await.unwrap();
    assert_eq!(r.outcomes[0].kind, OutcomeKind::Superseded, "{r:?}");
    assert!(
        r.outcomes[0].detail.contains("decided by model live / small-model-q4: the values differ"),
        "{}",
        r.outcomes[0].detail
    );
    let why = e.why(&ns, old).await.unwrap();
    let Status::Tombstoned { reason, .. } = &why.memory.status else { panic!("{:?}", why.memory.status) };
    assert!(
        reason.contains("decided by model live / small-model-q4") && reason.contains("the values differ"),
        "{reason}"
    );
    assert!(why.events.iter().any(|ev| format!("{ev:?}").contains("decided by model")), "{:?}", why.events);
}
