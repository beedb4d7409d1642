//! The tamper-evident history (see `mnemo_contract::chain` and docs/history-chain.md), as in
//! the SQLite store: every turn and memory event of a namespace is an entry of
//! `history_chain` (store schema version 6), appended in the write's own transaction;
//! `chain_heads` holds each namespace's last entry.
//!
//! Concurrent writers of a namespace (any process) never fork its chain: a write appends its
//! entries last, after locking the namespace's head row (an upsert that creates it at the
//! namespace's first entry and otherwise changes nothing, which takes the row lock until
//! commit, like `SELECT … FOR UPDATE`), so the appends of a namespace are serialised in commit
//! order. Two round trips per write: the lock (reading the head), the entries with the new head.
//! Lock order: the namespace's batch lock (`apply`), then the head row, then the store-wide
//! revision lock (`write::assign_revs`); `record_turn` takes only the head row.
use std::collections::HashSet;

use deadpool_postgres::Transaction;
use mnemo_contract::chain::{
    self, Appender, ChainHead, ChainRecord, ChainReport, Content, CreatedMemory, EntryKind, ErasedMark, EventContent,
    Hash, TurnContent,
};
use mnemo_contract::erase::{ErasedRow, ErasureRecord};
use mnemo_contract::{CoreError, MemoryId, Namespace, StoreErrorKind, Timestamp, TurnId};
use tokio_postgres::Row;

use crate::db::{Db, Scope};
use crate::error::DbContext;
use crate::store::read;

type Result<T> = std::result::Result<T, CoreError>;

/// Append `contents` (rows of `ns` already written in `tx`, in order) to the chain of `ns`.
pub(crate) async fn append(tx: &Transaction<'_>, ns: &Namespace, contents: &[Content]) -> Result<()> {
    if contents.is_empty() {
        return Ok(());
    }
    let genesis: &[u8] = &chain::GENESIS;
    // Creates the head row at a namespace's first entry, and locks it either way (an upsert
    // that changes nothing still takes the row lock) until commit: one round trip.
    let head = read::rows(
        tx,
        "INSERT INTO chain_heads (namespace, seq, hash) VALUES ($1, 0, $2) \
         ON CONFLICT (namespace) DO UPDATE SET seq = chain_heads.seq RETURNING seq, hash",
        &[&ns.as_str(), &genesis],
    )
    .await?;
    let row = head.first().ok_or_else(|| {
        CoreError::store_message(StoreErrorKind::Damaged, format!("no chain head row for namespace {ns}"))
    })?;
    let seq: i64 = row.try_get(0).db("chain head")?;
    let hash: Vec<u8> = row.try_get(1).db("chain head")?;
    let hash = chain::hash_from(&hash).ok_or_else(|| {
        CoreError::store_message(StoreErrorKind::Damaged, format!("the chain head of {ns} is not 32 bytes"))
    })?;
    let mut a = Appender::after(ns.as_str(), (seq > 0).then_some((seq, hash)));
    let (mut seqs, mut kinds, mut ids, mut contents_h, mut prevs, mut entries) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for c in contents {
        let e = a.append(c);
        seqs.push(e.seq);
        kinds.push(e.entry.as_str().to_string());
        ids.push(e.id);
        contents_h.push(e.content_hash.to_vec());
        prevs.push(e.prev_hash.to_vec());
        entries.push(e.entry_hash.to_vec());
    }
    let last: &[u8] = &a.hash;
    // The entries and the new head in one statement.
    let moved = read::rows(
        tx,
        "WITH entries AS (INSERT INTO history_chain (namespace, seq, kind, ref_id, content_hash, prev_hash, entry_hash) \
         SELECT $1, u.seq, u.kind, u.id, u.ch, u.ph, u.eh \
         FROM unnest($2::bigint[], $3::text[], $4::bigint[], $5::bytea[], $6::bytea[], $7::bytea[]) \
         AS u(seq, kind, id, ch, ph, eh) RETURNING seq) \
         UPDATE chain_heads SET seq = $8, hash = $9 WHERE namespace = $1 AND (SELECT count(*) FROM entries) = $10 \
         RETURNING seq",
        &[&ns.as_str(), &seqs, &kinds, &ids, &contents_h, &prevs, &entries, &a.seq, &last, &(contents.len() as i64)],
    )
    .await?;
    if moved.len() != 1 {
        return Err(CoreError::store_message(
            StoreErrorKind::Other,
            format!("the chain head of namespace {ns} did not move"),
        ));
    }
    Ok(())
}

