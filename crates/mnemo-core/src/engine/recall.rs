//! Recall: hybrid candidates from the index, scored relevance × salience, packed under the
//! budget with per-kind quotas; pinned memories are always candidates.
use std::collections::HashMap;
use std::sync::Arc;

use tracing::Instrument as _;

use super::recall_cache::{Candidate, Packable};
use super::Engine;
use crate::planner::{decide, PlanCandidate, Plannable, Planned, Quotas};
use mnemo_contract::error::{CoreError, Result};
use mnemo_contract::model::*;
use mnemo_contract::pack::{Pack, PackItem, TraceReason};
use mnemo_contract::policy::MAX_BUDGET_TOKENS;
use mnemo_contract::{IndexState, SearchMode, SearchQuery};

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

/// What the catch-up check found (see `Engine::index_lag`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IndexLag {
    /// The index holds every change the store does.
    Current,
    /// The store holds changes the index has not applied: sync before searching.
    Behind,
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
        let (budget, limit, mode) = self.recall_settings(opts, &mut notes)?;
        // The index must hold every change the store does before its answer is used (another
        // process may have written). The check runs at the same time as the embedding and a
        // speculative search, not before them; only when it finds the index behind is the
        // index caught up and searched again. A write landing after the check is missed
        // either way, as by a check made before the search.
        let speculative = async {
            let embedding = match mode {
                SearchMode::Lexical => None,
                _ => self
                    .embedder
                    .embed(&[query.to_string()])
                    .instrument(tracing::info_span!("embed"))
                    .await?
                    .into_iter()
                    .next(),
            };
            let search = SearchQuery { namespace: ns.clone(), text: query.to_string(), embedding, limit, mode };
            let hits = self.index.search(&search).instrument(tracing::info_span!("search", limit)).await;
            Ok::<_, CoreError>((search, hits))
        };
        // The pinned memories do not depend on the hits: read them while the index searches,
        // once the check has brought the recall cache up to the store.
        let checked = async {
            let lag = self.index_lag().instrument(tracing::info_span!("catch_up_check")).await?;
            let pinned = self.pinned_packable(ns).instrument(tracing::info_span!("pinned")).await?;
            Ok::<_, CoreError>((lag, pinned))
        };
        let ((search, speculative_hits), (lag, pinned)) = tokio::try_join!(speculative, checked)?;
        let hits = match lag {
            IndexLag::Current => speculative_hits,
            IndexLag::Behind => {
                self.sync().instrument(tracing::info_span!("index_catch_up")).await?;
                self.index.search(&search).instrument(tracing::info_span!("search_again", limit)).await
            }
        };
        let (hits, note) = match hits {
            Ok(h) => (h, None),
            Err(why @ CoreError::IndexFailure { .. }) => {
                // The index found itself damaged: rebuild it from the store, search once more.
                let r = self.sync().await?;
                let note = match r.rebuilt_because {
                    Some(because) => format!("the index was rebuilt from the store before this search: {because}"),
                    None => format!("a search of the index failed and was retried: {why}"),
                };
                (self.index.search(&search).await?, Some(note))
            }
            Err(e) => return Err(e),
        };
        notes.extend(note);
        let relevance: HashMap<MemoryId, f32> = hits.iter().map(|h| (h.id, h.score)).collect();
        // Each id once (an index answers each once; a repeat would be packed twice).
        let mut seen_ids = std::collections::HashSet::with_capacity(hits.len());
        let ids: Vec<MemoryId> = hits.iter().map(|h| h.id).filter(|id| seen_ids.insert(*id)).collect();
        // Planned with cards; full rows are read only for what is packed (below).
        let (mut planning, mut rows) = self.cards(ns, &ids).instrument(tracing::info_span!("fetch")).await?;
        for p in pinned {
            if !relevance.contains_key(&p.memory.id) {
                planning.push(Candidate::of(&p, |text| self.tokens.count(text)));
            }
            rows.entry(p.memory.id).or_insert(p);
        }
        let score_span = tracing::info_span!("score").entered();
        let mut candidates: Vec<PlanCandidate<Candidate>> = planning
            .into_iter()
            .map(|c| PlanCandidate {
                relevance: f64::from(relevance.get(&c.id).copied().unwrap_or(0.0)).clamp(0.0, 1.0),
                salience: mnemo_contract::salience::salience_of(&c.salience(), now, &self.policy),
                tokens: c.tokens(),
                decays: self.policy.kinds.of(c.kind()).decays,
                memory: c,
            })
            .collect();
        super::neighbours::share(
            &mut candidates,
            self.policy.recall.neighbour_share,
            self.policy.recall.neighbour_turns,
        );
        drop(score_span);
        let shares =
            [self.policy.kinds.semantic.quota, self.policy.kinds.procedural.quota, self.policy.kinds.episodic.quota];
        let planned = {
            let _plan = tracing::info_span!("plan", candidates = candidates.len(), budget).entered();
            decide(candidates, budget, Quotas { shares }, self.policy.decay.threshold)
        };
        let mut pack = self.packed_rows(ns, planned, rows).instrument(tracing::info_span!("fetch_packed")).await?;
        // This recall's earlier notes (a clamped budget, a rebuilt index) first.
        notes.append(&mut pack.notes);
        pack.notes = notes;
        self.attach_evidence(ns, query, search.embedding.as_deref(), &mut pack)
            .instrument(tracing::info_span!("evidence"))
            .await;
        self.attach_previous_values(ns, query, None, &mut pack)
            .instrument(tracing::info_span!("previous_values"))
            .await?;
        if !opts.no_touch && !pack.items.is_empty() {
            // Recorded here and written in batches (see `access`), not by a store write now.
            let ids: Vec<MemoryId> = pack.items.iter().map(|i| i.memory.id).collect();
            self.recall_cache.touched(ns, &ids, now);
            let write = match self.access.record(ns, &ids, now) {
                super::access::Due::No => None,
                super::access::Due::Now => Some(self.write_accesses().instrument(tracing::info_span!("touch")).await),
                super::access::Due::Background => Some(self.write_accesses_in_background().await),
            };
            if let Some(written) = write {
                match written {
                    Ok(()) => {}
                    // A read-only store (a mounted backup) or a full disk still recalls; only the
                    // recall times, which feed no decay, are not kept — and the pack says so.
                    Err(e) if super::access::only_times_lost(&e) => {
                        pack.notes.push(format!("recall times not recorded: {e}"))
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(pack)
    }

    /// The budget (clamped to `MAX_BUDGET_TOKENS`, said in `notes`), the candidates taken and
    /// the mode of a recall with `opts` (the policy's where unset); no candidate is refused.
    pub(super) fn recall_settings(
        &self,
        opts: &RecallOptions,
        notes: &mut Vec<String>,
    ) -> Result<(usize, usize, SearchMode)> {
        let mut budget = opts.budget.unwrap_or(self.policy.recall.budget_tokens);
        if budget > MAX_BUDGET_TOKENS {
            notes.push(format!("budget {budget} clamped to the maximum {MAX_BUDGET_TOKENS} tokens"));
            budget = MAX_BUDGET_TOKENS;
        }
        let limit = opts.candidates.unwrap_or(self.policy.recall.candidates);
        if limit == 0 {
            return Err(CoreError::InvalidInput("candidates must be at least 1".into()));
        }
        Ok((budget, limit, opts.mode.unwrap_or(self.policy.recall.mode)))
    }

    /// Whether the store holds a newer revision than the index's watermark: one look at each
    /// (at once). Behind means another process (a server sharing this store, with an index of
    /// its own) wrote since; without a catch-up such an index would answer from what it last
    /// saw: a superseded value, a forgotten memory. The recall cache is brought up to the
    /// store's newest revision either way (a sync that follows only adds to what it holds).
    async fn index_lag(&self) -> Result<IndexLag> {
        let (newest, state) = tokio::try_join!(self.store.max_rev(), self.index.state())?;
        self.recall_cache.catch_up(newest);
        if let IndexState::UpTo(w) = state {
            // A persistent index reports its durable watermark, which trails what this
            // process has already applied until its next commit: either one will do.
            let applied = self.applied_rev.lock().await.unwrap_or(0);
            if w.max(applied) >= newest {
                return Ok(IndexLag::Current);
            }
        }
        Ok(IndexLag::Behind)
    }

    /// The candidates of `ns` among `ids`, in that order, as recall plans them: their cards
    /// from the recall cache, the misses read from the store (and kept); with the full rows so
    /// read, which the pack then needs not read again.
    async fn cards(
        &self,
        ns: &Namespace,
        ids: &[MemoryId],
    ) -> Result<(Vec<Candidate>, HashMap<MemoryId, Arc<Packable>>)> {
        let lookup = self.recall_cache.lookup_cards(ns, ids);
        if lookup.missing.is_empty() {
            return Ok((lookup.found, HashMap::new()));
        }
        let read = self.store.get_many(ns, &lookup.missing).await?;
        let read = self.recall_cache.fill(lookup.epoch, read, &|text| self.tokens.count(text));
        let mut rows = HashMap::with_capacity(read.len());
        let mut by_id: HashMap<MemoryId, Candidate> = lookup.found.into_iter().map(|c| (c.id, c)).collect();
        for (p, c) in read {
            by_id.insert(c.id, c);
            rows.insert(c.id, p);
        }
        Ok((ids.iter().filter_map(|id| by_id.remove(id)).collect(), rows))
    }

    /// The pack of what `planned` packs, with each memory's full row: from `rows` (read for
    /// this recall already: the pinned list, the candidates that had no card), the recall
    /// cache, or the store. One found no longer active here (forgotten by another process since
    /// the catch-up check) is left out, and its trace entry and the pack's notes say so; the
    /// budget it frees is not offered to another candidate. (A row read earlier in this recall
    /// is as current as that read, as before.)
    async fn packed_rows(
        &self,
        ns: &Namespace,
        planned: Planned<Candidate>,
        mut rows: HashMap<MemoryId, Arc<Packable>>,
    ) -> Result<Pack> {
        // Most rows come from the cache, in the order asked (`found` skips the misses), so
        // they are taken in turn, without a map; only the few read from the store are mapped.
        let wanted: Vec<MemoryId> =
            planned.packed.iter().map(|(c, _, _)| c.id).filter(|id| !rows.contains_key(id)).collect();
        let lookup = self.recall_cache.lookup(ns, &wanted);
        if !lookup.missing.is_empty() {
            let read = self.store.get_many(ns, &lookup.missing).await?;
            let read = self.recall_cache.fill(lookup.epoch, read, &|text| self.tokens.count(text));
            rows.extend(read.into_iter().map(|(p, _)| (p.memory.id, p)));
        }
        let mut cached = lookup.found.into_iter().peekable();
        let Planned { budget, mut used, mut trace, packed } = planned;
        let mut items = Vec::with_capacity(packed.len());
        let mut notes = Vec::new();
        for (c, score, tokens) in packed {
            let row = match cached.next_if(|p| p.memory.id == c.id) {
                Some(p) => Some(p),
                None => rows.remove(&c.id),
            };
            match row {
                Some(p) if p.memory.status.is_active() && &p.memory.namespace == ns => {
                    items.push(PackItem { memory: p.memory.clone(), score, tokens })
                }
                _ => {
                    used = used.saturating_sub(tokens);
                    let detail = "forgotten while this recall ran (no longer active when its row was read)";
                    if let Some(t) = trace.iter_mut().find(|t| t.id == c.id) {
                        t.included = false;
                        t.reason = TraceReason::Tombstoned;
                        t.detail = detail.to_string();
                    }
                    notes.push(format!("memory {} left out: {detail}", c.id));
                }
            }
        }
        Ok(Pack { valid_at: Default::default(), items, trace, budget, used, notes, as_of: None })
    }

    /// The pinned memories of `ns`, from the recall cache or the store.
    async fn pinned_packable(&self, ns: &Namespace) -> Result<Vec<Arc<Packable>>> {
        match self.recall_cache.pinned(ns) {
            Ok(cached) => Ok(cached),
            Err(epoch) => Ok(self.recall_cache.fill_pinned(ns, epoch, self.store.pinned(ns).await?)),
        }
    }
}
