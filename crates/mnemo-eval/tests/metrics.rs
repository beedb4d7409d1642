//! Metric arithmetic on hand-built cases: Wilson intervals, probe scoring, pooling (counts are
//! added, rates never averaged), matchers, the baselines' retrieval and answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The built-in kinds the scenarios assemble, linked so their registrations are kept.
use mnemo_llm as _;
use mnemo_store as _;

use mnemo_contract::*;
use mnemo_eval::answer::{ranked_turns_answer, turn_claim};
use mnemo_eval::baselines::{naive_rag, recent_only, ChatTurn};
use mnemo_eval::metrics::{score_probe, Counts, Rate};
use mnemo_eval::outcome::{MatcherOutcome, SystemOutcome};
use mnemo_eval::scenario::{Matcher, Probe};

fn probe(about: Option<(&str, &str)>, expect: Option<&str>, in_pack: &[&str], absent: &[&str]) -> Probe {
    Probe {
        index: 0,
        line: 1,
        offset: "1d".into(),
        at: Timestamp(0),
        namespace: Namespace::default(),
        query: "q".into(),
        about: about.map(|(e, a)| (e.to_string(), a.to_string())),
        expect: expect.map(str::to_string),
        stale: vec!["21 days".into()],
        in_pack: in_pack.iter().map(|s| s.to_string()).collect(),
        absent: absent.iter().map(|s| s.to_string()).collect(),
        decision: None,
        plan_uses: None,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-3
}

#[test]
fn rates_carry_n_and_wilson_bounds() {
    let r = Rate::new(5, 10, 0.0);
    assert_eq!((r.k, r.n), (5, 10));
    assert!(close(r.value, 0.5) && close(r.lo, 0.2366) && close(r.hi, 0.7634), "{r:?}");
    let r = Rate::new(0, 59, 0.0);
    assert!(r.value == 0.0 && r.lo == 0.0 && close(r.hi, 0.0611), "{r:?}");
    let r = Rate::new(0, 0, 1.0);
    assert_eq!((r.value, r.lo, r.hi), (1.0, 0.0, 1.0));
    assert_eq!(Rate::new(1, 4, 0.0).cell(), "0.250 [0.046, 0.699] n=4");
}

#[test]
fn probe_scoring_follows_metrics_md() {
    let p = probe(Some(("A", "lead time")), Some("35 days"), &[], &[]);
    let s = score_probe(&p, Some("  35   days "), &[]);
    assert!(s.correct && !s.wrong && !s.missed, "white space is folded: {s:?}");
    let s = score_probe(&p, Some("35 Days"), &[]);
    assert!(!s.correct && s.wrong && !s.missed, "values compare case-sensitively");
    let s = score_probe(&p, Some("21 days"), &[]);
    assert!(s.wrong && s.stale_answer);
    let s = score_probe(&p, None, &[]);
    assert!(!s.correct && !s.wrong && s.missed);

    let nothing = probe(Some(("A", "phone")), None, &[], &[]);
    assert!(score_probe(&nothing, None, &[]).correct);
    let s = score_probe(&nothing, Some("+49 1"), &[]);
    assert!(!s.correct && s.wrong && !s.missed, "an answer where none is expected is wrong");

    let content = probe(None, None, &["5-day buffer"], &["4711"]);
    let s = score_probe(&content, None, &["Always add a 5-day buffer."]);
    assert!(s.correct);
    let s = score_probe(&content, None, &["something else"]);
    assert!(!s.correct && s.missed && !s.wrong && s.missing_in_pack == vec!["5-day buffer".to_string()]);
    let s = score_probe(&content, None, &["Always add a 5-day buffer.", "gate code 4711"]);
    assert!(!s.correct && !s.missed && !s.wrong, "absent only affects correctness: {s:?}");
}

#[test]
fn pooling_adds_counts_never_averages_rates() {
    let a = Counts { scenarios: 1, passed: 1, probes: 1, wrong: 1, ..Counts::default() };
    let b = Counts {
        scenarios: 1,
        passed: 0,
        probes: 9,
        wrong: 0,
        missed: 3,
        tombstoned: 4,
        tombstoned_matched: 3,
        forgotten_matchers: 2,
        forgotten_met: 1,
        ..Counts::default()
    };
    let all = Counts::pooled([&a, &b]);
    // The average of the two rates would be 0.5; pooled it is 1/10.
    assert!(close(all.wrong_fact_rate().value, 0.1));
    assert_eq!(all.wrong_fact_rate().n, 10);
    assert!(close(all.miss_rate().value, 0.3));
    assert!(close(all.forgetting_precision().value, 0.75) && all.forgetting_precision().n == 4);
    assert!(close(all.forgetting_recall().value, 0.5));
    assert!(close(all.pass_rate().value, 0.5));
    // Nothing tombstoned: precision 1.0; no matchers: recall 1.0.
    assert_eq!(a.forgetting_precision().value, 1.0);
    assert_eq!(a.forgetting_recall().value, 1.0);
}

fn matcher_outcome(list: &'static str, met: bool) -> MatcherOutcome {
    MatcherOutcome { list, matcher: "m".into(), met, matched: vec![] }
}

#[test]
fn a_scenario_passes_only_when_everything_holds() {
    let p = probe(Some(("A", "b")), Some("c"), &[], &[]);
    let good = mnemo_eval::outcome::ProbeOutcome {
        probe: p.clone(),
        score: score_probe(&p, Some("c"), &[]),
        evidence: mnemo_eval::outcome::Evidence::None,
        pack: vec![],
    };
    let ok = SystemOutcome::new(
        "mnemo",
        vec![good.clone()],
        vec![matcher_outcome("forgotten", true), matcher_outcome("kept", true)],
        1,
        vec![],
    );
    assert!(ok.pass && ok.counts.passed == 1);
    let collateral = SystemOutcome::new(
        "mnemo",
        vec![good.clone()],
        vec![matcher_outcome("forgotten", true)],
        2,
        vec!["memory 9".into()],
    );
    assert!(!collateral.pass);
    assert!(close(collateral.counts.forgetting_precision().value, 0.5));
    let unkept = SystemOutcome::new("mnemo", vec![good.clone()], vec![matcher_outcome("kept", false)], 0, vec![]);
    assert!(!unkept.pass);
    let unforgotten = SystemOutcome::new("naive_rag", vec![good], vec![matcher_outcome("forgotten", false)], 0, vec![]);
    assert!(
        !unforgotten.pass
            && unforgotten.counts.forgetting_precision().value == 1.0
            && unforgotten.counts.forgetting_recall().value == 0.0
    );
}

fn memory(ns: &str, content: &str, claim: Option<Claim>, status: Status) -> Memory {
    Memory {
        validity: Default::default(),
        id: MemoryId(1),
        namespace: Namespace::new(ns).unwrap(),
        kind: MemoryKind::Semantic,
        content: content.into(),
        claim,
        entities: vec![],
        importance: 0.8,
        reinforcements: 0,
        sources: vec!["user".into()],
        provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "fake".into() },
        created_at: Timestamp(0),
        last_confirmed_at: Timestamp(0),
        last_accessed_at: None,
        pinned: false,
        embedding: None,
        status,
        rev: 1,
    }
}