fn bytes_hash(row: &Row, i: usize) -> Result<Hash> {
    let b: Vec<u8> = row.try_get(i).db("a chain hash")?;
    Ok(chain::hash_from(&b).unwrap_or([0xff; 32]))
}

/// The turn columns, in order.
pub(crate) const TURN_COLS: &str = "t.id, t.namespace, t.source, t.at, t.text, t.external_id";
/// The event columns (with its memory's), in order.
pub(crate) const EVENT_COLS: &str =
    "e.seq, e.memory_id, e.at, e.event, e.turn_id, e.detail, m.id, m.namespace, m.kind, \
                          m.content, m.claim_entity, m.claim_attribute, m.claim_value, m.entities, m.importance, \
                          m.created_at, m.pinned, m.valid_from, m.valid_to";

pub(crate) fn turn_at(row: &Row, at: usize) -> Result<Option<TurnContent>> {
    let g = "a chained turn";
    let Some(id) = row.try_get::<_, Option<i64>>(at).db(g)? else { return Ok(None) };
    Ok(Some(TurnContent {
        id,
        namespace: row.try_get(at + 1).db(g)?,
        source: row.try_get(at + 2).db(g)?,
        at: row.try_get(at + 3).db(g)?,
        text: row.try_get(at + 4).db(g)?,
        external_id: row.try_get(at + 5).db(g)?,
        erased: None,
    }))
}

pub(crate) fn event_at(row: &Row, at: usize) -> Result<Option<EventContent>> {
    let g = "a chained event";
    let Some(seq) = row.try_get::<_, Option<i64>>(at).db(g)? else { return Ok(None) };
    let event: String = row.try_get(at + 3).db(g)?;
    let found = row.try_get::<_, Option<i64>>(at + 6).db(g)?.is_some();
    let memory = if found && event == "created" {
        Some(CreatedMemory {
            kind: row.try_get(at + 8).db(g)?,
            content: row.try_get(at + 9).db(g)?,
            claim_entity: row.try_get(at + 10).db(g)?,
            claim_attribute: row.try_get(at + 11).db(g)?,
            claim_value: row.try_get(at + 12).db(g)?,
            entities: row.try_get(at + 13).db(g)?,
            importance: row.try_get(at + 14).db(g)?,
            created_at: row.try_get(at + 15).db(g)?,
            pinned: row.try_get(at + 16).db(g)?,
            valid_from: row.try_get(at + 17).db(g)?,
            valid_to: row.try_get(at + 18).db(g)?,
        })
    } else {
        None
    };
    Ok(Some(EventContent {
        namespace: if found { row.try_get(at + 7).db(g)? } else { None },
        seq,
        memory_id: row.try_get(at + 1).db(g)?,
        at: row.try_get(at + 2).db(g)?,
        event,
        turn_id: row.try_get(at + 4).db(g)?,
        detail: row.try_get(at + 5).db(g)?,
        memory,
        erased: None,
    }))
}

/// The recorded heads (`ns` None: every namespace's), by namespace.
async fn heads_of(tx: &Transaction<'_>, ns: Option<&str>) -> Result<Vec<ChainHead>> {
    let rows = match ns {
        Some(ns) => read::rows(tx, "SELECT namespace, seq, hash FROM chain_heads WHERE namespace = $1", &[&ns]).await?,
        None => {
            read::rows(tx, "SELECT namespace, seq, hash FROM chain_heads ORDER BY namespace COLLATE \"C\"", &[]).await?
        }
    };
    rows.iter()
        .map(|r| {
            Ok(ChainHead {
                namespace: r.try_get(0).db("chain head")?,
                seq: r.try_get(1).db("chain head")?,
                hash: bytes_hash(r, 2)?,
            })
        })
        .collect()
}

/// Every recorded head, by namespace.
pub(crate) async fn heads(db: &Db) -> Result<Vec<ChainHead>> {
    let mut client = db.client().await?;
    let tx = db.begin(&mut client, Scope::All).await?;
    let out = heads_of(&tx, None).await?;
    tx.commit().await.db("commit")?;
    Ok(out)
}

/// The chain entries of a namespace joined with the rows they point at, with a seq above `$2`,
/// at most `$3`.
fn chain_select() -> String {
    format!(
        "SELECT c.seq, c.kind, c.ref_id, c.content_hash, c.prev_hash, c.entry_hash, {TURN_COLS}, {EVENT_COLS}, \
         {MARK_COLS}, {ERASURE_COLS} \
         FROM history_chain c \
         LEFT JOIN turns t ON c.kind = 'turn' AND t.id = c.ref_id \
         LEFT JOIN memory_events e ON c.kind = 'event' AND e.seq = c.ref_id \
         LEFT JOIN memories m ON m.id = e.memory_id \
         LEFT JOIN erasures er ON c.kind = 'erasure' AND er.id = c.ref_id \
         WHERE c.namespace = $1 AND c.seq > $2 ORDER BY c.seq LIMIT $3"
    )
}

