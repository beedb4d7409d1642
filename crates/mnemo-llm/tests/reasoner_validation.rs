#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Bad model answers are errors naming the problem (and who answered), never panics.
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mnemo_contract::*;
use mnemo_llm::{ChatModel, ChatRequest, ChatResponse, LlmError, LlmReasoner};

/// A model that answers whatever it is told to, as "scripted-1" on a live-looking client.
struct Scripted {
    answer: Mutex<Result<String, String>>,
    model: String,
    seen: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    fn new(answer: &str) -> Arc<Self> {
        Arc::new(Scripted {
            answer: Mutex::new(Ok(answer.into())),
            model: "scripted-1".into(),
            seen: Mutex::new(vec![]),
        })
    }
    fn failing(msg: &str) -> Arc<Self> {
        Arc::new(Scripted { answer: Mutex::new(Err(msg.into())), model: "scripted-1".into(), seen: Mutex::new(vec![]) })
    }
    fn set(&self, answer: &str) {
        *self.answer.lock().unwrap() = Ok(answer.into());
    }
}

#[async_trait]
impl ChatModel for Scripted {
    async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.seen.lock().unwrap().push(req.clone());
        match &*self.answer.lock().unwrap() {
            Ok(a) => Ok(ChatResponse {
                content: a.clone(),
                model: self.model.clone(),
                client: ClientKind::Live,
                usage: Some((10, 5)),
            }),
            Err(e) => Err(LlmError::Unavailable(e.clone())),
        }
    }
    fn configured(&self) -> ModelInfo {
        ModelInfo { client: ClientKind::Live, model: "configured-model".into() }
    }
}

fn turn(text: &str) -> Turn {
    Turn {
        id: TurnId(1),
        namespace: Namespace::default(),
        source: "user".into(),
        at: Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap(),
        text: text.into(),
        external_id: None,
    }
}

fn mem(id: i64) -> Memory {
    let at = Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap();
    Memory {
        validity: Default::default(),
        id: MemoryId(id),
        namespace: Namespace::default(),
        kind: MemoryKind::Semantic,
        content: format!("memory {id}"),
        claim: None,
        entities: vec![],
        importance: 0.5,
        reinforcements: 0,
        sources: vec![],
        provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "fake-qwen".into() },
        created_at: at,
        last_confirmed_at: at,
        last_accessed_at: None,
        pinned: false,
        embedding: None,
        status: Status::Active,
        rev: 1,
    }
}

fn cand() -> Candidate {
    Candidate {
        validity: Default::default(),
        kind: MemoryKind::Semantic,
        content: "x".into(),
        claim: None,
        entities: vec![],
        importance: None,
        pinned: false,
        cardinality: Default::default(),
    }
}

/// The message of an invalid answer (a reasoner failure of kind `BadAnswer`).
fn reasoner_err(e: CoreError) -> String {
    reasoner_failure(ModelErrorKind::BadAnswer, e)
}

/// The message of a reasoner failure of `kind` (what follows "reasoner error: ").
fn reasoner_failure(kind: ModelErrorKind, e: CoreError) -> String {
    match e {
        CoreError::ModelFailure { role: ModelRole::Reasoner, kind: got, source } if got == kind => source.to_string(),
        other => panic!("expected a reasoner error of kind {kind}, got {other:?}"),
    }
}

#[tokio::test]
async fn an_invalid_answer_gets_one_repair_attempt() {
    let s = Scripted::new("not json at all");
    let r = LlmReasoner::new(s.clone());
    let e = reasoner_err(r.extract(&turn("hi")).await.unwrap_err());
    assert!(e.contains("repair"), "{e}");
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "one first attempt, one repair");
    let repair = seen[1].repair.clone().unwrap();
    assert_eq!(repair.previous, "not json at all");
    assert!(repair.problem.contains("not valid JSON"), "{}", repair.problem);
}

#[tokio::test]
async fn malformed_json_is_named() {
    let r = LlmReasoner::new(Scripted::new("Sure! Here are the memories: {candidates: [}"));
    let e = reasoner_err(r.extract(&turn("hi")).await.unwrap_err());
    assert!(e.contains("extract") && e.contains("not valid JSON"), "{e}");
    assert!(e.contains("live") && e.contains("scripted-1"), "names who answered: {e}");
}

