//! The wired runtime over the embedded default (SQLite + index + fake model).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The built-in kinds: linked here (the library links none), so their registrations are kept.
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;
use std::sync::Arc;

use mnemo_agent::runtime::answer_of;
use mnemo_agent::{Config, Runtime};
use mnemo_contract::registry::{kinds, Role};
use mnemo_contract::time::DAY_MS;
use mnemo_contract::*;
use mnemo_core::engine::{OutcomeKind, RecallOptions};
use mnemo_grounders::TableGrounder;

async fn runtime(dir: &std::path::Path, grounders: Vec<Arc<dyn Grounder>>) -> (Runtime, Arc<SimClock>) {
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let rt = Runtime::build(&Config::embedded_default().unwrap(), dir, clock.clone(), grounders).await.unwrap();
    (rt, clock)
}

#[test]
fn registry_holds_every_expected_kind() {
    let expect: &[(Role, &[&str])] = &[
        (Role::Store, &["sqlite"]),
        (Role::Index, &["brute", "tantivy"]),
        (Role::Embedder, &["fake"]),
        (Role::Reasoner, &["llm"]),
        (Role::Grounder, &["table", "csv", "sqlite", "http"]),
        (Role::Assessor, &["grounding", "provenance"]),
    ];
    for (role, want) in expect {
        let have = kinds(*role);
        for k in *want {
            assert!(have.contains(k), "{role}: {k} missing from {have:?}");
        }
    }
}

#[tokio::test]
async fn a_value_stated_again_after_being_superseded_is_a_new_memory() {
    let d = tempfile::tempdir().unwrap();
    let (rt, clock) = runtime(d.path(), vec![]).await;
    let ns = Namespace::new("t").unwrap();
    let e = rt.engine();
    let a1 = e.remember(&ns, "user", "[SEM] Ben | channel | email").await.unwrap().outcomes[0].memory.unwrap();
    clock.advance(DAY_MS);
    let b = e.remember(&ns, "user", "[SEM] Ben | channel | phone").await.unwrap();
    assert_eq!(b.outcomes[0].kind, OutcomeKind::Superseded);
    assert_eq!(b.outcomes[0].tombstoned, vec![a1]);
    clock.advance(DAY_MS);
    let a2 = e.remember(&ns, "user", "[SEM] Ben | channel | email").await.unwrap();
    assert_eq!(a2.outcomes[0].kind, OutcomeKind::Superseded);
    let a2 = a2.outcomes[0].memory.unwrap();
    assert_ne!(a1, a2, "a tombstone is never reactivated");
    let all = e.all_memories(&ns).await.unwrap();
    assert_eq!(all.iter().filter(|m| m.status.is_active()).count(), 1);
    let pack = e.recall(&ns, "Ben channel", &RecallOptions::default()).await.unwrap();
    assert_eq!(answer_of(&pack, "ben", "CHANNEL").unwrap().id, a2);
}

#[tokio::test]
async fn free_text_forget_takes_only_what_it_designates() {
    let d = tempfile::tempdir().unwrap();
    let (rt, _) = runtime(d.path(), vec![]).await;
    let ns = Namespace::new("t").unwrap();
    let e = rt.engine();
    e.remember(&ns, "user", "[EPI] The Friday standup moved to 10am.\n[EPI] The Monday standup is cancelled.\n[PROC] Send the Friday report to Ana.")
        .await
        .unwrap();
    let r = e.forget(&ns, "user", &ForgetCommand::parse_arg("the Friday standup").unwrap()).await.unwrap();
    assert_eq!(r.outcomes[0].kind, OutcomeKind::Forgotten);
    assert_eq!(r.outcomes[0].tombstoned.len(), 1);
    let active: Vec<String> = e.active_memories(&ns).await.unwrap().into_iter().map(|m| m.content).collect();
    assert_eq!(active.len(), 2);
    assert!(!active.iter().any(|c| c.contains("moved to 10am")));
    let why = e.why(&ns, r.outcomes[0].tombstoned[0]).await.unwrap();
    match why.memory.status {
        Status::Tombstoned { reason, .. } => assert!(reason.contains("[FORGET] the Friday standup"), "{reason}"),
        s => panic!("{s:?}"),
    }
    let r = e.forget(&ns, "user", &ForgetCommand::parse_arg("the quarterly budget").unwrap()).await.unwrap();
    assert_eq!(r.outcomes[0].kind, OutcomeKind::NothingToForget);
}

