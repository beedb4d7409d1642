//! End-to-end runs of both benchmarks on tiny inputs: the pipeline (Engine::ingest, recall,
//! the metrics, the report shape) works and its figures mean what they say.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::sync::Arc;

use mnemo_bench::{locomo, longmemeval, scale, LocomoArgs, LongMemEvalArgs, ScaleArgs};
use mnemo_report::RunProvenance;

fn prov() -> RunProvenance {
    RunProvenance {
        client: "fake".into(),
        model: "fake-qwen".into(),
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

const CONV: &str = r#"[{"sample_id": "t1",
  "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
      {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a greyhound called Zephyr last week."},
      {"speaker": "Bob", "dia_id": "D1:2", "text": "Lovely! I went hiking in the mountains."}],
    "session_2_date_time": "9:00 am on 1 June, 2023",
    "session_2": [
      {"speaker": "Ann", "dia_id": "D2:1", "text": "Work has been busy lately.", "blip_caption": "a photo of a desk"},
      {"speaker": "Bob", "dia_id": "D2:2", "text": "Same here, lots of meetings."}]},
  "qa": [
    {"question": "What is the name of Ann's greyhound?", "answer": "Zephyr", "evidence": ["D1:1"], "category": 4},
    {"question": "Where did Bob go hiking?", "answer": "mountains", "evidence": ["D1:2", "D9:9"], "category": 1},
    {"question": "What did Ann never say?", "adversarial_answer": "x", "evidence": [], "category": 5}]}]"#;

fn value(rows: &[serde_json::Value], method: &str, cat: &str, metric: &str, key: &str, at: u64) -> f64 {
    rows.iter()
        .find(|r| r["method"] == method && r["category"] == cat && r["metric"] == metric && r[key] == at)
        .unwrap_or_else(|| panic!("no row {method} {cat} {metric} {key}={at}"))["value"]
        .as_f64()
        .unwrap()
}

#[tokio::test]
async fn locomo_small_file_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tiny.json");
    std::fs::write(&file, CONV).unwrap();
    for index in ["brute", "tantivy"] {
        let mut args = LocomoArgs::new(file.clone());
        args.retrieval.index = Some(index.into());
        args.quiet = true;
        args.budgets = vec![16, 2048];
        let emb = Arc::new(mnemo_llm::FakeQwen::new(64).unwrap());
        let r = locomo(&args, prov(), emb).await.unwrap();
        let rows = &r.report.rows;
        assert_eq!(r.report.provenance.embedder, "fake-hash-bow-64");
        // The greyhound question: its unique word ranks its turn first for BM25.
        assert_eq!(value(rows, "bm25", "4", "recall_at_k", "k", 1), 1.0, "{index}");
        let mrr = rows.iter().find(|r| r["method"] == "bm25" && r["category"] == "4" && r["metric"] == "mrr").unwrap();
        assert_eq!(mrr["value"], 1.0, "{index}");
        assert!(mrr.get("k").is_none() && mrr.get("budget").is_none());
        // Everything fits 2048 tokens: evidence recall 1 for the reachable evidence...
        assert_eq!(value(rows, "hybrid", "4", "evidence_recall", "budget", 2048), 1.0, "{index}");
        // ...and the unreachable id D9:9 halves the multi-hop question's recall.
        assert_eq!(value(rows, "hybrid", "1", "evidence_recall", "budget", 2048), 0.5, "{index}");
        let u = rows.iter().find(|r| r["metric"] == "unreachable_evidence" && r["category"] == "1").unwrap();
        assert_eq!(u["value"], 1);
        // 16 tokens hold only the newest turn for RecentOnly: not the evidence.
        assert_eq!(value(rows, "recent_only", "4", "evidence_recall", "budget", 16), 0.0);
        assert!(rows.iter().any(|r| r["metric"] == "questions_without_evidence" && r["category"] == "5"));
        assert!(r.markdown.contains("categories 1-4"));
        let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
        assert!(json["provenance"].is_object() && json["rows"].is_array());
    }
}

#[tokio::test]
async fn locomo_malformed_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.json");
    std::fs::write(&file, CONV.replace("1:56 pm on 8 May, 2023", "sometime")).unwrap();
    let emb = Arc::new(mnemo_llm::FakeQwen::new(64).unwrap());
    let e = locomo(&LocomoArgs::new(file), prov(), emb).await.unwrap_err().to_string();
    assert!(e.contains("broken.json") && e.contains("sometime"), "{e}");
}

