//! The acceptance test of the eval harness: every scenario shipped in eval/scenarios runs
//! offline and passes for Mnemo, while the baselines post a non-zero wrong-fact rate
//! (NaiveRAG) and a non-zero miss rate (RecentOnly) pooled over all scenarios.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// The built-in kinds the scenarios assemble, linked so their registrations are kept.
use mnemo_llm as _;
use mnemo_store as _;

use std::path::PathBuf;

use mnemo_eval::{run_eval, EvalArgs};
use mnemo_report::RunProvenance;

fn provenance() -> RunProvenance {
    RunProvenance {
        client: "fake".into(),
        model: "fake".into(),
        embedder: "fake".into(),
        offline: true,
        cassette: None,
        run_id: "test".into(),
        config_hash: String::new(),
        git_commit: "unknown".into(),
        command: "cargo test -p mnemo-eval".into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        cores: 1,
        token_counter: "chars/4".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_repo_scenarios_pass_and_baselines_fail() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../eval/scenarios");
    let out = run_eval(&EvalArgs::new(vec![dir]), provenance()).await.unwrap();
    println!("{}", out.markdown());
    assert!(out.scenarios.len() >= 16, "{} scenarios", out.scenarios.len());
    assert!(out.mnemo_passed_all(), "Mnemo failed a scenario:\n{}", out.failures_markdown());
    let config = &out.configs[0].name;
    let naive = out.pooled("naive_rag", config);
    let recent = out.pooled("recent_only", config);
    assert!(naive.wrong_fact_rate().value > 0.0, "NaiveRAG wrong-fact rate is 0");
    assert!(recent.miss_rate().value > 0.0, "RecentOnly miss rate is 0");
    let mnemo = out.pooled("mnemo", config);
    assert_eq!(mnemo.wrong, 0);
    assert_eq!(mnemo.missed, 0);
}
