//! Bulk ingest: many (turn, memory) pairs at once, bypassing extraction and reconciliation
//! (for benchmarks and imports of already-structured memories). Turns are recorded first
//! (durable first, as on the write path), missing embeddings are computed in one batch, the
//! memories are inserted in one atomic batch, and the index is synced and flushed once.
//!
//! `apply_batches` loads many batches of already-built write ops with the two halves of the
//! work overlapped: while the store applies batch i+1 (on its own writer), the index takes in
//! batch i (the store is the system of record; the index follows it by revision, as always).
use tracing::Instrument as _;

use super::Engine;
use mnemo_contract::error::{CoreError, ModelErrorKind, ModelRole, Result, StoreErrorKind};
use mnemo_contract::model::*;

impl Engine {
    /// Ingest `items` into `ns`; returns the new memories' ids in order. Each memory's
    /// provenance gets its turn's id; a memory without an embedding is embedded here.
    pub async fn ingest(&self, ns: &Namespace, items: Vec<(NewTurn, NewMemory)>) -> Result<Vec<MemoryId>> {
        if items.is_empty() {
            return Ok(vec![]);
        }
        for (i, (t, m)) in items.iter().enumerate() {
            if &t.namespace != ns || &m.namespace != ns {
                return Err(CoreError::InvalidInput(format!(
                    "ingest item {i}: turn namespace {} / memory namespace {} differ from {ns}",
                    t.namespace, m.namespace
                )));
            }
            if m.content.trim().is_empty() {
                return Err(CoreError::InvalidInput(format!("ingest item {i}: memory content is empty")));
            }
        }
        let _write = self.write_guard(ns).await?;
        let mut memories = Vec::with_capacity(items.len());
        let mut turn_ids = Vec::with_capacity(items.len());
        for (t, m) in items {
            let turn = self.store.record_turn(t).await?;
            turn_ids.push(turn.id);
            memories.push(m);
        }
        let missing: Vec<usize> = (0..memories.len()).filter(|i| memories[*i].embedding.is_none()).collect();
        if !missing.is_empty() {
            let texts: Vec<String> = missing.iter().map(|i| memories[*i].content.clone()).collect();
            let vectors = self.embedder.embed(&texts).await?;
            if vectors.len() != texts.len() {
                return Err(CoreError::model_message(
                    ModelRole::Embedder,
                    ModelErrorKind::BadAnswer,
                    format!("asked for {} vectors, got {}", texts.len(), vectors.len()),
                ));
            }
            for (i, v) in missing.into_iter().zip(vectors) {
                memories[i].embedding = Some(Embedding { model: self.embedder.model_id().to_string(), vector: v });
            }
        }
        let ops = memories
            .into_iter()
            .zip(&turn_ids)
            .map(|(mut m, tid)| {
                if !m.provenance.turns.contains(tid) {
                    m.provenance.turns.insert(0, *tid);
                }
                WriteOp::Insert { memory: m, turn: Some(*tid) }
            })
            .collect();
        let ids = self.store.apply(ns, self.clock.now(), ops).await?;
        self.sync().await?;
        // A bulk load is a natural commit point for a batching index.
        self.index.flush().await?;
        Ok(ids)
    }

    /// Apply `batches` of write ops to `ns`, each as one atomic store batch, the index taking
    /// in one batch while the store applies the next. `acknowledged(k, ids)` is called for the
    /// k-th batch (0-based, in order; `ids` as `Store::apply` returns them) once it is durable
    /// in the store AND searchable in the index. Returns the number of batches applied.
    ///
    /// On an error, the batches acknowledged are stored and searchable; the one after them may
    /// be stored (its index catches up from the store at the next sync), the rest are not.
    pub async fn apply_batches<B>(
        &self,
        ns: &Namespace,
        batches: B,
        acknowledged: &mut (dyn FnMut(usize, Vec<MemoryId>) + Send),
    ) -> Result<usize>
    where
        B: IntoIterator<Item = Vec<WriteOp>>,
        B::IntoIter: Send,
    {
        let _write = self.write_guard(ns).await?;
        // The index may hold its commits back meanwhile (`Index::bulk_load`); told when the
        // load ends however it ends.
        self.index.bulk_load(true).await?;
        let loaded = self.load_batches(ns, &mut batches.into_iter(), acknowledged).await;
        let ended = self.index.bulk_load(false).await;
        let applied = loaded?;
        ended?;
        // A bulk load is a natural commit point for a batching index.
        self.index.flush().await?;
        Ok(applied)
    }

    /// `apply_batches`' loop, under its write guard.
    async fn load_batches(
        &self,
        ns: &Namespace,
        batches: &mut (dyn Iterator<Item = Vec<WriteOp>> + Send),
        acknowledged: &mut (dyn FnMut(usize, Vec<MemoryId>) + Send),
    ) -> Result<usize> {
        // The batch applied and not yet in the index: (its number, its ids).
        let mut unindexed: Option<(usize, Vec<MemoryId>)> = None;
        let mut applied = 0;
        loop {
            let apply = self.apply_beside(ns, batches.next());
            // The sync replays every store change above the index's watermark: batch i, and
            // batch i+1 too when the store committed it before the sync read that far.
            let sync = async {
                match unindexed {
                    Some(_) => self.sync().instrument(tracing::info_span!("bulk_sync")).await.map(|_| ()),
                    None => Ok(()),
                }
            };
            let (stored, synced) = tokio::join!(apply, sync);
            synced?;
            if let Some((k, ids)) = unindexed.take() {
                acknowledged(k, ids);
            }
            match stored? {
                Some(ids) => {
                    unindexed = Some((applied, ids));
                    applied += 1;
                }
                None => break,
            }
        }
        Ok(applied)
    }

    /// Apply one batch of a bulk load (None: there is none left) as a task of its own when
    /// running in a tokio runtime, so that it makes progress (and is timed) while the caller's
    /// index sync blocks its worker; in place otherwise.
    async fn apply_beside(&self, ns: &Namespace, ops: Option<Vec<WriteOp>>) -> Result<Option<Vec<MemoryId>>> {
        let ops = match ops {
            None => return Ok(None),
            Some(ops) if ops.is_empty() => return Ok(Some(Vec::new())),
            Some(ops) => ops,
        };
        let (store, ns, at) = (self.store.clone(), ns.clone(), self.clock.now());
        let apply = async move { store.apply(&ns, at, ops).await }.instrument(tracing::info_span!("bulk_apply"));
        let ids = match tokio::runtime::Handle::try_current() {
            Ok(runtime) => runtime
                .spawn(apply)
                .await
                .map_err(|e| CoreError::StoreFailure { kind: StoreErrorKind::Other, source: Box::new(e) })??,
            Err(_) => apply.await?,
        };
        Ok(Some(ids))
    }
}
