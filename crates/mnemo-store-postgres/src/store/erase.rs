//! Erasure (see `mnemo_contract::erase` and docs/erasure.md), as in the SQLite store: one
//! transaction (under the namespace's write lock) empties every content column of the plan's
//! memories and turns, records the rows changed with their content hashes before and after,
//! appends an `erased` event to each memory (a new rev) and the erasure to the history chain.
//! Then the old row versions that still hold the content are removed: `VACUUM FULL` of the
//! touched tables (as the login role, outside the transaction), which rewrites them into new
//! files (a plain `VACUUM` marks dead tuples' space free but leaves their bytes in the page). What PostgreSQL keeps elsewhere — its
//! write-ahead log, a WAL archive, replicas, dumps — is outside Mnemo's reach.
use deadpool_postgres::Transaction;
use mnemo_contract::chain::Content;
use mnemo_contract::erase::{self, ErasePlan, ErasedSet, ErasureRecord};
use mnemo_contract::{CoreError, MemoryId, Namespace, StoreErrorKind, Timestamp, TurnId};
use serde_json::json;

use crate::error::DbContext;
use crate::store::chain::{self, ERASURE_COLS, EVENT_COLS, TURN_COLS};
use crate::store::{read, write};

type Result<T> = std::result::Result<T, CoreError>;

/// The tables an erasure rewrites (vacuumed after it).
pub(crate) const TOUCHED: &[&str] = &["memories", "memory_events", "memory_entities", "turns"];

async fn events_of(tx: &Transaction<'_>, id: MemoryId) -> Result<Vec<Content>> {
    let sql = format!(
        "SELECT {EVENT_COLS} FROM memory_events e JOIN memories m ON m.id = e.memory_id WHERE e.memory_id = $1 \
         ORDER BY e.seq"
    );
    let mut out = Vec::new();
    for r in read::rows(tx, &sql, &[&id.0]).await? {
        if let Some(e) = chain::event_at(&r, 0)? {
            out.push(Content::Event(e));
        }
    }
    Ok(out)
}

async fn turn_of(tx: &Transaction<'_>, ns: &Namespace, id: TurnId) -> Result<Option<Content>> {
    let sql = format!("SELECT {TURN_COLS} FROM turns t WHERE t.id = $1 AND t.namespace = $2");
    match read::rows(tx, &sql, &[&id.0, &ns.as_str()]).await?.first() {
        Some(r) => Ok(chain::turn_at(r, 0)?.map(Content::Turn)),
        None => Ok(None),
    }
}

fn ids_json(v: Vec<i64>) -> Result<String> {
    serde_json::to_string(&v)
        .map_err(|e| CoreError::store_message(StoreErrorKind::Other, format!("cannot encode JSON: {e}")))
}

