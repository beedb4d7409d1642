//! The report of a benchmark: the JSON report (provenance + flat rows) and a readable table.
use mnemo_report::{Report, RunProvenance};
use serde::Serialize;

/// A benchmark's result. Serialises as `{"provenance": {...}, "rows": [...]}`.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Provenance and rows.
    #[serde(flatten)]
    pub report: Report,
    /// The same figures as a markdown document (tables), for people.
    #[serde(skip)]
    pub markdown: String,
}

impl BenchReport {
    /// Assemble.
    pub fn new(provenance: RunProvenance, rows: Vec<serde_json::Value>, markdown: String) -> Self {
        BenchReport { report: Report { provenance, rows }, markdown }
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(&self.report)
            .unwrap_or_else(|e| format!("{{\"error\": \"cannot encode report: {e}\"}}"))
    }
}

/// A markdown table from a header and rows of cells.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = String::new();
    s.push_str(&format!("| {} |\n", header.join(" | ")));
    s.push_str(&format!("|{}\n", header.iter().map(|_| "---|").collect::<String>()));
    for r in rows {
        s.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    s
}

/// The provenance block's lines as markdown.
pub fn provenance_md(p: &RunProvenance) -> String {
    format!(
        "run `{}` · git `{}` · {} cores · client {} / model {} / embedder {} · offline {} · tokens {} · started {}\n\ncommand: `{}`\n",
        p.run_id, p.git_commit, p.cores, p.client, p.model, p.embedder, p.offline, p.token_counter, p.started_at, p.command
    )
}
