//! The in-memory store's writes, each on a copy of the state (see `MemoryStore::write`), so an
//! error anywhere leaves the store as it was.
//!
//! `apply` follows the SQLite store: the batch's references are checked before anything is
//! touched; inserts are applied first, in order (so a `MemoryRef::New(i)` may point at an
//! insert placed before or after the tombstone in the batch), then the other ops in order. Each
//! op appends one event whose seq becomes the memory's `rev` (store-wide, strictly increasing,
//! never reused), and chains it. What an op makes of a memory is `crate::transition`'s.
//!
//! Event details are the SQLite store's small JSON objects: created `{"sources": [...]}`,
//! reinforced and confirmed `{"source": ...}`, tombstoned `{"reason": ..., "superseded_by":
//! id | null}`.
use std::collections::hash_map::RandomState;

use serde_json::json;

use crate::chain::Content;
use crate::error::{CoreError, Result};
use crate::ids::IdKind;
use crate::model::{MemoryEvent, MemoryId, MemoryRef, Namespace, NewMemory, NewTurn, Turn, TurnId, WriteOp};
use crate::time::Timestamp;
use crate::transition;

use super::chain;
use super::state::State;

/// Record turns in order (ids increase in that order), each chained.
pub(super) fn record_turns(s: &mut State, key: &RandomState, turns: Vec<NewTurn>) -> Result<Vec<Turn>> {
    let mut out = Vec::with_capacity(turns.len());
    for t in turns {
        let id = TurnId(s.next_id(key, &t.namespace, IdKind::Turn)?);
        let turn =
            Turn { id, namespace: t.namespace, source: t.source, at: t.at, text: t.text, external_id: t.external_id };
        chain::append(s, turn.namespace.as_str(), &Content::Turn(chain::turn_content(&turn)));
        s.turns.insert(id, turn.clone());
        out.push(turn);
    }
    Ok(out)
}

/// Append event `kind` of memory `id` at a new seq, make that seq the memory's rev, and chain
/// it as the chain check reads it back (`chain::event_content`: a `created` event commits to
/// the memory as inserted, which it still is).
pub(super) fn event(
    s: &mut State,
    ns: &Namespace,
    id: MemoryId,
    at: Timestamp,
    kind: &str,
    turn: Option<TurnId>,
    detail: serde_json::Value,
) -> Result<()> {
    let seq = s.next_seq();
    let e = MemoryEvent { seq, memory: id, at, event: kind.to_string(), turn, detail: detail.to_string() };
    let content = Content::Event(chain::event_content(s, &e)?);
    chain::append(s, ns.as_str(), &content);
    s.events.insert(seq, e);
    if let Some(m) = s.memories.get_mut(&id) {
        m.rev = seq;
    }
    Ok(())
}

/// Apply a batch (see the module docs); the ids of the inserted memories, in order.
pub(super) fn apply(
    s: &mut State,
    key: &RandomState,
    ns: &Namespace,
    at: Timestamp,
    ops: Vec<WriteOp>,
) -> Result<Vec<MemoryId>> {
    transition::check_batch_refs(&ops)?;
    let mut new_ids = Vec::new();
    let mut rest = Vec::new();
    for op in ops {
        match op {
            WriteOp::Insert { memory, turn } => new_ids.push(insert(s, key, ns, at, memory, turn)?),
            other => rest.push(other),
        }
    }
    for op in rest {
        match op {
            // Applied in the first loop.
            WriteOp::Insert { .. } => {}
            WriteOp::Reinforce { id, source, turn } => {
                let mut m = s.active_in(ns, id, "reinforce")?;
                s.check_turn(ns, turn, "reinforce")?;
                transition::reinforce(&mut m, &source, turn, at)?;
                s.memories.insert(id, m);
                event(s, ns, id, at, "reinforced", turn, json!({ "source": source }))?;
            }
            WriteOp::Confirm { id, source } => {
                let mut m = s.active_in(ns, id, "confirm")?;
                transition::confirm(&mut m, &source, at)?;
                s.memories.insert(id, m);
                event(s, ns, id, at, "confirmed", None, json!({ "source": source }))?;
            }
            WriteOp::Tombstone { id, reason, superseded_by, turn } => {
                let by = superseded(s, ns, &new_ids, superseded_by)?;
                tombstone(s, ns, at, id, &reason, by, turn)?;
            }
            WriteOp::TombstoneNew { index, reason, superseded_by, turn } => {
                let by = superseded(s, ns, &new_ids, superseded_by)?;
                // In range: `check_batch_refs` checked it.
                let id = new_ids
                    .get(index)
                    .copied()
                    .ok_or_else(|| CoreError::InvalidInput(format!("no insert #{index} in the batch")))?;
                tombstone(s, ns, at, id, &reason, by, turn)?;
            }
        }
    }
    Ok(new_ids)
}

/// Resolve a `superseded_by` reference: an insert of this batch, or a memory of `ns`.
fn superseded(s: &State, ns: &Namespace, new_ids: &[MemoryId], by: Option<MemoryRef>) -> Result<Option<MemoryId>> {
    Ok(match by {
        None => None,
        Some(MemoryRef::New(n)) => new_ids.get(n).copied(),
        Some(MemoryRef::Existing(by)) => Some(s.existing_in(ns, by, "tombstone superseded_by")?.id),
    })
}

fn insert(
    s: &mut State,
    key: &RandomState,
    ns: &Namespace,
    at: Timestamp,
    m: NewMemory,
    turn: Option<TurnId>,
) -> Result<MemoryId> {
    transition::check_insert(ns, &m).map_err(|e| CoreError::InvalidInput(format!("insert: {e}")))?;
    s.check_turn(ns, turn, "insert")?;
    // A stored vector must read back as written: a component that is not a number cannot.
    if m.embedding.as_ref().is_some_and(|e| e.vector.iter().any(|x| !x.is_finite())) {
        return Err(CoreError::InvalidInput("insert: an embedding component is not a finite number".into()));
    }
    let id = MemoryId(s.next_id(key, ns, IdKind::Memory)?);
    let detail = json!({ "sources": m.sources });
    // Its rev is set by its `created` event.
    let memory = crate::transition::inserted(id, m);
    s.memories.insert(id, memory);
    event(s, ns, id, at, "created", turn, detail)?;
    Ok(id)
}

fn tombstone(
    s: &mut State,
    ns: &Namespace,
    at: Timestamp,
    id: MemoryId,
    reason: &str,
    by: Option<MemoryId>,
    turn: Option<TurnId>,
) -> Result<()> {
    let mut m = s.active_in(ns, id, "tombstone")?;
    s.check_turn(ns, turn, "tombstone")?;
    transition::tombstone(&mut m, reason, by, at)?;
    s.memories.insert(id, m);
    let detail = json!({ "reason": reason, "superseded_by": by.map(|m| m.0) });
    event(s, ns, id, at, "tombstoned", turn, detail)
}

/// Set the access time of the memories of `ns` among the pairs, each to its own time, never
/// earlier than it was (rev untouched; other ids ignored).
pub(super) fn touch(s: &mut State, ns: &Namespace, accesses: &[(MemoryId, Timestamp)]) {
    for (id, at) in accesses {
        if let Some(m) = s.memories.get_mut(id).filter(|m| &m.namespace == ns) {
            if m.last_accessed_at.is_none_or(|was| was < *at) {
                m.last_accessed_at = Some(*at);
            }
        }
    }
}
