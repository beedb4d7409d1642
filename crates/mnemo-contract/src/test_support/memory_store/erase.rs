//! Erasure in the in-memory store (see `crate::erase` and docs/erasure.md), on a copy of the
//! state like every write: every content column of the plan's memories is emptied (content,
//! claim, entities, embedding, every event's detail), each becomes an erased tombstone with a
//! new rev, the plan's turns are rewritten, and the content-free record is kept and chained.
//! The bookkeeping (which rows changed, their hashes before and after) is `crate::erase`'s.
//! Nothing is written anywhere else, so no erased byte outlives the write.
use std::collections::BTreeMap;

use serde_json::json;

use crate::chain::{Content, EntryKind, ErasedMark};
use crate::erase::{self, ErasePlan, ErasedSet, ErasureRecord};
use crate::error::Result;
use crate::model::{MemoryId, Namespace, Status};
use crate::time::Timestamp;

use super::chain;
use super::state::State;
use super::write;

/// The events of memory `id` as chained, as they are now.
fn events_of(s: &State, id: MemoryId) -> Result<Vec<Content>> {
    s.events_of(id).map(|e| chain::event_content(s, e).map(Content::Event)).collect()
}

/// Apply `plan` to `ns` at `at`; the record kept.
pub(super) fn erase(s: &mut State, ns: &Namespace, at: Timestamp, plan: ErasePlan) -> Result<ErasureRecord> {
    plan.require_reason()?;
    for id in &plan.memories {
        s.existing_in(ns, *id, "erase")?;
    }
    for id in plan.turns.iter().chain(plan.redact.iter().map(|(t, _)| t)) {
        s.check_turn(ns, Some(*id), "erase")?;
    }
    // Erasure ids are store-wide, as the SQLite store's rows are.
    let eid = s.erasures.keys().next_back().map_or(1, |last| last + 1);
    let mut erased = ErasedSet::default();
    let reason = format!("erased: {}", plan.reason);
    for id in plan.memories {
        if s.erased.contains(&id) || erased.has_memory(id) {
            continue;
        }
        let before = events_of(s, id)?;
        if let Some(m) = s.memories.get_mut(&id) {
            // A tombstone keeps its successor; the rest of the row's content goes.
            let superseded_by = match &m.status {
                Status::Tombstoned { superseded_by, .. } => *superseded_by,
                Status::Active => None,
            };
            m.content = String::new();
            m.claim = None;
            m.entities = vec![];
            m.embedding = None;
            m.pinned = false;
            m.status = Status::Tombstoned { reason: reason.clone(), at, superseded_by };
        }
        for e in s.events.values_mut().filter(|e| e.memory == id) {
            e.detail = "{}".to_string();
        }
        s.erased.insert(id);
        let after = events_of(s, id)?;
        write::event(s, ns, id, at, "erased", None, json!({ "erasure": eid }))?;
        erased.add_memory(id, &before, &after);
    }
    for rewrite in erase::turn_rewrites(&plan.turns, plan.redact) {
        let id = rewrite.turn;
        if erased.has_turn(id) {
            continue;
        }
        let Some(turn) = s.turns.get_mut(&id) else { continue };
        let before = Content::Turn(chain::turn_content(turn));
        if !rewrite.changes(&before) {
            continue;
        }
        turn.text = rewrite.text.clone();
        let after = Content::Turn(chain::turn_content(turn));
        erased.add_turn(&rewrite, &before, &after);
    }
    let record = erased.into_record(ns, eid, at, plan.reason, plan.by, plan.target)?;
    mark(&mut s.marks, &record);
    s.erasures.insert(eid, record.clone());
    chain::append(s, ns.as_str(), &Content::Erasure(record.clone()));
    Ok(record)
}

/// Note what `record` lists for each row it changed: the first erasure's `before` stays, the
/// last one's `after` and id replace the earlier ones (see `ErasedMark`).
fn mark(marks: &mut BTreeMap<(EntryKind, i64), ErasedMark>, record: &ErasureRecord) {
    for r in &record.rows {
        let before = marks.get(&(r.entry, r.id)).map_or(r.before, |m| m.before);
        marks.insert((r.entry, r.id), ErasedMark { erasure: record.id, before, after: r.after });
    }
}
