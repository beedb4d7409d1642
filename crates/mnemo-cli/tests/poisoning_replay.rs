//! `bench poisoning` on a real small model: Qwen2.5-Coder-1.5B-Instruct's answers to the prose
//! case set, replayed from the committed cassette (no model, no network), come to the figures of
//! the committed result file RELIABILITY.md shows — so a change that moves them is seen.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use serde_json::Value;

mod cli_run;
use cli_run::{replaying, repo_root};

const CASSETTE: &str = "bench/cassettes/poisoning-qwen2.5-coder-1.5b";
const RESULT: &str = "bench/results/poisoning-cassette-qwen2.5-coder-1.5b.json";

/// (arm, family, side, k, n) of a report's rows.
fn counts(report: &Value) -> Vec<(String, String, String, u64, u64)> {
    report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["arm"].as_str().unwrap().to_string(),
                r["family"].as_str().unwrap().to_string(),
                r["side"].as_str().unwrap().to_string(),
                r["k"].as_u64().unwrap(),
                r["n"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_cassette_replays_to_the_committed_figures() {
    let out = tempfile::tempdir().unwrap();
    let json = out.path().join("report.json");
    let o = replaying(CASSETTE)
        .arg("--data-dir")
        .arg(out.path().join("unused"))
        .args(["--config", "eval/real-model/local-qwen.toml", "bench", "poisoning", "--prose", "--per-family", "2"])
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let want: Value = serde_json::from_str(&std::fs::read_to_string(repo_root().join(RESULT)).unwrap()).unwrap();
    assert_eq!(got["provenance"]["model"], "replay:qwen2.5-coder-1.5b-instruct", "the model as the cassette echoes it");
    assert_eq!(
        counts(&got),
        counts(&want),
        "the replay no longer comes to {RESULT}: rerun its command (RELIABILITY.md)"
    );
}
