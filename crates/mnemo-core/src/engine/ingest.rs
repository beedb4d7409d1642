//! Bulk ingest: many (turn, memory) pairs at once, bypassing extraction and reconciliation
//! (for benchmarks and imports of already-structured memories). Turns are recorded first
//! (durable first, as on the write path), missing embeddings are computed in one batch, the
//! memories are inserted in one atomic batch, and the index is synced and flushed once.
use super::Engine;
use crate::error::{CoreError, Result};
use crate::model::*;

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
                return Err(CoreError::Embedder(format!("asked for {} vectors, got {}", texts.len(), vectors.len())));
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
}
