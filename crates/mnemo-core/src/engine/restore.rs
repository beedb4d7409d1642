//! Restore: a tombstoned memory comes back as a NEW active memory with the same content and
//! provenance "restored from memory N". The tombstone itself is never reactivated (the store
//! contract), so `why` on either memory tells the whole story.
use serde::{Deserialize, Serialize};

use super::write::reconcile_claim;
use super::Engine;
use mnemo_contract::error::{CoreError, Result, StoreErrorKind};
use mnemo_contract::model::*;
use mnemo_contract::Verdict;

/// What `restore` did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RestoreReport {
    /// The tombstoned memory that was restored (unchanged).
    pub from: MemoryId,
    /// The new active memory.
    pub restored: Memory,
    /// Active memories holding another value of the same one-valued claim, tombstoned as
    /// superseded by the restored one (a one-valued claim keeps one current value).
    pub superseded: Vec<MemoryId>,
}

/// The provenance model string of a restored memory.
pub fn restored_from(id: MemoryId) -> String {
    format!("restored from memory {id}")
}

impl Engine {
    /// Restore tombstoned memory `id` of `ns` as a new active memory. Restoring an active
    /// memory, or a claim whose value an active memory already holds, is an error; an active
    /// memory holding another value of the same one-valued claim is superseded (and reported).
    pub async fn restore(&self, ns: &Namespace, id: MemoryId) -> Result<RestoreReport> {
        let _write = self.write_guard(ns).await?;
        let old = self
            .store
            .get_many(ns, &[id])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| CoreError::NotFound(format!("memory {id} in namespace {ns}")))?;
        if old.status.is_active() {
            return Err(CoreError::InvalidInput(format!(
                "memory {id} is active; only a tombstoned memory can be restored"
            )));
        }
        let mut superseded = Vec::new();
        if let Some(claim) = &old.claim {
            let neighbours = self.store.active_by_entities(ns, std::slice::from_ref(&claim.entity)).await?;
            let cardinality = self.policy.claims.fixed(&claim.attribute).unwrap_or_default();
            match reconcile_claim(claim, cardinality, &neighbours) {
                Verdict::Duplicate(dup) => {
                    return Err(CoreError::InvalidInput(format!(
                        "memory {dup} already holds {} | {} = {:?}; nothing to restore",
                        claim.entity, claim.attribute, claim.value
                    )))
                }
                Verdict::Contradicts(ids) => superseded = ids,
                Verdict::Novel => {}
            }
        }
        let now = self.clock.now();
        let memory = NewMemory {
            validity: Default::default(),
            namespace: ns.clone(),
            kind: old.kind,
            content: old.content.clone(),
            claim: old.claim.clone(),
            entities: old.entities.clone(),
            importance: old.importance,
            sources: old.sources.clone(),
            provenance: Provenance {
                turns: old.provenance.turns.clone(),
                client: ClientKind::Rules,
                model: restored_from(id),
            },
            created_at: now,
            pinned: old.pinned,
            embedding: old.embedding.clone(),
        };
        let mut ops = vec![WriteOp::Insert { memory, turn: None }];
        for s in &superseded {
            ops.push(WriteOp::Tombstone {
                id: *s,
                reason: format!("superseded: memory {id} was restored"),
                superseded_by: Some(MemoryRef::New(0)),
                turn: None,
            });
        }
        let ids = self.store.apply(ns, now, ops).await?;
        self.sync().await?;
        let new_id = ids
            .first()
            .copied()
            .ok_or_else(|| CoreError::store_message(StoreErrorKind::Other, "insert returned no id"))?;
        let restored = self.reload(ns, new_id).await?;
        Ok(RestoreReport { from: id, restored, superseded })
    }

    /// The latest state of memory `id`.
    async fn reload(&self, ns: &Namespace, id: MemoryId) -> Result<Memory> {
        self.store
            .get_many(ns, &[id])
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| CoreError::NotFound(format!("memory {id} in namespace {ns}")))
    }
}
