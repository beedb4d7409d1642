//! The two baselines of docs/metrics.md, over the raw chat history of one namespace:
//!
//! - **NaiveRAG**: turns ranked by cosine similarity of the configured embedder's vectors to
//!   the query (ties: the newer turn first), packed greedily in rank order while they fit the
//!   same token budget (a turn that does not fit is skipped, later ones may still fit).
//!   No forgetting: every turn ever said is a candidate.
//! - **RecentOnly**: the most recent turns, newest first, while they fit the budget (the window
//!   ends at the first turn that does not fit).
//!
//! Both count a turn's tokens on its full text with the engine's token counter.
use std::cmp::Ordering;

use mnemo_contract::{Namespace, Timestamp};
use serde::Serialize;

/// Which baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Baseline {
    /// Similarity over raw turns.
    NaiveRag,
    /// Most recent turns.
    RecentOnly,
}

impl Baseline {
    /// Both, in report order.
    pub const ALL: [Baseline; 2] = [Baseline::NaiveRag, Baseline::RecentOnly];
    /// The report's system name.
    pub fn as_str(self) -> &'static str {
        match self {
            Baseline::NaiveRag => "naive_rag",
            Baseline::RecentOnly => "recent_only",
        }
    }
}

/// One raw chat turn as a baseline sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatTurn {
    /// Order of saying (0-based, across namespaces).
    pub seq: usize,
    /// Namespace.
    pub namespace: Namespace,
    /// When.
    pub at: Timestamp,
    /// Speaker.
    pub source: String,
    /// The raw text.
    pub text: String,
    /// Its token cost.
    pub tokens: usize,
    /// Its embedding.
    pub vector: Vec<f32>,
}

/// Cosine similarity (0 when either vector is zero or the lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    mnemo_contract::relevance::cosine(a, b).unwrap_or(0.0)
}

/// The turns a baseline retrieves, in rank order (best first).
pub fn retrieve<'t>(baseline: Baseline, turns: &[&'t ChatTurn], query: &[f32], budget: usize) -> Vec<&'t ChatTurn> {
    match baseline {
        Baseline::NaiveRag => naive_rag(turns, query, budget),
        Baseline::RecentOnly => recent_only(turns, budget),
    }
}

/// NaiveRAG: best cosine first, packed greedily under `budget`.
pub fn naive_rag<'t>(turns: &[&'t ChatTurn], query: &[f32], budget: usize) -> Vec<&'t ChatTurn> {
    let mut scored: Vec<(f64, &'t ChatTurn)> = turns.iter().map(|t| (cosine(query, &t.vector), *t)).collect();
    scored.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(Ordering::Equal).then_with(|| b.1.seq.cmp(&a.1.seq)));
    let mut used = 0usize;
    let mut out = Vec::new();
    for (_, t) in scored {
        if used + t.tokens <= budget {
            used += t.tokens;
            out.push(t);
        }
    }
    out
}

/// RecentOnly: newest first while the turns fit `budget`.
pub fn recent_only<'t>(turns: &[&'t ChatTurn], budget: usize) -> Vec<&'t ChatTurn> {
    let mut by_recency: Vec<&'t ChatTurn> = turns.to_vec();
    by_recency.sort_by_key(|t| std::cmp::Reverse(t.seq));
    let mut used = 0usize;
    let mut out = Vec::new();
    for t in by_recency {
        if used + t.tokens > budget {
            break;
        }
        used += t.tokens;
        out.push(t);
    }
    out
}