#[tokio::test]
async fn grounding_confirms_and_substitutes() {
    let d = tempfile::tempdir().unwrap();
    let erp = TableGrounder::new("erp");
    let (rt, clock) = runtime(d.path(), vec![Arc::new(erp.clone())]).await;
    let ns = Namespace::new("t").unwrap();
    rt.engine().remember(&ns, "user", "[SEM] IC-MC-44 | lead time | 21 days").await.unwrap();
    erp.set("IC-MC-44", "lead time", "21 days");
    clock.advance(300 * DAY_MS);
    let task = Task { query: "lead time of IC-MC-44".into(), about: Some(("IC-MC-44".into(), "lead time".into())) };
    let t = rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap();
    // 300 days old and single-source, but confirmed by the system of record: act
    assert_eq!(t.assessment.decision, Decision::Act);
    assert!(t.assessment.pack.items[0].memory.sources.contains(&"erp".to_string()));
    erp.set("IC-MC-44", "lead time", "35 days");
    let t = rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap();
    assert_eq!(t.assessment.substitutions.len(), 1);
    assert_eq!(
        answer_of(&t.assessment.pack, "IC-MC-44", "lead time").unwrap().claim.as_ref().unwrap().value,
        "35 days"
    );
    // the correction was written back: the next plain recall has only the new value
    let pack = rt.engine().recall(&ns, "IC-MC-44 lead time", &RecallOptions::default()).await.unwrap();
    let values: Vec<_> = pack.memories().filter_map(|m| m.claim.as_ref()).map(|c| c.value.clone()).collect();
    assert_eq!(values, vec!["35 days"]);
}

#[tokio::test]
async fn stale_single_source_memory_escalates() {
    let d = tempfile::tempdir().unwrap();
    let (rt, clock) = runtime(d.path(), vec![]).await;
    let ns = Namespace::new("t").unwrap();
    rt.engine().remember(&ns, "user", "[SEM] S-208 | contact | Dana").await.unwrap();
    let task = Task { query: "contact at S-208".into(), about: Some(("S-208".into(), "contact".into())) };
    assert_eq!(rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap().assessment.decision, Decision::Act);
    clock.advance(200 * DAY_MS);
    let t = rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap();
    assert!(matches!(t.assessment.decision, Decision::Escalate { .. }), "{:?}", t.assessment);
}

#[tokio::test]
async fn index_is_rebuilt_from_the_store_after_reopen() {
    let d = tempfile::tempdir().unwrap();
    {
        let (rt, _) = runtime(d.path(), vec![]).await;
        let ns = Namespace::new("t").unwrap();
        rt.engine().remember(&ns, "user", "[SEM] Northwind Labs | owner | Ben").await.unwrap();
    }
    let (rt, _) = runtime(d.path(), vec![]).await;
    let ns = Namespace::new("t").unwrap();
    let pack = rt.engine().recall(&ns, "Northwind owner", &RecallOptions::default()).await.unwrap();
    assert_eq!(pack.items.len(), 1);
}

#[tokio::test]
async fn concurrent_contradicting_writes_leave_one_active_value() {
    let d = tempfile::tempdir().unwrap();
    let (rt, _) = runtime(d.path(), vec![]).await;
    let ns = Namespace::new("t").unwrap();
    for round in 0..8 {
        let (a, b) = (format!("[SEM] Race{round} | v | a"), format!("[SEM] Race{round} | v | b"));
        let e1 = rt.engine().clone();
        let e2 = rt.engine().clone();
        let (n1, n2) = (ns.clone(), ns.clone());
        let t1 = tokio::spawn(async move { e1.remember(&n1, "user", &a).await.unwrap() });
        let t2 = tokio::spawn(async move { e2.remember(&n2, "user", &b).await.unwrap() });
        t1.await.unwrap();
        t2.await.unwrap();
        let active: Vec<_> = rt
            .engine()
            .active_memories(&ns)
            .await
            .unwrap()
            .into_iter()
            .filter(|m| m.claim.as_ref().is_some_and(|c| c.entity == format!("Race{round}")))
            .collect();
        assert_eq!(active.len(), 1, "round {round}: {active:?}");
    }
}

