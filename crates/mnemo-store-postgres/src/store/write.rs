//! The write side. Every call is one transaction.
//!
//! `apply`: all ops or none. The batch first takes its namespace's advisory lock, so batches
//! of one namespace are serialised across every process sharing the database. Inserts are
//! applied first, in order (a `MemoryRef::New(i)` may point at an insert placed before or
//! after the tombstone), then the other ops in order; each op appends one history event.
//! Last, under the store-wide revision lock (held until commit), every changed memory gets a
//! fresh `rev` from the sequence, in the order of its last change: a revision is handed out
//! only after every smaller one is committed, so a reader paging `changed_since` never
//! passes a revision that is still to appear.
//!
//! Event details are small JSON objects, as in the SQLite store: created `{"sources": [...]}`,
//! reinforced and confirmed `{"source": ...}`, tombstoned `{"reason": ..., "superseded_by": id | null}`.
use std::collections::HashSet;

use deadpool_postgres::Transaction;
use mnemo_contract::chain::{Content, CreatedMemory, EventContent};
use mnemo_contract::decay_due::DecayRule;
use mnemo_contract::text::norm_name;
use mnemo_contract::transition;
use mnemo_contract::{
    CoreError, Memory, MemoryId, MemoryRef, Namespace, NewMemory, StoreErrorKind, Timestamp, TurnId, WriteOp,
};
use serde_json::json;

use crate::db::{Db, Scope};
use crate::error::DbContext;
use crate::store::read;
use crate::store::rows::encode_vector;

type Result<T> = std::result::Result<T, CoreError>;

fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v)
        .map_err(|e| CoreError::store_message(StoreErrorKind::Other, format!("cannot encode JSON: {e}")))
}

/// Take the namespace's write lock for the rest of the transaction.
pub(crate) async fn lock_namespace(tx: &Transaction<'_>, schema: &str, ns: &Namespace) -> Result<()> {
    read::rows(tx, "SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))", &[&schema, &ns.as_str()]).await?;
    Ok(())
}

/// What a batch changed, in order of each memory's last change; and the events it appended,
/// in order, to be chained.
#[derive(Default)]
pub(crate) struct Changes {
    order: Vec<MemoryId>,
    chained: Vec<Content>,
}

impl Changes {
    fn touch(&mut self, id: MemoryId) {
        self.order.retain(|x| *x != id);
        self.order.push(id);
    }
}

