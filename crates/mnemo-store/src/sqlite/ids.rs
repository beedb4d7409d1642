//! Ids a tenant sees reveal nothing of other tenants.
//!
//! A store-wide counter would let tenant B read A's write volume off its own ids (B's ids jump
//! by however many memories A wrote in between). Instead every namespace numbers its memories
//! and turns on its own, inside an id range of its own:
//!
//! ```text
//! id = tag << 32 | n      n = 1, 2, 3 ... counted within the namespace
//! ```
//!
//! - `tag` (1 ..= 2^21 - 1) is drawn once per namespace from a keyed hash of its name with a
//!   secret key of this store (`store_meta` row `id_key`), and recorded (`ns_tag:<namespace>`,
//!   and `tag:<tag>` so that no two namespaces share one: a collision draws the next candidate).
//!   A tenant cannot compute another namespace's tag without the key, so it cannot aim for a
//!   collision; and which candidate a namespace got is not visible in its ids.
//! - `n` is one more than the namespace's highest id in its range (nothing is hard-deleted, so
//!   an id is never reused). Ids stay in insertion order within a namespace, which is all the
//!   engine relies on (recency tie-breaks, "oldest first" listings); every query is per
//!   namespace. The store-wide change sequence (`rev`, the index's watermark) stays global: it
//!   is internal, and the CLI does not print it to a tenant.
//! - ids stay below 2^53, so a JSON reader using doubles reads them exactly.
//!
//! Rows written before this scheme keep their small, store-wide ids; a namespace's first id in
//! its range is above all of them, so the order within the namespace still holds.
//!
//! Everything here runs inside the writer's transaction, so two processes never draw the same
//! id (the write lock of `BEGIN IMMEDIATE` serialises them).
use mnemo_contract::{CoreError, Namespace, StoreErrorKind};
use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use mnemo_contract::ids::LOCAL_MASK;

use crate::error::DbResult;

type Result<T> = std::result::Result<T, CoreError>;

/// Bits of the per-namespace counter.
const LOCAL_BITS: u32 = 32;
/// Tags are 1 .. TAG_LIMIT (21 bits), so ids are below 2^53.
const TAG_LIMIT: u64 = 1 << 21;
/// Candidates tried before giving up (only reached with ~2 million namespaces).
const ATTEMPTS: u32 = 64;

/// Create this store's id key if it has none (a store from before this scheme, or a new one).
pub(crate) fn ensure_key(conn: &Connection) -> std::result::Result<(), rusqlite::Error> {
    conn.execute("INSERT OR IGNORE INTO store_meta (key, value) VALUES ('id_key', lower(hex(randomblob(16))))", [])
        .map(|_| ())
}

/// A value of `store_meta` (None: no row for `key`).
pub(crate) fn meta(conn: &Connection, key: &str) -> Result<Option<String>> {
    conn.prepare_cached("SELECT value FROM store_meta WHERE key = ?1")
        .db()?
        .query_row([key], |r| r.get(0))
        .optional()
        .db()
}

/// Candidate `attempt` for the tag of `ns` under `key`.
fn candidate(key: &str, ns: &Namespace, attempt: u32) -> i64 {
    let mut h = Sha256::new();
    h.update(key.as_bytes());
    h.update([0u8]);
    h.update(ns.as_str().as_bytes());
    h.update([0u8]);
    h.update(attempt.to_le_bytes());
    let d = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&d[..8]);
    // 1 ..= TAG_LIMIT - 1; fits an i64 by construction.
    (1 + u64::from_le_bytes(first) % (TAG_LIMIT - 1)) as i64
}

