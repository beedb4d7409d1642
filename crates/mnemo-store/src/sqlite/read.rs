//! Queries. They run on whichever connection they are given: the read connection for the
//! Store's read methods, the write transaction when the writer needs to look a row up.
use std::collections::{BTreeMap, HashMap, HashSet};

use mnemo_contract::text::norm_name;
use mnemo_contract::{CoreError, Memory, MemoryEvent, MemoryId, Namespace, StoreErrorKind, Timestamp, Turn};
use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection, Params};

use crate::error::DbResult;
use crate::sqlite::in_list::{self, CHUNK};
use crate::sqlite::rows::{
    event_from_row, memory_from_row, turn_from_row, EVENT_COLUMNS, MEMORY_COLUMNS, TURN_COLUMNS,
};

/// Rows of `sql` decoded with `decode`.
fn collect<T, P: Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    decode: fn(&rusqlite::Row<'_>) -> Result<T, CoreError>,
) -> Result<Vec<T>, CoreError> {
    let mut stmt = conn.prepare_cached(sql).db()?;
    let mut rows = stmt.query(params).db()?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().db()? {
        out.push(decode(row)?);
    }
    Ok(out)
}

/// Memories matching a WHERE clause (with its parameters), in the given order.
fn memories_where<P: Params>(conn: &Connection, clause: &str, params: P) -> Result<Vec<Memory>, CoreError> {
    collect(conn, &format!("SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause}"), params, memory_from_row)
}

/// One memory by id, any namespace.
pub(crate) fn memory(conn: &Connection, id: MemoryId) -> Result<Option<Memory>, CoreError> {
    Ok(memories_where(conn, "id = ?1", [id.0])?.pop())
}

