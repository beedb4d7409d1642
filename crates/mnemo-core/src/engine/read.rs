//! What callers ask of the engine besides writing and recalling: its memories and turns, the
//! raw hits of one retrieval mode, the models and the clock it runs with. Callers go through
//! these operations, never to the store, index or models behind them, so the engine stays the
//! one place that decides how a question is answered (and, for writes, under which lock).
use super::Engine;
use mnemo_contract::error::Result;
use mnemo_contract::model::*;
use mnemo_contract::time::Timestamp;
use mnemo_contract::{Hit, ListPage, ModelInfo, SearchQuery, Task};

impl Engine {
    /// A namespace's memories among `ids`, whatever their status (missing or other-namespace
    /// ids are left out).
    pub async fn memories(&self, ns: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        self.store.get_many(ns, ids).await
    }

    /// The active memories of a namespace (cost grows with the namespace: reports and tests,
    /// not a hot path; page with `list_memories`).
    pub async fn active_memories(&self, ns: &Namespace) -> Result<Vec<Memory>> {
        self.store.active(ns).await
    }

    /// Every memory of a namespace, tombstoned ones included, by id (cost grows with the
    /// namespace: reports and exports; page with `list_memories`).
    pub async fn all_memories(&self, ns: &Namespace) -> Result<Vec<Memory>> {
        self.store.all_memories(ns).await
    }

    /// The namespaces that hold memories or turns (an embedded door's operator sees them all).
    pub async fn namespaces(&self) -> Result<Vec<Namespace>> {
        self.store.namespaces().await
    }

    /// One page of a namespace's memories by id (see `ListPage`).
    pub async fn list_memories(&self, ns: &Namespace, page: &ListPage) -> Result<Vec<Memory>> {
        self.store.list_memories(ns, page).await
    }

    /// The recorded turns of a namespace, oldest first.
    pub async fn turns(&self, ns: &Namespace) -> Result<Vec<Turn>> {
        self.store.turns(ns).await
    }

    /// The recorded turns of a namespace among `ids`, oldest first.
    pub async fn turns_by_ids(&self, ns: &Namespace, ids: &[TurnId]) -> Result<Vec<Turn>> {
        self.store.turns_by_ids(ns, ids).await
    }

    /// The oldest turn of a namespace recorded under this external id (an idempotency key).
    pub async fn turn_by_external_id(&self, ns: &Namespace, external_id: &str) -> Result<Option<Turn>> {
        self.store.turn_by_external_id(ns, external_id).await
    }

    /// The store's newest revision (0: nothing was ever written); a readiness probe.
    pub async fn store_rev(&self) -> Result<u64> {
        self.store.max_rev().await
    }

    /// The raw hits of one search of the index, as it stands (no catch-up with the store, no
    /// salience, no packing): for benchmarks and diagnostics that compare retrieval modes.
    /// `recall` is the operation that answers a query.
    pub async fn search(&self, query: &SearchQuery) -> Result<Vec<Hit>> {
        self.index.search(query).await
    }

    /// The store revision the index holds every change up to: what this engine applied, or
    /// the index's own watermark when that is further (an index shared with other processes);
    /// None when the index is stale and will be rebuilt from the store. With
    /// [`Engine::store_rev`] it gives the index's lag behind the store (a figure of `mnemo
    /// stats` and `/metrics`). Waits for a sync in progress.
    pub async fn index_rev(&self) -> Result<Option<u64>> {
        let applied = *self.applied_rev.lock().await;
        Ok(match (self.index.state().await?, applied) {
            (mnemo_contract::IndexState::Stale(_), _) => None,
            (mnemo_contract::IndexState::UpTo(w), Some(r)) => Some(r.max(w)),
            (mnemo_contract::IndexState::UpTo(w), None) => Some(w),
        })
    }

    /// Make the index's applied changes durable and write recall's pending access times
    /// (before a process exits; the store is durable on every write already). Access times a
    /// read-only or full store cannot keep are dropped (the recall that tried to write them
    /// said so in its pack).
    pub async fn flush_index(&self) -> Result<()> {
        match self.write_accesses().await {
            Err(e) if !super::access::only_times_lost(&e) => return Err(e),
            _ => {}
        }
        self.index.flush().await
    }

    /// Vectors of `texts` by the engine's embedder (the one memories are embedded with).
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.embedder.embed(texts).await
    }

    /// The embedder (an index built beside the engine's holds its vectors).
    pub fn embedder(&self) -> &std::sync::Arc<dyn mnemo_contract::Embedder> {
        &self.embedder
    }

    /// The injected clock (an index built beside the engine's is given it).
    pub fn clock(&self) -> &std::sync::Arc<dyn mnemo_contract::clock::Clock> {
        &self.clock
    }

    /// The embedder's model id (stored beside every vector).
    pub fn embedder_model(&self) -> &str {
        self.embedder.model_id()
    }

    /// The embedder's vector dimensions.
    pub fn embedding_dims(&self) -> usize {
        self.embedder.dims()
    }

    /// Which reasoner model the engine extracts and reconciles with.
    pub fn reasoner_model(&self) -> ModelInfo {
        self.reasoner.model_info()
    }

    /// The reasoner's plan for `task` from an assessed pack's `lines` (see
    /// `mnemo_contract::plan`).
    pub async fn plan(
        &self,
        task: &Task,
        lines: &[mnemo_contract::plan::PlanLine],
    ) -> Result<mnemo_contract::plan::Plan> {
        let span = tracing::info_span!("plan", lines = lines.len());
        tracing::Instrument::instrument(self.reasoner.plan(task, lines), span).await
    }

    /// Now, by the engine's clock (the time its writes and recalls are stamped with).
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    /// The time of the namespace's most recent turn, if any (what it holds was written then or
    /// before: time only moves forward in a namespace).
    pub async fn latest_turn_at(&self, ns: &Namespace) -> Result<Option<Timestamp>> {
        self.store.latest_turn_at(ns).await
    }

    /// The token cost of `text` by the engine's counter (what recall budgets count).
    pub fn count_tokens(&self, text: &str) -> usize {
        self.tokens.count(text)
    }

    /// The engine's token counter: a view of a recall that must fit the recall's budget
    /// counts with the same counter the budget was packed with.
    pub fn token_counter(&self) -> &dyn mnemo_contract::tokens::TokenCounter {
        &*self.tokens
    }
}
