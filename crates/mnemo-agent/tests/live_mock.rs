//! The wired runtime in live mode against the mock OpenAI-compatible server on loopback:
//! a prose conversation through full agent turns, attribute cardinality, and a turn that
//! fails extraction, stays recorded, and is extracted again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use mnemo_agent::{Config, Runtime};
use mnemo_contract::*;
use mnemo_core::engine::RecallOptions;
use mnemo_llm::mock::{Fault, MockServer};
// The built-in kinds this test assembles (the binary links them; the agent library does not).
use mnemo_grounders as _;
use mnemo_store as _;
use serde_json::json;

const KEY_VAR: &str = "MNEMO_AGENT_MOCK_TEST_KEY";

/// A config for the mock. The key variable is the test's own; the variables that would change
/// the seam are cleared (every test here sets the same values, so they do not race).
fn live_config(base: &str, extra: &str) -> Config {
    std::env::set_var(KEY_VAR, "mock-key");
    for v in ["MNEMO_OFFLINE", "MNEMO_REPLAY", "MNEMO_RECORD", "MNEMO_LLM_BASE_URL"] {
        std::env::remove_var(v);
    }
    let text = format!(
        "[llm]\nclient = \"live\"\nbase_url = \"{base}\"\napi_key_env = \"{KEY_VAR}\"\nbackoff_base_ms = 1\nmax_retries = 1\n{extra}"
    );
    Config::embedded_default().unwrap().with_overrides(&text.parse().unwrap(), "test").unwrap()
}

async fn runtime(dir: &std::path::Path, config: &Config) -> (Runtime, Arc<SimClock>) {
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let rt = Runtime::build(config, dir, clock.clone(), vec![]).await.unwrap();
    (rt, clock)
}

fn mem(content: &str, attribute: &str, value: &str, many: bool) -> serde_json::Value {
    json!({"memory": {"kind": "semantic", "content": content,
        "claim": {"entity": "Maria Lopez", "attribute": attribute, "value": value},
        "entities": ["Maria Lopez"], "importance": null, "pinned": false,
        "cardinality": if many { "many" } else { "one" }}})
}

fn script(mock: &MockServer) {
    mock.script_extraction(
        "allergic to penicillin",
        json!([mem("Maria Lopez is allergic to penicillin.", "allergies", "penicillin", true)]),
    );
    mock.script_extraction(
        "allergic to sulfa",
        json!([mem("Maria Lopez is allergic to sulfa drugs.", "allergies", "sulfa drugs", true)]),
    );
    mock.script_extraction(
        "metformin, 500 mg",
        json!([mem("Maria takes metformin 500 mg.", "metformin dose", "500 mg", false)]),
    );
    mock.script_extraction(
        "now 1000 mg",
        json!([mem("Maria takes metformin 1000 mg.", "metformin dose", "1000 mg", false)]),
    );
}

