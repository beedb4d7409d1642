//! A short run of the reliability harness (`mnemo reliability`), as CI runs it: a few kill and
//! damage trials of each kind and a few thousand fuzz executions, every check holding.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::process::Command;

#[test]
fn a_short_reliability_run_holds_every_check() {
    let d = tempfile::tempdir().unwrap();
    let report = d.path().join("reliability.json");
    let o = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(["reliability", "--kill", "4", "--damage", "11", "--fuzz", "3000", "--seed", "11"])
        .args(["--churn", "30", "--readers", "1", "--reader-memories", "500", "--json"])
        .arg(&report)
        .env_remove("MNEMO_DATA_DIR")
        .env_remove("MNEMO_NAMESPACE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert!(v["provenance"]["git_commit"].is_string());
    let rows = v["rows"].as_array().unwrap();
    let suites = |s: &str| rows.iter().filter(|r| r["suite"] == s).count();
    assert_eq!(
        (suites("kill"), suites("damage"), suites("churn"), suites("readers"), suites("fuzz")),
        (4, 11, 1, 1, 3),
        "{stdout}"
    );
    for r in rows {
        assert_eq!(r["runs"], r["passed"], "{r}");
        for bad in [
            "acknowledged_writes_lost",
            "stores_unopenable",
            "commands_failing_after",
            "directories_unusable",
            "old_index_served",
            "panics",
            "tmp_files",
            "memories_not_found",
            "recalls_failed",
            "recalls_building_their_own_index",
        ] {
            if let Some(n) = r["counts"].get(bad) {
                assert_eq!(n, 0, "{bad} in {r}");
            }
        }
    }
    let fuzzed: u64 = rows.iter().filter(|r| r["suite"] == "fuzz").map(|r| r["runs"].as_u64().unwrap()).sum();
    assert_eq!(fuzzed, 3000);
}