/// Apply a batch (the transaction is scoped and locked); returns the inserted ids in order.
pub(crate) async fn apply(
    tx: &Transaction<'_>,
    schema: &str,
    ns: &Namespace,
    at: Timestamp,
    ops: Vec<WriteOp>,
) -> Result<Vec<MemoryId>> {
    let mut changes = Changes::default();
    let mut inserts = Vec::new();
    let mut rest = Vec::new();
    for op in ops {
        match op {
            WriteOp::Insert { memory, turn } => inserts.push((memory, turn)),
            other => rest.push(other),
        }
    }
    let mut turns: Vec<i64> = inserts.iter().filter_map(|(_, t)| t.map(|t| t.0)).collect();
    turns.extend(rest.iter().filter_map(|op| match op {
        WriteOp::Reinforce { turn, .. } | WriteOp::Tombstone { turn, .. } | WriteOp::TombstoneNew { turn, .. } => {
            turn.map(|t| t.0)
        }
        WriteOp::Confirm { .. } | WriteOp::Insert { .. } => None,
    }));
    let known_turns = if turns.is_empty() { HashSet::new() } else { read::turns_in(tx, ns, &turns).await? };
    let check_turn = |turn: Option<TurnId>, what: &str| -> Result<()> {
        match turn {
            Some(t) if !known_turns.contains(&t.0) => {
                Err(CoreError::NotFound(format!("{what}: turn {t} not found in namespace {ns}")))
            }
            _ => Ok(()),
        }
    };
    for (i, (m, turn)) in inserts.iter().enumerate() {
        transition::check_insert(ns, m).map_err(|e| CoreError::InvalidInput(format!("insert #{i}: {e}")))?;
        check_turn(*turn, "insert")?;
    }
    let needs_rule =
        !inserts.is_empty() || rest.iter().any(|op| matches!(op, WriteOp::Reinforce { .. } | WriteOp::Confirm { .. }));
    let rule = if needs_rule { crate::store::decay::rule_in_force(tx, ns).await? } else { DecayRule::default() };
    let new_ids = insert_all(tx, &rule, ns, at, inserts, &mut changes.chained).await?;
    for id in &new_ids {
        changes.touch(*id);
    }
    for op in rest {
        match op {
            WriteOp::Insert { .. } => {}
            WriteOp::Reinforce { id, source, turn } => {
                check_turn(turn, "reinforce")?;
                let e = reinforce(tx, &rule, ns, at, id, source, turn).await?;
                changes.chained.push(e);
                changes.touch(id);
            }
            WriteOp::Confirm { id, source } => {
                let e = confirm(tx, &rule, ns, at, id, source).await?;
                changes.chained.push(e);
                changes.touch(id);
            }
            WriteOp::Tombstone { id, reason, superseded_by, turn } => {
                check_turn(turn, "tombstone")?;
                let by = superseded(tx, ns, &new_ids, superseded_by).await?;
                let e = tombstone(tx, ns, at, id, reason, by, turn).await?;
                changes.chained.push(e);
                changes.touch(id);
            }
            WriteOp::TombstoneNew { index, reason, superseded_by, turn } => {
                check_turn(turn, "tombstone")?;
                let by = superseded(tx, ns, &new_ids, superseded_by).await?;
                let id = new_ids
                    .get(index)
                    .copied()
                    .ok_or_else(|| CoreError::InvalidInput(format!("no insert #{index} in the batch")))?;
                let e = tombstone(tx, ns, at, id, reason, by, turn).await?;
                changes.chained.push(e);
                changes.touch(id);
            }
        }
    }
    // The chain before the revisions: the lock order is batch lock, chain head, revision lock.
    crate::store::chain::append(tx, ns, &changes.chained).await?;
    assign_revs(tx, schema, &changes.order).await?;
    Ok(new_ids)
}

/// Fresh revs for the changed memories, in order, under the store-wide revision lock.
pub(crate) async fn assign_revs(tx: &Transaction<'_>, schema: &str, changed: &[MemoryId]) -> Result<()> {
    if changed.is_empty() {
        return Ok(());
    }
    read::rows(tx, "SELECT pg_advisory_xact_lock(hashtext($1 || ':rev')::bigint)", &[&schema]).await?;
    let n = changed.len() as i64;
    let mut revs: Vec<i64> = read::rows(tx, "SELECT nextval('mnemo_rev') FROM generate_series(1, $1::bigint)", &[&n])
        .await?
        .iter()
        .map(|r| r.try_get::<_, i64>(0).db("allocate revs"))
        .collect::<Result<_>>()?;
    revs.sort_unstable();
    let ids: Vec<i64> = changed.iter().map(|m| m.0).collect();
    read::rows(
        tx,
        "UPDATE memories m SET rev = u.rev FROM unnest($1::bigint[], $2::bigint[]) AS u(id, rev) \
         WHERE m.id = u.id RETURNING m.id",
        &[&ids, &revs],
    )
    .await?;
    Ok(())
}