#[test]
fn matchers_select_by_claim_content_reason_and_namespace() {
    let decayed = Status::Tombstoned {
        reason: "decayed: salience 0.06 < threshold 0.08".into(),
        at: Timestamp(1),
        superseded_by: None,
    };
    let m = memory(
        "acme",
        "S-208 | lead time | 21 days",
        Some(Claim::new("S-208", "lead time", "21 days")),
        Status::Active,
    );
    let by_claim = Matcher {
        entity: Some(" s-208 ".into()),
        attribute: Some("LEAD  time".into()),
        value: Some("21  days".into()),
        ..Matcher::default()
    };
    assert!(by_claim.matches(&m));
    let other_value = Matcher { value: Some("21 Days".into()), ..by_claim.clone() };
    assert!(!other_value.matches(&m), "values are case-sensitive");
    let any_value = Matcher { value: None, ..by_claim.clone() };
    assert!(any_value.matches(&m));
    let wrong_ns = Matcher { namespace: Some(Namespace::new("globex").unwrap()), ..by_claim };
    assert!(!wrong_ns.matches(&m));

    let episode = memory("acme", "The dock is closed for repairs.", None, decayed);
    let by_content = Matcher { content: Some("closed for repairs".into()), ..Matcher::default() };
    assert!(by_content.matches(&episode));
    let reason = Matcher { reason: Some("decayed".into()), ..by_content.clone() };
    assert!(reason.matches(&episode));
    let other_reason = Matcher { reason: Some("forgotten on command".into()), ..by_content };
    assert!(!other_reason.matches(&episode));
    assert!(
        !reason.matches(&memory("acme", "The dock is closed for repairs.", None, Status::Active)),
        "a reason needs a tombstone"
    );
}

