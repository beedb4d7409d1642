//! Engine policy: everything tunable, as data (the `[recall]`, `[decay]`, `[kinds.*]` sections
//! of the config file). Unknown keys are rejected.
use serde::{Deserialize, Serialize};

use crate::error::{CoreError, Result};
use crate::model::MemoryKind;

/// Per-kind policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct KindPolicy {
    /// Importance when the turn does not state one.
    pub default_importance: f64,
    /// Whether memories of this kind decay (and can be swept).
    pub decays: bool,
    /// Share of the recall budget (after pinned) reserved for this kind, 0..=1.
    pub quota: f64,
}

impl KindPolicy {
    fn defaults(kind: MemoryKind) -> Self {
        match kind {
            MemoryKind::Semantic => KindPolicy { default_importance: 0.8, decays: false, quota: 0.45 },
            MemoryKind::Procedural => KindPolicy { default_importance: 0.8, decays: false, quota: 0.25 },
            MemoryKind::Episodic => KindPolicy { default_importance: 0.5, decays: true, quota: 0.30 },
        }
    }
}

impl Default for KindPolicy {
    fn default() -> Self {
        KindPolicy::defaults(MemoryKind::Semantic)
    }
}

/// The three kinds' policies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindPolicies {
    /// Semantic.
    #[serde(default = "sem_default")]
    pub semantic: KindPolicy,
    /// Procedural.
    #[serde(default = "proc_default")]
    pub procedural: KindPolicy,
    /// Episodic.
    #[serde(default = "epi_default")]
    pub episodic: KindPolicy,
}

fn sem_default() -> KindPolicy {
    KindPolicy::defaults(MemoryKind::Semantic)
}
fn proc_default() -> KindPolicy {
    KindPolicy::defaults(MemoryKind::Procedural)
}
fn epi_default() -> KindPolicy {
    KindPolicy::defaults(MemoryKind::Episodic)
}

impl Default for KindPolicies {
    fn default() -> Self {
        KindPolicies { semantic: sem_default(), procedural: proc_default(), episodic: epi_default() }
    }
}

impl KindPolicies {
    /// The policy of one kind.
    pub fn of(&self, kind: MemoryKind) -> &KindPolicy {
        match kind {
            MemoryKind::Semantic => &self.semantic,
            MemoryKind::Procedural => &self.procedural,
            MemoryKind::Episodic => &self.episodic,
        }
    }
}

/// Decay (salience) settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DecayPolicy {
    /// Half-life of recency, in days.
    pub half_life_days: f64,
    /// Salience below which a decaying memory is tombstoned ("decayed").
    pub threshold: f64,
    /// Weight of ln(1 + reinforcements) in the boost.
    pub reinforcement_weight: f64,
    /// Weight of (sources - 1) in the boost.
    pub corroboration_weight: f64,
}

impl Default for DecayPolicy {
    fn default() -> Self {
        DecayPolicy { half_life_days: 14.0, threshold: 0.08, reinforcement_weight: 0.2, corroboration_weight: 0.1 }
    }
}

/// Recall settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RecallPolicy {
    /// Default token budget of a pack.
    pub budget_tokens: usize,
    /// How many candidates to take from the index.
    pub candidates: usize,
    /// Which signals the index uses.
    pub mode: crate::SearchMode,
    /// Share of a candidate's relevance its neighbours gain (source turns within
    /// `neighbour_turns`; engine/neighbours.rs); 0 = off.
    pub neighbour_share: f64,
    /// How many turns apart two candidates may be to count as neighbours.
    pub neighbour_turns: usize,
    /// A memory whose text is longer than this many tokens is filed in the index without its
    /// vector: recall finds it by its words, and the dense ranking does not vote for it (nor
    /// in the search for a new memory's neighbours at write time; the store keeps the vector,
    /// and the gate's dense evidence still reads it). A long text (an assistant's answer of
    /// several paragraphs) is near many queries by topic, and cosine has no penalty for a
    /// text's length as BM25 has. None: every vector is filed. Applies to memories filed
    /// after a change; `mnemo reindex` applies it to all.
    pub dense_max_tokens: Option<usize>,
}

