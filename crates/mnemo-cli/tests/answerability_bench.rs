//! `mnemo bench answerability --per-question` on a two-question LongMemEval file: each line
//! says which floors its gate decisions are for and carries every packed memory's text (what
//! bench/read-check.py and bench/gate-replay.py read), and the gate decides as the doors do.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_run;
use cli_run::command;
use serde_json::Value;

/// An answerable question (its evidence in the second session of its haystack) and an
/// abstention question whose haystack holds nothing on it (the bench's own small file).
const LME: &str = include_str!("../../mnemo-bench/tests/fixtures/longmemeval-two.json");

#[test]
fn per_question_lines_carry_floors_and_packed_texts() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("lme.json");
    std::fs::write(&data, LME).unwrap();
    let per_q = d.path().join("pq.jsonl");
    let o = command(&d.path().join("store"))
        .args(["-q", "bench", "answerability", "--quiet", "--json", "-", "--longmemeval"])
        .arg(&data)
        .arg("--per-question")
        .arg(&per_q)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<Value> =
        std::fs::read_to_string(&per_q).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let floors: Vec<f64> = serde_json::from_value(rows[0]["floors"].clone()).unwrap();
    assert_eq!(floors, vec![0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7], "the default sweep");
    let at_half = floors.iter().position(|f| *f == 0.5).unwrap();
    let texts = |r: &Value| -> Vec<String> {
        r["packed_evidence"].as_array().unwrap().iter().map(|e| e[4].as_str().unwrap().to_string()).collect()
    };
    for r in &rows {
        assert_eq!(r["gate_act"].as_array().unwrap().len(), floors.len(), "{r}");
        assert_eq!(r["floors"], rows[0]["floors"], "{r}");
    }
    let find = |set: &str| {
        rows.iter()
            .find(|r| r["set"] == set && r["question"] == "What breed is my dog Zephyr?")
            .unwrap_or_else(|| panic!("no {set} row: {rows:?}"))
    };
    // Asked in its own haystack: the evidence turn is packed, with its text, and the gate acts.
    let own = find("answerable");
    assert!(texts(own).iter().any(|t| t.contains("My dog Zephyr is a greyhound")), "{own}");
    assert_eq!(own["gate_act"][at_half], true, "{own}");
    // Asked in the other haystack: only that haystack's turn is there, and the gate escalates.
    let other = find("cross");
    assert!(texts(other).iter().all(|t| !t.contains("Zephyr")), "{other}");
    assert_eq!(other["gate_act"][at_half], false, "{other}");
}
