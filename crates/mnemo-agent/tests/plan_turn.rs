//! The full agent turn plans from the assessed pack and checks the plan before acting: the
//! fake plans on the re-grounded value; a plan that states the stale value (the 21 days the ERP
//! corrected to 35), through the live path against the mock server, is refused and escalates.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use mnemo_agent::{Config, Runtime};
use mnemo_contract::*;
use mnemo_core::engine::RecallOptions;
use mnemo_grounders::TableGrounder;
use mnemo_llm::mock::MockServer;
use mnemo_store as _;
use serde_json::json;

const KEY_VAR: &str = "MNEMO_AGENT_PLAN_TEST_KEY";
const TASK: &str = "Reorder IC-MC-44 from S-208: when will it arrive?";

fn about() -> Option<(String, String)> {
    Some(("IC-MC-44 from S-208".into(), "lead time".into()))
}

async fn runtime(dir: &std::path::Path, config: &Config) -> Runtime {
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let erp = Arc::new(TableGrounder::new("erp"));
    erp.set("IC-MC-44 from S-208", "lead time", "35 days");
    Runtime::build(config, dir, clock, vec![erp]).await.unwrap()
}

fn offline() -> Config {
    Config::embedded_default().unwrap()
}

fn live(base: &str) -> Config {
    std::env::set_var(KEY_VAR, "mock-key");
    for v in ["MNEMO_OFFLINE", "MNEMO_REPLAY", "MNEMO_RECORD", "MNEMO_LLM_BASE_URL"] {
        std::env::remove_var(v);
    }
    let text = format!(
        "[llm]\nclient = \"live\"\nbase_url = \"{base}\"\napi_key_env = \"{KEY_VAR}\"\nbackoff_base_ms = 1\nmax_retries = 1\n"
    );
    Config::embedded_default().unwrap().with_overrides(&text.parse().unwrap(), "test").unwrap()
}

#[tokio::test]
async fn the_fake_plans_on_the_regrounded_value_and_the_check_passes() {
    let d = tempfile::tempdir().unwrap();
    let rt = runtime(d.path(), &offline()).await;
    let ns = Namespace::default();
    rt.remember(&ns, "buyer", b"[SEM] IC-MC-44 from S-208 | lead time | 21 days").await.unwrap();
    let t = rt.handle(&ns, "buyer", TASK, about(), &RecallOptions::default()).await.unwrap();
    assert_eq!(t.verdict.decision, "act", "{:?}", t.verdict);
    let checked = t.plan.as_ref().expect("an ACT turn is planned");
    assert!(checked.faithful, "{checked:?}");
    assert_eq!(checked.plan.uses.len(), 1);
    assert_eq!(checked.plan.uses[0].value.as_deref(), Some("35 days"), "the re-grounded value: {checked:?}");
    let fresh = &t.assessment.substitutions[0].fresh;
    assert_eq!(&checked.plan.uses[0].memory, fresh, "the plan cites the corrected memory");
    assert!(t.action.contains("35 days") && t.action.contains("checked against the pack"), "{}", t.action);
    let view = rt.recall_view(&t);
    assert!(view.plan.as_ref().is_some_and(|p| p.faithful && p.uses[0].memory.starts_with('m')), "{view:?}");
    assert!(rt.render_recall(&view).contains("Plan (checked against the pack): "), "{}", rt.render_recall(&view));
    // A plain recall is not planned.
    let task = Task { query: TASK.into(), about: about() };
    assert!(rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap().plan.is_none());
}

