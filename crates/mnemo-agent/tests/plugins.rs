//! Plugin libraries named in config, end to end through the runtime.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The built-in kinds: linked here (the library links none), so their registrations are kept.
use mnemo_grounders as _;
use mnemo_llm as _;
use mnemo_store as _;
// The plugin-host tests build plugin libraries the same way: one helper for both.
#[path = "../../mnemo-plugin-host/tests/support/mod.rs"]
mod support;

use std::sync::Arc;

use mnemo_agent::{Config, Runtime};
use mnemo_contract::*;
use mnemo_core::engine::RecallOptions;

fn config_with(dir: &std::path::Path, body: &str) -> Config {
    let p = dir.join("agent.toml");
    std::fs::write(&p, body).unwrap();
    Config::load(&[p]).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panicking_grounder_plugin_escalates_and_never_acts() {
    let libs = support::build(&["fixture-panicking"]);
    let d = tempfile::tempdir().unwrap();
    // relative to the config file: copy the library next to it
    std::fs::copy(support::library(&libs, "fixture-panicking"), support::library(d.path(), "fixture-panicking"))
        .unwrap();
    let config = config_with(
        d.path(),
        "[[plugins]]\npath = \"fixture-panicking\"\n\n[[grounders]]\nkind = \"panicking\"\nsource = \"ledger\"\n",
    );
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let rt = Runtime::build(&config, &d.path().join("data"), clock, vec![]).await.unwrap();
    let ns = Namespace::new("t").unwrap();
    rt.engine().remember(&ns, "user", "[SEM] SKU-1 | stock on hand | 40 units").await.unwrap();
    let task =
        Task { query: "How much SKU-1 is on hand?".into(), about: Some(("SKU-1".into(), "stock on hand".into())) };
    for _ in 0..2 {
        let turn = rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap();
        let Decision::Escalate { reasons } = &turn.assessment.decision else { panic!("acted: {}", turn.action) };
        assert!(reasons.iter().any(|r| r.contains("panicked") && r.contains("unverified")), "{reasons:?}");
        assert!(turn.action.starts_with("ESCALATE"), "{}", turn.action);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kind_provided_by_two_libraries_is_refused() {
    let libs = support::build(&["plugin-template"]);
    let d = tempfile::tempdir().unwrap();
    let lib = support::library(&libs, "plugin-template").display().to_string();
    let config = config_with(d.path(), &format!("[[plugins]]\npath = {lib:?}\n\n[[plugins]]\npath = {lib:?}\n"));
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let e = Runtime::build(&config, &d.path().join("data"), clock, vec![]).await.err().unwrap().to_string();
    assert!(e.contains("grounder kind `template`") && e.contains("already registered"), "{e}");
}

#[test]
fn plugin_paths_resolve_against_the_file_that_names_them() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("sub")).unwrap();
    let c =
        config_with(&d.path().join("sub"), "[[plugins]]\npath = \"../libs/x\"\n[[plugins]]\npath = \"/abs/y.so\"\n");
    assert_eq!(c.plugin_libraries(), vec![d.path().join("sub").join("../libs/x"), "/abs/y.so".into()]);
    let p = d.path().join("bad.toml");
    std::fs::write(&p, "[[plugins]]\npath = \"x\"\nkind = \"y\"\n").unwrap();
    let e = Config::load(&[p]).unwrap_err().to_string();
    assert!(e.contains("bad.toml") && e.contains("unknown key `kind`"), "{e}");
    let o: toml::Table = "[[plugins]]\npath = \"rel\"".parse().unwrap();
    let e = Config::embedded_default().unwrap().with_overrides(&o, "scenario").unwrap_err().to_string();
    assert!(e.contains("absolute"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_embedder_and_an_assessor_from_a_plugin_assemble_an_agent() {
    let libs = support::build(&["fixture-kinds"]);
    let d = tempfile::tempdir().unwrap();
    let lib = support::library(&libs, "fixture-kinds").display().to_string();
    let config = config_with(
        d.path(),
        &format!(
            "[[plugins]]\npath = {lib:?}\n\n[embedder]\nkind = \"fixture_embedder\"\ndims = 8\n\n[assessor]\nkind = \"fixture_assessor\"\n"
        ),
    );
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let rt = Runtime::build(&config, &d.path().join("data"), clock, vec![]).await.unwrap();
    let ns = Namespace::new("t").unwrap();
    let r = rt.engine().remember(&ns, "user", "[SEM] SKU-1 | colour | red").await.unwrap();
    let id = r.outcomes[0].memory.unwrap();
    let m = &rt.engine().memories(&ns, &[id]).await.unwrap()[0];
    assert_eq!(m.embedding.as_ref().unwrap().model, "fixture-length-8");
    let task = Task { query: "SKU-1 colour".into(), about: Some(("SKU-1".into(), "colour".into())) };
    let turn = rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap();
    assert_eq!(turn.assessment.decision, Decision::Act, "{}", turn.action);
    rt.engine().remember(&ns, "user", "[EPI] SKU-1 shipped in a red box.").await.unwrap();
    let turn = rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap();
    let Decision::Escalate { reasons } = &turn.assessment.decision else { panic!("acted: {}", turn.action) };
    assert!(reasons.iter().any(|r| r.contains("makes no claim")), "{reasons:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_assessor_plugin_returns_corrections_that_the_runtime_applies() {
    let libs = support::build(&["fixture-kinds"]);
    let d = tempfile::tempdir().unwrap();
    let lib = support::library(&libs, "fixture-kinds").display().to_string();
    let config = config_with(
        d.path(),
        &format!(
            "[[plugins]]\npath = {lib:?}\n\n[assessor]\nkind = \"fixture_correcting_assessor\"\nattribute = \"stock on hand\"\nvalue = \"35 units\"\nsource = \"wms\"\n"
        ),
    );
    let clock = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let rt = Runtime::build(&config, &d.path().join("data"), clock, vec![]).await.unwrap();
    let ns = Namespace::new("t").unwrap();
    let r = rt.engine().remember(&ns, "user", "[SEM] SKU-1 | stock on hand | 40 units").await.unwrap();
    let stale = r.outcomes[0].memory.unwrap();
    let task =
        Task { query: "How much SKU-1 is on hand?".into(), about: Some(("SKU-1".into(), "stock on hand".into())) };

    // The plugin asks for a supersede; the runtime writes it and shows it in the pack.
    let turn = rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap();
    let a = &turn.assessment;
    assert_eq!(a.decision, Decision::Act, "{}", turn.action);
    assert_eq!(
        a.corrections,
        vec![Correction::Supersede { memory: stale, value: "35 units".into(), source: "wms".into() }]
    );
    assert_eq!(a.substitutions.len(), 1, "{:?}", a.substitutions);
    let s = &a.substitutions[0];
    assert_eq!(
        (s.stale, s.old_value.as_str(), s.new_value.as_str(), s.source.as_str()),
        (stale, "40 units", "35 units", "wms")
    );
    assert!(turn.action.contains("35 units"), "{}", turn.action);
    let fresh = a.pack.items.iter().find(|i| i.memory.id == s.fresh).expect("the fresh memory is in the pack");
    assert_eq!(fresh.memory.claim.as_ref().unwrap().value, "35 units");
    assert!(a.grades.iter().any(|g| g.id == s.fresh) && !a.grades.iter().any(|g| g.id == stale));
    let stored = rt.engine().memories(&ns, &[stale, s.fresh]).await.unwrap();
    let old = stored.iter().find(|m| m.id == stale).unwrap();
    let Status::Tombstoned { reason, superseded_by, .. } = &old.status else { panic!("not tombstoned: {old:?}") };
    assert!(reason.contains("grounded: wms"), "{reason}");
    assert_eq!(*superseded_by, Some(s.fresh));
    let new = stored.iter().find(|m| m.id == s.fresh).unwrap();
    assert_eq!((new.status.clone(), new.sources.clone()), (Status::Active, vec!["wms".to_string()]));

    // Next recall finds the corrected value: the plugin confirms it, nothing is substituted.
    let turn = rt.turn(&ns, &task, &RecallOptions::default()).await.unwrap();
    let a = &turn.assessment;
    assert_eq!(a.corrections, vec![Correction::Confirm { memory: s.fresh, source: "wms".into() }]);
    assert!(a.substitutions.is_empty());
    assert!(turn.action.contains("35 units"), "{}", turn.action);
}
