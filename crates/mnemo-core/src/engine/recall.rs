//! Recall: hybrid candidates from the index, scored relevance × salience, packed under the
//! budget with per-kind quotas; pinned memories are always candidates.
use std::collections::HashMap;

use tracing::Instrument as _;

use super::Engine;
use crate::error::{CoreError, Result};
use crate::model::*;
use crate::planner::{plan, Pack, PlanCandidate, Quotas};
use crate::policy::MAX_BUDGET_TOKENS;
use crate::salience::salience;
use crate::traits::{SearchMode, SearchQuery};

/// Per-call recall options; `None` takes the policy's value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecallOptions {
    /// Token budget (clamped to `MAX_BUDGET_TOKENS`, with a note).
    pub budget: Option<usize>,
    /// Retrieval signals.
    pub mode: Option<SearchMode>,
    /// Candidates taken from the index.
    pub candidates: Option<usize>,
    /// Whether to record the recall as an access (`last_accessed_at`); default true.
    pub no_touch: bool,
}

impl Engine {
    /// Recall a pack for `query` in `ns`.
    pub async fn recall(&self, ns: &Namespace, query: &str, opts: &RecallOptions) -> Result<Pack> {
        let span = tracing::info_span!("recall", namespace = %ns);
        self.recall_inner(ns, query, opts).instrument(span).await
    }

    async fn recall_inner(&self, ns: &Namespace, query: &str, opts: &RecallOptions) -> Result<Pack> {
        let now = self.clock.now();
        let mut notes = Vec::new();
        let mut budget = opts.budget.unwrap_or(self.policy.recall.budget_tokens);
        if budget > MAX_BUDGET_TOKENS {
            notes.push(format!("budget {budget} clamped to the maximum {MAX_BUDGET_TOKENS} tokens"));
            budget = MAX_BUDGET_TOKENS;
        }
        let limit = opts.candidates.unwrap_or(self.policy.recall.candidates);
        if limit == 0 {
            return Err(CoreError::InvalidInput("candidates must be at least 1".into()));
        }
        let mode = opts.mode.unwrap_or(self.policy.recall.mode);
        let embedding = match mode {
            SearchMode::Lexical => None,
            _ => self.embedder.embed(&[query.to_string()]).await?.into_iter().next(),
        };
        let search = SearchQuery { namespace: ns.clone(), text: query.to_string(), embedding, limit, mode };
        let hits = match self.index.search(&search).instrument(tracing::info_span!("search", limit)).await {
            Ok(h) => h,
            Err(why @ CoreError::IndexFailure { .. }) => {
                // The index found itself damaged: rebuild it from the store, search once more.
                let r = self.sync().await?;
                if let Some(because) = r.rebuilt_because {
                    notes.push(format!("the index was rebuilt from the store before this search: {because}"));
                } else {
                    notes.push(format!("a search of the index failed and was retried: {why}"));
                }
                self.index.search(&search).await?
            }
            Err(e) => return Err(e),
        };
        let relevance: HashMap<MemoryId, f32> = hits.iter().map(|h| (h.id, h.score)).collect();
        let ids: Vec<MemoryId> = hits.iter().map(|h| h.id).collect();
        let mut memories = self.store.get_many(ns, &ids).await?;
        for p in self.store.pinned(ns).await? {
            if !relevance.contains_key(&p.id) {
                memories.push(p);
            }
        }
        let mut candidates: Vec<PlanCandidate> = memories
            .into_iter()
            .map(|m| PlanCandidate {
                relevance: f64::from(relevance.get(&m.id).copied().unwrap_or(0.0)).clamp(0.0, 1.0),
                salience: salience(&m, now, &self.policy),
                tokens: self.tokens.count(&m.content),
                decays: self.policy.kinds.of(m.kind).decays,
                memory: m,
            })
            .collect();
        super::neighbours::share(
            &mut candidates,
            self.policy.recall.neighbour_share,
            self.policy.recall.neighbour_turns,
        );
        let shares =
            [self.policy.kinds.semantic.quota, self.policy.kinds.procedural.quota, self.policy.kinds.episodic.quota];
        let mut pack = {
            let _plan = tracing::info_span!("plan", candidates = candidates.len(), budget).entered();
            plan(candidates, budget, Quotas { shares }, self.policy.decay.threshold)
        };
        pack.notes.extend(notes);
        if !opts.no_touch && !pack.items.is_empty() {
            let ids: Vec<MemoryId> = pack.items.iter().map(|i| i.memory.id).collect();
            match self.store.touch(ns, &ids, now).await {
                Ok(()) => {}
                // A read-only store (a mounted backup) or a full disk still recalls; only the
                // recall times, which feed decay, are not kept — and the pack says so.
                Err(e)
                    if matches!(
                        e.store_kind(),
                        Some(crate::error::StoreErrorKind::ReadOnly | crate::error::StoreErrorKind::Full)
                    ) =>
                {
                    pack.notes.push(format!("recall times not recorded: {e}"))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(pack)
    }
}
