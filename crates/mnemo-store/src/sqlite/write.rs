//! The write side; runs only on the write connection (see `writer`). Every call is one
//! transaction.
//!
//! `apply` semantics: all ops or none. Inserts are applied first, in order (so a
//! `MemoryRef::New(i)` may point at an insert placed before or after the tombstone in the
//! batch), then the other ops in order. Each op appends one event whose seq becomes the
//! memory's `rev` (so revs are store-wide, strictly increasing, and never reused).
//!
//! Event details are small JSON objects: created `{"sources": [...]}`, reinforced and
//! confirmed `{"source": ...}`, tombstoned `{"reason": ..., "superseded_by": id | null}`.
use mnemo_contract::decay_due::DecayRule;
use mnemo_contract::text::norm_name;
use mnemo_contract::transition;
use mnemo_contract::{
    CoreError, Memory, MemoryId, MemoryRef, Namespace, NewMemory, NewTurn, StoreErrorKind, Timestamp, Turn, TurnId,
    WriteOp,
};
use rusqlite::{params, Connection, Transaction, TransactionBehavior};
use serde_json::json;

use mnemo_contract::chain::{Content, CreatedMemory, EventContent, TurnContent};

use crate::error::DbResult;
use crate::sqlite::chain::Chains;
use crate::sqlite::decay;
use crate::sqlite::embedding;
use crate::sqlite::ids::{self, Table};
use crate::sqlite::read;

type Result<T> = std::result::Result<T, CoreError>;

/// Start a write transaction; IMMEDIATE takes the write lock up front, so a concurrent
/// writer in another process waits (busy_timeout) instead of failing at commit.
pub(crate) fn begin(conn: &mut Connection) -> Result<Transaction<'_>> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate).db()
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v)
        .map_err(|e| CoreError::store_message(StoreErrorKind::Other, format!("cannot encode JSON: {e}")))
}

/// Record a turn.
pub(crate) fn record_turn(conn: &mut Connection, t: NewTurn) -> Result<Turn> {
    let mut turns = record_turns(conn, vec![t])?;
    turns.pop().ok_or_else(|| CoreError::store_message(StoreErrorKind::Other, "recording one turn returned none"))
}

