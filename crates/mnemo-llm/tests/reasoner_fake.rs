#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The LLM reasoner round-trips through the fake model: prompts built, answered, parsed and
//! validated — the code path a live model will take.
use std::sync::Arc;

use mnemo_contract::*;
use mnemo_llm::fake::grammar;
use mnemo_llm::{ChatModel, ChatRequest, FakeQwen, LlmReasoner};

fn reasoner() -> LlmReasoner {
    LlmReasoner::new(Arc::new(FakeQwen::default()))
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

fn mem(id: i64, kind: MemoryKind, content: &str, claim: Option<Claim>) -> Memory {
    let at = Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap();
    Memory {
        validity: Default::default(),
        id: MemoryId(id),
        namespace: Namespace::default(),
        kind,
        content: content.into(),
        entities: claim.iter().map(|c| c.entity.clone()).collect(),
        claim,
        importance: 0.8,
        reinforcements: 0,
        sources: vec!["user".into()],
        provenance: Provenance { turns: vec![TurnId(1)], client: ClientKind::Fake, model: "fake-qwen".into() },
        created_at: at,
        last_confirmed_at: at,
        last_accessed_at: None,
        pinned: false,
        embedding: None,
        status: Status::Active,
        rev: id as u64,
    }
}

fn claim_mem(id: i64, e: &str, a: &str, v: &str) -> Memory {
    mem(id, MemoryKind::Semantic, &format!("{e} | {a} | {v}"), Some(Claim::new(e, a, v)))
}

fn cand(kind: MemoryKind, content: &str, claim: Option<Claim>) -> Candidate {
    Candidate {
        validity: Default::default(),
        kind,
        content: content.into(),
        entities: vec![],
        claim,
        importance: None,
        pinned: false,
        cardinality: Default::default(),
    }
}

#[tokio::test]
async fn extract_equals_the_grammar() {
    let text = "Hello there, this prose is ignored offline.\n\
                [SEM] IC-MC-44 from S-208 | lead time | 21 days\n\
                [PROC pin] Always add a 5-day buffer for S-208 orders.\n\
                [EPI imp=0.2] Met Ana from Northwind Labs at the fair.\n\
                [SEM imp=1.5] Ana prefers email\n\
                [FORGET] Ben | phone\n\
                [FORGET] the note about the standup";
    let r = reasoner();
    let x = r.extract(&turn(text)).await.unwrap();
    let parsed = grammar::parse(text);
    let expected: Vec<Candidate> = parsed.candidates().cloned().collect();
    let got: Vec<Candidate> = x.candidates().cloned().collect();
    assert_eq!(got, expected);
    assert_eq!(x.items, parsed.lines, "items keep the turn order");
    assert_eq!(got.len(), 4);
    assert_eq!(got[3].importance, Some(1.5), "importance passes through unclamped");
    assert_eq!(
        x.forgets().cloned().collect::<Vec<_>>(),
        vec![
            ForgetCommand::Claim { entity: "Ben".into(), attribute: "phone".into() },
            ForgetCommand::Text("the note about the standup".into()),
        ]
    );
    assert_eq!(x.model, ModelInfo { client: ClientKind::Fake, model: "fake-qwen".into() });
}

#[tokio::test]
async fn an_untagged_turn_is_kept_as_one_episodic_memory_of_its_words() {
    let x = reasoner().extract(&turn("Our lead time from  S-208\nis now 35 days.")).await.unwrap();
    assert_eq!(x.items.len(), 1, "{x:?}");
    let ExtractedItem::Memory(c) = &x.items[0] else { panic!("{x:?}") };
    assert_eq!(c.kind, MemoryKind::Episodic);
    assert_eq!(c.content, "Our lead time from S-208 is now 35 days.");
    assert!(c.claim.is_none(), "the fake extracts no fact from prose");
}

#[tokio::test]
async fn prose_beside_tagged_lines_yields_nothing_of_its_own() {
    let x = reasoner().extract(&turn("Some context.\n[SEM] Ben | role | buyer")).await.unwrap();
    assert_eq!(x.items.len(), 1, "{x:?}");
    // A malformed tag is a mistake in the grammar, said in a note, not prose to keep.
    let x = reasoner().extract(&turn("[NOPE] something")).await.unwrap();
    assert!(x.items.is_empty() && !x.notes.is_empty(), "{x:?}");
}

#[tokio::test]
async fn reconcile_claims_duplicate_contradicts_novel() {
    let r = reasoner();
    let n = vec![
        claim_mem(1, "IC-MC-44 from S-208", "lead time", "21 days"),
        claim_mem(2, "IC-MC-44 from S-208", "price", "3 USD"),
        claim_mem(3, "ic-mc-44  from s-208", "Lead Time", "28 days"),
    ];
    let c = |v: &str| cand(MemoryKind::Semantic, "x", Some(Claim::new("IC-MC-44 from S-208", "lead time", v)));
    assert_eq!(r.reconcile(&c("21 days"), &n).await.unwrap(), Verdict::Duplicate(MemoryId(1)));
    assert_eq!(r.reconcile(&c("  21   days "), &n).await.unwrap(), Verdict::Duplicate(MemoryId(1)));
    assert_eq!(r.reconcile(&c("35 days"), &n).await.unwrap(), Verdict::Contradicts(vec![MemoryId(1), MemoryId(3)]));
    // Values compare case-sensitively.
    assert_eq!(r.reconcile(&c("21 Days"), &n).await.unwrap(), Verdict::Contradicts(vec![MemoryId(1), MemoryId(3)]));
    let other = cand(MemoryKind::Semantic, "x", Some(Claim::new("IC-MC-44 from S-208", "moq", "100")));
    assert_eq!(r.reconcile(&other, &n).await.unwrap(), Verdict::Novel);
    assert_eq!(r.reconcile(&c("35 days"), &[]).await.unwrap(), Verdict::Novel);
}

#[tokio::test]
async fn reconcile_without_claim() {
    let r = reasoner();
    let n = vec![
        mem(5, MemoryKind::Procedural, "Always add a 5-day buffer for S-208 orders.", None),
        mem(6, MemoryKind::Semantic, "Ana prefers email.", None),
    ];
    let same = cand(MemoryKind::Procedural, "always add a 5-day  buffer for S-208 orders", None);
    assert_eq!(r.reconcile(&same, &n).await.unwrap(), Verdict::Duplicate(MemoryId(5)));
    let reordered = cand(MemoryKind::Procedural, "For S-208 orders: always add a 5-day buffer!", None);
    // The same words in another order are not the same statement (they may say the opposite).
    assert_eq!(r.reconcile(&reordered, &n).await.unwrap(), Verdict::Novel);
    let swapped = cand(MemoryKind::Procedural, "Ana paid Bob 500", None);
    let paid = vec![mem(9, MemoryKind::Procedural, "Bob paid Ana 500", None)];
    assert_eq!(r.reconcile(&swapped, &paid).await.unwrap(), Verdict::Novel);
    let other_kind = cand(MemoryKind::Episodic, "Ana prefers email", None);
    assert_eq!(r.reconcile(&other_kind, &n).await.unwrap(), Verdict::Novel);
    // The fake does not recognise paraphrase; a live model is expected to.
    let paraphrase = cand(MemoryKind::Semantic, "Ana likes to be emailed.", None);
    assert_eq!(r.reconcile(&paraphrase, &n).await.unwrap(), Verdict::Novel);
}

#[tokio::test]
async fn resolve_forget_is_precise() {
    let r = reasoner();
    let ms = vec![
        mem(1, MemoryKind::Procedural, "The daily standup is at 9:30 in room B.", None),
        mem(2, MemoryKind::Procedural, "The weekly planning is at 10:00 in room B.", None),
        claim_mem(3, "Ben", "phone", "+1 555 0100"),
        mem(4, MemoryKind::Episodic, "Standups were moved online during the strike.", None),
    ];
    let ids = r.resolve_forget("the note about the daily standup", &ms).await.unwrap();
    assert_eq!(ids, vec![MemoryId(1)]);
    let ids = r.resolve_forget("standups", &ms).await.unwrap();
    assert_eq!(ids, vec![MemoryId(1), MemoryId(4)], "plural matches both ways");
    let ids = r.resolve_forget("Ben's phone", &ms).await.unwrap();
    assert_eq!(ids, vec![MemoryId(3)], "claim words count");
    assert!(r.resolve_forget("forget that note", &ms).await.unwrap().is_empty(), "no content word, no target");
    // A vague command designates every memory holding its words (a live model may ask back).
    let ids = r.resolve_forget("the room", &ms).await.unwrap();
    assert_eq!(ids, vec![MemoryId(1), MemoryId(2)]);
    assert!(r.resolve_forget("the daily standup", &[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn model_info_is_loud() {
    let r = reasoner().with_model("qwen-plus");
    // Before any call: the configured client.
    assert_eq!(r.model_info(), ModelInfo { client: ClientKind::Fake, model: "fake-qwen".into() });
    r.extract(&turn("[SEM] a | b | c")).await.unwrap();
    // After: the model string the answer echoed, not the one asked for.
    assert_eq!(r.model_info().model, "fake-qwen");
    assert_eq!(r.requested_model(), "qwen-plus");
}

#[tokio::test]
async fn fake_refuses_what_it_does_not_recognise() {
    let fake = FakeQwen::default();
    let req = ChatRequest {
        model: "qwen-plus".into(),
        system: "You are a helpful assistant.".into(),
        user: "What is the capital of France?".into(),
        max_tokens: 100,
        temperature: 0.0,
        json: true,
        repair: None,
    };
    let err = fake.chat(&req).await.unwrap_err().to_string();
    assert!(err.contains("does not recognise"), "{err}");
    let wrong_input = ChatRequest {
        system: mnemo_llm::prompts::Task::Reconcile.system_prompt().into(),
        user: "{\"candidate\": 1}".into(),
        ..req.clone()
    };
    assert!(fake.chat(&wrong_input).await.unwrap_err().to_string().contains("reconcile"));
    let not_json = ChatRequest {
        system: mnemo_llm::prompts::Task::Extract.system_prompt().into(),
        user: "{\"turn\": {\"source\": \"u\", \"at\": \"2026-07-01T09:00:00Z\", \"text\": \"x\"}}".into(),
        json: false,
        ..req
    };
    assert!(fake.chat(&not_json).await.unwrap_err().to_string().contains("JSON mode"));
}
