//! A directory of scenarios written in a temporary directory (not the repo's) runs with no code
//! change, under two configs side by side; reports, failure reasons and the result history.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The built-in kinds the scenarios assemble, linked so their registrations are kept.
use mnemo_llm as _;
use mnemo_store as _;

use std::path::Path;

use mnemo_eval::{run_eval, EvalArgs, EvalError};
use mnemo_report::RunProvenance;
use serde_json::Value;

fn provenance() -> RunProvenance {
    RunProvenance {
        client: "fake".into(),
        model: "fake".into(),
        embedder: "fake".into(),
        offline: true,
        cassette: None,
        run_id: "r1".into(),
        config_hash: String::new(),
        git_commit: "unknown".into(),
        command: "test".into(),
        started_at: "2026-02-03T04:05:06Z".into(),
        cores: 1,
        token_counter: "chars/4".into(),
    }
}

const CORRECTION: &str = r#"
name = "tiny-correction"
start = 2026-07-01T09:00:00Z
namespace = "t1"

[[events]]
at = "0d"
say = "[SEM] Widget | colour | red"

[[events]]
at = "1d"
say = "[SEM] Widget | colour | blue"

[[probes]]
at = "2d"
query = "What colour is the Widget?"
entity = "Widget"
attribute = "colour"
expect = "blue"

[expect]
forgotten = [ { entity = "Widget", attribute = "colour", value = "red" } ]
kept = [ { entity = "Widget", attribute = "colour", count = 2 } ]
"#;

const FORGET: &str = r#"
name = "tiny-forget"
start = 2026-07-01T09:00:00Z

[settings]
recall.budget_tokens = 300

[[events]]
at = "0d"
say = "[SEM] Gadget | size | large"

[[events]]
at = "1h"
say = "[FORGET] Gadget | size"

[[probes]]
at = "2h"
query = "What size is the Gadget?"
entity = "Gadget"
attribute = "size"

[expect]
forgotten = [ { entity = "Gadget", attribute = "size" } ]
"#;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn rows(v: &Value) -> &Vec<Value> {
    v["rows"].as_array().unwrap()
}