#[tokio::test]
async fn items_apply_in_turn_order() {
    let d = tempfile::tempdir().unwrap();
    let (rt, _) = runtime(d.path(), vec![]).await;
    let ns = Namespace::new("t").unwrap();
    let e = rt.engine();
    let r = e.remember(&ns, "user", "[SEM] Ben | phone | 555-0100\n[FORGET] Ben | phone").await.unwrap();
    assert_eq!(r.outcomes[1].kind, OutcomeKind::Forgotten);
    assert!(e.active_memories(&ns).await.unwrap().is_empty());
    let r = e.remember(&ns, "user", "[FORGET] Ana | phone\n[SEM] Ana | phone | 555-0199").await.unwrap();
    assert_eq!(r.outcomes[0].kind, OutcomeKind::NothingToForget);
    assert_eq!(e.active_memories(&ns).await.unwrap().len(), 1);
}

#[tokio::test]
async fn time_only_moves_forward_and_bad_forgets_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let (rt, clock) = runtime(d.path(), vec![]).await;
    let ns = Namespace::new("t").unwrap();
    let e = rt.engine();
    e.remember(&ns, "user", "[SEM] Ben | phone | 1").await.unwrap();
    clock.advance(-DAY_MS);
    let err = e.remember(&ns, "user", "[SEM] Ben | phone | 2").await.unwrap_err().to_string();
    assert!(err.contains("time only moves forward"), "{err}");
    clock.advance(2 * DAY_MS);
    for bad in ["[FORGET]", "[FORGETTABLE] x", "[SEM] Ben | phone | 3"] {
        let err = ForgetCommand::parse_arg(bad).unwrap_err();
        assert!(err.contains("not a forget command"), "{bad}: {err}");
    }
    assert_eq!(e.turns(&ns).await.unwrap().len(), 1, "a refused command records nothing");
}

#[tokio::test]
async fn too_many_items_in_one_turn_is_an_error_not_a_stall() {
    let d = tempfile::tempdir().unwrap();
    let (rt, _) = runtime(d.path(), vec![]).await;
    let ns = Namespace::new("t").unwrap();
    let text: String = (0..300).map(|i| format!("[EPI] event {i}\n")).collect();
    let err = rt.engine().remember(&ns, "user", &text).await.unwrap_err().to_string();
    assert!(err.contains("300") && err.contains("at most 256"), "{err}");
}

#[tokio::test]
async fn a_deleted_or_foreign_index_is_rebuilt_from_the_store() {
    let d = tempfile::tempdir().unwrap();
    let ns = Namespace::new("t").unwrap();
    {
        let (rt, _) = runtime(d.path(), vec![]).await;
        rt.engine().remember(&ns, "user", "[SEM] Northwind Labs | owner | Ben\n[EPI] Met Ana.").await.unwrap();
        rt.engine().remember(&ns, "user", "[SEM] Northwind Labs | owner | Carla").await.unwrap();
    }
    let index_dir = d.path().join("index");
    assert!(index_dir.exists(), "the default index persists under the data dir");
    std::fs::remove_dir_all(&index_dir).unwrap();
    let (rt, _) = runtime(d.path(), vec![]).await;
    let pack = rt.engine().recall(&ns, "Northwind owner", &RecallOptions::default()).await.unwrap();
    let values: Vec<_> = pack.memories().filter_map(|m| m.claim.as_ref()).map(|c| c.value.clone()).collect();
    assert_eq!(values, vec!["Carla"], "rebuilt, and the tombstoned value does not come back");
    drop(rt);
    // garbage where the index should be: stale, rebuilt
    std::fs::remove_dir_all(&index_dir).unwrap();
    std::fs::create_dir_all(&index_dir).unwrap();
    std::fs::write(index_dir.join("meta.json"), b"not json").unwrap();
    let (rt, _) = runtime(d.path(), vec![]).await;
    let pack = rt.engine().recall(&ns, "Met Ana", &RecallOptions::default()).await.unwrap();
    assert!(pack.memories().any(|m| m.content == "Met Ana."));
}

