//! Reads that cost what they return, not the namespace: turns by id, a turn by external id
//! (the idempotency look-up), and pages of memories by id.
use deadpool_postgres::Transaction;
use mnemo_contract::{CoreError, ListPage, Memory, Namespace, Turn, TurnId};

use crate::store::read::rows;
use crate::store::rows::{self as decode, MEMORY_COLUMNS, TURN_COLUMNS};

type Result<T> = std::result::Result<T, CoreError>;

/// The turns of `ns` among `ids`, oldest first (by primary key).
pub(crate) async fn turns_by_ids(tx: &Transaction<'_>, ns: &Namespace, ids: &[TurnId]) -> Result<Vec<Turn>> {
    let raw: Vec<i64> = ids.iter().map(|t| t.0).collect();
    let sql = format!("SELECT {TURN_COLUMNS} FROM turns WHERE namespace = $1 AND id = ANY($2) ORDER BY id");
    rows(tx, &sql, &[&ns.as_str(), &raw]).await?.iter().map(decode::turn).collect()
}

/// The oldest turn of `ns` with this external id (index `turns_external_id`).
pub(crate) async fn turn_by_external_id(tx: &Transaction<'_>, ns: &Namespace, key: &str) -> Result<Option<Turn>> {
    let sql = format!("SELECT {TURN_COLUMNS} FROM turns WHERE namespace = $1 AND external_id = $2 ORDER BY id LIMIT 1");
    rows(tx, &sql, &[&ns.as_str(), &key]).await?.first().map(decode::turn).transpose()
}

/// One page of `ns`'s memories by id, each status read in id order from the
/// (namespace, status, id) index, at most `limit` of each, then merged.
pub(crate) async fn list_memories(tx: &Transaction<'_>, ns: &Namespace, page: &ListPage) -> Result<Vec<Memory>> {
    let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
    let after = page.after.map_or(i64::MIN, |a| a.0);
    let one = |status: &str| {
        format!(
            "(SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = $1 AND status = '{status}' AND id > $2 \
             ORDER BY id LIMIT $3)"
        )
    };
    let sql = if page.include_tombstoned {
        format!(
            "SELECT * FROM ({} UNION ALL {}) AS both_statuses ORDER BY id LIMIT $3",
            one("active"),
            one("tombstoned")
        )
    } else {
        one("active")
    };
    rows(tx, &sql, &[&ns.as_str(), &after, &limit]).await?.iter().map(decode::memory).collect()
}
