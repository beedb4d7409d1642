//! A turn's changes, planned against the store as it is plus the plan's own pending inserts
//! and tombstones, then applied as ONE atomic batch: a turn's memories land all together or
//! not at all. Pending inserts have virtual ids (negative) until the store assigns real ones.
use std::collections::HashSet;

use mnemo_contract::model::*;

/// The planned changes of one turn.
#[derive(Default)]
pub(crate) struct TurnPlan {
    /// The batch, in order.
    pub ops: Vec<WriteOp>,
    /// Views of the batch's inserts; the i-th has the virtual id `-(i + 1)`.
    pending: Vec<Memory>,
    /// Existing or virtual ids the plan tombstones.
    tombstoned: HashSet<MemoryId>,
}

/// The insert position of a virtual id.
fn insert_index(id: MemoryId) -> Option<usize> {
    (id.0 < 0).then(|| (-(id.0 + 1)) as usize)
}

fn reference(id: MemoryId) -> MemoryRef {
    match insert_index(id) {
        Some(i) => MemoryRef::New(i),
        None => MemoryRef::Existing(id),
    }
}

impl TurnPlan {
    /// Plan an insert; returns its virtual id.
    pub fn insert(&mut self, memory: NewMemory, turn: Option<TurnId>) -> MemoryId {
        let id = MemoryId(-(self.pending.len() as i64) - 1);
        self.pending.push(Memory {
            validity: Default::default(),
            id,
            namespace: memory.namespace.clone(),
            kind: memory.kind,
            content: memory.content.clone(),
            claim: memory.claim.clone(),
            entities: memory.entities.clone(),
            importance: memory.importance,
            reinforcements: 0,
            sources: memory.sources.clone(),
            provenance: memory.provenance.clone(),
            created_at: memory.created_at,
            last_confirmed_at: memory.created_at,
            last_accessed_at: None,
            pinned: memory.pinned,
            embedding: memory.embedding.clone(),
            status: Status::Active,
            rev: 0,
        });
        self.ops.push(WriteOp::Insert { memory, turn });
        id
    }

    /// Plan a reinforcement of an existing memory (restating a memory of this same turn adds
    /// nothing: it is one statement).
    pub fn reinforce(&mut self, id: MemoryId, source: &str, turn: Option<TurnId>) {
        if insert_index(id).is_none() {
            self.ops.push(WriteOp::Reinforce { id, source: source.to_string(), turn });
        }
    }

    /// Plan a tombstone of an existing or pending memory.
    pub fn tombstone(&mut self, id: MemoryId, reason: String, superseded_by: Option<MemoryId>, turn: Option<TurnId>) {
        let superseded_by = superseded_by.map(reference);
        self.ops.push(match insert_index(id) {
            Some(index) => WriteOp::TombstoneNew { index, reason, superseded_by, turn },
            None => WriteOp::Tombstone { id, reason, superseded_by, turn },
        });
        self.tombstoned.insert(id);
    }

    /// Whether the plan already tombstones `id`.
    pub fn is_tombstoned(&self, id: MemoryId) -> bool {
        self.tombstoned.contains(&id)
    }

    /// Store memories still active under the plan.
    pub fn live(&self, memories: Vec<Memory>) -> Vec<Memory> {
        memories.into_iter().filter(|m| m.status.is_active() && !self.is_tombstoned(m.id)).collect()
    }

    /// Pending inserts still active under the plan.
    pub fn pending(&self) -> impl Iterator<Item = &Memory> {
        self.pending.iter().filter(|m| !self.is_tombstoned(m.id))
    }

    /// The real id of a planned id, once the store has assigned the inserts' ids.
    pub fn resolve(id: MemoryId, inserted: &[MemoryId]) -> MemoryId {
        match insert_index(id) {
            Some(i) => inserted.get(i).copied().unwrap_or(id),
            None => id,
        }
    }
}
