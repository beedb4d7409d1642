//! The tamper-evident history (see `mnemo_contract::chain` and docs/history-chain.md): every
//! turn and memory event of a namespace is an entry of `history_chain` (schema version 5),
//! appended in the write's own transaction; `chain_heads` holds each namespace's last entry.
//! The store has one writer (the write lock is taken by `BEGIN IMMEDIATE`), so a head read
//! inside a write transaction is advanced by that transaction alone.
use std::collections::{HashMap, HashSet};

use mnemo_contract::chain::{
    self, Appender, ChainHead, ChainRecord, ChainReport, Content, CreatedMemory, EntryKind, ErasedMark, EventContent,
    Hash, TurnContent,
};
use mnemo_contract::erase::{ErasedRow, ErasureRecord};
use mnemo_contract::{CoreError, MemoryId, Timestamp, TurnId};
use rusqlite::types::ValueRef;
use rusqlite::{params, Connection, Row};

use crate::error::DbResult;

type Result<T> = std::result::Result<T, CoreError>;

/// The chains a write transaction appends to, by namespace; heads are read at first use and
/// written back by `finish`.
#[derive(Default)]
pub(crate) struct Chains {
    heads: HashMap<String, Appender>,
}

impl Chains {
    /// Append `content` to the chain of `namespace`.
    pub(crate) fn append(&mut self, conn: &Connection, namespace: &str, content: &Content) -> Result<()> {
        if !self.heads.contains_key(namespace) {
            let head = head(conn, namespace)?.map(|h| (h.seq, h.hash));
            self.heads.insert(namespace.to_string(), Appender::after(namespace, head));
        }
        let Some(a) = self.heads.get_mut(namespace) else { return Ok(()) };
        let e = a.append(content);
        conn.prepare_cached(
            "INSERT INTO history_chain (namespace, seq, kind, ref_id, content_hash, prev_hash, entry_hash) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )
        .db()?
        .execute(params![
            namespace,
            e.seq,
            e.entry.as_str(),
            e.id,
            &e.content_hash[..],
            &e.prev_hash[..],
            &e.entry_hash[..]
        ])
        .db()?;
        Ok(())
    }

    /// Record the new heads (in the same transaction).
    pub(crate) fn finish(self, conn: &Connection) -> Result<()> {
        let mut stmt = conn
            .prepare_cached(
                "INSERT INTO chain_heads (namespace, seq, hash) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (namespace) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
            )
            .db()?;
        for (ns, a) in self.heads {
            stmt.execute(params![ns, a.seq, &a.hash[..]]).db()?;
        }
        Ok(())
    }
}

/// A hash column (a wrong length reads as 32 bytes that match nothing written).
fn hash_col(row: &Row<'_>, i: usize) -> rusqlite::Result<Hash> {
    Ok(match row.get_ref(i)? {
        ValueRef::Blob(b) => chain::hash_from(b).unwrap_or([0xff; 32]),
        _ => [0xff; 32],
    })
}

/// A text column, read whatever SQLite holds there (a changed value changes the hash; a value
/// of another type is read as text, so it is caught the same way rather than failing the check).
fn text(row: &Row<'_>, i: usize) -> rusqlite::Result<Option<String>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Null => None,
        ValueRef::Text(b) | ValueRef::Blob(b) => Some(String::from_utf8_lossy(b).into_owned()),
        ValueRef::Integer(n) => Some(n.to_string()),
        ValueRef::Real(f) => Some(f.to_string()),
    })
}

/// An integer column (any other type reads as a value no write produced).
fn int(row: &Row<'_>, i: usize) -> rusqlite::Result<Option<i64>> {
    Ok(match row.get_ref(i)? {
        ValueRef::Null => None,
        ValueRef::Integer(n) => Some(n),
        ValueRef::Real(f) => Some(if f.fract() == 0.0 { f as i64 } else { i64::MIN }),
        ValueRef::Text(_) | ValueRef::Blob(_) => Some(i64::MIN),
    })
}

fn real(row: &Row<'_>, i: usize) -> rusqlite::Result<f32> {
    Ok(match row.get_ref(i)? {
        ValueRef::Real(f) => f as f32,
        ValueRef::Integer(n) => n as f32,
        _ => f32::NAN,
    })
}

/// The turn columns, in order.
pub(crate) const TURN_COLS: &str = "t.id, t.namespace, t.source, t.at, t.text, t.external_id";
/// The event columns (with its memory's), in order.
pub(crate) const EVENT_COLS: &str =
    "e.seq, e.memory_id, e.at, e.event, e.turn_id, e.detail, m.id, m.namespace, m.kind, \
                          m.content, m.claim_entity, m.claim_attribute, m.claim_value, m.entities, m.importance, \
                          m.created_at, m.pinned, m.valid_from, m.valid_to";