/// The tag of `ns`, drawn and recorded at its first write.
fn tag(conn: &Connection, ns: &Namespace) -> Result<i64> {
    let own = format!("ns_tag:{}", ns.as_str());
    if let Some(t) = meta(conn, &own)? {
        return t.parse::<i64>().map_err(|e| {
            CoreError::store_message(StoreErrorKind::Damaged, format!("store_meta {own:?} is not a number: {e}"))
        });
    }
    ensure_key(conn).db()?;
    let key = meta(conn, "id_key")?
        .ok_or_else(|| CoreError::store_message(StoreErrorKind::Damaged, "store_meta has no id_key row"))?;
    for attempt in 0..ATTEMPTS {
        let t = candidate(&key, ns, attempt);
        let claimed = conn
            .execute(
                "INSERT OR IGNORE INTO store_meta (key, value) VALUES (?1, ?2)",
                params![format!("tag:{t}"), ns.as_str()],
            )
            .db()?;
        if claimed == 1 {
            conn.execute("INSERT INTO store_meta (key, value) VALUES (?1, ?2)", params![own, t.to_string()]).db()?;
            keep_above_legacy_ids(conn, ns)?;
            return Ok(t);
        }
    }
    Err(CoreError::store_message(
        StoreErrorKind::Other,
        format!(
            "no free id range for namespace {ns} after {ATTEMPTS} candidates (the store holds too many namespaces)"
        ),
    ))
}

/// Which table an id is for.
#[derive(Clone, Copy)]
pub(crate) enum Table {
    /// `memories.id`.
    Memories,
    /// `turns.id`.
    Turns,
}

impl Table {
    const BOTH: [Table; 2] = [Table::Memories, Table::Turns];

    fn name(self) -> &'static str {
        match self {
            Table::Memories => "memories",
            Table::Turns => "turns",
        }
    }

    /// The `store_meta` key of `ns`'s floor: local numbers of this table in `ns` are handed out
    /// above it (kept by a restore, and above a namespace's ids from before this scheme).
    fn floor_key(self, ns: &str) -> String {
        format!("id_floor:{}:{ns}", self.name())
    }
}

/// The floor of `table` in `ns` (0: none).
fn floor(conn: &Connection, ns: &Namespace, table: Table) -> Result<i64> {
    let key = table.floor_key(ns.as_str());
    match meta(conn, &key)? {
        None => Ok(0),
        Some(v) => v.parse().map_err(|e| {
            CoreError::store_message(StoreErrorKind::Damaged, format!("store_meta {key:?} is not a number: {e}"))
        }),
    }
}

/// Raise the floor of `table` in `ns` to `local` (never lower it).
fn raise_floor(conn: &Connection, ns: &str, table: Table, local: i64) -> std::result::Result<(), rusqlite::Error> {
    conn.execute(
        "INSERT INTO store_meta (key, value) VALUES (?1, ?2) \
         ON CONFLICT(key) DO UPDATE SET value = MAX(CAST(value AS INTEGER), CAST(excluded.value AS INTEGER))",
        params![table.floor_key(ns), local.to_string()],
    )
    .map(|_| ())
}

/// A namespace with rows from before this scheme (small store-wide ids, their own local
/// number) numbers its new rows above them, so that no two of its rows share a short id.
/// Runs once, when the namespace's range is drawn.
fn keep_above_legacy_ids(conn: &Connection, ns: &Namespace) -> Result<()> {
    for table in Table::BOTH {
        let sql = format!("SELECT MAX(id) FROM {} WHERE id <= ?1 AND namespace = ?2", table.name());
        let legacy: Option<i64> = conn.query_row(&sql, params![LOCAL_MASK, ns.as_str()], |r| r.get(0)).db()?;
        if let Some(high) = legacy {
            raise_floor(conn, ns.as_str(), table, high).db()?;
        }
    }
    Ok(())
}

