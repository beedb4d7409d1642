//! `--per-question FILE`: every question's figures per method, as JSON lines, so that two runs
//! (a variant and its baseline) can be compared question by question — wins, losses and a
//! sign test — instead of by their means alone (`bench/paired.py`).
//!
//! One line per (question, method): `{"conversation", "question" (its index among the
//! conversation's questions), "category", "method", "figures": {"ER@256": .., "R@10": ..,
//! "MRR": ..}}`.
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::metrics::Metric;
use crate::error::{BenchError, Result};

/// The open file.
pub struct PerQuestion {
    path: PathBuf,
    out: BufWriter<File>,
}

/// The column name of a metric ("ER@2048", "R@10", "MRR").
pub fn metric_name(m: Metric) -> String {
    match m {
        Metric::EvidenceRecall(b) => format!("ER@{b}"),
        Metric::RecallAt(k) => format!("R@{k}"),
        Metric::Mrr => "MRR".into(),
    }
}

impl PerQuestion {
    /// Create (truncate) `path`.
    pub fn create(path: &Path) -> Result<Self> {
        let f = File::create(path).map_err(|e| BenchError::Io { path: path.to_path_buf(), source: e })?;
        Ok(PerQuestion { path: path.to_path_buf(), out: BufWriter::new(f) })
    }

    /// One question's figures for one method.
    pub fn write(
        &mut self,
        conversation: &str,
        question: usize,
        category: u8,
        method: &str,
        figures: &[(Metric, f64)],
    ) -> Result<()> {
        let figures: Vec<(String, f64)> = figures.iter().map(|(m, x)| (metric_name(*m), *x)).collect();
        self.write_named(conversation, question, json!(category), method, &figures)
    }

    /// One question's figures for one method, the metrics named by the caller (`bench
    /// longmemeval`: the question's id as `conversation`, its type as `category`).
    pub fn write_named(
        &mut self,
        conversation: &str,
        question: usize,
        category: Value,
        method: &str,
        figures: &[(String, f64)],
    ) -> Result<()> {
        let figs: Map<String, Value> = figures.iter().map(|(m, x)| (m.clone(), json!(x))).collect();
        let line = json!({"conversation": conversation, "question": question, "category": category, "method": method, "figures": figs});
        writeln!(self.out, "{line}").map_err(|e| BenchError::Io { path: self.path.clone(), source: e })
    }

    /// Flush to disk.
    pub fn finish(mut self) -> Result<()> {
        self.out.flush().map_err(|e| BenchError::Io { path: self.path.clone(), source: e })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn lines_carry_the_question_and_named_figures() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("q.jsonl");
        let mut w = PerQuestion::create(&p).unwrap();
        w.write("conv-1", 3, 2, "hybrid", &[(Metric::EvidenceRecall(256), 0.5), (Metric::RecallAt(10), 1.0)]).unwrap();
        w.finish().unwrap();
        let v: Value = serde_json::from_str(std::fs::read_to_string(&p).unwrap().trim()).unwrap();
        assert_eq!(v["question"], 3);
        assert_eq!(v["method"], "hybrid");
        assert_eq!(v["figures"]["ER@256"], 0.5);
        assert_eq!(v["figures"]["R@10"], 1.0);
        assert_eq!(metric_name(Metric::Mrr), "MRR");
    }
}