/// The turn in `TURN_COLS` starting at column `at` (None: no row).
pub(crate) fn turn_at(row: &Row<'_>, at: usize) -> rusqlite::Result<Option<TurnContent>> {
    let Some(id) = int(row, at)? else { return Ok(None) };
    Ok(Some(TurnContent {
        id,
        namespace: text(row, at + 1)?.unwrap_or_default(),
        source: text(row, at + 2)?.unwrap_or_default(),
        at: int(row, at + 3)?.unwrap_or(i64::MIN),
        text: text(row, at + 4)?.unwrap_or_default(),
        external_id: text(row, at + 5)?,
        erased: None,
    }))
}

/// The event in `EVENT_COLS` starting at column `at` (None: no row).
pub(crate) fn event_at(row: &Row<'_>, at: usize) -> rusqlite::Result<Option<EventContent>> {
    let Some(seq) = int(row, at)? else { return Ok(None) };
    let event = text(row, at + 3)?.unwrap_or_default();
    let memory_found = int(row, at + 6)?.is_some();
    let memory = if memory_found && event == "created" {
        Some(CreatedMemory {
            kind: text(row, at + 8)?.unwrap_or_default(),
            content: text(row, at + 9)?.unwrap_or_default(),
            claim_entity: text(row, at + 10)?,
            claim_attribute: text(row, at + 11)?,
            claim_value: text(row, at + 12)?,
            entities: text(row, at + 13)?.unwrap_or_default(),
            importance: real(row, at + 14)?,
            created_at: int(row, at + 15)?.unwrap_or(i64::MIN),
            pinned: int(row, at + 16)?.unwrap_or(0) != 0,
            valid_from: int(row, at + 17)?,
            valid_to: int(row, at + 18)?,
        })
    } else {
        None
    };
    Ok(Some(EventContent {
        namespace: if memory_found { text(row, at + 7)? } else { None },
        seq,
        memory_id: int(row, at + 1)?.unwrap_or(i64::MIN),
        at: int(row, at + 2)?.unwrap_or(i64::MIN),
        event,
        turn_id: int(row, at + 4)?,
        detail: text(row, at + 5)?.unwrap_or_default(),
        memory,
        erased: None,
    }))
}

/// The recorded head of `namespace`.
pub(crate) fn head(conn: &Connection, namespace: &str) -> Result<Option<ChainHead>> {
    let mut stmt = conn.prepare_cached("SELECT seq, hash FROM chain_heads WHERE namespace = ?1").db()?;
    let mut rows = stmt.query([namespace]).db()?;
    match rows.next().db()? {
        Some(r) => {
            Ok(Some(ChainHead { namespace: namespace.to_string(), seq: r.get(0).db()?, hash: hash_col(r, 1).db()? }))
        }
        None => Ok(None),
    }
}

/// Every recorded head, by namespace.
pub(crate) fn heads(conn: &Connection) -> Result<Vec<ChainHead>> {
    let mut stmt = conn.prepare("SELECT namespace, seq, hash FROM chain_heads ORDER BY namespace").db()?;
    let mut rows = stmt.query([]).db()?;
    let mut out = Vec::new();
    while let Some(r) = rows.next().db()? {
        out.push(ChainHead { namespace: r.get(0).db()?, seq: r.get(1).db()?, hash: hash_col(r, 2).db()? });
    }
    Ok(out)
}

/// Every namespace that holds anything, chain entries included.
fn namespaces(conn: &Connection) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare(
            "SELECT namespace FROM chain_heads UNION SELECT namespace FROM history_chain \
             UNION SELECT namespace FROM turns UNION SELECT namespace FROM memories ORDER BY 1",
        )
        .db()?;
    let rows = stmt.query_map([], |r| text(r, 0)).db()?;
    let mut out = Vec::new();
    for r in rows {
        out.push(r.db()?.unwrap_or_default());
    }
    Ok(out)
}

/// The chain entries of a namespace joined with the rows they point at, in seq order; `more`
/// adds to the WHERE clause (`?1` is the namespace), `limit` ends the statement.
fn chain_select(more: &str, limit: &str) -> String {
    format!(
        "SELECT c.seq, c.kind, c.ref_id, c.content_hash, c.prev_hash, c.entry_hash, {TURN_COLS}, {EVENT_COLS}, \
         {MARK_COLS}, {ERASURE_COLS} \
         FROM history_chain c \
         LEFT JOIN turns t ON c.kind = 'turn' AND t.id = c.ref_id \
         LEFT JOIN memory_events e ON c.kind = 'event' AND e.seq = c.ref_id \
         LEFT JOIN memories m ON m.id = e.memory_id \
         LEFT JOIN erasures er ON c.kind = 'erasure' AND er.id = c.ref_id \
         WHERE c.namespace = ?1 {more} ORDER BY c.seq {limit}"
    )
}

