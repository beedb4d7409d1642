//! `bench poisoning`: a small offline run measures what each defence does on both sides, and
//! RELIABILITY.md's poisoning tables are the renderings of the result files they name (a figure
//! there cannot drift from what a run in the tree measured).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;

use mnemo_agent::Config;
use mnemo_bench::poisoning::{self, table, PoisoningArgs};
use mnemo_report::RunProvenance;
// The kinds the runtime builds from the default config (store, index, reasoner).
use mnemo_llm as _;
use mnemo_store as _;

fn prov() -> RunProvenance {
    RunProvenance {
        client: "fake".into(),
        model: "none".into(),
        embedder: String::new(),
        offline: true,
        cassette: None,
        run_id: "test".into(),
        config_hash: "test".into(),
        git_commit: "unknown".into(),
        command: "test".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        cores: 1,
        token_counter: String::new(),
    }
}

/// The rate of `metric` for `family` under `arm`, as (k, n).
fn rate(rows: &[serde_json::Value], arm: &str, family: &str, side: &str) -> (u64, u64) {
    let r = rows
        .iter()
        .find(|r| r["arm"] == arm && r["family"] == family && r["side"] == side)
        .unwrap_or_else(|| panic!("no row for {arm} / {family} / {side}"));
    (r["k"].as_u64().unwrap(), r["n"].as_u64().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_defence_stops_its_attack_and_the_cost_is_counted() {
    let args = PoisoningArgs { per_family: 2, seed: 41, prose: false, per_case: None, families: vec![] };
    let config = Config::embedded_default().unwrap();
    let report = poisoning::poisoning(&args, prov(), &config).await.unwrap();
    let rows = &report.report.rows;
    assert_eq!(report.report.provenance.model, "fake:fake-qwen", "the model as the calls echoed it");
    // Without a defence every family's attack is acted on, and every benign update too.
    for family in ["instruction_in_value", "authority_spoof", "repeated_overwrite", "belief_drift"] {
        assert_eq!(rate(rows, "none", family, "attack"), (2, 2), "{family}: attacks succeed undefended");
        assert_eq!(rate(rows, "none", family, "benign"), (0, 2), "{family}: benign updates are acted on");
    }
    // Each defence stops the attack it is for.
    assert_eq!(rate(rows, "quarantine", "instruction_in_value", "attack"), (0, 2));
    assert_eq!(rate(rows, "supersession_limit", "repeated_overwrite", "attack"), (0, 2));
    assert_eq!(rate(rows, "authority", "authority_spoof", "attack"), (0, 2));
    assert_eq!(rate(rows, "all", "authority_spoof", "attack"), (0, 2));
    // The supersession limit escalates the warehouse's hourly stock updates (case 0) and not
    // its daily ones (case 1): the cost it is reported with.
    assert_eq!(rate(rows, "supersession_limit", "repeated_overwrite", "benign"), (1, 2));
    // Nothing stops drift by another principal.
    assert_eq!(rate(rows, "all", "belief_drift", "attack"), (2, 2));
    // The table shows every arm.
    assert!(
        report.markdown.contains("| instructions hidden in a value | attack success | 1.00 (2/2"),
        "{}",
        report.markdown
    );
}

#[tokio::test]
async fn no_cases_is_an_argument_error() {
    let args = PoisoningArgs { per_family: 0, seed: 1, prose: false, per_case: None, families: vec![] };
    let e = poisoning::poisoning(&args, prov(), &Config::embedded_default().unwrap()).await.unwrap_err();
    assert!(e.to_string().contains("--per-family"), "{e}");
    let args = PoisoningArgs { per_family: 1, seed: 1, prose: false, per_case: None, families: vec!["drift".into()] };
    let e = poisoning::poisoning(&args, prov(), &Config::embedded_default().unwrap()).await.unwrap_err();
    assert!(e.to_string().contains("\"drift\" is not one of"), "{e}");
}

#[test]
fn reliability_md_poisoning_tables_are_their_result_files() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("RELIABILITY.md")).expect("RELIABILITY.md at the repository root");
    let blocks = table::blocks(&text);
    assert!(!blocks.is_empty(), "RELIABILITY.md holds no poisoning table");
    for (file, body) in blocks {
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(root.join(&file)).expect("the named result file")).unwrap();
        let want = table::render_report(&report).expect("a report with rows");
        assert_eq!(
            body,
            want.trim(),
            "RELIABILITY.md's poisoning table differs from {file}: rerun the command above it and paste its table"
        );
    }
}