/// What the erasures list for the row an entry points at (see `ErasedMark`): the last
/// erasure's id, the first's `before`, the last's `after` (NULLs: never erased).
const MARK_COLS: &str = "(SELECT max(x.erasure_id) FROM erased_rows x WHERE x.kind = c.kind AND x.ref_id = c.ref_id), \
     (SELECT x.before FROM erased_rows x WHERE x.kind = c.kind AND x.ref_id = c.ref_id ORDER BY x.erasure_id LIMIT 1), \
     (SELECT x.after FROM erased_rows x WHERE x.kind = c.kind AND x.ref_id = c.ref_id \
      ORDER BY x.erasure_id DESC LIMIT 1)";
/// Column of `chain_select` where `MARK_COLS` start.
const MARK_AT: usize = 31;
/// The erasure columns (`er`), in order: what `erasure_at` reads.
pub(crate) const ERASURE_COLS: &str = "er.id, er.namespace, er.at, er.reason, er.by_whom, er.target, er.memories, \
     er.turns, er.redacted, (SELECT string_agg(x.kind || ':' || x.ref_id || ':' || encode(x.before, 'hex') || ':' || \
     encode(x.after, 'hex'), ',') FROM erased_rows x WHERE x.erasure_id = er.id)";
/// Column of `chain_select` where `ERASURE_COLS` start.
const ERASURE_AT: usize = 34;

/// The erasure in `ERASURE_COLS` starting at column `at` (None: no row).
pub(crate) fn erasure_at(row: &Row, at: usize) -> Result<Option<ErasureRecord>> {
    let g = "an erasure";
    let Some(id) = row.try_get::<_, Option<i64>>(at).db(g)? else { return Ok(None) };
    let ids = |i: usize| -> Result<Vec<i64>> {
        let t: String = row.try_get(i).db(g)?;
        Ok(serde_json::from_str::<Vec<i64>>(&t).unwrap_or_else(|_| vec![i64::MIN]))
    };
    let listed: Option<String> = row.try_get(at + 9).db(g)?;
    let rows = ErasedRow::parse_listed(&listed.unwrap_or_default());
    Ok(Some(ErasureRecord {
        id,
        namespace: row.try_get(at + 1).db(g)?,
        at: Timestamp(row.try_get(at + 2).db(g)?),
        reason: row.try_get(at + 3).db(g)?,
        by: row.try_get(at + 4).db(g)?,
        target: row.try_get(at + 5).db(g)?,
        memories: ids(at + 6)?.into_iter().map(MemoryId).collect(),
        turns: ids(at + 7)?.into_iter().map(TurnId).collect(),
        redacted: ids(at + 8)?.into_iter().map(TurnId).collect(),
        rows,
    }))
}

fn mark_at(row: &Row, at: usize) -> Result<Option<ErasedMark>> {
    let g = "an erased row";
    let Some(erasure) = row.try_get::<_, Option<i64>>(at).db(g)? else { return Ok(None) };
    Ok(Some(ErasedMark { erasure, before: bytes_hash(row, at + 1)?, after: bytes_hash(row, at + 2)? }))
}

fn record_at(r: &Row, ns: &str) -> Result<ChainRecord> {
    let kind: String = r.try_get(1).db("chain entry")?;
    let entry = EntryKind::parse(&kind).unwrap_or(EntryKind::Event);
    let mark = mark_at(r, MARK_AT)?;
    let content = match entry {
        EntryKind::Turn => turn_at(r, 6)?.map(|t| Content::Turn(TurnContent { erased: mark, ..t })),
        EntryKind::Event => event_at(r, 12)?.map(|e| Content::Event(EventContent { erased: mark, ..e })),
        EntryKind::Erasure => erasure_at(r, ERASURE_AT)?.map(Content::Erasure),
    };
    Ok(ChainRecord {
        namespace: ns.to_string(),
        seq: r.try_get(0).db("chain entry")?,
        entry,
        id: r.try_get(2).db("chain entry")?,
        content_hash: bytes_hash(r, 3)?,
        prev_hash: bytes_hash(r, 4)?,
        entry_hash: bytes_hash(r, 5)?,
        content,
    })
}