/// What the erasures list for the row an entry points at (see `ErasedMark`): the last
/// erasure's id, the first's `before`, the last's `after` (NULLs: never erased).
const MARK_COLS: &str = "(SELECT MAX(x.erasure_id) FROM erased_rows x WHERE x.kind = c.kind AND x.ref_id = c.ref_id), \
     (SELECT x.before FROM erased_rows x WHERE x.kind = c.kind AND x.ref_id = c.ref_id ORDER BY x.erasure_id LIMIT 1), \
     (SELECT x.after FROM erased_rows x WHERE x.kind = c.kind AND x.ref_id = c.ref_id \
      ORDER BY x.erasure_id DESC LIMIT 1)";
/// Column of `chain_select` where `MARK_COLS` start.
const MARK_AT: usize = 31;
/// The erasure columns (`er`), in order: what `erasure_at` reads.
pub(crate) const ERASURE_COLS: &str = "er.id, er.namespace, er.at, er.reason, er.by_whom, er.target, er.memories, \
     er.turns, er.redacted, (SELECT group_concat(x.kind || ':' || x.ref_id || ':' || hex(x.before) || ':' || hex(x.after), ',') \
     FROM erased_rows x WHERE x.erasure_id = er.id)";
/// Column of `chain_select` where `ERASURE_COLS` start.
const ERASURE_AT: usize = 34;

/// The erasure in `ERASURE_COLS` starting at column `at` (None: no row). A value no write
/// produced reads as something that hashes differently, so the check catches it.
pub(crate) fn erasure_at(row: &Row<'_>, at: usize) -> rusqlite::Result<Option<ErasureRecord>> {
    let Some(id) = int(row, at)? else { return Ok(None) };
    let ids = |i: usize| -> rusqlite::Result<Vec<i64>> {
        Ok(serde_json::from_str::<Vec<i64>>(&text(row, i)?.unwrap_or_default()).unwrap_or_else(|_| vec![i64::MIN]))
    };
    let rows = ErasedRow::parse_listed(&text(row, at + 9)?.unwrap_or_default());
    Ok(Some(ErasureRecord {
        id,
        namespace: text(row, at + 1)?.unwrap_or_default(),
        at: Timestamp(int(row, at + 2)?.unwrap_or(i64::MIN)),
        reason: text(row, at + 3)?.unwrap_or_default(),
        by: text(row, at + 4)?,
        target: text(row, at + 5)?.unwrap_or_default(),
        memories: ids(at + 6)?.into_iter().map(MemoryId).collect(),
        turns: ids(at + 7)?.into_iter().map(TurnId).collect(),
        redacted: ids(at + 8)?.into_iter().map(TurnId).collect(),
        rows,
    }))
}

/// The mark in `MARK_COLS` starting at column `at` (None: the row was never erased).
fn mark_at(row: &Row<'_>, at: usize) -> rusqlite::Result<Option<ErasedMark>> {
    let Some(erasure) = int(row, at)? else { return Ok(None) };
    Ok(Some(ErasedMark { erasure, before: hash_col(row, at + 1)?, after: hash_col(row, at + 2)? }))
}

/// A row of `chain_select`.
fn record_at(r: &Row<'_>, namespace: &str) -> rusqlite::Result<ChainRecord> {
    let kind_text = text(r, 1)?.unwrap_or_default();
    // A kind no write produces reads as an event, whose row then does not match.
    let entry = EntryKind::parse(&kind_text).unwrap_or(EntryKind::Event);
    let mark = mark_at(r, MARK_AT)?;
    let content = match entry {
        EntryKind::Turn => turn_at(r, 6)?.map(|t| Content::Turn(TurnContent { erased: mark, ..t })),
        EntryKind::Event => event_at(r, 12)?.map(|e| Content::Event(EventContent { erased: mark, ..e })),
        EntryKind::Erasure => erasure_at(r, ERASURE_AT)?.map(Content::Erasure),
    };
    Ok(ChainRecord {
        namespace: namespace.to_string(),
        seq: int(r, 0)?.unwrap_or(i64::MIN),
        entry,
        id: int(r, 2)?.unwrap_or(i64::MIN),
        content_hash: hash_col(r, 3)?,
        prev_hash: hash_col(r, 4)?,
        entry_hash: hash_col(r, 5)?,
        content,
    })
}

/// The entries of `namespace` with a seq above `after`, at most `limit`, with their rows.
pub(crate) fn page(conn: &Connection, namespace: &str, after: i64, limit: usize) -> Result<Vec<ChainRecord>> {
    let mut stmt = conn.prepare_cached(&chain_select("AND c.seq > ?2", "LIMIT ?3")).db()?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![namespace, after, limit], |r| record_at(r, namespace)).db()?;
    rows.collect::<rusqlite::Result<_>>().db()
}