/// The three-fact store: an off-topic question escalates in every mode, however the
/// best unrelated memory ranks; a question naming a held claim acts on it, with no `about`.
#[tokio::test]
async fn the_gate_sees_absolute_relevance_in_every_mode() {
    let d = tempfile::tempdir().unwrap();
    let (rt, _) = runtime(d.path(), vec![]).await;
    let ns = Namespace::new("t").unwrap();
    let e = rt.engine();
    for line in [
        "[SEM] Northwind Labs | owner | Ben",
        "[PROC] Always keep a 5-day buffer on supplier lead times.",
        "[SEM] IC-MC-44 | lead time | 12 days",
    ] {
        e.remember(&ns, "user", line).await.unwrap();
    }
    for mode in [SearchMode::Hybrid, SearchMode::Lexical, SearchMode::Dense] {
        let opts = RecallOptions { mode: Some(mode), ..RecallOptions::default() };
        let task = Task { query: "what is the weather on Mars".into(), about: None };
        let turn = rt.turn(&ns, &task, &opts).await.unwrap();
        assert!(!turn.pack.items.is_empty() || mode == SearchMode::Lexical, "{mode:?}: something is packed");
        // The rank score of the best hit is high; its absolute relevance is not.
        for t in turn.pack.trace.iter().filter(|t| t.included) {
            let ev = t.evidence.expect("every packed memory carries evidence");
            assert!(ev.absolute < 0.5, "{mode:?}: {ev:?}");
        }
        let a = turn.assessment;
        let Decision::Escalate { reasons } = &a.decision else { panic!("{mode:?}: ACT on Mars") };
        assert!(reasons.iter().any(|r| r.starts_with("memory holds nothing on this task")), "{reasons:?}");
        let task = Task { query: "who owns Northwind Labs".into(), about: None };
        let a = rt.turn(&ns, &task, &opts).await.unwrap().assessment;
        assert_eq!(a.decision, Decision::Act, "{mode:?}: {:?}", a.grades);
        assert_eq!(a.inferred_about, Some(("Northwind Labs".to_string(), "owner".to_string())));
    }
}

/// Evidence is on every candidate recall holds a row for, packed or not: a tight budget
/// leaves candidates out, and they are weighed all the same (from the recall cache).
#[tokio::test]
async fn excluded_candidates_carry_evidence_too() {
    let d = tempfile::tempdir().unwrap();
    let (rt, _) = runtime(d.path(), vec![]).await;
    let ns = Namespace::new("t").unwrap();
    let e = rt.engine();
    for i in 0..6 {
        e.remember(&ns, "user", &format!("[SEM] Supplier S-{i} | lead time | {i} days")).await.unwrap();
    }
    let opts = RecallOptions { budget: Some(12), ..RecallOptions::default() };
    let pack = e.recall(&ns, "supplier lead time", &opts).await.unwrap();
    assert!(pack.trace.iter().any(|t| !t.included), "the budget leaves some out: {:?}", pack.trace);
    assert!(pack.trace.iter().any(|t| t.included));
    for t in &pack.trace {
        let ev = t.evidence.unwrap_or_else(|| panic!("no evidence on {t:?}"));
        assert!(ev.lexical > 0.5, "every one holds the query's terms: {ev:?}");
    }
}