/// Memories by id in `ns`, in request order, each once; missing and foreign ids left out.
pub(crate) fn get_many(conn: &Connection, ns: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>, CoreError> {
    let mut found: HashMap<MemoryId, Memory> = HashMap::new();
    for chunk in ids.chunks(CHUNK) {
        // `+namespace`: look rows up by primary key and filter the namespace after; without
        // the `+` SQLite may pick the (namespace, status) index and scan the whole namespace.
        let (marks, ids) = in_list::padded(chunk);
        let clause = format!("+namespace = ?1 AND id IN ({marks})");
        let params = std::iter::once(Value::from(ns.as_str().to_string())).chain(ids.map(|id| Value::from(id.0)));
        for m in memories_where(conn, &clause, params_from_iter(params))? {
            found.insert(m.id, m);
        }
    }
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}

/// Active memories of `ns` mentioning any of `entities` (normalised here too), by id.
pub(crate) fn active_by_entities(
    conn: &Connection,
    ns: &Namespace,
    entities: &[String],
) -> Result<Vec<Memory>, CoreError> {
    let names: Vec<String> =
        entities.iter().map(|e| norm_name(e)).filter(|e| !e.is_empty()).collect::<HashSet<_>>().into_iter().collect();
    let mut found: BTreeMap<MemoryId, Memory> = BTreeMap::new();
    for chunk in names.chunks(CHUNK) {
        let (marks, names) = in_list::padded(chunk);
        let clause = format!(
            "namespace = ?1 AND status = 'active' AND id IN \
             (SELECT memory_id FROM memory_entities WHERE entity_norm IN ({marks}))"
        );
        let params = std::iter::once(ns.as_str().to_string()).chain(names);
        for m in memories_where(conn, &clause, params_from_iter(params))? {
            found.insert(m.id, m);
        }
    }
    Ok(found.into_values().collect())
}

/// Active memories of `ns`, by id.
pub(crate) fn active(conn: &Connection, ns: &Namespace) -> Result<Vec<Memory>, CoreError> {
    memories_where(conn, "namespace = ?1 AND status = 'active' ORDER BY id", [ns.as_str()])
}

/// Active pinned memories of `ns`, by id.
pub(crate) fn pinned(conn: &Connection, ns: &Namespace) -> Result<Vec<Memory>, CoreError> {
    memories_where(conn, "namespace = ?1 AND pinned = 1 AND status = 'active' ORDER BY id", [ns.as_str()])
}

/// Every memory of `ns`, by id.
pub(crate) fn all_memories(conn: &Connection, ns: &Namespace) -> Result<Vec<Memory>, CoreError> {
    memories_where(conn, "namespace = ?1 ORDER BY id", [ns.as_str()])
}

/// Every memory of `ns` whose claim is on `entity | attribute` (normalised), every status, by id
/// (the `memories_claim` index).
pub(crate) fn claim_memories(
    conn: &Connection,
    ns: &Namespace,
    entity: &str,
    attribute: &str,
) -> Result<Vec<Memory>, CoreError> {
    let (e, a) = (mnemo_contract::text::norm_name(entity), mnemo_contract::text::norm_name(attribute));
    memories_where(
        conn,
        "namespace = ?1 AND claim_entity_norm = ?2 AND claim_attribute_norm = ?3 ORDER BY id",
        [ns.as_str(), e.as_str(), a.as_str()],
    )
}

/// Memories of any namespace with a rev above `rev`, by rev, at most `limit`.
pub(crate) fn changed_since(conn: &Connection, rev: u64, limit: usize) -> Result<Vec<Memory>, CoreError> {
    // A rev beyond i64 cannot exist in SQLite, so nothing is above it.
    let Ok(rev) = i64::try_from(rev) else { return Ok(Vec::new()) };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    memories_where(conn, "rev > ?1 ORDER BY rev LIMIT ?2", [rev, limit])
}

/// `Store::changes_since` in one read transaction: the newest rev, the changed rows, the
/// identity and the last change's fingerprint all of one snapshot (a backup restored meanwhile
/// cannot pair the old rows with the new identity).
pub(crate) fn changes_since(conn: &Connection, rev: u64, limit: usize) -> Result<mnemo_contract::Changes, CoreError> {
    let tx = conn.unchecked_transaction().db()?;
    let newest = max_rev(&tx)?;
    let changes = changes_above(&tx, rev, limit, newest)?;
    tx.commit().db()?;
    Ok(changes)
}

/// `changes_since` when the store's newest rev is at most `few` above `rev` (so at most `few`
/// rows changed); None otherwise, having read only the newest rev.
pub(crate) fn changes_since_if_few(
    conn: &Connection,
    rev: u64,
    limit: usize,
    few: u64,
) -> Result<Option<mnemo_contract::Changes>, CoreError> {
    let tx = conn.unchecked_transaction().db()?;
    let newest = max_rev(&tx)?;
    if newest.saturating_sub(rev) > few {
        return Ok(None);
    }
    let changes = changes_above(&tx, rev, limit, newest)?;
    tx.commit().db()?;
    Ok(Some(changes))
}

/// The rest of `changes_since` once the newest rev is read, in the caller's read transaction.
fn changes_above(conn: &Connection, rev: u64, limit: usize, newest: u64) -> Result<mnemo_contract::Changes, CoreError> {
    let memories = if rev < newest { changed_since(conn, rev, limit)? } else { Vec::new() };
    let fingerprint = match mnemo_contract::Changes::fingerprinted_rev(rev, &memories) {
        Some(at) => rev_fingerprint(conn, at)?,
        None => None,
    };
    Ok(mnemo_contract::Changes::new(newest, memories, Some(identity(conn)?), fingerprint))
}

/// The highest rev (0 when empty). Every rev is an event seq, and every event sets its
/// memory's rev, so the maximum over memories is the store-wide maximum.
pub(crate) fn max_rev(conn: &Connection) -> Result<u64, CoreError> {
    let v: i64 =
        conn.prepare_cached("SELECT COALESCE(MAX(rev), 0) FROM memories").db()?.query_row([], |r| r.get(0)).db()?;
    u64::try_from(v)
        .map_err(|_| CoreError::store_message(StoreErrorKind::Damaged, format!("negative rev {v} in memories")))
}

/// The events of one memory of `ns`, oldest first (empty for a foreign or missing id).
pub(crate) fn history(conn: &Connection, ns: &Namespace, id: MemoryId) -> Result<Vec<MemoryEvent>, CoreError> {
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM memory_events WHERE memory_id = ?1 \
         AND memory_id IN (SELECT id FROM memories WHERE id = ?1 AND namespace = ?2) ORDER BY seq"
    );
    collect(conn, &sql, rusqlite::params![id.0, ns.as_str()], event_from_row)
}