/// Before a restore replaces the live store: every namespace's highest local number of the
/// live store (and its floors) becomes a floor in the store coming in, so that no short id the
/// live store handed out is handed out again for other content.
pub(crate) fn carry_high_water(live: &Connection, incoming: &Connection) -> Result<()> {
    for table in Table::BOTH {
        let sql = format!("SELECT namespace, MAX(id & ?1) FROM {} GROUP BY namespace", table.name());
        let mut stmt = live.prepare(&sql).db()?;
        let highs = stmt
            .query_map([LOCAL_MASK], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .db()?
            .collect::<std::result::Result<Vec<_>, _>>()
            .db()?;
        for (ns, high) in highs {
            raise_floor(incoming, &ns, table, high).db()?;
        }
        let prefix = format!("id_floor:{}:", table.name());
        let mut stmt = live.prepare("SELECT key, value FROM store_meta WHERE key >= ?1 AND key < ?2").db()?;
        let floors = stmt
            .query_map(params![prefix, format!("id_floor:{};", table.name())], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .db()?
            .collect::<std::result::Result<Vec<_>, _>>()
            .db()?;
        for (key, value) in floors {
            if let (Some(ns), Ok(high)) = (key.strip_prefix(&prefix), value.parse::<i64>()) {
                raise_floor(incoming, ns, table, high).db()?;
            }
        }
    }
    Ok(())
}

/// The id of `table` in `ns` whose local number is `local`: in the namespace's range, or a
/// row from before this scheme whose id is that number.
pub(crate) fn id_of_local(conn: &Connection, ns: &Namespace, table: Table, local: u32) -> Result<Option<i64>> {
    let ranged = match meta(conn, &format!("ns_tag:{}", ns.as_str()))? {
        Some(t) => t.parse::<i64>().map(|t| t << LOCAL_BITS | i64::from(local)).unwrap_or(0),
        None => 0,
    };
    let sql = format!("SELECT MAX(id) FROM {} WHERE id IN (?1, ?2) AND namespace = ?3", table.name());
    conn.prepare_cached(&sql).db()?.query_row(params![ranged, i64::from(local), ns.as_str()], |r| r.get(0)).db()
}

/// The next id of `table` in `ns`: one above the namespace's highest in its range.
pub(crate) fn next(conn: &Connection, ns: &Namespace, table: Table) -> Result<i64> {
    NextIds::of(conn, ns, table)?.take(ns)
}

/// The ids of `table` in one namespace handed out one after another inside one transaction: the
/// namespace's range and its highest id are read once, then each id is one above the last
/// (nothing else writes while the transaction holds the write lock).
pub(crate) struct NextIds {
    next: i64,
    high: i64,
}

impl NextIds {
    /// Start at one above the namespace's highest id in its range.
    pub(crate) fn of(conn: &Connection, ns: &Namespace, table: Table) -> Result<Self> {
        let t = tag(conn, ns)?;
        let low = t << LOCAL_BITS;
        let high = (t + 1) << LOCAL_BITS;
        let sql = match table {
            Table::Memories => "SELECT MAX(id) FROM memories WHERE id > ?1 AND id < ?2",
            Table::Turns => "SELECT MAX(id) FROM turns WHERE id > ?1 AND id < ?2",
        };
        let max: Option<i64> = conn.prepare_cached(sql).db()?.query_row([low, high], |r| r.get(0)).db()?;
        let floor = low + floor(conn, ns, table)?;
        Ok(NextIds { next: max.unwrap_or(low).max(floor) + 1, high })
    }

    /// The next id (`ns` names the namespace in the error when its range is used up).
    pub(crate) fn take(&mut self, ns: &Namespace) -> Result<i64> {
        if self.next >= self.high {
            return Err(CoreError::store_message(
                StoreErrorKind::Other,
                format!("namespace {ns} has used up its id range ({} ids)", 1u64 << LOCAL_BITS),
            ));
        }
        self.next += 1;
        Ok(self.next - 1)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn candidates_are_in_range_and_keyed() {
        let ns = Namespace::new("b").unwrap();
        for a in 0..100 {
            let t = candidate("k", &ns, a);
            assert!((1..TAG_LIMIT as i64).contains(&t));
            assert!((t + 1) << LOCAL_BITS <= 1i64 << 53, "ids stay below 2^53");
        }
        assert_ne!(candidate("k1", &ns, 0), candidate("k2", &ns, 0), "the key changes the tag");
    }
}
