//! The repository's labelled assessor cases (eval/cases) under the embedded default: no unsafe
//! acceptance and no wrong-value action on decisive cases, over-abstention at most 5%, and a
//! band of thresholds where both rates are at their best that holds the default.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::PathBuf;

use mnemo_eval::assessor::{load_cases, parse_cases, run_assessor_eval, AssessorEvalArgs, Split};

fn provenance() -> mnemo_report::RunProvenance {
    mnemo_report::RunProvenance {
        client: "rules".into(),
        model: "none".into(),
        embedder: "none".into(),
        offline: true,
        cassette: None,
        run_id: "test".into(),
        config_hash: String::new(),
        git_commit: "test".into(),
        command: "test".into(),
        started_at: "2026-07-10T00:00:00Z".into(),
        cores: 1,
        token_counter: "chars/4".into(),
    }
}

fn cases_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../eval/cases")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repo_cases_are_safe_and_not_over_cautious() {
    let cases = load_cases(&[cases_dir()]).unwrap();
    let decisive = cases.iter().filter(|c| c.decisive).count();
    let ladders: std::collections::BTreeSet<_> = cases.iter().filter_map(|c| c.ladder.clone()).collect();
    let domains: std::collections::BTreeSet<_> = cases.iter().filter_map(|c| c.domain.clone()).collect();
    assert!(decisive >= 40 && ladders.len() >= 2 && domains.len() >= 4, "{decisive} {ladders:?} {domains:?}");
    let d = tempfile::tempdir().unwrap();
    let json = d.path().join("a.json");
    let svg = d.path().join("a.svg");
    let args = AssessorEvalArgs {
        cases: vec![cases_dir()],
        configs: vec![],
        json: Some(json.clone()),
        plot: Some(svg.clone()),
        plan_with_model: false,
    };
    let out = run_assessor_eval(&args, provenance()).await.unwrap();
    let r = &out.results[0];
    let at = r.at_default.iter().find(|s| s.split == Split::Decisive).unwrap();
    assert_eq!(at.unsafe_acceptance.k, 0, "unsafely accepted: {:?}", at.unsafe_cases);
    assert_eq!(at.wrong_value_action.k, 0, "acted on a wrong value: {:?}", at.wrong_value_cases);
    assert!(at.over_abstention.value <= 0.05, "over-abstained: {:?}", at.abstained_cases);
    assert!(r.band.iter().any(|(lo, hi)| *lo <= 0.55 && 0.55 <= *hi), "{:?}", r.band);
    assert!(out.safe());
    // the JSON: the default threshold's rows first, each with metric, value, n, split, threshold
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v["provenance"]["run_id"].is_string());
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows[0]["default_threshold"], true);
    assert_eq!(rows[0]["metric"], "unsafe_acceptance");
    assert_eq!(rows[0]["split"], "decisive");
    assert!(rows[0]["n"].as_u64().unwrap() > 0 && rows[0]["threshold"].as_f64().is_some());
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
}

#[test]
fn malformed_case_files_name_file_line_and_field() {
    let f = std::path::Path::new("bad.toml");
    let base = "[[cases]]\nname = \"x\"\nnow = 2026-07-10T00:00:00Z\nquery = \"q\"\nprobe = { entity = \"e\", attribute = \"a\" }\nshould_act = true\n";
    let e = parse_cases(
        &format!("{base}memories = [ {{ kind = \"semantic\", claim = [\"e\", \"a\"], confirmed = \"3d\" }} ]\n"),
        f,
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("bad.toml:7") && e.contains("claim"), "{e}");
    let e = parse_cases(&format!("{base}faults = [ {{ source = \"erp\", kind = \"flaky\" }} ]\n"), f)
        .unwrap_err()
        .to_string();
    assert!(e.contains("bad.toml:7") && e.contains("faults[0].kind"), "{e}");
    let e = parse_cases(&format!("{base}colour = 1\n"), f).unwrap_err().to_string();
    assert!(e.contains("colour"), "{e}");
    let e = parse_cases(&base.replace("should_act = true\n", "should_act = true\ndecisive = false\n"), f)
        .unwrap_err()
        .to_string();
    assert!(e.contains("ladder"), "{e}");
}