#[tokio::test]
async fn verdict_id_outside_the_neighbours_is_refused() {
    let r = LlmReasoner::new(Scripted::new(r#"{"verdict": "contradicts", "ids": [1, 99]}"#));
    let e = reasoner_err(r.reconcile(&cand(), &[mem(1), mem(2)]).await.unwrap_err());
    assert!(e.contains("ids[1] = 99") && e.contains("not the id of any given neighbour"), "{e}");
    assert!(e.contains("scripted-1"), "{e}");
}

#[tokio::test]
async fn unknown_kind_is_refused() {
    let r = LlmReasoner::new(Scripted::new(
        r#"{"items": [{"memory": {"kind": "fact", "content": "Ana prefers email", "claim": null, "entities": [], "importance": null, "pinned": false}}]}"#,
    ));
    let e = reasoner_err(r.extract(&turn("Ana prefers email")).await.unwrap_err());
    assert!(e.contains("items[0].memory.kind") && e.contains("unknown kind \"fact\""), "{e}");
}

#[tokio::test]
async fn other_bad_answers_are_refused() {
    let s = Scripted::new("");
    let r = LlmReasoner::new(s.clone());
    let cases: [(&str, &str); 7] = [
        ("", "empty"),
        ("[]", "must be a JSON object"),
        (r#"{"verdict": "novel"}"#, "missing key \"ids\""),
        (r#"{"verdict": "duplicate", "ids": [1, 2]}"#, "exactly one id"),
        (r#"{"verdict": "maybe", "ids": []}"#, "unknown verdict"),
        (r#"{"verdict": "novel", "ids": [], "confidence": 0.9}"#, "unknown key \"confidence\""),
        (r#"{"verdict": "contradicts", "ids": [1.5]}"#, "integer id"),
    ];
    for (answer, problem) in cases {
        s.set(answer);
        let e = reasoner_err(r.reconcile(&cand(), &[mem(1), mem(2)]).await.unwrap_err());
        assert!(e.contains(problem), "answer {answer:?}: {e}");
    }
    s.set(r#"{"ids": [3]}"#);
    let e = reasoner_err(r.resolve_forget("memory 3", &[mem(1), mem(2)]).await.unwrap_err());
    assert!(e.contains("not the id of any given candidate"), "{e}");
    s.set(r#"{"items": [{"forget": {"entity": "Ben", "attribute": 3}}]}"#);
    let e = reasoner_err(r.extract(&turn("x")).await.unwrap_err());
    assert!(e.contains("items[0].forget") && e.contains("attribute"), "{e}");
}

#[tokio::test]
async fn slips_with_one_meaning_are_mended_and_said_in_the_notes() {
    // What small models write: prose around the JSON, an empty note, a claim on an episode, a
    // forget of an entity without its attribute, an unknown key.
    let s = Scripted::new(
        r#"Here is the JSON: {"items": [
            {"memory": {"kind": "Episodic", "content": "Ben's phone is 555.", "confidence": 0.9,
                        "claim": {"entity": "Ben", "attribute": "phone", "value": "555"}}},
            {"forget": {"entity": "Ana"}}], "notes": [""]} Hope that helps!"#,
    );
    let x = LlmReasoner::new(s.clone()).extract(&turn("x")).await.unwrap();
    let ExtractedItem::Memory(m) = &x.items[0] else { panic!("{x:?}") };
    assert_eq!(m.kind, MemoryKind::Semantic, "a claim is a fact");
    assert!(matches!(&x.items[1], ExtractedItem::Forget(ForgetCommand::Text(t)) if t == "Ana"), "{x:?}");
    let notes = x.notes.join(" | ");
    for said in [
        "text around its JSON",
        "kept as semantic",
        "forgetting by its text",
        "\"confidence\"",
        "empty or non-text note",
    ] {
        assert!(notes.contains(said), "{said:?} not in {notes}");
    }
    assert_eq!(s.seen.lock().unwrap().len(), 1, "mended without a repair call");
}

#[tokio::test]
async fn the_repair_attempt_is_not_a_replay_of_the_first_call() {
    let s = Scripted::new(r#"{"verdict": "maybe", "ids": []}"#);
    let r = LlmReasoner::new(s.clone());
    r.reconcile(&cand(), &[mem(1)]).await.unwrap_err();
    let seen = s.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2);
    assert!(seen[1].repair.as_ref().is_some_and(|x| x.problem.contains("unknown verdict")));
    assert!(seen[1].temperature > seen[0].temperature, "the repair samples a little: {seen:?}");
}

#[tokio::test]
async fn valid_answers_pass_and_requests_are_well_formed() {
    let s = Scripted::new("```json\n{\"verdict\": \"duplicate\", \"ids\": [2], \"reason\": \"same fact\"}\n```");
    let r = LlmReasoner::new(s.clone()).with_model("qwen3-max");
    assert_eq!(r.reconcile(&cand(), &[mem(1), mem(2)]).await.unwrap(), Verdict::Duplicate(MemoryId(2)));
    let req = s.seen.lock().unwrap()[0].clone();
    assert_eq!(req.model, "qwen3-max");
    assert!(req.json && req.temperature == 0.0);
    assert!(req.system.starts_with("mnemo-task: reconcile/v1"));
    let user: serde_json::Value = serde_json::from_str(&req.user).unwrap();
    assert_eq!(user["neighbours"][1]["id"], 2);
    // No shared "last model" state: model_info says who is configured; results carry who answered.
    assert_eq!(r.model_info(), ModelInfo { client: ClientKind::Live, model: "configured-model".into() });
    s.set(r#"{"items": []}"#);
    let x = r.extract(&turn("x")).await.unwrap();
    assert_eq!(x.model, ModelInfo { client: ClientKind::Live, model: "scripted-1".into() });
}

#[tokio::test]
async fn transport_errors_and_missing_provenance_are_errors() {
    let r = LlmReasoner::new(Scripted::failing("connection refused"));
    assert_eq!(r.model_info().model, "configured-model", "before any answer: the configured client");
    // The call's own failure is told apart from an invalid answer, and keeps the client's kind
    // (here: no answer, so unavailable; a rate limit stays rate-limited).
    let e = reasoner_failure(ModelErrorKind::Unavailable, r.extract(&turn("x")).await.unwrap_err());
    assert!(e.contains("connection refused") && e.contains("qwen-plus"), "names the model asked for: {e}");

    let anonymous = Arc::new(Scripted {
        answer: Mutex::new(Ok(r#"{"ids": []}"#.into())),
        model: "  ".into(),
        seen: Mutex::new(vec![]),
    });
    let r = LlmReasoner::new(anonymous);
    let e = reasoner_err(r.resolve_forget("x", &[mem(1)]).await.unwrap_err());
    assert!(e.contains("no model string"), "{e}");
}

fn plan_line(id: i64, e: &str, a: &str, v: &str) -> PlanLine {
    PlanLine {
        id: MemoryId(id),
        kind: MemoryKind::Semantic,
        content: format!("{e} | {a} | {v}"),
        claim: Some(Claim { entity: e.into(), attribute: a.into(), value: v.into() }),
        trust: Some(0.9),
    }
}

#[tokio::test]
async fn a_plan_names_memories_by_number_and_comes_back_with_their_ids() {
    let chat = Scripted::new(
        r#"{"answer": "Order now: lead time 35 days.", "steps": ["Use memory 2."], "uses": [{"id": 2, "value": "35 days"}]}"#,
    );
    let r = LlmReasoner::new(chat.clone());
    let task = Task { query: "reorder IC-MC-44".into(), about: Some(("IC-MC-44".into(), "lead time".into())) };
    let lines = [
        plan_line((7 << 32) | 4, "S-208", "city", "Lyon"),
        plan_line((7 << 32) | 9, "IC-MC-44", "lead time", "35 days"),
    ];
    let p = r.plan(&task, &lines).await.unwrap();
    assert_eq!(p.uses, vec![PlanUse { memory: MemoryId((7 << 32) | 9), value: Some("35 days".into()) }]);
    assert_eq!(p.steps, vec!["Use memory m9.".to_string()], "a step's number becomes the memory's id");
    assert_eq!(p.model.model, "scripted-1", "who planned is who answered");
    let sent = &chat.seen.lock().unwrap()[0];
    assert!(sent.system.starts_with("mnemo-task: plan/v1"), "{}", sent.system);
    assert!(sent.user.contains("\"id\":2") && !sent.user.contains(&((7i64 << 32) | 9).to_string()), "{}", sent.user);
}

#[tokio::test]
async fn a_plan_citing_no_given_memory_or_without_an_answer_is_refused() {
    let lines = [plan_line(1, "A", "b", "c")];
    let task = Task { query: "q".into(), about: None };
    for (answer, wanted) in [
        (
            r#"{"answer": "x", "steps": [], "uses": [{"id": 5, "value": null}]}"#,
            "uses[0].id = 5 is not the id of any given memory",
        ),
        (r#"{"answer": " ", "steps": [], "uses": []}"#, "answer must not be empty"),
        (r#"{"answer": "x", "steps": [], "uses": [{"id": 1}, {"id": 1}]}"#, "listed twice"),
        (r#"{"answer": "x", "uses": []}"#, "missing key \"steps\""),
    ] {
        let r = LlmReasoner::new(Scripted::new(answer));
        let e = reasoner_err(r.plan(&task, &lines).await.unwrap_err());
        assert!(e.contains(wanted) && e.contains("plan"), "{answer}: {e}");
    }
    // An empty pack asks no model.
    let chat = Scripted::failing("must not be called");
    let p = LlmReasoner::new(chat.clone()).plan(&task, &[]).await.unwrap();
    assert!(p.uses.is_empty() && chat.seen.lock().unwrap().is_empty());
}
