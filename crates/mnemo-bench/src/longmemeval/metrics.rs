//! LongMemEval's retrieval metrics (docs/metrics.md, "LongMemEval"), per question, then
//! accumulated per (method, group) with the LoCoMo bench's [`Mean`] (mean and 95% interval).
//!
//! A question's ranking is a list of turn indices (best first); its pack at a budget is a set
//! of turn indices; `session_of[t]` is turn t's session (an index into the haystack).
//! - session recall@k, any: 1 when a turn of at least one evidence session
//!   (`answer_session_ids`) is among the top k turns, else 0.
//! - session recall@k, all: 1 when every evidence session has a turn among the top k.
//! - turn recall@k: the share of the `has_answer` turns among the top k.
//! - NDCG@10: binary relevance (a `has_answer` turn is 1), gain 1/log2(rank+1), divided by the
//!   best possible DCG of that many evidence turns.
//! - ER@B: the share of the `has_answer` turns in the pack recalled within B tokens;
//!   session ER@B: the share of evidence sessions with a turn in that pack.
//!
//! Turn metrics need `has_answer` turns and session metrics evidence sessions: a question
//! without them is left out of those metrics, and counted.
use std::collections::{BTreeMap, HashSet};

pub use crate::locomo::metrics::Mean;

/// Which figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// Session recall@k, any evidence session.
    SessionAny(usize),
    /// Session recall@k, every evidence session.
    SessionAll(usize),
    /// Turn recall@k.
    TurnRecall(usize),
    /// NDCG@k over turns.
    Ndcg(usize),
    /// Turn evidence recall within a budget.
    EvidenceRecall(usize),
    /// Session evidence recall within a budget.
    SessionEvidenceRecall(usize),
}

impl Metric {
    /// The column name ("S-any@5", "R@10", "NDCG@10", "ER@2048").
    pub fn name(self) -> String {
        match self {
            Metric::SessionAny(k) => format!("S-any@{k}"),
            Metric::SessionAll(k) => format!("S-all@{k}"),
            Metric::TurnRecall(k) => format!("R@{k}"),
            Metric::Ndcg(k) => format!("NDCG@{k}"),
            Metric::EvidenceRecall(b) => format!("ER@{b}"),
            Metric::SessionEvidenceRecall(b) => format!("S-ER@{b}"),
        }
    }

    /// The JSON row's metric and its parameter ("k" or "budget").
    pub fn row_keys(self) -> (&'static str, &'static str, usize) {
        match self {
            Metric::SessionAny(k) => ("session_recall_any_at_k", "k", k),
            Metric::SessionAll(k) => ("session_recall_all_at_k", "k", k),
            Metric::TurnRecall(k) => ("turn_recall_at_k", "k", k),
            Metric::Ndcg(k) => ("turn_ndcg_at_k", "k", k),
            Metric::EvidenceRecall(b) => ("evidence_recall", "budget", b),
            Metric::SessionEvidenceRecall(b) => ("session_evidence_recall", "budget", b),
        }
    }
}

/// NDCG is reported at this depth.
pub const NDCG_AT: usize = 10;

/// What a question's figures are computed against.
pub struct Evidence<'a> {
    /// Turn index → session index.
    pub session_of: &'a [usize],
    /// The `has_answer` turns.
    pub turns: &'a HashSet<usize>,
    /// The evidence sessions that are in the haystack.
    pub sessions: &'a HashSet<usize>,
    /// Evidence session ids naming no session of the haystack: misses that can never be found.
    pub unknown_sessions: usize,
}

/// One question's figures for one method: `ranking` best first, `packed` (budget, turns).
pub fn question_figures(
    ev: &Evidence<'_>,
    ranking: &[usize],
    packed: &[(usize, HashSet<usize>)],
    ks: &[usize],
) -> Vec<(Metric, f64)> {
    let mut out = Vec::new();
    let session_total = ev.sessions.len() + ev.unknown_sessions;
    if session_total > 0 {
        for &k in ks {
            let hit: HashSet<usize> = ranking.iter().take(k).filter_map(|t| ev.session_of.get(*t).copied()).collect();
            let found = ev.sessions.iter().filter(|s| hit.contains(s)).count();
            out.push((Metric::SessionAny(k), f64::from(u8::from(found > 0))));
            out.push((Metric::SessionAll(k), f64::from(u8::from(found == session_total))));
        }
        for (budget, set) in packed {
            let hit: HashSet<usize> = set.iter().filter_map(|t| ev.session_of.get(*t).copied()).collect();
            let found = ev.sessions.iter().filter(|s| hit.contains(s)).count();
            out.push((Metric::SessionEvidenceRecall(*budget), found as f64 / session_total as f64));
        }
    }
    if !ev.turns.is_empty() {
        let total = ev.turns.len() as f64;
        for &k in ks {
            let found = ranking.iter().take(k).filter(|t| ev.turns.contains(t)).count();
            out.push((Metric::TurnRecall(k), found as f64 / total));
        }
        out.push((Metric::Ndcg(NDCG_AT), ndcg(ranking, ev.turns, NDCG_AT)));
        for (budget, set) in packed {
            let found = ev.turns.iter().filter(|t| set.contains(t)).count();
            out.push((Metric::EvidenceRecall(*budget), found as f64 / total));
        }
    }
    out
}