fn row<'a>(v: &'a Value, system: &str, config: &str, scenario: &str, metric: &str) -> &'a Value {
    rows(v)
        .iter()
        .find(|r| r["system"] == system && r["config"] == config && r["scenario"] == scenario && r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {system} {config} {scenario} {metric}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_scenario_directory_runs_under_two_configs() {
    let tmp = tempfile::tempdir().unwrap();
    let scen = tmp.path().join("scenarios");
    std::fs::create_dir(&scen).unwrap();
    write(&scen, "a.toml", CORRECTION);
    write(&scen, "b.toml", FORGET);
    write(&scen, "README.md", "not a scenario: ignored");
    let small = tmp.path().join("small.toml");
    std::fs::write(&small, "[recall]\nbudget_tokens = 64\n").unwrap();
    let big = tmp.path().join("big.toml");
    std::fs::write(&big, "[recall]\nbudget_tokens = 4096\n").unwrap();
    let json = tmp.path().join("out.json");
    let results = tmp.path().join("results");
    let args = EvalArgs {
        scenario_dirs: vec![scen.clone()],
        configs: vec![small, big],
        json: Some(json.clone()),
        publish: true,
        results_dir: results.clone(),
        no_baselines: false,
    };

    let out = run_eval(&args, provenance()).await.unwrap();
    assert_eq!(out.scenarios, vec!["tiny-correction", "tiny-forget"]);
    assert_eq!(out.configs.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), vec!["small", "big"]);
    assert!(out.mnemo_passed_all(), "{}", out.failures_markdown());
    assert!(!out.provenance.config_hash.is_empty());
    // The provenance says who answered, as the answers said: the announced "fake" is replaced
    // by the model string the fake model echoed.
    assert_eq!(out.provenance.model, "fake-qwen");
    assert_eq!(out.provenance.client, "fake");
    assert!(out.runs.iter().all(|r| r.echoed_models == vec!["fake:fake-qwen".to_string()]));

    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["provenance"]["run_id"], "r1");
    // 2 configs × 3 systems × (2 scenarios × 5 metrics + 5 pooled rows)
    assert_eq!(rows(&v).len(), 2 * 3 * (2 * 5 + 5));
    assert_eq!(row(&v, "mnemo", "small", "tiny-forget", "pass")["value"], true);
    assert_eq!(row(&v, "naive_rag", "big", "tiny-forget", "pass")["value"], false);
    let wrong = row(&v, "naive_rag", "big", "all", "wrong_fact_rate");
    assert_eq!(
        (wrong["k"].as_u64(), wrong["n"].as_u64()),
        (Some(1), Some(2)),
        "NaiveRAG still asserts the forgotten size"
    );
    let recall = row(&v, "recent_only", "small", "all", "forgetting_recall");
    assert_eq!((recall["value"].as_f64(), recall["n"].as_u64()), (Some(0.0), Some(2)));
    let precision = row(&v, "mnemo", "big", "all", "forgetting_precision");
    assert_eq!((precision["value"].as_f64(), precision["n"].as_u64()), (Some(1.0), Some(2)));
    assert!(row(&v, "mnemo", "big", "all", "miss_rate")["lo"].is_number());

    let md = out.markdown();
    assert!(md.contains("| mnemo | small | 2/2 = 1.000 [0.342, 1.000] n=2 |"), "{md}");
    assert!(md.contains("| naive_rag | big |"));

    // Result history: a new file each time, never overwritten; LATEST.md regenerated.
    let first = results.join("2026-02-03-r1.json");
    assert_eq!(out.published.as_deref(), Some(first.as_path()));
    let before = std::fs::read_to_string(&first).unwrap();
    let again = run_eval(&args, provenance()).await.unwrap();
    assert_eq!(again.published.as_deref(), Some(results.join("2026-02-03-r1-2.json").as_path()));
    assert_eq!(std::fs::read_to_string(&first).unwrap(), before);
    let latest = std::fs::read_to_string(results.join("LATEST.md")).unwrap();
    assert!(
        latest.contains("2026-02-03-r1-2.json")
            && latest.contains("| mnemo | small |")
            && latest.contains("run id: `r1`"),
        "{latest}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_scenario_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    // The expectation is wrong on purpose: Mnemo answers "blue" from its memory.
    let text = CORRECTION
        .replace("expect = \"blue\"", "expect = \"green\"")
        .replace("value = \"red\"", "value = \"purple\"")
        .replace("count = 2", "count = 1");
    write(tmp.path(), "a.toml", &text);
    let out = run_eval(&EvalArgs::new(vec![tmp.path().to_path_buf()]), provenance()).await.unwrap();
    assert!(!out.mnemo_passed_all());
    let why = out.failures_markdown();
    assert!(why.contains("tiny-correction — mnemo (default) FAILED"), "{why}");
    assert!(why.contains("expected \"green\", answered \"blue\""), "{why}");
    assert!(why.contains("from memory") && why.contains("Widget | colour | blue"), "the memory and its content: {why}");
    assert!(why.contains("created"), "its why history: {why}");
    assert!(why.contains("forgotten matcher unmet: claim Widget | colour | purple"), "{why}");
    assert!(
        why.contains("kept matcher unmet: claim Widget | colour | *, exactly 1 memory"),
        "two memories match: {why}"
    );
    assert!(
        why.contains("collateral forget") && why.contains("superseded"),
        "the red memory was tombstoned without a matcher: {why}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_settings_keys_name_the_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "b.toml", &FORGET.replace("recall.budget_tokens", "recall.budget_tokenz"));
    let err = run_eval(&EvalArgs::new(vec![tmp.path().to_path_buf()]), provenance()).await.unwrap_err();
    match &err {
        EvalError::Scenario { file, line, field, message } => {
            assert!(file.ends_with("b.toml"));
            assert_eq!((*line, field.as_str()), (5, "settings"));
            assert!(message.contains("budget_tokenz"), "{message}");
        }
        other => panic!("{other}"),
    }
}
