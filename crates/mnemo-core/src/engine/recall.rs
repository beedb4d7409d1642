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
use crate::traits::{IndexState, SearchMode, SearchQuery};

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
        let embed = async {
            match mode {
                SearchMode::Lexical => Ok(None),
                _ => Ok(self.embedder.embed(&[query.to_string()]).await?.into_iter().next()),
            }
        };
        // The index must hold every change the store does before it is searched (another
        // process may have written): checked while the query is embedded.
        let (embedding, ()) = tokio::try_join!(embed, self.catch_up_index())?;
        let search = SearchQuery { namespace: ns.clone(), text: query.to_string(), embedding, limit, mode };
        let searched = async {
            match self.index.search(&search).instrument(tracing::info_span!("search", limit)).await {
                Ok(h) => Ok((h, None)),
                Err(why @ CoreError::IndexFailure { .. }) => {
                    // The index found itself damaged: rebuild it from the store, search once more.
                    let r = self.sync().await?;
                    let note = match r.rebuilt_because {
                        Some(because) => format!("the index was rebuilt from the store before this search: {because}"),
                        None => format!("a search of the index failed and was retried: {why}"),
                    };
                    Ok((self.index.search(&search).await?, Some(note)))
                }
                Err(e) => Err(e),
            }
        };
        // The pinned memories do not depend on the hits: read them while the index searches.
        let ((hits, note), pinned) = tokio::try_join!(searched, self.store.pinned(ns))?;
        notes.extend(note);
        let relevance: HashMap<MemoryId, f32> = hits.iter().map(|h| (h.id, h.score)).collect();
        let ids: Vec<MemoryId> = hits.iter().map(|h| h.id).collect();
        let mut memories = self.store.get_many(ns, &ids).await?;
        for p in pinned {
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

    /// Bring the index up to the store if the store holds a newer revision than the index's
    /// watermark: one look at each (at once), and a replay only when another process (a
    /// server sharing this store, with an index of its own) wrote since. Without it such an
    /// index would answer from what it last saw: a superseded value, a forgotten memory.
    async fn catch_up_index(&self) -> Result<()> {
        let (newest, state) = tokio::try_join!(self.store.max_rev(), self.index.state())?;
        if let IndexState::UpTo(w) = state {
            // A persistent index reports its durable watermark, which trails what this
            // process has already applied until its next commit: either one will do.
            let applied = self.applied_rev.lock().await.unwrap_or(0);
            if w.max(applied) >= newest {
                return Ok(());
            }
        }
        self.sync().instrument(tracing::info_span!("index_catch_up", newest)).await.map(|_| ())
    }
}
