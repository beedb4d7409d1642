//! Grounding write-back: the engine applies the corrections an assessor asked for. A supersede
//! goes through the same path as a conversational contradiction — the stale memory is
//! tombstoned (reason naming the source, superseded_by the new one) and the corrected memory
//! inserted — and a confirm adds the source and refreshes the confirmation time. All of an
//! assessment's corrections are one atomic batch, written under the namespace's write lock.
use std::collections::HashMap;

use super::Engine;
use mnemo_contract::correction::Correction;
use mnemo_contract::error::{CoreError, Result, StoreErrorKind};
use mnemo_contract::model::*;

/// What one correction resulted in, before the batch is applied.
enum Applied {
    /// A supersede: the position of its insert among the batch's inserts.
    Inserted(usize),
    /// A confirm: the memory keeps its id.
    Kept(MemoryId),
}

impl Engine {
    /// Apply `corrections` (from an assessment of a pack recalled from `ns`); returns, per
    /// correction and in order, the memory it resulted in: the fresh memory of a supersede, the
    /// updated memory of a confirm. A memory that is no longer active (written since the
    /// recall) is refused, naming it; then nothing is written.
    pub async fn apply_corrections(&self, ns: &Namespace, corrections: &[Correction]) -> Result<Vec<Memory>> {
        if corrections.is_empty() {
            return Ok(Vec::new());
        }
        let _write = self.write_guard(ns).await?;
        let ids: Vec<MemoryId> = corrections.iter().map(Correction::memory).collect();
        let current: HashMap<MemoryId, Memory> =
            self.store.get_many(ns, &ids).await?.into_iter().map(|m| (m.id, m)).collect();
        let now = self.clock.now();
        let mut ops = Vec::new();
        let mut fresh_texts = Vec::new();
        let mut results: Vec<Applied> = Vec::new();
        for c in corrections {
            let id = c.memory();
            let Some(m) = current.get(&id) else {
                return Err(CoreError::NotFound(format!("memory {id} in namespace {ns} (asked to correct it)")));
            };
            if m.status != Status::Active {
                return Err(CoreError::InvalidInput(format!(
                    "memory {id} was changed since it was recalled (no longer active); correction from {} not applied",
                    c.source()
                )));
            }
            match c {
                Correction::Confirm { source, .. } => {
                    ops.push(WriteOp::Confirm { id, source: source.clone() });
                    results.push(Applied::Kept(id));
                }
                Correction::Supersede { value, source, .. } => {
                    let Some(claim) = &m.claim else {
                        return Err(CoreError::InvalidInput(format!("memory {id} has no claim to correct")));
                    };
                    let fresh = Claim::new(&claim.entity, &claim.attribute, value);
                    let content = format!("{} | {} | {}", fresh.entity, fresh.attribute, fresh.value);
                    let index = fresh_texts.len();
                    fresh_texts.push(content.clone());
                    ops.push(WriteOp::Insert {
                        memory: NewMemory {
                            validity: Default::default(),
                            namespace: ns.clone(),
                            kind: m.kind,
                            content,
                            claim: Some(fresh),
                            entities: m.entities.clone(),
                            importance: m.importance,
                            sources: vec![source.clone()],
                            provenance: Provenance {
                                turns: vec![],
                                client: ClientKind::Rules,
                                model: format!("grounder:{source}"),
                            },
                            created_at: now,
                            pinned: m.pinned,
                            embedding: None,
                        },
                        turn: None,
                    });
                    ops.push(WriteOp::Tombstone {
                        id,
                        reason: format!(
                            "grounded: {source} holds {:?} for {} | {}, memory said {:?}",
                            value.trim(),
                            claim.entity,
                            claim.attribute,
                            claim.value
                        ),
                        superseded_by: Some(MemoryRef::New(index)),
                        turn: None,
                    });
                    results.push(Applied::Inserted(index));
                }
            }
        }
        if !fresh_texts.is_empty() {
            let vectors = self.embedder.embed(&fresh_texts).await?;
            let mut vectors = vectors.into_iter();
            for op in ops.iter_mut() {
                if let WriteOp::Insert { memory, .. } = op {
                    memory.embedding =
                        vectors.next().map(|v| Embedding { model: self.embedder.model_id().to_string(), vector: v });
                }
            }
        }
        let inserted = self.store.apply(ns, now, ops).await?;
        self.sync().await?;
        let out_ids = results
            .into_iter()
            .map(|r| match r {
                Applied::Inserted(index) => inserted.get(index).copied().ok_or_else(|| {
                    CoreError::store_message(
                        StoreErrorKind::Other,
                        format!("insert {index} of a correction batch returned no id"),
                    )
                }),
                Applied::Kept(id) => Ok(id),
            })
            .collect::<Result<Vec<MemoryId>>>()?;
        let reloaded: HashMap<MemoryId, Memory> =
            self.store.get_many(ns, &out_ids).await?.into_iter().map(|m| (m.id, m)).collect();
        out_ids
            .iter()
            .map(|id| {
                reloaded.get(id).cloned().ok_or_else(|| CoreError::NotFound(format!("memory {id} in namespace {ns}")))
            })
            .collect()
    }
}