/// Insert every memory of the batch in three statements; ids are taken from the namespace's
/// counter first (see `ids`) so they increase in insert order.
async fn insert_all(
    tx: &Transaction<'_>,
    rule: &DecayRule,
    ns: &Namespace,
    at: Timestamp,
    inserts: Vec<(NewMemory, Option<TurnId>)>,
    chained: &mut Vec<Content>,
) -> Result<Vec<MemoryId>> {
    if inserts.is_empty() {
        return Ok(vec![]);
    }
    let n = inserts.len() as i64;
    let ids = crate::store::ids::next(tx, ns, crate::store::ids::Table::Memories, n).await?;
    let len = inserts.len();
    let mut kind = Vec::with_capacity(len);
    let mut content = Vec::with_capacity(len);
    let mut ce = Vec::with_capacity(len);
    let mut ca = Vec::with_capacity(len);
    let mut cv = Vec::with_capacity(len);
    let mut cen = Vec::with_capacity(len);
    let mut can = Vec::with_capacity(len);
    let mut entities = Vec::with_capacity(len);
    let mut entities_norm = Vec::with_capacity(len);
    let mut importance = Vec::with_capacity(len);
    let mut sources = Vec::with_capacity(len);
    let mut provenance = Vec::with_capacity(len);
    let mut created = Vec::with_capacity(len);
    let mut pinned = Vec::with_capacity(len);
    let mut emodel: Vec<Option<String>> = Vec::with_capacity(len);
    let mut evec: Vec<Option<Vec<u8>>> = Vec::with_capacity(len);
    let mut turn_ids: Vec<Option<i64>> = Vec::with_capacity(len);
    let mut details = Vec::with_capacity(len);
    let mut dues: Vec<Option<i64>> = Vec::with_capacity(len);
    let mut vfrom: Vec<Option<i64>> = Vec::with_capacity(len);
    let mut vto: Vec<Option<i64>> = Vec::with_capacity(len);
    let mut chained_memories = Vec::with_capacity(len);
    for (m, turn) in inserts {
        dues.push(rule.due(&transition::inserted_decay_inputs(&m)).map(|t| t.0));
        kind.push(m.kind.as_str().to_string());
        let key = m.claim.as_ref().map(|c| c.key());
        ce.push(m.claim.as_ref().map(|c| c.entity.clone()));
        ca.push(m.claim.as_ref().map(|c| c.attribute.clone()));
        cv.push(m.claim.as_ref().map(|c| c.value.clone()));
        cen.push(key.as_ref().map(|k| k.0.clone()));
        can.push(key.map(|k| k.1));
        entities.push(to_json(&m.entities)?);
        chained_memories.push((
            CreatedMemory::of(&m, to_json(&m.entities)?),
            turn.map(|t| t.0),
            json!({ "sources": m.sources }).to_string(),
        ));
        let norm: Vec<String> = m.entities.iter().map(|e| norm_name(e)).filter(|e| !e.is_empty()).collect();
        entities_norm.push(to_json(&norm)?);
        importance.push(m.importance);
        sources.push(to_json(&m.sources)?);
        provenance.push(to_json(&m.provenance)?);
        created.push(m.created_at.0);
        pinned.push(m.pinned);
        vfrom.push(m.validity.from.map(|t| t.0));
        vto.push(m.validity.to.map(|t| t.0));
        emodel.push(m.embedding.as_ref().map(|e| e.model.clone()));
        evec.push(m.embedding.as_ref().map(|e| encode_vector(&e.vector)));
        turn_ids.push(turn.map(|t| t.0));
        details.push(json!({ "sources": m.sources }).to_string());
        content.push(m.content);
    }
    read::rows(
        tx,
        "INSERT INTO memories (id, namespace, kind, content, claim_entity, claim_attribute, claim_value, \
         claim_entity_norm, claim_attribute_norm, entities, entities_norm, importance, reinforcements, sources, \
         provenance, created_at, last_confirmed_at, last_accessed_at, pinned, embedding_model, embedding, status, rev, \
         decay_due, valid_from, valid_to) \
         SELECT u.id, $2, u.kind, u.content, u.ce, u.ca, u.cv, u.cen, u.can, u.entities, \
         ARRAY(SELECT jsonb_array_elements_text(u.entities_norm::jsonb)), u.importance, 0, u.sources, u.provenance, \
         u.created, u.created, NULL, u.pinned, u.emodel, u.evec, 'active', 0, u.due, u.vfrom, u.vto \
         FROM unnest($1::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], \
         $9::text[], $10::text[], $11::text[], $12::real[], $13::text[], $14::text[], $15::bigint[], \
         $16::boolean[], $17::text[], $18::bytea[], $19::bigint[], $20::bigint[], $21::bigint[]) \
         AS u(id, kind, content, ce, ca, cv, cen, can, entities, entities_norm, importance, sources, provenance, \
         created, pinned, emodel, evec, due, vfrom, vto) RETURNING id",
        &[
            &ids,
            &ns.as_str(),
            &kind,
            &content,
            &ce,
            &ca,
            &cv,
            &cen,
            &can,
            &entities,
            &entities_norm,
            &importance,
            &sources,
            &provenance,
            &created,
            &pinned,
            &emodel,
            &evec,
            &dues,
            &vfrom,
            &vto,
        ],
    )
    .await?;
    let seqs = read::rows(
        tx,
        "INSERT INTO memory_events (memory_id, namespace, at, event, turn_id, detail) \
         SELECT u.id, $2, $3, 'created', u.turn, u.detail \
         FROM unnest($1::bigint[], $4::bigint[], $5::text[]) WITH ORDINALITY AS u(id, turn, detail, ord) \
         ORDER BY u.ord RETURNING memory_id, seq",
        &[&ids, &ns.as_str(), &at.0, &turn_ids, &details],
    )
    .await?;
    // Each new memory has one event here: its seq, by memory (RETURNING's order is not promised).
    let seq_of: std::collections::HashMap<i64, i64> = seqs
        .iter()
        .map(|r| Ok((r.try_get::<_, i64>(0).db("event memory")?, r.try_get::<_, i64>(1).db("event seq")?)))
        .collect::<Result<_>>()?;
    for (id, (memory, turn, detail)) in ids.iter().zip(chained_memories) {
        let seq = *seq_of.get(id).ok_or_else(|| {
            CoreError::store_message(StoreErrorKind::Other, format!("no created event for memory {id}"))
        })?;
        chained.push(Content::Event(EventContent {
            namespace: Some(ns.as_str().to_string()),
            seq,
            memory_id: *id,
            at: at.0,
            event: "created".into(),
            turn_id: turn,
            detail,
            memory: Some(memory),
            erased: None,
        }));
    }
    Ok(ids.into_iter().map(MemoryId).collect())
}

