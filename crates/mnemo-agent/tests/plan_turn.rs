//! The full agent turn plans from the assessed pack and checks the plan before acting: the
//! fake plans on the re-grounded value; a plan that states the stale value (the 21 days the ERP
//! corrected to 35), through the live path against the mock server, is refused and escalates.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use mnemo_agent::{Config, Runtime};
use mnemo_core::engine::RecallOptions;
use mnemo_core::*;
use mnemo_llm::mock::MockServer;
use mnemo_store as _;
use mnemo_tools::TableGrounder;
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
