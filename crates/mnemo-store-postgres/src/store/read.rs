//! Queries; every one names its namespace (the row-level policy is the second line of
//! defence). They run inside the scoped transaction they are given ([`On::Tx`]) or, alone,
//! as one pipelined read transaction of their own ([`On::Db`], see [`Db::pipelined`]: one round
//! trip instead of four for `BEGIN`, the scope, the statement and `COMMIT`).
use std::collections::{BTreeMap, HashMap, HashSet};

use deadpool_postgres::Transaction;
use mnemo_contract::text::norm_name;
use mnemo_contract::{CoreError, Memory, MemoryEvent, MemoryId, Namespace, StoreErrorKind, Timestamp, Turn};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

use crate::db::{Db, Scope};
use crate::error::DbContext;
use crate::store::rows::{self, EVENT_COLUMNS, MEMORY_COLUMNS, TURN_COLUMNS};

/// Rows of a cached statement.
pub(crate) async fn rows(
    tx: &Transaction<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, CoreError> {
    let stmt = tx.prepare_cached(sql).await.db("prepare")?;
    tx.query(&stmt, params).await.db(sql.split_whitespace().take(6).collect::<Vec<_>>().join(" ").as_str())
}

/// Where a read runs.
pub(crate) enum On<'a, 't> {
    /// Inside the caller's scoped transaction.
    Tx(&'a Transaction<'t>),
    /// In a pipelined read transaction of its own.
    Db(&'a Db),
}

/// Rows of a cached statement run `on` (a transaction of its own is scoped to `scope`).
async fn fetch(
    on: &On<'_, '_>,
    scope: Scope<'_>,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, CoreError> {
    fetch_with(on, scope, "", sql, params).await
}

/// As [`fetch`], with `settings` (`SET LOCAL`s) for a transaction of its own.
async fn fetch_with(
    on: &On<'_, '_>,
    scope: Scope<'_>,
    settings: &str,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Row>, CoreError> {
    match on {
        On::Tx(tx) => rows(tx, sql, params).await,
        On::Db(db) => db.pipelined(scope, settings, sql, params).await,
    }
}

async fn memories_where(
    on: &On<'_, '_>,
    ns: Option<&Namespace>,
    clause: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Memory>, CoreError> {
    let scope = ns.map_or(Scope::All, Scope::Namespace);
    fetch(on, scope, &format!("SELECT {MEMORY_COLUMNS} FROM memories WHERE {clause}"), params)
        .await?
        .iter()
        .map(rows::memory)
        .collect()
}

/// The memory `id` of `ns` (any status), if any.
pub(crate) async fn memory_in(tx: &Transaction<'_>, ns: &Namespace, id: MemoryId) -> Result<Option<Memory>, CoreError> {
    Ok(memories_where(&On::Tx(tx), Some(ns), "id = $1 AND namespace = $2", &[&id.0, &ns.as_str()]).await?.pop())
}

/// Memories by id in `ns`, in request order, each once.
pub(crate) async fn get_many(on: &On<'_, '_>, ns: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>, CoreError> {
    let raw: Vec<i64> = ids.iter().map(|i| i.0).collect();
    let mut found: HashMap<MemoryId, Memory> =
        memories_where(on, Some(ns), "id = ANY($1) AND namespace = $2", &[&raw, &ns.as_str()])
            .await?
            .into_iter()
            .map(|m| (m.id, m))
            .collect();
    Ok(ids.iter().filter_map(|id| found.remove(id)).collect())
}

/// Active memories of `ns` mentioning any of `entities` (normalised here too), by id.
pub(crate) async fn active_by_entities(
    on: &On<'_, '_>,
    ns: &Namespace,
    entities: &[String],
) -> Result<Vec<Memory>, CoreError> {
    let names: Vec<String> =
        entities.iter().map(|e| norm_name(e)).filter(|e| !e.is_empty()).collect::<HashSet<_>>().into_iter().collect();
    if names.is_empty() {
        return Ok(vec![]);
    }
    let found: BTreeMap<MemoryId, Memory> = memories_where(
        on,
        Some(ns),
        "namespace = $1 AND status = 'active' AND id IN (SELECT e.id FROM memory_entities e \
         WHERE e.namespace = $1 AND e.entity = ANY($2::text[])) ORDER BY id",
        &[&ns.as_str(), &names],
    )
    .await?
    .into_iter()
    .map(|m| (m.id, m))
    .collect();
    Ok(found.into_values().collect())
}

/// Active memories of `ns`, by id.
pub(crate) async fn active(on: &On<'_, '_>, ns: &Namespace) -> Result<Vec<Memory>, CoreError> {
    memories_where(on, Some(ns), "namespace = $1 AND status = 'active' ORDER BY id", &[&ns.as_str()]).await
}

/// Active pinned memories of `ns`, by id.
pub(crate) async fn pinned(on: &On<'_, '_>, ns: &Namespace) -> Result<Vec<Memory>, CoreError> {
    memories_where(on, Some(ns), "namespace = $1 AND status = 'active' AND pinned ORDER BY id", &[&ns.as_str()]).await
}

/// Every memory of `ns`, by id.
pub(crate) async fn all_memories(on: &On<'_, '_>, ns: &Namespace) -> Result<Vec<Memory>, CoreError> {
    memories_where(on, Some(ns), "namespace = $1 ORDER BY id", &[&ns.as_str()]).await
}

/// Every memory of `ns` whose claim is on `entity | attribute` (normalised), every status, by id.
pub(crate) async fn claim_memories(
    on: &On<'_, '_>,
    ns: &Namespace,
    entity: &str,
    attribute: &str,
) -> Result<Vec<Memory>, CoreError> {
    let (e, a) = (mnemo_contract::text::norm_name(entity), mnemo_contract::text::norm_name(attribute));
    memories_where(
        on,
        Some(ns),
        "namespace = $1 AND claim_entity_norm = $2 AND claim_attribute_norm = $3 ORDER BY id",
        &[&ns.as_str(), &e.as_str(), &a.as_str()],
    )
    .await
}

/// Memories of any namespace with a rev above `rev`, by rev, at most `limit` (scope `*`).
pub(crate) async fn changed_since(on: &On<'_, '_>, rev: u64, limit: usize) -> Result<Vec<Memory>, CoreError> {
    let Ok(rev) = i64::try_from(rev) else { return Ok(Vec::new()) };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    memories_where(on, None, "rev > $1 ORDER BY rev LIMIT $2", &[&rev, &limit]).await
}

/// The highest rev (0 when empty; scope `*`).
pub(crate) async fn max_rev(on: &On<'_, '_>) -> Result<u64, CoreError> {
    // Every recall asks (the index's catch-up check). The row-level policy is a filter the
    // planner cannot estimate (it holds for every row under scope `*`), so on a small table it
    // chose a sequential scan (10 ms at 10k memories, measured) over reading the newest entry
    // of the `rev` index: the index is the only sensible plan here.
    let r = fetch_with(
        on,
        Scope::All,
        " SET LOCAL enable_seqscan = off;",
        "SELECT COALESCE(MAX(rev), 0)::bigint FROM memories",
        &[],
    )
    .await?;
    let v: i64 = match r.first() {
        Some(row) => row.try_get(0).db("max rev")?,
        None => 0,
    };
    u64::try_from(v)
        .map_err(|_| CoreError::store_message(StoreErrorKind::Damaged, format!("negative rev {v} in memories")))
}

/// The events of one memory of `ns`, oldest first.
pub(crate) async fn history(on: &On<'_, '_>, ns: &Namespace, id: MemoryId) -> Result<Vec<MemoryEvent>, CoreError> {
    let sql = format!("SELECT {EVENT_COLUMNS} FROM memory_events WHERE memory_id = $1 AND namespace = $2 ORDER BY seq");
    fetch(on, Scope::Namespace(ns), &sql, &[&id.0, &ns.as_str()]).await?.iter().map(rows::event).collect()
}

/// The turns of `ns`, oldest first.
pub(crate) async fn turns(on: &On<'_, '_>, ns: &Namespace) -> Result<Vec<Turn>, CoreError> {
    let sql = format!("SELECT {TURN_COLUMNS} FROM turns WHERE namespace = $1 ORDER BY id");
    fetch(on, Scope::Namespace(ns), &sql, &[&ns.as_str()]).await?.iter().map(rows::turn).collect()
}

/// The time of the namespace's newest turn.
pub(crate) async fn latest_turn_at(on: &On<'_, '_>, ns: &Namespace) -> Result<Option<Timestamp>, CoreError> {
    let r = fetch(
        on,
        Scope::Namespace(ns),
        "SELECT at FROM turns WHERE namespace = $1 ORDER BY id DESC LIMIT 1",
        &[&ns.as_str()],
    )
    .await?;
    match r.first() {
        Some(row) => Ok(Some(Timestamp(row.try_get(0).db("latest turn")?))),
        None => Ok(None),
    }
}

/// The ids among `turns` that are turns of `ns`.
pub(crate) async fn turns_in(tx: &Transaction<'_>, ns: &Namespace, turns: &[i64]) -> Result<HashSet<i64>, CoreError> {
    let r = rows(tx, "SELECT id FROM turns WHERE namespace = $1 AND id = ANY($2)", &[&ns.as_str(), &turns]).await?;
    r.iter().map(|row| row.try_get::<_, i64>(0).db("turn ids")).collect()
}

/// Every namespace holding a turn or a memory, sorted (scope `*`).
pub(crate) async fn namespaces(on: &On<'_, '_>) -> Result<Vec<Namespace>, CoreError> {
    let r = fetch(on, Scope::All, "SELECT namespace FROM (SELECT namespace FROM turns UNION SELECT namespace FROM memories) n ORDER BY namespace COLLATE \"C\"", &[]).await?;
    r.iter()
        .map(|row| {
            let s: String = row.try_get(0).db("namespaces")?;
            Namespace::new(&s).map_err(|e| {
                CoreError::store_message(StoreErrorKind::Damaged, format!("corrupt namespace in the store: {e}"))
            })
        })
        .collect()
}
