//! Ids a tenant sees reveal nothing of other tenants (the same scheme as the SQLite store).
//!
//! A store-wide sequence would let tenant B read A's write volume off its own ids. Instead each
//! namespace numbers its memories and its turns on its own inside an id range of its own:
//! `id = tag << 32 | n`, with `n` = 1, 2, 3 ... within the namespace. The tag (1 ..= 2^21 - 1,
//! so ids stay below 2^53 for JSON readers) is drawn at random at the namespace's first write
//! and kept unique by the `namespace_ids` table, which also holds the two counters; the counter
//! row is locked by the UPDATE that advances it, so concurrent writers of a namespace never draw
//! the same id. Ids stay in insertion order within a namespace; rows from before this scheme
//! keep their small ids, all below the namespace's range.
use deadpool_postgres::Transaction;
use mnemo_contract::{CoreError, Namespace, StoreErrorKind};

use crate::error::DbContext;
use crate::store::read;

type Result<T> = std::result::Result<T, CoreError>;

/// Bits of the per-namespace counter.
const LOCAL_BITS: u32 = 32;
/// Random tags tried before giving up (only reached with ~2 million namespaces).
const ATTEMPTS: usize = 64;

/// Which counter.
#[derive(Clone, Copy)]
pub(crate) enum Table {
    /// `memories.id`.
    Memories,
    /// `turns.id`.
    Turns,
}

/// `n` fresh ids of `table` in `ns`, increasing. Runs in the namespace's scoped transaction.
pub(crate) async fn next(tx: &Transaction<'_>, ns: &Namespace, table: Table, n: i64) -> Result<Vec<i64>> {
    let advance = match table {
        Table::Memories => {
            "UPDATE namespace_ids SET memories = memories + $2 WHERE namespace = $1 RETURNING tag, memories"
        }
        Table::Turns => "UPDATE namespace_ids SET turns = turns + $2 WHERE namespace = $1 RETURNING tag, turns",
    };
    for _ in 0..ATTEMPTS {
        if let Some(row) = read::rows(tx, advance, &[&ns.as_str(), &n]).await?.first() {
            let tag: i64 = row.try_get(0).db("namespace tag")?;
            let last: i64 = row.try_get(1).db("namespace counter")?;
            if last >= 1i64 << LOCAL_BITS {
                return Err(CoreError::store_message(
                    StoreErrorKind::Other,
                    format!("namespace {ns} has used up its id range"),
                ));
            }
            return Ok((last - n + 1..=last).map(|k| (tag << LOCAL_BITS) | k).collect());
        }
        // First write of the namespace: claim a random tag (a tag another namespace holds
        // violates the UNIQUE constraint, the insert does nothing, and another is drawn).
        read::rows(
            tx,
            "INSERT INTO namespace_ids (namespace, tag) VALUES ($1, 1 + floor(random() * 2097151)::bigint) \
             ON CONFLICT DO NOTHING RETURNING tag",
            &[&ns.as_str()],
        )
        .await?;
    }
    Err(CoreError::store_message(
        StoreErrorKind::Other,
        format!("no free id range for namespace {ns} after {ATTEMPTS} random draws"),
    ))
}

/// After an import of `ns` with ids of this scheme (above 2^32), record its tag and counters
/// so new ids continue after the imported ones. Legacy ids (below 2^32) need nothing: the
/// range drawn at the next write lies above them.
pub(crate) async fn adopt(
    tx: &Transaction<'_>,
    ns: &Namespace,
    max_memory: Option<i64>,
    max_turn: Option<i64>,
) -> Result<()> {
    let ranged = |id: Option<i64>| id.filter(|i| *i >> LOCAL_BITS > 0);
    let (m, t) = (ranged(max_memory), ranged(max_turn));
    let Some(tag) = m.or(t).map(|i| i >> LOCAL_BITS) else { return Ok(()) };
    let local =
        |id: Option<i64>| id.filter(|i| i >> LOCAL_BITS == tag).map(|i| i & ((1i64 << LOCAL_BITS) - 1)).unwrap_or(0);
    read::rows(
        tx,
        "INSERT INTO namespace_ids (namespace, tag, memories, turns) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (namespace) DO UPDATE SET memories = GREATEST(namespace_ids.memories, EXCLUDED.memories), \
         turns = GREATEST(namespace_ids.turns, EXCLUDED.turns) RETURNING tag",
        &[&ns.as_str(), &tag, &local(m), &local(t)],
    )
    .await?;
    Ok(())
}

/// The id of `table` in `ns` whose local number is `local`: in the namespace's range, or a
/// row from before this scheme whose id is that number.
pub(crate) async fn id_of_local(tx: &Transaction<'_>, ns: &Namespace, table: Table, local: u32) -> Result<Option<i64>> {
    let name = match table {
        Table::Memories => "memories",
        Table::Turns => "turns",
    };
    let sql = format!(
        "SELECT MAX(id) FROM {name} WHERE namespace = $1 AND id IN \
         (((SELECT tag FROM namespace_ids WHERE namespace = $1) << {LOCAL_BITS}) | $2, $2)"
    );
    let row = read::rows(tx, &sql, &[&ns.as_str(), &i64::from(local)]).await?;
    match row.first() {
        Some(r) => r.try_get::<_, Option<i64>>(0).db("id of a local number"),
        None => Ok(None),
    }
}