#[tokio::test]
async fn scale_tiny_run_reports_every_metric() {
    let dir = tempfile::tempdir().unwrap();
    let args = ScaleArgs {
        n: vec![300],
        dims: 32,
        queries: 5,
        single: 5,
        batch: 100,
        dir: Some(dir.path().to_path_buf()),
        quiet: true,
        ..Default::default()
    };
    let r = scale(&args, prov(), &mnemo_bench::scale::Backend::embedded_default()).await.unwrap();
    let metrics: Vec<&str> = r.report.rows.iter().map(|r| r["metric"].as_str().unwrap()).collect();
    for m in [
        "ingest_batched",
        "ingest_one_at_a_time",
        "recall_p50",
        "recall_p99",
        "index_rebuild",
        "index_reopen",
        "peak_rss",
        "disk_bytes_per_memory",
        "dense_recall_at_10_vs_exact",
        "fused_top64_overlap_depth_64",
        "fused_top64_overlap_depth_100",
    ] {
        assert!(metrics.contains(&m), "missing {m}: {metrics:?}");
    }
    for row in r.report.rows.iter().filter(|r| r["metric"].as_str().unwrap().starts_with("fused_top64_")) {
        let v = row["value"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&v), "{row}");
    }
    let reopen = r.report.rows.iter().find(|r| r["metric"] == "index_reopen").unwrap();
    assert!(reopen["note"].as_str().unwrap().contains("the same 10 dense hits"), "{reopen}");
    assert!(!reopen["note"].as_str().unwrap().contains("UNEXPECTED"));
}

/// Two questions of LongMemEval's format: an answerable one whose evidence is in its second
/// session, and an abstention question with no has_answer turn.
const LME: &str = include_str!("fixtures/longmemeval-two.json");

fn lme_value(rows: &[serde_json::Value], method: &str, group: &str, metric: &str, key: &str, at: u64) -> f64 {
    rows.iter()
        .find(|r| r["method"] == method && r["question_type"] == group && r["metric"] == metric && r[key] == at)
        .unwrap_or_else(|| panic!("no row {method} {group} {metric} {key}={at}"))["value"]
        .as_f64()
        .unwrap()
}

#[tokio::test]
async fn longmemeval_small_file_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lme.json");
    std::fs::write(&file, LME).unwrap();
    let mut args = LongMemEvalArgs::new(file);
    args.quiet = true;
    args.budgets = vec![12, 2048];
    args.ks = vec![1, 4];
    let emb = Arc::new(mnemo_llm::FakeQwen::new(64).unwrap());
    let r = longmemeval(&args, prov(), emb).await.unwrap();
    let rows = &r.report.rows;
    // "Zephyr" and "greyhound" are only in the evidence turn: BM25 ranks it first.
    assert_eq!(lme_value(rows, "bm25", "all", "turn_recall_at_k", "k", 1), 1.0);
    assert_eq!(lme_value(rows, "bm25", "all", "session_recall_any_at_k", "k", 1), 1.0);
    assert_eq!(lme_value(rows, "bm25", "all", "turn_ndcg_at_k", "k", 10), 1.0);
    assert_eq!(lme_value(rows, "hybrid", "single-session-user", "evidence_recall", "budget", 2048), 1.0);
    // 12 tokens hold no whole turn: nothing is found within them.
    assert_eq!(lme_value(rows, "hybrid", "all", "evidence_recall", "budget", 12), 0.0);
    // The abstention question is apart, has no turn evidence (counted), and is not in "all".
    let count = |group: &str, metric: &str| {
        rows.iter().find(|r| r["question_type"] == group && r["metric"] == metric).unwrap()["value"].as_u64().unwrap()
    };
    assert_eq!(count("abstention", "questions"), 1);
    assert_eq!(count("abstention", "questions_without_turn_evidence"), 1);
    assert_eq!(count("all", "questions"), 1);
    // Its question shares no word with its haystack: BM25 ranks nothing, the session is missed.
    assert_eq!(lme_value(rows, "bm25", "abstention", "session_recall_all_at_k", "k", 4), 0.0);
    assert!(!rows.iter().any(|r| r["question_type"] == "abstention" && r["metric"] == "turn_recall_at_k"));
    assert!(r.markdown.contains("## abstention (n = 1)"), "{}", r.markdown);
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["provenance"]["embedder"], "fake-hash-bow-64");
}

/// The development splits, when `MNEMO_LONGMEMEVAL_DIR` names the directory that holds them
/// (they are not in the repository: bench/RESULTS.md): the loader reads them whole, with the
/// counts their README gives. Skipped (with a message) without them.
#[test]
fn longmemeval_dev_splits_load_when_present() {
    let Some(dir) = std::env::var_os("MNEMO_LONGMEMEVAL_DIR").map(std::path::PathBuf::from) else {
        eprintln!("skipped: MNEMO_LONGMEMEVAL_DIR is not set (the directory of the LongMemEval development files)");
        return;
    };
    for (name, questions) in [("longmemeval-s-dev.json", 58), ("longmemeval-oracle.json", 393)] {
        let p = dir.join(name);
        if !p.exists() {
            eprintln!("skipped: {name} is not in MNEMO_LONGMEMEVAL_DIR ({})", dir.display());
            continue;
        }
        let qs = mnemo_bench::longmemeval::data::load(&p).unwrap();
        assert_eq!(qs.len(), questions, "{name}");
        assert!(qs.iter().any(|q| q.is_abstention()), "{name}");
        assert!(qs.iter().all(|q| q.sessions.iter().all(|s| s.at.millis() > 0)), "{name}");
    }
}
