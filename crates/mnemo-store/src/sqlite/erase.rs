//! Erasure (see `mnemo_contract::erase` and docs/erasure.md): one write transaction empties
//! every content column of the plan's memories and turns, records which rows changed with
//! their content hashes before and after, appends an `erased` event to each memory (a new rev,
//! so an index drops it) and the erasure itself to the namespace's history chain. Then the
//! bytes are made to go: the write connection runs with `secure_delete` (freed cells and pages
//! are zeroed), `VACUUM` rewrites the file without the free space older writes left behind,
//! and the write-ahead log is checkpointed and truncated.
use mnemo_contract::chain::Content;
use mnemo_contract::erase::{self, ErasePlan, ErasedSet, ErasureRecord};
use mnemo_contract::{CoreError, MemoryId, Namespace, StoreErrorKind, Timestamp, TurnId};
use rusqlite::{params, Connection, Transaction};
use serde_json::json;

use crate::error::DbResult;
use crate::sqlite::chain::{self, ERASURE_COLS, EVENT_COLS, TURN_COLS};
use crate::sqlite::write::{self, Seqs};

type Result<T> = std::result::Result<T, CoreError>;

/// The events of memory `id` as chained (their content now).
fn events_of(tx: &Transaction<'_>, id: MemoryId) -> Result<Vec<Content>> {
    let sql = format!(
        "SELECT {EVENT_COLS} FROM memory_events e JOIN memories m ON m.id = e.memory_id WHERE e.memory_id = ?1 \
         ORDER BY e.seq"
    );
    let mut stmt = tx.prepare(&sql).db()?;
    let mut rows = stmt.query([id.0]).db()?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().db()? {
        if let Some(e) = chain::event_at(r, 0).db()? {
            out.push(Content::Event(e));
        }
    }
    Ok(out)
}

/// Turn `id` as chained (its content now).
fn turn_of(tx: &Transaction<'_>, id: TurnId) -> Result<Option<Content>> {
    let sql = format!("SELECT {TURN_COLS} FROM turns t WHERE t.id = ?1");
    let mut stmt = tx.prepare(&sql).db()?;
    let mut rows = stmt.query([id.0]).db()?;
    match rows.next().db()? {
        Some(r) => Ok(chain::turn_at(r, 0).db()?.map(Content::Turn)),
        None => Ok(None),
    }
}

/// Apply `plan` to `ns` at `at`, then compact the file (see the module docs).
pub(crate) fn erase(conn: &mut Connection, ns: &Namespace, at: Timestamp, plan: ErasePlan) -> Result<ErasureRecord> {
    plan.require_reason()?;
    let record = {
        let tx = write::begin(conn)?;
        let record = erase_in(&tx, ns, at, plan)?;
        tx.commit().db()?;
        record
    };
    compact(conn)?;
    Ok(record)
}

