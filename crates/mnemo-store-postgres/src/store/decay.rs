//! Decay due times (see `mnemo_contract::decay_due`): every active memory's `decay_due` holds the
//! instant its salience may fall below the threshold under its namespace's rule in
//! `decay_rules` (NULL: never). Writes compute it in their transaction, under the namespace's
//! advisory lock, from the rule recorded (the default while none is); a sweep with another
//! rule, or in a namespace with none recorded (rows written before schema 4), recomputes the
//! namespace's rows first, under the same lock, and records the rule.
use deadpool_postgres::Transaction;
use mnemo_contract::decay_due::{DecayRule, DueMemory, DuePage};
use mnemo_contract::{CoreError, Namespace, StoreErrorKind, Timestamp};

use crate::error::DbContext;
use crate::store::read;
use crate::store::rows::{self, MEMORY_COLUMNS};

type Result<T> = std::result::Result<T, CoreError>;

/// The rule recorded for `ns`, if any.
pub(crate) async fn stored_rule(tx: &Transaction<'_>, ns: &Namespace) -> Result<Option<DecayRule>> {
    let found = read::rows(tx, "SELECT rule FROM decay_rules WHERE namespace = $1", &[&ns.as_str()]).await?;
    let Some(row) = found.first() else { return Ok(None) };
    let text: String = row.try_get(0).db("read the decay rule")?;
    serde_json::from_str(&text).map(Some).map_err(|e| {
        CoreError::store_message(
            StoreErrorKind::Damaged,
            format!("namespace {ns}: the recorded decay rule is not readable: {e}"),
        )
    })
}

/// The rule writes to `ns` use: the recorded one, else the default.
pub(crate) async fn rule_in_force(tx: &Transaction<'_>, ns: &Namespace) -> Result<DecayRule> {
    Ok(stored_rule(tx, ns).await?.unwrap_or_default())
}

/// Recompute every active memory of `ns` under `rule` and record it (the caller holds the
/// namespace's lock). One pass over the namespace: only when its rule changes.
async fn recompute(tx: &Transaction<'_>, ns: &Namespace, rule: &DecayRule) -> Result<()> {
    let active = read::active(&read::On::Tx(tx), ns).await?;
    let ids: Vec<i64> = active.iter().map(|m| m.id.0).collect();
    let dues: Vec<Option<i64>> = active.iter().map(|m| rule.due_of(m).map(|t| t.0)).collect();
    read::rows(
        tx,
        "UPDATE memories m SET decay_due = u.due FROM unnest($1::bigint[], $2::bigint[]) AS u(id, due) \
         WHERE m.id = u.id AND m.namespace = $3 RETURNING m.id",
        &[&ids, &dues, &ns.as_str()],
    )
    .await?;
    let text = serde_json::to_string(rule)
        .map_err(|e| CoreError::store_message(StoreErrorKind::Other, format!("cannot encode the rule: {e}")))?;
    read::rows(
        tx,
        "INSERT INTO decay_rules (namespace, rule) VALUES ($1, $2) \
         ON CONFLICT (namespace) DO UPDATE SET rule = excluded.rule RETURNING namespace",
        &[&ns.as_str(), &text],
    )
    .await?;
    Ok(())
}

/// `Store::due_for_decay` (the caller holds the namespace's lock in `tx`).
pub(crate) async fn due_for_decay(
    tx: &Transaction<'_>,
    ns: &Namespace,
    rule: &DecayRule,
    page: &DuePage,
) -> Result<Vec<DueMemory>> {
    if stored_rule(tx, ns).await?.as_ref() != Some(rule) {
        recompute(tx, ns, rule).await?;
    }
    let limit = i64::try_from(page.limit).unwrap_or(i64::MAX);
    // Ids are positive, so (i64::MIN, 0) is below every key.
    let (after_due, after_id) = page.after.map_or((i64::MIN, 0), |(d, id)| (d.0, id.0));
    let found = read::rows(tx, &due_sql(), &[&ns.as_str(), &page.now.0, &after_due, &after_id, &limit]).await?;
    let due_column = MEMORY_COLUMNS.split(',').count();
    found
        .iter()
        .map(|row| {
            let due: i64 = row.try_get(due_column).db("read decay_due")?;
            Ok(DueMemory { due: Timestamp(due), memory: rows::memory(row)? })
        })
        .collect()
}

/// The range query: $1 namespace, $2 now, ($3, $4) the key after which, $5 the limit.
pub(crate) fn due_sql() -> String {
    format!(
        "SELECT {MEMORY_COLUMNS}, decay_due FROM memories \
         WHERE namespace = $1 AND status = 'active' AND decay_due IS NOT NULL AND decay_due <= $2 \
         AND (decay_due, id) > ($3, $4) ORDER BY decay_due, id LIMIT $5"
    )
}
