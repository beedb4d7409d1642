//! The retrieval metrics, as docs/metrics.md defines them, accumulated per (method, category).
//!
//! - evidence recall@B: evidence turns present in the pack ÷ evidence turns of the question
//!   (an evidence id naming no turn stays in the denominator: it can never be found, and is
//!   also counted in its own `unreachable_evidence` row), averaged over questions.
//! - R@k: the fraction of the question's evidence turns among the top k of the method's
//!   ranking (the index's search ranking; RecentOnly: newest first), averaged over questions.
//! - MRR: 1 / rank of the first evidence turn in that ranking (0 when none is in it),
//!   averaged over questions.
use std::collections::{BTreeMap, HashSet};

/// Mean of per-question values with a normal-approximation 95% interval of the mean.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Mean {
    /// Sum of values.
    pub sum: f64,
    /// Sum of squares.
    pub sumsq: f64,
    /// Questions.
    pub n: usize,
}

impl Mean {
    /// Add one question's value.
    pub fn add(&mut self, x: f64) {
        self.sum += x;
        self.sumsq += x * x;
        self.n += 1;
    }
    /// The mean (NaN when empty).
    pub fn value(&self) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            self.sum / self.n as f64
        }
    }
    /// mean ± 1.96·s/√n, clamped to 0..=1.
    pub fn ci95(&self) -> (f64, f64) {
        if self.n < 2 {
            return (0.0, 1.0);
        }
        let n = self.n as f64;
        let m = self.value();
        let var = ((self.sumsq - n * m * m) / (n - 1.0)).max(0.0);
        let h = 1.96 * (var / n).sqrt();
        ((m - h).max(0.0), (m + h).min(1.0))
    }
}

/// Which figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Metric {
    /// Evidence recall within a budget of this many tokens.
    EvidenceRecall(usize),
    /// R@k.
    RecallAt(usize),
    /// Mean reciprocal rank.
    Mrr,
}

/// Figures of one question for one method.
pub fn question_figures(
    evidence: &[Option<usize>],
    packed: &[(usize, HashSet<usize>)],
    ranking: &[usize],
    ks: &[usize],
) -> Vec<(Metric, f64)> {
    let total = evidence.len() as f64;
    let mut out = Vec::new();
    for (budget, set) in packed {
        let found = evidence.iter().filter(|e| e.is_some_and(|t| set.contains(&t))).count();
        out.push((Metric::EvidenceRecall(*budget), found as f64 / total));
    }
    let reachable: HashSet<usize> = evidence.iter().flatten().copied().collect();
    for k in ks {
        let found = ranking.iter().take(*k).filter(|t| reachable.contains(t)).count();
        out.push((Metric::RecallAt(*k), found as f64 / total));
    }
    let first = ranking.iter().position(|t| reachable.contains(t));
    out.push((Metric::Mrr, first.map_or(0.0, |r| 1.0 / (r + 1) as f64)));
    out
}

/// Accumulated figures: (method, category, metric) → mean.
#[derive(Default)]
pub struct Table {
    /// The means.
    pub cells: BTreeMap<(String, String, Metric), Mean>,
}

impl Table {
    /// Add a question's figures under its category and the headline group "1-4" (categories
    /// 1 to 4).
    pub fn add(&mut self, method: &str, category: u8, figures: &[(Metric, f64)]) {
        let mut cats = vec![category.to_string()];
        if (1..=4).contains(&category) {
            cats.push("1-4".to_string());
        }
        for c in cats {
            for (m, x) in figures {
                self.cells.entry((method.to_string(), c.clone(), *m)).or_default().add(*x);
            }
        }
    }

    /// A cell.
    pub fn get(&self, method: &str, category: &str, m: Metric) -> Option<&Mean> {
        self.cells.get(&(method.to_string(), category.to_string(), m))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn figures_follow_the_definitions() {
        // Two evidence turns (3 and 7) and one unreachable id.
        let ev = [Some(3), Some(7), None];
        let packed = vec![(256, HashSet::from([3, 9])), (512, HashSet::from([3, 7, 9]))];
        let ranking = [9, 3, 1, 7];
        let f = question_figures(&ev, &packed, &ranking, &[1, 2, 4]);
        let get = |m| f.iter().find(|x| x.0 == m).unwrap().1;
        assert!((get(Metric::EvidenceRecall(256)) - 1.0 / 3.0).abs() < 1e-12);
        assert!((get(Metric::EvidenceRecall(512)) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(get(Metric::RecallAt(1)), 0.0);
        assert!((get(Metric::RecallAt(2)) - 1.0 / 3.0).abs() < 1e-12);
        assert!((get(Metric::RecallAt(4)) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(get(Metric::Mrr), 0.5);
        let none = question_figures(&[Some(5)], &[], &[1, 2], &[1]);
        assert_eq!(none.iter().find(|x| x.0 == Metric::Mrr).unwrap().1, 0.0);
    }

    #[test]
    fn headline_group_excludes_adversarial() {
        let mut t = Table::default();
        t.add("bm25", 5, &[(Metric::Mrr, 1.0)]);
        t.add("bm25", 2, &[(Metric::Mrr, 0.0)]);
        assert_eq!(t.get("bm25", "1-4", Metric::Mrr).unwrap().n, 1);
        assert_eq!(t.get("bm25", "5", Metric::Mrr).unwrap().value(), 1.0);
        let mut m = Mean::default();
        m.add(1.0);
        m.add(0.0);
        let (lo, hi) = m.ci95();
        assert!(lo == 0.0 && hi == 1.0);
    }
}