/// Check the chain of `namespace` (streamed: only the ids seen are held), against its recorded
/// head (an empty head when none is recorded but entries exist) and the rows of the namespace
/// outside it.
fn verify_namespace(conn: &Connection, namespace: &str) -> Result<ChainReport> {
    let mut v = chain::Verifier::new(namespace);
    let (mut turns, mut events, mut erasures) = (HashSet::new(), HashSet::new(), HashSet::new());
    {
        let mut stmt = conn.prepare(&chain_select("", "")).db()?;
        let mut rows = stmt.query([namespace]).db()?;
        while let Some(r) = rows.next().db()? {
            let rec = record_at(r, namespace).db()?;
            match rec.entry {
                EntryKind::Turn => turns.insert(rec.id),
                EntryKind::Event => events.insert(rec.id),
                EntryKind::Erasure => erasures.insert(rec.id),
            };
            if !v.push(&rec) {
                break;
            }
        }
    }
    if v.broken() {
        return Ok(v.finish(None, &[]));
    }
    let mut unchained = Vec::new();
    let mut stmt = conn.prepare_cached("SELECT id FROM turns WHERE namespace = ?1").db()?;
    for id in stmt.query_map([namespace], |r| r.get::<_, i64>(0)).db()? {
        let id = id.db()?;
        if !turns.contains(&id) {
            unchained.push((EntryKind::Turn, id));
        }
    }
    let mut stmt = conn
        .prepare_cached(
            "SELECT e.seq FROM memories m JOIN memory_events e ON e.memory_id = m.id WHERE m.namespace = ?1",
        )
        .db()?;
    for seq in stmt.query_map([namespace], |r| r.get::<_, i64>(0)).db()? {
        let seq = seq.db()?;
        if !events.contains(&seq) {
            unchained.push((EntryKind::Event, seq));
        }
    }
    let mut stmt = conn.prepare_cached("SELECT id FROM erasures WHERE namespace = ?1").db()?;
    for id in stmt.query_map([namespace], |r| r.get::<_, i64>(0)).db()? {
        let id = id.db()?;
        if !erasures.contains(&id) {
            unchained.push((EntryKind::Erasure, id));
        }
    }
    let seen = !turns.is_empty() || !events.is_empty() || !erasures.is_empty();
    let head = head(conn, namespace)?.or_else(|| {
        // No head recorded: as if the chain were empty, so entries without a head are caught.
        seen.then(|| ChainHead { namespace: namespace.to_string(), seq: 0, hash: chain::GENESIS })
    });
    Ok(v.finish(head.as_ref(), &unchained))
}

/// Check the chain of every namespace, in one read transaction (a check beside a writer sees
/// whole writes: a row and its entry are committed together).
pub(crate) fn verify_all(conn: &Connection) -> Result<Vec<ChainReport>> {
    let tx = conn.unchecked_transaction().db()?;
    let mut out = Vec::new();
    for ns in namespaces(&tx)? {
        out.push(verify_namespace(&tx, &ns)?);
    }
    tx.commit().db()?;
    Ok(out)
}

/// Chain the rows written before the store kept a chain (the migration to schema version 5):
/// per namespace, its turns and events in `chain::backfill_order` (by time, turns before
/// events, then id), so an old store verifies after the upgrade. Rows already chained are
/// left alone (the backfill runs once, when the tables are created, so there are none).
pub(crate) fn backfill(conn: &Connection) -> Result<()> {
    let namespaces: Vec<String> = {
        let mut stmt =
            conn.prepare("SELECT namespace FROM turns UNION SELECT namespace FROM memories ORDER BY 1").db()?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0)).db()?;
        rows.collect::<rusqlite::Result<_>>().db()?
    };
    for ns in namespaces {
        let mut contents = Vec::new();
        {
            let sql = format!("SELECT {TURN_COLS} FROM turns t WHERE t.namespace = ?1");
            let mut stmt = conn.prepare(&sql).db()?;
            let mut rows = stmt.query([&ns]).db()?;
            while let Some(r) = rows.next().db()? {
                if let Some(t) = turn_at(r, 0).db()? {
                    contents.push(Content::Turn(t));
                }
            }
            let sql = format!(
                "SELECT {EVENT_COLS} FROM memories m JOIN memory_events e ON e.memory_id = m.id WHERE m.namespace = ?1"
            );
            let mut stmt = conn.prepare(&sql).db()?;
            let mut rows = stmt.query([&ns]).db()?;
            while let Some(r) = rows.next().db()? {
                if let Some(e) = event_at(r, 0).db()? {
                    contents.push(Content::Event(e));
                }
            }
        }
        contents.sort_by(chain::backfill_order);
        let mut chains = Chains::default();
        for c in &contents {
            chains.append(conn, &ns, c)?;
        }
        chains.finish(conn)?;
    }
    Ok(())
}