/// The entries of `ns` with a seq above `after`, at most `limit`, with their rows.
async fn page_in(tx: &Transaction<'_>, ns: &str, after: i64, limit: usize) -> Result<Vec<ChainRecord>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    read::rows(tx, &chain_select(), &[&ns, &after, &limit]).await?.iter().map(|r| record_at(r, ns)).collect()
}

/// One page of `ns`'s chain (a read transaction scoped to it).
pub(crate) async fn page(db: &Db, ns: &Namespace, after: i64, limit: usize) -> Result<Vec<ChainRecord>> {
    let mut client = db.client().await?;
    let tx = db.begin(&mut client, Scope::Namespace(ns)).await?;
    let out = page_in(&tx, ns.as_str(), after, limit).await?;
    tx.commit().await.db("commit")?;
    Ok(out)
}

/// Entries read per query by a check.
const CHECK_PAGE: usize = 5_000;

/// Check the chain of `ns` a page at a time (only the ids seen are held), against its recorded
/// head (an empty head when none is recorded but entries exist) and the rows of the namespace
/// outside it.
async fn verify_namespace(tx: &Transaction<'_>, ns: &str) -> Result<ChainReport> {
    let mut v = chain::Verifier::new(ns);
    let (mut turns, mut events, mut erasures) = (HashSet::new(), HashSet::new(), HashSet::new());
    let mut after = i64::MIN;
    'pages: loop {
        let page = page_in(tx, ns, after, CHECK_PAGE).await?;
        let full = page.len() == CHECK_PAGE;
        for rec in &page {
            match rec.entry {
                EntryKind::Turn => turns.insert(rec.id),
                EntryKind::Event => events.insert(rec.id),
                EntryKind::Erasure => erasures.insert(rec.id),
            };
            after = rec.seq;
            if !v.push(rec) {
                break 'pages;
            }
        }
        if !full {
            break;
        }
    }
    if v.broken() {
        return Ok(v.finish(None, &[]));
    }
    let mut unchained = Vec::new();
    for r in read::rows(tx, "SELECT id FROM turns WHERE namespace = $1", &[&ns]).await? {
        let id: i64 = r.try_get(0).db("turn id")?;
        if !turns.contains(&id) {
            unchained.push((EntryKind::Turn, id));
        }
    }
    for r in read::rows(
        tx,
        "SELECT e.seq FROM memories m JOIN memory_events e ON e.memory_id = m.id WHERE m.namespace = $1",
        &[&ns],
    )
    .await?
    {
        let seq: i64 = r.try_get(0).db("event seq")?;
        if !events.contains(&seq) {
            unchained.push((EntryKind::Event, seq));
        }
    }
    for r in read::rows(tx, "SELECT id FROM erasures WHERE namespace = $1", &[&ns]).await? {
        let id: i64 = r.try_get(0).db("erasure id")?;
        if !erasures.contains(&id) {
            unchained.push((EntryKind::Erasure, id));
        }
    }
    let seen = !turns.is_empty() || !events.is_empty() || !erasures.is_empty();
    let head = heads_of(tx, Some(ns))
        .await?
        .pop()
        .or_else(|| seen.then(|| ChainHead { namespace: ns.to_string(), seq: 0, hash: chain::GENESIS }));
    Ok(v.finish(head.as_ref(), &unchained))
}

/// Check the chain of every namespace, on one snapshot (a check beside writers sees whole
/// writes: a row and its entry are committed together).
pub(crate) async fn verify_all(db: &Db) -> Result<Vec<ChainReport>> {
    let mut client = db.client().await?;
    let tx = db.begin_snapshot(&mut client, Scope::All).await?;
    let namespaces: Vec<String> = read::rows(
        &tx,
        "SELECT namespace FROM (SELECT namespace FROM chain_heads UNION SELECT namespace FROM history_chain \
         UNION SELECT namespace FROM turns UNION SELECT namespace FROM memories) n ORDER BY namespace COLLATE \"C\"",
        &[],
    )
    .await?
    .iter()
    .map(|r| r.try_get(0).db("namespace"))
    .collect::<Result<_>>()?;
    let mut out = Vec::with_capacity(namespaces.len());
    for ns in namespaces {
        out.push(verify_namespace(&tx, &ns).await?);
    }
    tx.commit().await.db("commit")?;
    Ok(out)
}