/// The turns of `ns`, oldest first.
pub(crate) fn turns(conn: &Connection, ns: &Namespace) -> Result<Vec<Turn>, CoreError> {
    let sql = format!("SELECT {TURN_COLUMNS} FROM turns WHERE namespace = ?1 ORDER BY id");
    collect(conn, &sql, [ns.as_str()], turn_from_row)
}

/// The time of the namespace's newest turn.
pub(crate) fn latest_turn_at(conn: &Connection, ns: &Namespace) -> Result<Option<Timestamp>, CoreError> {
    use rusqlite::OptionalExtension;
    conn.query_row("SELECT at FROM turns WHERE namespace = ?1 ORDER BY id DESC LIMIT 1", [ns.as_str()], |r| r.get(0))
        .optional()
        .db()
        .map(|o| o.map(Timestamp))
}

/// The namespace of a turn, if it exists.
pub(crate) fn turn_namespace(conn: &Connection, id: i64) -> Result<Option<String>, CoreError> {
    use rusqlite::OptionalExtension;
    conn.query_row("SELECT namespace FROM turns WHERE id = ?1", [id], |r| r.get(0)).optional().db()
}

/// Every namespace holding a turn or a memory, sorted.
pub(crate) fn namespaces(conn: &Connection) -> Result<Vec<Namespace>, CoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT namespace FROM turns UNION SELECT namespace FROM memories ORDER BY 1").db()?;
    let mut rows = stmt.query([]).db()?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().db()? {
        let s: String = row.get(0).db()?;
        out.push(Namespace::new(&s).map_err(|e| {
            CoreError::store_message(StoreErrorKind::Damaged, format!("corrupt namespace in the store: {e}"))
        })?);
    }
    Ok(out)
}

/// The store's identity (schema version 2's `store_meta`).
pub(crate) fn identity(conn: &Connection) -> Result<mnemo_contract::StoreIdentity, CoreError> {
    let get = |key: &str| super::ids::meta(conn, key);
    let id = get("identity")?
        .ok_or_else(|| CoreError::store_message(StoreErrorKind::Damaged, "store_meta has no identity row"))?;
    let generation = get("generation")?
        .ok_or_else(|| CoreError::store_message(StoreErrorKind::Damaged, "store_meta has no generation row"))?
        .parse::<u64>()
        .map_err(|e| {
            CoreError::store_message(StoreErrorKind::Damaged, format!("store_meta generation is not a number: {e}"))
        })?;
    Ok(mnemo_contract::StoreIdentity { id, generation })
}

/// A fingerprint of the event whose seq is `rev`: its memory, time, kind and an FNV-1a hash of
/// its detail (None when there is no such event).
pub(crate) fn rev_fingerprint(conn: &Connection, rev: u64) -> Result<Option<String>, CoreError> {
    use rusqlite::OptionalExtension;
    let Ok(rev) = i64::try_from(rev) else { return Ok(None) };
    let row: Option<(i64, i64, String, String)> = conn
        .prepare_cached("SELECT memory_id, at, event, detail FROM memory_events WHERE seq = ?1")
        .db()?
        .query_row([rev], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()
        .db()?;
    Ok(row.map(|(memory, at, event, detail)| {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in detail.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{memory}:{at}:{event}:{h:016x}")
    }))
}