fn turn(seq: usize, text: &str, tokens: usize, vector: Vec<f32>) -> ChatTurn {
    ChatTurn {
        seq,
        namespace: Namespace::default(),
        at: Timestamp(seq as i64),
        source: "user".into(),
        text: text.into(),
        tokens,
        vector,
    }
}

#[test]
fn naive_rag_ranks_by_similarity_and_skips_what_does_not_fit() {
    let t0 = turn(0, "a", 10, vec![1.0, 0.0]);
    let t1 = turn(1, "b", 50, vec![0.9, 0.1]);
    let t2 = turn(2, "c", 10, vec![0.0, 1.0]);
    let t3 = turn(3, "d", 10, vec![1.0, 0.0]);
    let turns = vec![&t0, &t1, &t2, &t3];
    let got: Vec<usize> = naive_rag(&turns, &[1.0, 0.0], 30).iter().map(|t| t.seq).collect();
    // t3 and t0 tie on similarity (newer first); t1 does not fit and is skipped; t2 still fits.
    assert_eq!(got, vec![3, 0, 2]);
}

#[test]
fn recent_only_takes_the_newest_until_one_does_not_fit() {
    let t0 = turn(0, "a", 5, vec![]);
    let t1 = turn(1, "b", 30, vec![]);
    let t2 = turn(2, "c", 10, vec![]);
    let turns = vec![&t0, &t1, &t2];
    let got: Vec<usize> = recent_only(&turns, 35).iter().map(|t| t.seq).collect();
    assert_eq!(got, vec![2], "the window ends at the first turn that does not fit");
    assert_eq!(recent_only(&turns, 45).len(), 3);
}

#[test]
fn baseline_answers_read_tagged_lines() {
    let text = "chatter\n[SEM] A | b | one\n[FORGET] A | b\n[SEM]  a |  B | two ";
    assert_eq!(turn_claim(text, "A", "b").as_deref(), Some("two"), "the last line of the turn wins");
    assert_eq!(turn_claim("[FORGET] A | b", "A", "b"), None, "forget lines assert nothing");
    assert_eq!(turn_claim("[EPI] A | b | c", "A", "b"), None, "only [SEM] lines carry claims");
    let ranked = ["[SEM] X | y | z", "[SEM] A | b | first", "[SEM] A | b | second"];
    assert_eq!(ranked_turns_answer(&ranked, "A", "b"), Some((1, "first".to_string())));
    assert_eq!(ranked_turns_answer(&ranked, "Q", "b"), None);
}

#[test]
fn a_probe_with_a_decision_needs_the_decision_too() {
    let mut p = probe(Some(("IC-MC-44", "lead time")), Some("35 days"), &[], &[]);
    p.decision = Some(false);
    let mut s = score_probe(&p, Some("35 days"), &[]);
    assert!(s.correct);
    mnemo_eval::metrics::score_decision(&p, &mut s, true);
    assert!(!s.correct && s.wrong_decision && !s.wrong);
    let mut s = score_probe(&p, Some("35 days"), &[]);
    mnemo_eval::metrics::score_decision(&p, &mut s, false);
    assert!(s.correct && !s.wrong_decision);
}