/// The contents of `ns`'s turns and events (for chaining rows written without a chain).
async fn contents_of(tx: &Transaction<'_>, ns: &str) -> Result<Vec<Content>> {
    let mut out = Vec::new();
    let sql = format!("SELECT {TURN_COLS} FROM turns t WHERE t.namespace = $1");
    for r in read::rows(tx, &sql, &[&ns]).await? {
        if let Some(t) = turn_at(&r, 0)? {
            out.push(Content::Turn(t));
        }
    }
    let sql = format!(
        "SELECT {EVENT_COLS} FROM memories m JOIN memory_events e ON e.memory_id = m.id WHERE m.namespace = $1"
    );
    for r in read::rows(tx, &sql, &[&ns]).await? {
        if let Some(e) = event_at(&r, 0)? {
            out.push(Content::Event(e));
        }
    }
    Ok(out)
}

/// Chain the rows of `ns` no entry covers yet, after its last entry: first those `order`
/// names (kind, id), in that order (an import keeps the source's chain order, and so its
/// head), then the rest in `chain::backfill_order`. The transaction is scoped to `ns`.
pub(crate) async fn chain_unchained(tx: &Transaction<'_>, ns: &Namespace, order: &[(EntryKind, i64)]) -> Result<()> {
    let chained: HashSet<(String, i64)> =
        read::rows(tx, "SELECT kind, ref_id FROM history_chain WHERE namespace = $1", &[&ns.as_str()])
            .await?
            .iter()
            .map(|r| Ok((r.try_get::<_, String>(0).db("chain entry")?, r.try_get::<_, i64>(1).db("chain entry")?)))
            .collect::<Result<_>>()?;
    let mut rest: Vec<Content> = contents_of(tx, ns.as_str())
        .await?
        .into_iter()
        .filter(|c| !chained.contains(&(c.kind().as_str().to_string(), c.id())))
        .collect();
    let mut ordered = Vec::with_capacity(rest.len());
    if !order.is_empty() {
        let mut by_key: std::collections::HashMap<(EntryKind, i64), Content> =
            rest.drain(..).map(|c| ((c.kind(), c.id()), c)).collect();
        for key in order {
            if let Some(c) = by_key.remove(key) {
                ordered.push(c);
            }
        }
        rest = by_key.into_values().collect();
    }
    rest.sort_by(chain::backfill_order);
    ordered.extend(rest);
    append(tx, ns, &ordered).await
}

/// The component name under which the one-time chaining of a store's older rows is recorded
/// in `mnemo_schema_versions`.
const BACKFILL: &str = "store_history_chain";

/// Chain the rows written before the store kept a chain (schema version 6), once: under a
/// lock, recorded in `mnemo_schema_versions` (so a store created with the chain, or already
/// chained, is not read again). Runs in every process's first use of the store, after the
/// migration and before any write of it, so no write of the new code precedes it.
pub(crate) async fn backfill_once(db: &Db) -> Result<()> {
    let mut client = db.client().await?;
    let tx = db.begin_as_owner(&mut client).await?;
    tx.execute("SELECT pg_advisory_xact_lock(hashtext('mnemo-chain-backfill'), hashtext($1))", &[&db.schema()])
        .await
        .db("take the chain backfill lock")?;
    let done = tx
        .query_opt("SELECT version FROM mnemo_schema_versions WHERE component = $1", &[&BACKFILL])
        .await
        .db("read the chain backfill marker")?
        .is_some();
    if done {
        return tx.commit().await.db("commit");
    }
    let namespaces: Vec<String> = tx
        .query("SELECT namespace FROM turns UNION SELECT namespace FROM memories", &[])
        .await
        .db("namespaces to chain")?
        .iter()
        .map(|r| r.try_get(0).db("namespace"))
        .collect::<Result<_>>()?;
    for ns in namespaces {
        let n = Namespace::new(&ns).map_err(|e| {
            CoreError::store_message(StoreErrorKind::Damaged, format!("corrupt namespace in the store: {e}"))
        })?;
        // Scope the rows written to the namespace (the row-level policy checks it).
        tx.execute("SELECT set_config('mnemo.namespace', $1, true)", &[&ns]).await.db("scope the backfill")?;
        chain_unchained(&tx, &n, &[]).await?;
    }
    tx.execute("SELECT set_config('mnemo.namespace', '*', true)", &[]).await.db("scope the backfill")?;
    tx.execute(
        "INSERT INTO mnemo_schema_versions (component, version) VALUES ($1, 1) ON CONFLICT (component) DO NOTHING",
        &[&BACKFILL],
    )
    .await
    .db("record the chain backfill")?;
    tx.commit().await.db("commit the chain backfill")
}