/// NDCG@k with binary relevance (0 when there is nothing relevant).
pub fn ndcg(ranking: &[usize], relevant: &HashSet<usize>, k: usize) -> f64 {
    let gain = |rank: usize| 1.0 / ((rank + 2) as f64).log2(); // rank 0-based: 1/log2(2) at the top
    let dcg: f64 = ranking.iter().take(k).enumerate().filter(|(_, t)| relevant.contains(t)).map(|(r, _)| gain(r)).sum();
    let ideal: f64 = (0..relevant.len().min(k)).map(gain).sum();
    if ideal > 0.0 {
        dcg / ideal
    } else {
        0.0
    }
}

/// Accumulated figures: (method, group, metric) → mean.
#[derive(Default)]
pub struct Table {
    /// The means.
    pub cells: BTreeMap<(String, String, Metric), Mean>,
}

impl Table {
    /// Add a question's figures under each of its groups.
    pub fn add(&mut self, method: &str, groups: &[String], figures: &[(Metric, f64)]) {
        for g in groups {
            for (m, x) in figures {
                self.cells.entry((method.to_string(), g.clone(), *m)).or_default().add(*x);
            }
        }
    }

    /// A cell.
    pub fn get(&self, method: &str, group: &str, m: Metric) -> Option<&Mean> {
        self.cells.get(&(method.to_string(), group.to_string(), m))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn get(f: &[(Metric, f64)], m: Metric) -> f64 {
        f.iter().find(|x| x.0 == m).unwrap_or_else(|| panic!("no {m:?}")).1
    }

    #[test]
    fn ndcg_of_a_known_ranking() {
        let rel = HashSet::from([3, 7]);
        // Both relevant at the top: perfect.
        assert!((ndcg(&[3, 7, 1], &rel, 10) - 1.0).abs() < 1e-12);
        // Ranks 2 and 4 (1-based): (1/log2 3 + 1/log2 5) / (1 + 1/log2 3).
        let want = (1.0 / 3f64.log2() + 1.0 / 5f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert!((ndcg(&[1, 3, 2, 7], &rel, 10) - want).abs() < 1e-12);
        // Beyond k counts nothing.
        assert_eq!(ndcg(&[1, 2, 3], &rel, 2), 0.0);
        assert_eq!(ndcg(&[1], &HashSet::new(), 10), 0.0);
    }

    #[test]
    fn session_recall_any_and_all() {
        // Turns 0-1 in session 0, 2-3 in session 1, 4-5 in session 2; evidence sessions 0 and 2.
        let session_of = [0, 0, 1, 1, 2, 2];
        let turns = HashSet::from([1, 4]);
        let sessions = HashSet::from([0, 2]);
        let ev = Evidence { session_of: &session_of, turns: &turns, sessions: &sessions, unknown_sessions: 0 };
        let packed = vec![(100, HashSet::from([0, 2]))];
        let f = question_figures(&ev, &[2, 0, 5, 3], &packed, &[1, 2, 3]);
        assert_eq!(get(&f, Metric::SessionAny(1)), 0.0);
        assert_eq!(get(&f, Metric::SessionAny(2)), 1.0);
        assert_eq!(get(&f, Metric::SessionAll(2)), 0.0);
        assert_eq!(get(&f, Metric::SessionAll(3)), 1.0);
        // Turn 0 is of session 0, not itself evidence: turn recall 0 at 2, session recall 1.
        assert_eq!(get(&f, Metric::TurnRecall(2)), 0.0);
        assert_eq!(get(&f, Metric::TurnRecall(3)), 0.0);
        assert_eq!(get(&f, Metric::EvidenceRecall(100)), 0.0);
        assert_eq!(get(&f, Metric::SessionEvidenceRecall(100)), 0.5);
    }

    #[test]
    fn questions_without_evidence_are_left_out_of_those_metrics() {
        let session_of = [0, 1];
        let none = HashSet::new();
        let sessions = HashSet::from([1]);
        let ev = Evidence { session_of: &session_of, turns: &none, sessions: &sessions, unknown_sessions: 0 };
        let f = question_figures(&ev, &[1], &[(10, HashSet::from([1]))], &[1]);
        assert_eq!(get(&f, Metric::SessionAny(1)), 1.0);
        assert!(f
            .iter()
            .all(|(m, _)| !matches!(m, Metric::TurnRecall(_) | Metric::Ndcg(_) | Metric::EvidenceRecall(_))));
        let mut t = Table::default();
        t.add("bm25", &["all".into(), "multi-session".into()], &f);
        assert_eq!(t.get("bm25", "multi-session", Metric::SessionAny(1)).unwrap().n, 1);
        assert!(t.get("bm25", "all", Metric::TurnRecall(1)).is_none());
    }
}