#[tokio::test]
async fn a_plan_stating_the_stale_value_is_refused_and_escalates() {
    let mock = MockServer::start().await.unwrap();
    let d = tempfile::tempdir().unwrap();
    let rt = runtime(d.path(), &live(&mock.base_url())).await;
    let ns = Namespace::default();
    rt.remember(&ns, "buyer", b"[SEM] IC-MC-44 from S-208 | lead time | 21 days").await.unwrap();
    // The model plans with the value it remembers, not the one the ERP holds now.
    mock.script_plan(json!({
        "answer": "It arrives in 21 days.",
        "steps": ["Order now; expect delivery in 21 days."],
        "uses": [{"id": 1, "value": "21 days"}]
    }));
    let t = rt.handle(&ns, "buyer", TASK, about(), &RecallOptions::default()).await.unwrap();
    assert_eq!(t.verdict.decision, "escalate", "{:?}", t.verdict);
    let checked = t.plan.as_ref().unwrap();
    assert!(!checked.faithful);
    let reasons = t.verdict.reasons.join(" | ");
    assert!(
        reasons.contains("plan refused") && reasons.contains("\"21 days\"") && reasons.contains("35 days"),
        "{reasons}"
    );
    assert!(
        t.escalation.as_ref().is_some_and(|e| e.id.is_some()),
        "the refusal is escalated to a human: {:?}",
        t.escalation
    );
    assert!(t.action.starts_with("ESCALATE"), "{}", t.action);
    let planned = mock.seen().iter().filter(|s| s.body.to_string().contains("mnemo-task: plan/v1")).count();
    assert_eq!(planned, 1, "one plan call");
    mock.stop();
}

/// The fake path: the check itself, on a real offline turn, refuses a plan stating the stale
/// value (whatever model wrote it), a plan citing the tombstoned memory, and one that leaves
/// out the task's claim; the refusal turns the decision into ESCALATE.
#[tokio::test]
async fn the_check_refuses_the_stale_value_the_stale_memory_and_a_plan_beside_the_point() {
    use mnemo_agent::plan_check::{check, escalate_if_refused, lines_of};
    use mnemo_contract::plan::{Plan, PlanUse};
    let d = tempfile::tempdir().unwrap();
    let rt = runtime(d.path(), &offline()).await;
    let ns = Namespace::default();
    rt.remember(&ns, "buyer", b"[SEM] IC-MC-44 from S-208 | lead time | 21 days\n[SEM] S-208 | city | Lyon")
        .await
        .unwrap();
    let task = Task { query: TASK.into(), about: about() };
    let t = rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap();
    assert_eq!(t.verdict.decision, "act");
    let s = &t.assessment.substitutions[0];
    let lines = lines_of(&t.assessment);
    let city = lines.iter().find(|l| l.content.contains("Lyon")).unwrap().id;
    let plan = |answer: &str, uses: Vec<PlanUse>| Plan {
        answer: answer.into(),
        steps: vec![],
        uses,
        model: ModelInfo { client: ClientKind::Fake, model: "test".into() },
    };
    let cases = [
        (
            plan("It arrives in 21 days.", vec![PlanUse { memory: s.fresh, value: Some("21 days".into()) }]),
            "the pack holds \"35 days\"",
        ),
        (
            plan("Lead time 21 days.", vec![PlanUse { memory: s.stale, value: Some("21 days".into()) }]),
            "which the pack does not hold; it is stale",
        ),
        (
            plan("Ship to Lyon.", vec![PlanUse { memory: city, value: Some("Lyon".into()) }]),
            "the claim the task is about",
        ),
        // The right memory, cited without its value, while the plan acts on another.
        (plan("It arrives in 50 days.", vec![PlanUse { memory: s.fresh, value: None }]), "the claim the task is about"),
        // The stale value in another case is still the stale value.
        (
            plan("It arrives in 21 Days.", vec![PlanUse { memory: s.fresh, value: Some("35 days".into()) }]),
            "the stale value",
        ),
        (plan("It arrives in 35 days.", vec![]), "cites no memory of the pack"),
    ];
    for (p, why) in cases {
        let checked = check(p, &task, &lines, &t.assessment, &t.verdict);
        assert!(!checked.faithful && checked.refused.iter().any(|r| r.contains(why)), "{why}: {checked:?}");
        let (mut a, mut v) = (t.assessment.clone(), t.verdict.clone());
        escalate_if_refused(&checked, &mut a, &mut v);
        assert_eq!(v.decision, "escalate");
        assert!(v.reasons.iter().all(|r| r.starts_with("plan refused: ")), "{:?}", v.reasons);
    }
    let good = plan("It arrives in 35 days.", vec![PlanUse { memory: s.fresh, value: Some("35 days".into()) }]);
    assert!(check(good, &task, &lines, &t.assessment, &t.verdict).faithful);
    let cased = plan("It arrives in 35 Days.", vec![PlanUse { memory: s.fresh, value: Some("35 DAYS".into()) }]);
    assert!(check(cased, &task, &lines, &t.assessment, &t.verdict).faithful, "case is not a different value");
}