/// Resolve a `superseded_by` reference (batch inserts are in range: checked before).
async fn superseded(
    tx: &Transaction<'_>,
    ns: &Namespace,
    new_ids: &[MemoryId],
    by: Option<MemoryRef>,
) -> Result<Option<MemoryId>> {
    Ok(match by {
        None => None,
        Some(MemoryRef::New(n)) => new_ids.get(n).copied(),
        Some(MemoryRef::Existing(by)) => Some(existing_in(tx, ns, by, "tombstone superseded_by").await?.id),
    })
}

pub(crate) async fn event(
    tx: &Transaction<'_>,
    ns: &Namespace,
    id: MemoryId,
    at: Timestamp,
    kind: &str,
    turn: Option<TurnId>,
    detail: &serde_json::Value,
) -> Result<Content> {
    let detail = detail.to_string();
    let rows = read::rows(
        tx,
        "INSERT INTO memory_events (memory_id, namespace, at, event, turn_id, detail) \
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
        &[&id.0, &ns.as_str(), &at.0, &kind, &turn.map(|t| t.0), &detail],
    )
    .await?;
    let seq: i64 = rows
        .first()
        .ok_or_else(|| CoreError::store_message(StoreErrorKind::Other, "INSERT INTO memory_events returned no seq"))?
        .try_get(0)
        .db("event seq")?;
    Ok(Content::Event(EventContent {
        namespace: Some(ns.as_str().to_string()),
        seq,
        memory_id: id.0,
        at: at.0,
        event: kind.to_string(),
        turn_id: turn.map(|t| t.0),
        detail,
        memory: None,
        erased: None,
    }))
}

pub(crate) async fn existing_in(tx: &Transaction<'_>, ns: &Namespace, id: MemoryId, what: &str) -> Result<Memory> {
    read::memory_in(tx, ns, id)
        .await?
        .ok_or_else(|| CoreError::NotFound(format!("{what}: memory {id} not found in namespace {ns}")))
}