fn active_values(all: &[Memory], attribute: &str) -> Vec<String> {
    let mut v: Vec<String> = all
        .iter()
        .filter(|m| m.status.is_active())
        .filter_map(|m| m.claim.as_ref())
        .filter(|c| c.is_on("Maria Lopez", attribute))
        .map(|c| c.value.clone())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn a_prose_conversation_through_full_agent_turns_in_live_mode() {
    let mock = MockServer::start().await.unwrap();
    script(&mock);
    mock.echo_model("qwen-flash-2025-07-28");
    let d = tempfile::tempdir().unwrap();
    let (rt, clock) = runtime(d.path(), &live_config(&mock.base_url(), "")).await;
    let ns = Namespace::new("clinic").unwrap();
    let opts = RecallOptions::default();
    for msg in [
        "Hi, this is Maria Lopez. I'm allergic to penicillin.",
        "Oh, and I'm allergic to sulfa drugs too.",
        "Dr. Chen put me on metformin, 500 mg twice a day.",
        "Update: my metformin dose is now 1000 mg.",
    ] {
        clock.advance(time::DAY_MS);
        let t = rt.handle(&ns, "patient", msg, None, &opts).await.unwrap();
        let r = t.remembered.unwrap();
        assert_eq!(r.model, ModelInfo { client: ClientKind::Live, model: "qwen-flash-2025-07-28".into() });
    }
    let all = rt.engine().all_memories(&ns).await.unwrap();
    assert_eq!(active_values(&all, "allergies"), vec!["penicillin", "sulfa drugs"], "both allergies are kept");
    assert_eq!(active_values(&all, "metformin dose"), vec!["1000 mg"], "the new dose supersedes the old");
    let old = all.iter().find(|m| m.claim.as_ref().is_some_and(|c| c.value == "500 mg")).unwrap();
    assert!(!old.status.is_active());
    // Provenance: the echoed model, not the one asked for.
    assert!(all
        .iter()
        .all(|m| m.provenance.model == "qwen-flash-2025-07-28" && m.provenance.client == ClientKind::Live));
    let why = rt.engine().why(&ns, all[0].id).await.unwrap();
    assert!(serde_json::to_string(&why).unwrap().contains("qwen-flash-2025-07-28"));

    clock.advance(time::DAY_MS);
    let t = rt
        .handle(
            &ns,
            "nurse",
            "Which metformin dose is Maria on?",
            Some(("Maria Lopez".into(), "metformin dose".into())),
            &opts,
        )
        .await
        .unwrap();
    assert!(t.action.contains("1000 mg"), "{}", t.action);
    assert!(mock.seen().iter().all(|s| s.had_bearer));
}

#[tokio::test]
async fn a_failed_extraction_stays_recorded_and_is_extracted_again() {
    let mock = MockServer::start().await.unwrap();
    script(&mock);
    let d = tempfile::tempdir().unwrap();
    let (rt, _clock) = runtime(d.path(), &live_config(&mock.base_url(), "")).await;
    let ns = Namespace::new("clinic").unwrap();
    mock.set_always(Some(Fault::Status(503, None)));
    let e = rt.remember(&ns, "patient", b"Hi, this is Maria Lopez. I'm allergic to penicillin.").await.unwrap_err();
    let e = e.to_string();
    assert!(e.contains("recorded but not extracted") && e.contains("503") && e.contains("reextract"), "{e}");
    assert_eq!(rt.engine().turns(&ns).await.unwrap().len(), 1, "the raw turn is recorded");
    assert!(rt.engine().all_memories(&ns).await.unwrap().is_empty());
    assert_eq!(rt.unextracted(&ns).unwrap().len(), 1);

    // Still failing: it stays on the ledger.
    let (done, failed) = rt.reextract(&ns).await.unwrap();
    assert!(done.is_empty() && failed.len() == 1);
    mock.set_always(None);
    let (done, failed) = rt.reextract(&ns).await.unwrap();
    assert_eq!((done.len(), failed.len()), (1, 0));
    assert!(rt.unextracted(&ns).unwrap().is_empty());
    let all = rt.engine().all_memories(&ns).await.unwrap();
    assert_eq!(active_values(&all, "allergies"), vec!["penicillin"]);
    let (done, failed) = rt.reextract(&ns).await.unwrap();
    assert!(done.is_empty() && failed.is_empty(), "nothing left to extract");
}

#[tokio::test]
async fn config_fixes_the_cardinality_of_named_attributes() {
    let d = tempfile::tempdir().unwrap();
    let o: toml::Table = "[claims]\nmany = [\"Skills\"]\none = [\"allergies\"]".parse().unwrap();
    let config = Config::embedded_default().unwrap().with_overrides(&o, "test").unwrap();
    let (rt, clock) = runtime(d.path(), &config).await;
    let ns = Namespace::new("t").unwrap();
    let e = rt.engine();
    for (say, _) in [
        ("[SEM] Maria Lopez | skills | rust", 0),
        ("[SEM] Maria Lopez | skills | go", 0),
        ("[SEM many] Maria Lopez | allergies | penicillin", 0),
        ("[SEM many] Maria Lopez | allergies | latex", 0),
        ("[SEM many] Maria Lopez | phone | 555", 0),
        ("[SEM many] Maria Lopez | phone | 777", 0),
    ] {
        clock.advance(time::DAY_MS);
        e.remember(&ns, "user", say).await.unwrap();
    }
    let all = e.all_memories(&ns).await.unwrap();
    assert_eq!(active_values(&all, "skills"), vec!["go", "rust"], "config says many");
    assert_eq!(active_values(&all, "allergies"), vec!["latex"], "config says one, whatever the turn said");
    assert_eq!(active_values(&all, "phone"), vec!["555", "777"], "[SEM many] from the turn");
    let bad: toml::Table = "[claims]\nmany = [\"x\"]\none = [\" X \"]".parse().unwrap();
    let err = Config::embedded_default().unwrap().with_overrides(&bad, "bad.toml").unwrap_err().to_string();
    assert!(err.contains("bad.toml") && err.contains("both"), "{err}");
}
