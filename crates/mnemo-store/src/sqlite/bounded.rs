//! Reads that cost what they return, not the namespace: turns by id, a turn by external id
//! (the idempotency look-up), and pages of memories by id.
use mnemo_contract::{CoreError, ListPage, Memory, Namespace, Turn, TurnId};
use rusqlite::types::Value;
use rusqlite::{params, params_from_iter, Connection};

use crate::error::DbResult;
use crate::sqlite::in_list::{self, CHUNK};
use crate::sqlite::rows::{memory_from_row, turn_from_row, MEMORY_COLUMNS, TURN_COLUMNS};

/// The turns of `ns` among `ids`, oldest first (by primary key; foreign and missing ids left out).
pub(crate) fn turns_by_ids(conn: &Connection, ns: &Namespace, ids: &[TurnId]) -> Result<Vec<Turn>, CoreError> {
    let mut out = Vec::new();
    for chunk in ids.chunks(CHUNK) {
        let (marks, ids) = in_list::padded(chunk);
        // `+namespace`: by primary key, the namespace checked after (not a namespace scan).
        let sql = format!("SELECT {TURN_COLUMNS} FROM turns WHERE +namespace = ?1 AND id IN ({marks})");
        let params = std::iter::once(Value::from(ns.as_str().to_string())).chain(ids.map(|id| Value::from(id.0)));
        let mut stmt = conn.prepare_cached(&sql).db()?;
        let mut rows = stmt.query(params_from_iter(params)).db()?;
        while let Some(row) = rows.next().db()? {
            out.push(turn_from_row(row)?);
        }
    }
    out.sort_by_key(|t| t.id);
    out.dedup_by_key(|t| t.id);
    Ok(out)
}

/// The oldest turn of `ns` with this external id (index `turns_external_id`).
pub(crate) fn turn_by_external_id(conn: &Connection, ns: &Namespace, key: &str) -> Result<Option<Turn>, CoreError> {
    let sql = format!("SELECT {TURN_COLUMNS} FROM turns WHERE namespace = ?1 AND external_id = ?2 ORDER BY id LIMIT 1");
    let mut stmt = conn.prepare_cached(&sql).db()?;
    let mut rows = stmt.query(params![ns.as_str(), key]).db()?;
    match rows.next().db()? {
        Some(row) => Ok(Some(turn_from_row(row)?)),
        None => Ok(None),
    }
}

/// One page of `ns`'s memories by id. Each status is read in id order from the
/// (namespace, status) index, at most `limit` of each, and the two merged: never a scan or
/// sort of the namespace.
pub(crate) fn list_memories(conn: &Connection, ns: &Namespace, page: &ListPage) -> Result<Vec<Memory>, CoreError> {
    let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
    let after = page.after.map_or(i64::MIN, |a| a.0);
    let one = |status: &str| {
        format!(
            "SELECT * FROM (SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = ?1 AND status = '{status}' \
             AND id > ?2 ORDER BY id LIMIT ?3)"
        )
    };
    let sql = if page.include_tombstoned {
        format!("{} UNION ALL {} ORDER BY id LIMIT ?3", one("active"), one("tombstoned"))
    } else {
        one("active")
    };
    let mut stmt = conn.prepare_cached(&sql).db()?;
    let mut rows = stmt.query(params![ns.as_str(), after, limit]).db()?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().db()? {
        out.push(memory_from_row(row)?);
    }
    Ok(out)
}