/// Apply `plan` to `ns` at `at` inside `tx` (which holds the namespace's write lock).
pub(crate) async fn erase(
    tx: &Transaction<'_>,
    schema: &str,
    ns: &Namespace,
    at: Timestamp,
    plan: ErasePlan,
) -> Result<ErasureRecord> {
    plan.require_reason()?;
    for id in &plan.memories {
        write::existing_in(tx, ns, *id, "erase").await?;
    }
    for id in plan.turns.iter().chain(plan.redact.iter().map(|(t, _)| t)) {
        if turn_of(tx, ns, *id).await?.is_none() {
            return Err(CoreError::NotFound(format!("erase: turn {id} not found in namespace {ns}")));
        }
    }
    let row = read::rows(
        tx,
        "INSERT INTO erasures (namespace, at, reason, by_whom, target, memories, turns, redacted) \
         VALUES ($1, $2, $3, $4, $5, '[]', '[]', '[]') RETURNING id",
        &[&ns.as_str(), &at.0, &plan.reason, &plan.by, &plan.target],
    )
    .await?;
    let eid: i64 = row
        .first()
        .ok_or_else(|| CoreError::store_message(StoreErrorKind::Other, "no erasure id"))?
        .try_get(0)
        .db("erasure id")?;
    let reason = format!("erased: {}", plan.reason);
    let (mut erased, mut chained) = (ErasedSet::default(), Vec::new());
    for id in plan.memories {
        let already = read::rows(tx, "SELECT erased_by FROM memories WHERE id = $1", &[&id.0]).await?;
        let already: Option<i64> = match already.first() {
            Some(r) => r.try_get(0).db("erased_by")?,
            None => None,
        };
        if already.is_some() || erased.has_memory(id) {
            continue;
        }
        let before = events_of(tx, id).await?;
        read::rows(
            tx,
            "UPDATE memories SET content = '', claim_entity = NULL, claim_attribute = NULL, claim_value = NULL, \
             claim_entity_norm = NULL, claim_attribute_norm = NULL, entities = '[]', entities_norm = '{}', \
             embedding = NULL, embedding_model = NULL, pinned = false, status = 'tombstoned', \
             tombstone_reason = $1, tombstoned_at = $2, decay_due = NULL, erased_by = $3 WHERE id = $4",
            &[&reason, &at.0, &eid, &id.0],
        )
        .await?;
        read::rows(tx, "UPDATE memory_events SET detail = '{}' WHERE memory_id = $1", &[&id.0]).await?;
        read::rows(tx, "DELETE FROM memory_entities WHERE id = $1", &[&id.0]).await?;
        let after = events_of(tx, id).await?;
        chained.push(write::event(tx, ns, id, at, "erased", None, &json!({ "erasure": eid })).await?);
        erased.add_memory(id, &before, &after);
    }
    for rewrite in erase::turn_rewrites(&plan.turns, plan.redact) {
        let id = rewrite.turn;
        if erased.has_turn(id) {
            continue;
        }
        let Some(before) = turn_of(tx, ns, id).await? else { continue };
        if !rewrite.changes(&before) {
            continue;
        }
        read::rows(tx, "UPDATE turns SET text = $1 WHERE id = $2", &[&rewrite.text, &id.0]).await?;
        let Some(after) = turn_of(tx, ns, id).await? else { continue };
        erased.add_turn(&rewrite, &before, &after);
    }
    let record = erased.into_record(ns, eid, at, plan.reason, plan.by, plan.target)?;
    read::rows(
        tx,
        "UPDATE erasures SET memories = $1, turns = $2, redacted = $3 WHERE id = $4",
        &[
            &ids_json(record.memories.iter().map(|m| m.0).collect())?,
            &ids_json(record.turns.iter().map(|t| t.0).collect())?,
            &ids_json(record.redacted.iter().map(|t| t.0).collect())?,
            &eid,
        ],
    )
    .await?;
    for r in &record.rows {
        read::rows(
            tx,
            "INSERT INTO erased_rows (erasure_id, namespace, kind, ref_id, before, after) VALUES ($1, $2, $3, $4, $5, $6)",
            &[&eid, &ns.as_str(), &r.entry.as_str(), &r.id, &&r.before[..], &&r.after[..]],
        )
        .await?;
    }
    chained.push(Content::Erasure(record.clone()));
    // The chain before the revisions: the lock order is batch lock, chain head, revision lock.
    chain::append(tx, ns, &chained).await?;
    write::assign_revs(tx, schema, &record.memories).await?;
    Ok(record)
}

/// The erasure records of `ns`, oldest first.
pub(crate) async fn erasures(tx: &Transaction<'_>, ns: &Namespace) -> Result<Vec<ErasureRecord>> {
    let sql = format!("SELECT {ERASURE_COLS} FROM erasures er WHERE er.namespace = $1 ORDER BY er.id");
    let mut out = Vec::new();
    for r in read::rows(tx, &sql, &[&ns.as_str()]).await? {
        if let Some(e) = chain::erasure_at(&r, 0)? {
            out.push(e);
        }
    }
    Ok(out)
}