impl Default for RecallPolicy {
    fn default() -> Self {
        RecallPolicy {
            budget_tokens: 1024,
            candidates: 64,
            mode: crate::SearchMode::Hybrid,
            neighbour_share: 0.0,
            neighbour_turns: 2,
            dense_max_tokens: None,
        }
    }
}

/// Claim settings (`[claims]`): attributes whose cardinality is fixed by config, whatever
/// extraction says. Names are compared like claim attributes (case and white space folded).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClaimPolicy {
    /// Attributes that hold many values (e.g. "allergies", "phone number").
    pub many: Vec<String>,
    /// Attributes that hold one value (e.g. "dose", "lead time").
    pub one: Vec<String>,
}

impl ClaimPolicy {
    /// The cardinality config fixes for `attribute`, if any.
    pub fn fixed(&self, attribute: &str) -> Option<crate::model::Cardinality> {
        let a = crate::text::norm_name(attribute);
        let has = |list: &[String]| list.iter().any(|x| crate::text::norm_name(x) == a);
        if has(&self.many) {
            Some(crate::model::Cardinality::Many)
        } else if has(&self.one) {
            Some(crate::model::Cardinality::One)
        } else {
            None
        }
    }
}

/// The largest budget accepted; larger requests are clamped to it (and the trace says so).
pub const MAX_BUDGET_TOKENS: usize = 16_000_000;

/// All engine policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnginePolicy {
    /// `[recall]`.
    #[serde(default)]
    pub recall: RecallPolicy,
    /// `[decay]`.
    #[serde(default)]
    pub decay: DecayPolicy,
    /// `[kinds.semantic]`, `[kinds.procedural]`, `[kinds.episodic]`.
    #[serde(default)]
    pub kinds: KindPolicies,
    /// `[claims]`.
    #[serde(default)]
    pub claims: ClaimPolicy,
}

impl EnginePolicy {
    /// Check ranges; the error names the key.
    pub fn validate(&self) -> Result<()> {
        let bad = |k: &str, why: &str| Err(CoreError::Config(format!("{k}: {why}")));
        if !(self.decay.half_life_days.is_finite() && self.decay.half_life_days > 0.0) {
            return bad("decay.half_life_days", "must be a positive number");
        }
        for (k, w) in [
            ("decay.reinforcement_weight", self.decay.reinforcement_weight),
            ("decay.corroboration_weight", self.decay.corroboration_weight),
        ] {
            if !(w.is_finite() && (0.0..=10.0).contains(&w)) {
                return bad(k, "must be a number within 0..=10");
            }
        }
        if !(0.0..=1.0).contains(&self.decay.threshold) {
            return bad("decay.threshold", "must be within 0..=1");
        }
        if self.recall.budget_tokens > MAX_BUDGET_TOKENS {
            return bad("recall.budget_tokens", &format!("must be at most {MAX_BUDGET_TOKENS}"));
        }
        for a in &self.claims.many {
            if self.claims.one.iter().any(|o| crate::text::norm_name(o) == crate::text::norm_name(a)) {
                return bad("claims", &format!("attribute {a:?} is listed both in `many` and in `one`"));
            }
        }
        if self.recall.candidates == 0 || self.recall.candidates > 100_000 {
            return bad("recall.candidates", "must be within 1..=100000");
        }
        if !(self.recall.neighbour_share.is_finite() && (0.0..=10.0).contains(&self.recall.neighbour_share)) {
            return bad("recall.neighbour_share", "must be a number within 0..=10");
        }
        if self.recall.neighbour_turns > 100 {
            return bad("recall.neighbour_turns", "must be within 0..=100");
        }
        if self.recall.dense_max_tokens == Some(0) {
            return bad("recall.dense_max_tokens", "must be at least 1 (leave it out to file every vector)");
        }
        let mut sum = 0.0;
        for k in MemoryKind::ALL {
            let p = self.kinds.of(k);
            if !(0.0..=1.0).contains(&p.quota) {
                return bad(&format!("kinds.{k}.quota"), "must be within 0..=1");
            }
            if !(0.0..=1.0).contains(&p.default_importance) {
                return bad(&format!("kinds.{k}.default_importance"), "must be within 0..=1");
            }
            sum += p.quota;
        }
        if sum > 1.0 + 1e-9 {
            return bad("kinds.*.quota", &format!("quotas add up to {sum:.3}, more than 1"));
        }
        Ok(())
    }
}