/// The agent view says in one line why each memory is believed: a system of record that
/// verified or corrected it now, else who said it and how long ago; a correction is noted; a
/// raw recall has no decision and no trust.
#[tokio::test]
async fn the_agent_view_gives_each_memory_a_one_line_basis_and_the_decision() {
    let d = tempfile::tempdir().unwrap();
    let erp = TableGrounder::new("erp");
    let (rt, clock) = runtime(d.path(), vec![Arc::new(erp.clone())]).await;
    let ns = Namespace::new("t").unwrap();
    rt.engine().remember(&ns, "user", "[SEM] IC-MC-44 | lead time | 21 days\n[SEM] Acme | owner | Ben").await.unwrap();
    clock.advance(3 * DAY_MS);
    let task = Task { query: "lead time of IC-MC-44".into(), about: Some(("IC-MC-44".into(), "lead time".into())) };

    erp.set("IC-MC-44", "lead time", "21 days");
    let view = rt.recall_view(&rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap());
    let line = view.memories.iter().find(|m| m.content.contains("lead time")).unwrap();
    assert_eq!((line.basis.as_str(), line.trust), ("verified by erp just now", Some(1.0)), "{view:?}");
    let decision = view.decision.as_ref().unwrap();
    assert_eq!((decision.decision.as_str(), decision.act_on[0].value.as_str()), ("act", "21 days"));

    erp.set("IC-MC-44", "lead time", "35 days");
    let view = rt.recall_view(&rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap());
    let line = view.memories.iter().find(|m| m.content.contains("35 days")).unwrap();
    assert_eq!(line.basis, "corrected by erp just now", "{view:?}");
    assert!(view.notes.iter().any(|n| n.contains("\"21 days\"") && n.contains("\"35 days\"")), "{view:?}");
    let text = rt.render_recall(&view);
    assert!(text.contains("Decision: ACT") && text.contains("- IC-MC-44 | lead time | 35 days"), "{text}");
    let lines = &text[text.find("\n- ").unwrap() + 1..];
    assert!(view.tokens > 0 && rt.engine().count_tokens(lines) <= view.tokens, "{text}");

    let pack = rt.engine().recall(&ns, "Acme owner", &RecallOptions::default()).await.unwrap();
    let raw = rt.raw_recall_view(&pack);
    let acme = raw.memories.iter().find(|m| m.content == "Acme | owner | Ben").unwrap();
    assert_eq!((acme.basis.as_str(), acme.trust), ("said by user, 3 days ago", None), "{raw:?}");
    assert!(raw.decision.is_none() && rt.render_recall(&raw).contains("Decision: none"));
}

/// Which embedder made the index's vectors is in the index's stamp, not in the data
/// directory: reopened with the fake embedder at other dimensions, the index is rebuilt (and
/// says why), dense recall works at the new dimensions, and a reopen with the same embedder
/// rebuilds nothing. A leftover `index-embedder` record of an older version (here naming the
/// wrong embedder) is never read, never an error, and a writer removes it.
#[tokio::test]
async fn the_index_stamp_names_its_embedder_and_a_leftover_record_is_ignored() {
    let d = tempfile::tempdir().unwrap();
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let config = |dims: u32| {
        let over: toml::Table = toml::from_str(&format!("[embedder]\nkind = \"fake\"\ndims = {dims}")).unwrap();
        Config::embedded_default().unwrap().with_overrides(&over, "test").unwrap()
    };
    let ns = Namespace::new("t").unwrap();
    {
        let rt = Runtime::build(&config(64), d.path(), clock.clone(), vec![]).await.unwrap();
        rt.engine().remember(&ns, "user", "[SEM] Northwind Labs | owner | Ben").await.unwrap();
    }
    let leftover = d.path().join("index-embedder");
    std::fs::write(&leftover, "some-other-model\t999\n").unwrap();
    let rt = Runtime::build(&config(128), d.path(), clock.clone(), vec![]).await.unwrap();
    let why = rt.startup_sync().rebuilt_because.clone().unwrap_or_default();
    assert!(rt.startup_sync().rebuilt && why.contains("64 dimensions") && why.contains("128"), "{why}");
    assert!(!leftover.exists(), "a writer removes the leftover record");
    let opts = RecallOptions { mode: Some(SearchMode::Dense), ..RecallOptions::default() };
    let pack = rt.engine().recall(&ns, "Northwind owner", &opts).await.unwrap();
    assert_eq!(pack.items.len(), 1);
    drop(rt);
    let rt = Runtime::build(&config(128), d.path(), clock, vec![]).await.unwrap();
    assert!(!rt.startup_sync().rebuilt, "{:?}", rt.startup_sync());
}
