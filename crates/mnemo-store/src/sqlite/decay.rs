//! Decay due times (see `mnemo_contract::decay_due`): every active memory's `decay_due` column
//! holds the instant its salience may fall below the threshold under the rule recorded in
//! `store_meta` ('decay_rule'); NULL means never. Inserts, reinforcements and confirmations
//! compute it in their own transaction from that rule; a sweep with another rule (the engine's
//! decay config changed) recomputes every row first, in one transaction, and records the new
//! rule. A store migrated from schema 2 has every row computed under the default rule.
use mnemo_contract::decay_due::{DecayInputs, DecayRule, DueMemory, DuePage};
use mnemo_contract::{CoreError, Namespace, Timestamp};
use rusqlite::types::Type;
use rusqlite::{params, Connection, OptionalExtension};

use crate::error::DbResult;
use crate::sqlite::rows::{memory_from_row, parse_kind, MEMORY_COLUMNS};

const RULE_KEY: &str = "decay_rule";

/// The rule the stored due times were computed with (None: not recorded yet).
pub(crate) fn stored_rule(conn: &Connection) -> rusqlite::Result<Option<DecayRule>> {
    let text: Option<String> = conn
        .prepare_cached("SELECT value FROM store_meta WHERE key = ?1")?
        .query_row([RULE_KEY], |r| r.get(0))
        .optional()?;
    text.map(|t| {
        serde_json::from_str(&t).map_err(|e| rusqlite::Error::FromSqlConversionFailure(0, Type::Text, Box::new(e)))
    })
    .transpose()
}

/// The rule new writes use: the recorded one, else the default.
pub(crate) fn rule_in_force(conn: &Connection) -> rusqlite::Result<DecayRule> {
    Ok(stored_rule(conn)?.unwrap_or_default())
}

/// Recompute every active memory's due time under `rule` and record it (call inside a write
/// transaction). Costs one pass over the active memories: only at migration and when the
/// rule changes.
pub(crate) fn recompute_all(conn: &Connection, rule: &DecayRule) -> rusqlite::Result<usize> {
    let mut updates = Vec::new();
    {
        let mut stmt = conn.prepare(
            "SELECT id, kind, pinned, importance, reinforcements, json_array_length(sources), last_confirmed_at \
             FROM memories WHERE status = 'active'",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let kind: String = r.get(1)?;
            let kind = parse_kind(&kind).ok_or_else(|| {
                rusqlite::Error::FromSqlConversionFailure(1, Type::Text, format!("unknown memory kind {kind:?}").into())
            })?;
            let inputs = DecayInputs {
                kind,
                pinned: r.get(2)?,
                importance: r.get::<_, f64>(3)? as f32,
                reinforcements: r.get(4)?,
                sources: r.get::<_, i64>(5)?.max(0) as usize,
                last_confirmed_at: Timestamp(r.get(6)?),
            };
            updates.push((r.get::<_, i64>(0)?, rule.due(&inputs).map(|t| t.0)));
        }
    }
    let mut stmt = conn.prepare_cached("UPDATE memories SET decay_due = ?1 WHERE id = ?2")?;
    for (id, due) in &updates {
        stmt.execute(params![due, id])?;
    }
    let text = serde_json::to_string(rule).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
    conn.execute("INSERT OR REPLACE INTO store_meta (key, value) VALUES (?1, ?2)", params![RULE_KEY, text])?;
    Ok(updates.len())
}

/// Record the default rule and compute every row under it, unless a rule is recorded already
/// (run by the migrator, so rows written before due times existed decay too).
pub(crate) fn ensure_rule(conn: &Connection) -> rusqlite::Result<()> {
    if stored_rule(conn)?.is_none() {
        recompute_all(conn, &DecayRule::default())?;
    }
    Ok(())
}

/// The range query: ?1 namespace, ?2 now, (?3, ?4) the key after which, ?5 the limit.
pub(crate) fn due_sql() -> String {
    format!(
        "SELECT {MEMORY_COLUMNS}, decay_due FROM memories \
         WHERE namespace = ?1 AND status = 'active' AND decay_due IS NOT NULL AND decay_due <= ?2 \
         AND (decay_due, id) > (?3, ?4) ORDER BY decay_due, id LIMIT ?5"
    )
}

/// The page of due memories (the range query on `memories_decay_due`).
pub(crate) fn due_page(conn: &Connection, ns: &Namespace, page: &DuePage) -> Result<Vec<DueMemory>, CoreError> {
    let due_column = MEMORY_COLUMNS.split(',').count();
    let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
    // Ids are positive, so (i64::MIN, 0) is below every key.
    let (after_due, after_id) = page.after.map_or((i64::MIN, 0), |(d, id)| (d.0, id.0));
    let mut stmt = conn.prepare_cached(&due_sql()).db()?;
    let mut rows = stmt.query(params![ns.as_str(), page.now.0, after_due, after_id, limit]).db()?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().db()? {
        let due: i64 = row.get(due_column).db()?;
        out.push(DueMemory { due: Timestamp(due), memory: memory_from_row(row)? });
    }
    Ok(out)
}

/// `Store::due_for_decay` on the writer: recompute first when `rule` is not the recorded one.
pub(crate) fn due_for_decay(
    conn: &mut Connection,
    ns: &Namespace,
    rule: &DecayRule,
    page: &DuePage,
) -> Result<Vec<DueMemory>, CoreError> {
    if stored_rule(conn).db()?.as_ref() != Some(rule) {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).db()?;
        // Re-checked under the write lock: another process may have just done it.
        if stored_rule(&tx).db()?.as_ref() != Some(rule) {
            let n = recompute_all(&tx, rule).db()?;
            tracing::info!(memories = n, "decay rule changed: due times recomputed");
        }
        tx.commit().db()?;
    }
    due_page(conn, ns, page)
}