fn erase_in(tx: &Transaction<'_>, ns: &Namespace, at: Timestamp, plan: ErasePlan) -> Result<ErasureRecord> {
    for id in &plan.memories {
        write::existing_in(tx, ns, *id, "erase")?;
    }
    for id in plan.turns.iter().chain(plan.redact.iter().map(|(t, _)| t)) {
        write::check_turn(tx, ns, Some(*id), "erase")?;
    }
    tx.prepare_cached(
        "INSERT INTO erasures (namespace, at, reason, by_whom, target, memories, turns, redacted) \
         VALUES (?1, ?2, ?3, ?4, ?5, '[]', '[]', '[]')",
    )
    .db()?
    .execute(params![ns.as_str(), at.0, plan.reason, plan.by, plan.target])
    .db()?;
    let eid = tx.last_insert_rowid();
    let mut seqs = Seqs::of(tx, ns)?;
    let mut erased = ErasedSet::default();
    let reason = format!("erased: {}", plan.reason);
    for id in plan.memories {
        let already: Option<i64> =
            tx.query_row("SELECT erased_by FROM memories WHERE id = ?1", [id.0], |r| r.get(0)).db()?;
        if already.is_some() || erased.has_memory(id) {
            continue;
        }
        let before = events_of(tx, id)?;
        tx.prepare_cached(
            "UPDATE memories SET content = '', claim_entity = NULL, claim_attribute = NULL, claim_value = NULL, \
             claim_entity_norm = NULL, claim_attribute_norm = NULL, entities = '[]', embedding = NULL, \
             embedding_model = NULL, embedding_codec = NULL, pinned = 0, status = 'tombstoned', \
             tombstone_reason = ?1, tombstoned_at = ?2, decay_due = NULL, erased_by = ?3 WHERE id = ?4",
        )
        .db()?
        .execute(params![reason, at.0, eid, id.0])
        .db()?;
        tx.prepare_cached("UPDATE memory_events SET detail = '{}' WHERE memory_id = ?1").db()?.execute([id.0]).db()?;
        tx.prepare_cached("DELETE FROM memory_entities WHERE memory_id = ?1").db()?.execute([id.0]).db()?;
        let after = events_of(tx, id)?;
        write::event(tx, &mut seqs, id, at, "erased", None, &json!({ "erasure": eid }))?;
        erased.add_memory(id, &before, &after);
    }
    for rewrite in erase::turn_rewrites(&plan.turns, plan.redact) {
        let id = rewrite.turn;
        if erased.has_turn(id) {
            continue;
        }
        let Some(before) = turn_of(tx, id)? else { continue };
        if !rewrite.changes(&before) {
            continue;
        }
        tx.prepare_cached("UPDATE turns SET text = ?1 WHERE id = ?2")
            .db()?
            .execute(params![rewrite.text, id.0])
            .db()?;
        let Some(after) = turn_of(tx, id)? else { continue };
        erased.add_turn(&rewrite, &before, &after);
    }
    let record = erased.into_record(ns, eid, at, plan.reason, plan.by, plan.target)?;
    let ids = |v: Vec<i64>| {
        serde_json::to_string(&v)
            .map_err(|e| CoreError::store_message(StoreErrorKind::Other, format!("cannot encode JSON: {e}")))
    };
    tx.prepare_cached("UPDATE erasures SET memories = ?1, turns = ?2, redacted = ?3 WHERE id = ?4")
        .db()?
        .execute(params![
            ids(record.memories.iter().map(|m| m.0).collect())?,
            ids(record.turns.iter().map(|t| t.0).collect())?,
            ids(record.redacted.iter().map(|t| t.0).collect())?,
            eid
        ])
        .db()?;
    {
        let mut stmt = tx
            .prepare_cached(
                "INSERT INTO erased_rows (erasure_id, kind, ref_id, before, after) VALUES (?1, ?2, ?3, ?4, ?5)",
            )
            .db()?;
        for r in &record.rows {
            stmt.execute(params![eid, r.entry.as_str(), r.id, &r.before[..], &r.after[..]]).db()?;
        }
    }
    seqs.chains.append(tx, ns.as_str(), &Content::Erasure(record.clone()))?;
    seqs.chains.finish(tx)?;
    Ok(record)
}

/// Rewrite the file without free space and empty the write-ahead log, so no erased byte stays
/// behind in either (the connection's `secure_delete` zeroes what later writes free).
fn compact(conn: &mut Connection) -> Result<()> {
    conn.execute_batch("VACUUM").db()?;
    // (busy, frames in the log, frames checkpointed); an in-memory store has no log (-1s).
    let (busy, _log, _done): (i64, i64, i64) =
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).db()?;
    if busy != 0 {
        return Err(CoreError::store_message(
            StoreErrorKind::Other,
            "the erasure is committed, but the write-ahead log could not be emptied (a reader held it): \
             the erased bytes may remain in the -wal file until the next checkpoint",
        ));
    }
    Ok(())
}

/// The erasure records of `ns`, oldest first.
pub(crate) fn erasures(conn: &Connection, ns: &Namespace) -> Result<Vec<ErasureRecord>> {
    let sql = format!("SELECT {ERASURE_COLS} FROM erasures er WHERE er.namespace = ?1 ORDER BY er.id");
    let mut stmt = conn.prepare(&sql).db()?;
    let mut rows = stmt.query([ns.as_str()]).db()?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().db()? {
        if let Some(e) = chain::erasure_at(r, 0).db()? {
            out.push(e);
        }
    }
    Ok(out)
}
