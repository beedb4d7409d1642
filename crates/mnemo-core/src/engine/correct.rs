//! Grounding write-back: the engine is the `Corrector` through which an assessor records that a
//! system of record confirmed a memory or holds a newer value. A correction goes through the
//! same supersede path as a conversational one: the stale memory is tombstoned (reason naming
//! the source, superseded_by the new one) and the corrected memory inserted.
use async_trait::async_trait;

use super::Engine;
use crate::error::{CoreError, Result};
use crate::model::*;
use crate::traits::Corrector;

impl Engine {
    /// The latest state of memory `id`.
    pub(super) async fn reload(&self, ns: &Namespace, id: MemoryId) -> Result<Memory> {
        self.store
            .get_many(ns, &[id])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| CoreError::NotFound(format!("memory {id} in namespace {ns}")))
    }
}

#[async_trait]
impl Corrector for Engine {
    async fn correct(&self, stale: &Memory, fresh_value: &str, source: &str) -> Result<Memory> {
        let ns = &stale.namespace;
        let Some(claim) = &stale.claim else {
            return Err(CoreError::InvalidInput(format!("memory {} has no claim to correct", stale.id)));
        };
        let _write = self.write_guard(ns).await?;
        let now = self.clock.now();
        let fresh = Claim::new(&claim.entity, &claim.attribute, fresh_value);
        let content = format!("{} | {} | {}", fresh.entity, fresh.attribute, fresh.value);
        let vector = self.embedder.embed(std::slice::from_ref(&content)).await?.into_iter().next();
        let new = NewMemory {
            namespace: ns.clone(),
            kind: stale.kind,
            content,
            claim: Some(fresh),
            entities: stale.entities.clone(),
            importance: stale.importance,
            sources: vec![source.to_string()],
            provenance: Provenance { turns: vec![], client: ClientKind::Rules, model: format!("grounder:{source}") },
            created_at: now,
            pinned: stale.pinned,
            embedding: vector.map(|v| Embedding { model: self.embedder.model_id().to_string(), vector: v }),
        };
        let ops = vec![
            WriteOp::Insert { memory: new, turn: None },
            WriteOp::Tombstone {
                id: stale.id,
                reason: format!(
                    "grounded: {source} holds {:?} for {} | {}, memory said {:?}",
                    fresh_value.trim(),
                    claim.entity,
                    claim.attribute,
                    claim.value
                ),
                superseded_by: Some(MemoryRef::New(0)),
                turn: None,
            },
        ];
        let ids = self.store.apply(ns, now, ops).await?;
        self.sync().await?;
        let id = ids.first().copied().ok_or_else(|| CoreError::Store("insert returned no id".into()))?;
        self.reload(ns, id).await
    }

    async fn confirm(&self, memory: &Memory, source: &str) -> Result<Memory> {
        let ns = &memory.namespace;
        let _write = self.write_guard(ns).await?;
        self.store
            .apply(ns, self.clock.now(), vec![WriteOp::Confirm { id: memory.id, source: source.to_string() }])
            .await?;
        self.sync().await?;
        self.reload(ns, memory.id).await
    }
}