async fn active_in(tx: &Transaction<'_>, ns: &Namespace, id: MemoryId, what: &str) -> Result<Memory> {
    transition::require_active(existing_in(tx, ns, id, what).await?, what)
}

async fn reinforce(
    tx: &Transaction<'_>,
    rule: &DecayRule,
    ns: &Namespace,
    at: Timestamp,
    id: MemoryId,
    source: String,
    turn: Option<TurnId>,
) -> Result<Content> {
    let mut m = active_in(tx, ns, id, "reinforce").await?;
    transition::reinforce(&mut m, &source, turn, at)?;
    let due = rule.due_of(&m).map(|t| t.0);
    read::rows(
        tx,
        "UPDATE memories SET reinforcements = $1, sources = $2, provenance = $3, last_confirmed_at = $4, \
         decay_due = $7 WHERE id = $5 AND namespace = $6 RETURNING id",
        &[
            &i64::from(m.reinforcements),
            &to_json(&m.sources)?,
            &to_json(&m.provenance)?,
            &at.0,
            &id.0,
            &ns.as_str(),
            &due,
        ],
    )
    .await?;
    event(tx, ns, id, at, "reinforced", turn, &json!({ "source": source })).await
}

async fn confirm(
    tx: &Transaction<'_>,
    rule: &DecayRule,
    ns: &Namespace,
    at: Timestamp,
    id: MemoryId,
    source: String,
) -> Result<Content> {
    let mut m = active_in(tx, ns, id, "confirm").await?;
    transition::confirm(&mut m, &source, at)?;
    let due = rule.due_of(&m).map(|t| t.0);
    read::rows(
        tx,
        "UPDATE memories SET sources = $1, last_confirmed_at = $2, decay_due = $5 \
         WHERE id = $3 AND namespace = $4 RETURNING id",
        &[&to_json(&m.sources)?, &at.0, &id.0, &ns.as_str(), &due],
    )
    .await?;
    event(tx, ns, id, at, "confirmed", None, &json!({ "source": source })).await
}

async fn tombstone(
    tx: &Transaction<'_>,
    ns: &Namespace,
    at: Timestamp,
    id: MemoryId,
    reason: String,
    superseded_by: Option<MemoryId>,
    turn: Option<TurnId>,
) -> Result<Content> {
    let mut m = active_in(tx, ns, id, "tombstone").await?;
    transition::tombstone(&mut m, &reason, superseded_by, at)?;
    read::rows(
        tx,
        "UPDATE memories SET status = 'tombstoned', tombstone_reason = $1, tombstoned_at = $2, superseded_by = $3, \
         decay_due = NULL WHERE id = $4 AND namespace = $5 RETURNING id",
        &[&reason, &at.0, &superseded_by.map(|m| m.0), &id.0, &ns.as_str()],
    )
    .await?;
    let detail = json!({ "reason": reason, "superseded_by": superseded_by.map(|m| m.0) });
    event(tx, ns, id, at, "tombstoned", turn, &detail).await
}

/// Set `last_accessed_at` of the memories of `ns` among `ids` (rev untouched; only ever later:
/// a recall at an earlier time leaves a later access as it is).
pub(crate) async fn touch(db: &Db, ns: &Namespace, ids: &[MemoryId], at: Timestamp) -> Result<()> {
    let raw: Vec<i64> = ids.iter().map(|i| i.0).collect();
    // One pipelined transaction (one round trip), committed without waiting for the WAL
    // flush: a recall time lost in a server crash only makes a memory look a little less
    // recently used to decay, and every recall would otherwise wait for a disk sync.
    db.pipelined(
        Scope::Namespace(ns),
        " SET LOCAL synchronous_commit = off;",
        "UPDATE memories SET last_accessed_at = $1 WHERE namespace = $2 AND id = ANY($3) \
         AND (last_accessed_at IS NULL OR last_accessed_at < $1)",
        &[&at.0, &ns.as_str(), &raw],
    )
    .await?;
    Ok(())
}