/// Record turns in order, in one transaction (all or none).
pub(crate) fn record_turns(conn: &mut Connection, turns: Vec<NewTurn>) -> Result<Vec<Turn>> {
    let tx = begin(conn)?;
    let mut recorded = Vec::with_capacity(turns.len());
    let mut chains = Chains::default();
    {
        let mut stmt = tx
            .prepare_cached(
                "INSERT INTO turns (id, namespace, source, at, text, external_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )
            .db()?;
        for t in turns {
            let id = ids::next(&tx, &t.namespace, Table::Turns)?;
            stmt.execute(params![id, t.namespace.as_str(), t.source, t.at.0, t.text, t.external_id]).db()?;
            let content = Content::Turn(TurnContent::of(&t, id));
            chains.append(&tx, t.namespace.as_str(), &content)?;
            recorded.push(Turn {
                id: TurnId(id),
                namespace: t.namespace,
                source: t.source,
                at: t.at,
                text: t.text,
                external_id: t.external_id,
            });
        }
    }
    chains.finish(&tx)?;
    tx.commit().db()?;
    Ok(recorded)
}

/// An access time only moves forward: a recall at an earlier time (`--at` in the past) leaves a
/// later one as it is.
const TOUCH: &str = "UPDATE memories SET last_accessed_at = ?1 WHERE id = ?2 AND namespace = ?3 \
                     AND (last_accessed_at IS NULL OR last_accessed_at < ?1)";

/// Set `last_accessed_at` of the memories of `ns` among `ids` (rev untouched; others ignored;
/// never earlier than it was).
pub(crate) fn touch(conn: &mut Connection, ns: &Namespace, ids: &[MemoryId], at: Timestamp) -> Result<()> {
    let tx = begin(conn)?;
    {
        let mut stmt = tx.prepare_cached(TOUCH).db()?;
        for id in ids {
            stmt.execute(params![at.0, id.0, ns.as_str()]).db()?;
        }
    }
    tx.commit().db()
}

/// Set `last_accessed_at` of each of the memories of `ns` to its own time, in one
/// transaction (rev untouched; others ignored).
pub(crate) fn touch_each(conn: &mut Connection, ns: &Namespace, accesses: &[(MemoryId, Timestamp)]) -> Result<()> {
    let tx = begin(conn)?;
    {
        let mut stmt = tx.prepare_cached(TOUCH).db()?;
        for (id, at) in accesses {
            stmt.execute(params![at.0, id.0, ns.as_str()]).db()?;
        }
    }
    tx.commit().db()
}

pub(crate) fn apply(conn: &mut Connection, ns: &Namespace, at: Timestamp, ops: Vec<WriteOp>) -> Result<Vec<MemoryId>> {
    transition::check_batch_refs(&ops)?;
    let inserts = ops.iter().filter(|op| matches!(op, WriteOp::Insert { .. })).count();
    let tx = begin(conn)?;
    let rule = decay::rule_in_force(&tx).db()?;
    let mut seqs = Seqs::of(&tx, ns)?;
    let mut ids = if inserts > 0 { Some(ids::NextIds::of(&tx, ns, Table::Memories)?) } else { None };
    let mut new_ids = Vec::with_capacity(inserts);
    let mut rest = Vec::with_capacity(ops.len() - inserts);
    for op in ops {
        match (op, ids.as_mut()) {
            (WriteOp::Insert { memory, turn }, Some(ids)) => {
                let id = ids.take(ns)?;
                new_ids.push(insert(&tx, &rule, &mut seqs, ns, at, id, memory, turn)?)
            }
            (other, _) => rest.push(other),
        }
    }
    for op in rest {
        match op {
            // Counted above: every insert was applied in the first loop.
            WriteOp::Insert { .. } => {}
            WriteOp::Reinforce { id, source, turn } => reinforce(&tx, &rule, &mut seqs, ns, at, id, source, turn)?,
            WriteOp::Confirm { id, source } => confirm(&tx, &rule, &mut seqs, ns, at, id, source)?,
            WriteOp::Tombstone { id, reason, superseded_by, turn } => {
                let by = superseded(&tx, ns, &new_ids, superseded_by)?;
                tombstone(&tx, &mut seqs, ns, at, id, reason, by, turn)?;
            }
            WriteOp::TombstoneNew { index, reason, superseded_by, turn } => {
                let by = superseded(&tx, ns, &new_ids, superseded_by)?;
                // In range: checked above.
                let id = new_ids
                    .get(index)
                    .copied()
                    .ok_or_else(|| CoreError::InvalidInput(format!("no insert #{index}")))?;
                tombstone(&tx, &mut seqs, ns, at, id, reason, by, turn)?;
            }
        }
    }
    seqs.chains.finish(&tx)?;
    tx.commit().db()?;
    Ok(new_ids)
}

/// Resolve a `superseded_by` reference (batch inserts are in range: checked before).
fn superseded(
    tx: &Transaction<'_>,
    ns: &Namespace,
    new_ids: &[MemoryId],
    by: Option<MemoryRef>,
) -> Result<Option<MemoryId>> {
    Ok(match by {
        None => None,
        Some(MemoryRef::New(n)) => new_ids.get(n).copied(),
        Some(MemoryRef::Existing(by)) => Some(existing_in(tx, ns, by, "tombstone superseded_by")?.id),
    })
}

/// The seqs the events of one transaction take, one after another. `memory_events.seq` is an
/// AUTOINCREMENT key: a seq is never reused, so the next is one above both the highest ever
/// handed out (`sqlite_sequence`) and the highest present. Read once per transaction (which
/// holds the write lock), so an insert knows its rev before its row is written and the row
/// is written once, not inserted and then updated. Beside them, the namespace's history chain
/// each event is appended to (see `chain`).
pub(crate) struct Seqs {
    next: i64,
    ns: String,
    pub(crate) chains: Chains,
}

impl Seqs {
    pub(crate) fn of(tx: &Transaction<'_>, ns: &Namespace) -> Result<Self> {
        let last: i64 = tx
            .prepare_cached(
                "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'memory_events'), 0), \
                 COALESCE((SELECT MAX(seq) FROM memory_events), 0))",
            )
            .db()?
            .query_row([], |r| r.get(0))
            .db()?;
        Ok(Seqs { next: last + 1, ns: ns.as_str().to_string(), chains: Chains::default() })
    }

    fn take(&mut self) -> i64 {
        self.next += 1;
        self.next - 1
    }
}

/// Append the event of seq `seq` (the memory's rev) and chain it (`memory`: what a `created`
/// event commits to of its memory).
#[allow(clippy::too_many_arguments)]
fn append_event(
    tx: &Transaction<'_>,
    seqs: &mut Seqs,
    seq: i64,
    id: MemoryId,
    at: Timestamp,
    kind: &str,
    turn: Option<TurnId>,
    detail: &serde_json::Value,
    memory: Option<CreatedMemory>,
) -> Result<()> {
    let detail = detail.to_string();
    tx.prepare_cached(
        "INSERT INTO memory_events (seq, memory_id, at, event, turn_id, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .db()?
    .execute(params![seq, id.0, at.0, kind, turn.map(|t| t.0), detail])
    .db()?;
    let content = Content::Event(EventContent {
        namespace: Some(seqs.ns.clone()),
        seq,
        memory_id: id.0,
        at: at.0,
        event: kind.to_string(),
        turn_id: turn.map(|t| t.0),
        detail,
        memory,
        erased: None,
    });
    let ns = seqs.ns.clone();
    seqs.chains.append(tx, &ns, &content)
}

/// Append an event to an existing memory and make its seq the memory's rev.
pub(crate) fn event(
    tx: &Transaction<'_>,
    seqs: &mut Seqs,
    id: MemoryId,
    at: Timestamp,
    kind: &str,
    turn: Option<TurnId>,
    detail: &serde_json::Value,
) -> Result<()> {
    let seq = seqs.take();
    append_event(tx, seqs, seq, id, at, kind, turn, detail, None)?;
    tx.prepare_cached("UPDATE memories SET rev = ?1 WHERE id = ?2").db()?.execute(params![seq, id.0]).db()?;
    Ok(())
}

/// A turn referenced by an op must exist in the batch's namespace.
pub(crate) fn check_turn(tx: &Transaction<'_>, ns: &Namespace, turn: Option<TurnId>, what: &str) -> Result<()> {
    let Some(turn) = turn else { return Ok(()) };
    match read::turn_namespace(tx, turn.0)? {
        Some(t) if t == ns.as_str() => Ok(()),
        _ => Err(CoreError::NotFound(format!("{what}: turn {turn} not found in namespace {ns}"))),
    }
}

/// The memory `id` of `ns` (any status); a missing or foreign id is NotFound.
pub(crate) fn existing_in(tx: &Transaction<'_>, ns: &Namespace, id: MemoryId, what: &str) -> Result<Memory> {
    match read::memory(tx, id)? {
        Some(m) if &m.namespace == ns => Ok(m),
        _ => Err(CoreError::NotFound(format!("{what}: memory {id} not found in namespace {ns}"))),
    }
}

/// The active memory `id` of `ns`; a tombstone is never changed again.
fn active_in(tx: &Transaction<'_>, ns: &Namespace, id: MemoryId, what: &str) -> Result<Memory> {
    transition::require_active(existing_in(tx, ns, id, what)?, what)
}

#[allow(clippy::too_many_arguments)]
fn insert(
    tx: &Transaction<'_>,
    rule: &DecayRule,
    seqs: &mut Seqs,
    ns: &Namespace,
    at: Timestamp,
    id: i64,
    m: NewMemory,
    turn: Option<TurnId>,
) -> Result<MemoryId> {
    transition::check_insert(ns, &m).map_err(|e| CoreError::InvalidInput(format!("insert: {e}")))?;
    check_turn(tx, ns, turn, "insert")?;
    let blob = match &m.embedding {
        Some(e) => Some(embedding::encode(&e.vector).map_err(|e| CoreError::InvalidInput(format!("insert: {e}")))?),
        None => None,
    };
    let (norm_entity, norm_attribute) = match &m.claim {
        Some(c) => {
            let (e, a) = c.key();
            (Some(e), Some(a))
        }
        None => (None, None),
    };
    let rev = seqs.take();
    let entities_json = to_json(&m.entities)?;
    let due = rule.due(&transition::inserted_decay_inputs(&m));
    tx.prepare_cached(
        "INSERT INTO memories (namespace, kind, content, claim_entity, claim_attribute, claim_value, \
         claim_entity_norm, claim_attribute_norm, entities, importance, reinforcements, sources, provenance, \
         created_at, last_confirmed_at, last_accessed_at, pinned, embedding_model, embedding, status, rev, id, decay_due, \
         embedding_codec, valid_from, valid_to) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, ?11, ?12, ?13, ?13, NULL, ?14, ?15, ?16, 'active', ?19, ?17, ?18, \
         ?20, ?21, ?22)",
    )
    .db()?
    .execute(params![
        ns.as_str(),
        m.kind.as_str(),
        m.content,
        m.claim.as_ref().map(|c| c.entity.as_str()),
        m.claim.as_ref().map(|c| c.attribute.as_str()),
        m.claim.as_ref().map(|c| c.value.as_str()),
        norm_entity,
        norm_attribute,
        entities_json,
        f64::from(m.importance),
        to_json(&m.sources)?,
        to_json(&m.provenance)?,
        m.created_at.0,
        m.pinned,
        m.embedding.as_ref().map(|e| e.model.as_str()),
        blob,
        id,
        due.map(|t| t.0),
        rev,
        m.embedding.as_ref().map(|_| embedding::CODEC_INT8),
        m.validity.from.map(|t| t.0),
        m.validity.to.map(|t| t.0),
    ])
    .db()?;
    let id = MemoryId(id);
    {
        let mut stmt =
            tx.prepare_cached("INSERT OR IGNORE INTO memory_entities (memory_id, entity_norm) VALUES (?1, ?2)").db()?;
        for e in m.entities.iter().map(|e| norm_name(e)).filter(|e| !e.is_empty()) {
            stmt.execute(params![id.0, e]).db()?;
        }
    }
    let created = CreatedMemory::of(&m, entities_json);
    append_event(tx, seqs, rev, id, at, "created", turn, &json!({ "sources": m.sources }), Some(created))?;
    Ok(id)
}

#[allow(clippy::too_many_arguments)]
fn reinforce(
    tx: &Transaction<'_>,
    rule: &DecayRule,
    seqs: &mut Seqs,
    ns: &Namespace,
    at: Timestamp,
    id: MemoryId,
    source: String,
    turn: Option<TurnId>,
) -> Result<()> {
    let mut m = active_in(tx, ns, id, "reinforce")?;
    check_turn(tx, ns, turn, "reinforce")?;
    transition::reinforce(&mut m, &source, turn, at)?;
    let due = rule.due_of(&m).map(|t| t.0);
    tx.prepare_cached(
        "UPDATE memories SET reinforcements = ?1, sources = ?2, provenance = ?3, last_confirmed_at = ?4, \
         decay_due = ?6 WHERE id = ?5",
    )
    .db()?
    .execute(params![m.reinforcements, to_json(&m.sources)?, to_json(&m.provenance)?, at.0, id.0, due])
    .db()?;
    event(tx, seqs, id, at, "reinforced", turn, &json!({ "source": source }))
}

fn confirm(
    tx: &Transaction<'_>,
    rule: &DecayRule,
    seqs: &mut Seqs,
    ns: &Namespace,
    at: Timestamp,
    id: MemoryId,
    source: String,
) -> Result<()> {
    let mut m = active_in(tx, ns, id, "confirm")?;
    transition::confirm(&mut m, &source, at)?;
    let due = rule.due_of(&m).map(|t| t.0);
    tx.prepare_cached("UPDATE memories SET sources = ?1, last_confirmed_at = ?2, decay_due = ?4 WHERE id = ?3")
        .db()?
        .execute(params![to_json(&m.sources)?, at.0, id.0, due])
        .db()?;
    event(tx, seqs, id, at, "confirmed", None, &json!({ "source": source }))
}

#[allow(clippy::too_many_arguments)]
fn tombstone(
    tx: &Transaction<'_>,
    seqs: &mut Seqs,
    ns: &Namespace,
    at: Timestamp,
    id: MemoryId,
    reason: String,
    superseded_by: Option<MemoryId>,
    turn: Option<TurnId>,
) -> Result<()> {
    let mut m = active_in(tx, ns, id, "tombstone")?;
    check_turn(tx, ns, turn, "tombstone")?;
    transition::tombstone(&mut m, &reason, superseded_by, at)?;
    tx.prepare_cached(
        "UPDATE memories SET status = 'tombstoned', tombstone_reason = ?1, tombstoned_at = ?2, superseded_by = ?3, \
         decay_due = NULL WHERE id = ?4",
    )
    .db()?
    .execute(params![reason, at.0, superseded_by.map(|m| m.0), id.0])
    .db()?;
    event(
        tx,
        seqs,
        id,
        at,
        "tombstoned",
        turn,
        &json!({ "reason": reason, "superseded_by": superseded_by.map(|m| m.0) }),
    )
}
