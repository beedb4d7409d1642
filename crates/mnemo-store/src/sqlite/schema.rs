//! The schema and its migrator: `PRAGMA user_version` is the number of steps applied; steps
//! above it are applied in one transaction at open. A database from a newer build (a version
//! this code does not know) is refused rather than half-understood.
use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use crate::error::StoreError;

/// Marks a SQLite file as a Mnemo store (`PRAGMA application_id`, "MNEM").
pub(crate) const APPLICATION_ID: i64 = 0x4D4E_454D;

/// Migration steps; step `i` brings the schema to version `i + 1`. Append, never edit.
pub(crate) const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7];

/// The newest schema version this code knows.
pub(crate) fn known_version() -> i64 {
    MIGRATIONS.len() as i64
}

/// Version 1. Notes on the choices:
/// - AUTOINCREMENT so ids (and event seqs, which double as `rev`) are never reused, even
///   after the highest row is gone — a rev must only ever grow. (Memory and turn ids are now
///   given explicitly, per namespace: see `ids`; event seqs still come from here.)
/// - entities and sources are JSON text for an exact round trip (order, case); the lookup
///   side table `memory_entities` holds the normalised names.
/// - the claim is stored as written plus normalised entity/attribute for lookups.
/// - the embedding is a BLOB of little-endian f32 (bit-exact) beside its model id (since
///   version 4, new rows keep int8 codes instead: see V4).
const V1: &str = "
CREATE TABLE turns (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace   TEXT    NOT NULL,
    source      TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    text        TEXT    NOT NULL,
    external_id TEXT
);
CREATE INDEX turns_namespace ON turns(namespace, id);

CREATE TABLE memories (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace            TEXT    NOT NULL,
    kind                 TEXT    NOT NULL,
    content              TEXT    NOT NULL,
    claim_entity         TEXT,
    claim_attribute      TEXT,
    claim_value          TEXT,
    claim_entity_norm    TEXT,
    claim_attribute_norm TEXT,
    entities             TEXT    NOT NULL,
    importance           REAL    NOT NULL,
    reinforcements       INTEGER NOT NULL DEFAULT 0,
    sources              TEXT    NOT NULL,
    provenance           TEXT    NOT NULL,
    created_at           INTEGER NOT NULL,
    last_confirmed_at    INTEGER NOT NULL,
    last_accessed_at     INTEGER,
    pinned               INTEGER NOT NULL,
    embedding_model      TEXT,
    embedding            BLOB,
    status               TEXT    NOT NULL CHECK (status IN ('active', 'tombstoned')),
    tombstone_reason     TEXT,
    tombstoned_at        INTEGER,
    superseded_by        INTEGER REFERENCES memories(id),
    rev                  INTEGER NOT NULL
);
CREATE INDEX memories_namespace_status ON memories(namespace, status);
CREATE INDEX memories_namespace_pinned ON memories(namespace, pinned);
CREATE INDEX memories_claim ON memories(namespace, claim_entity_norm, claim_attribute_norm);
CREATE INDEX memories_rev ON memories(rev);

CREATE TABLE memory_entities (
    memory_id   INTEGER NOT NULL REFERENCES memories(id),
    entity_norm TEXT    NOT NULL,
    PRIMARY KEY (memory_id, entity_norm)
) WITHOUT ROWID;
CREATE INDEX memory_entities_entity ON memory_entities(entity_norm, memory_id);

CREATE TABLE memory_events (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    memory_id INTEGER NOT NULL REFERENCES memories(id),
    at        INTEGER NOT NULL,
    event     TEXT    NOT NULL,
    turn_id   INTEGER REFERENCES turns(id),
    detail    TEXT    NOT NULL
);
CREATE INDEX memory_events_memory ON memory_events(memory_id, seq);
";

/// Version 2: the store's identity and generation (see `identity`). The identity is drawn once,
/// when the table is created, so a new or emptied store file gets a new one; a derived index
/// records it and is rebuilt when it finds another. The generation starts at 1; an in-place
/// replacement of the content (a restore tool) bumps it so that indexes of the old content are
/// rebuilt. Nothing in this build bumps it yet: a restored file copy is caught by the index's
/// watermark and history-fingerprint checks instead.
const V2: &str = "
CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
INSERT INTO store_meta (key, value) VALUES ('identity', lower(hex(randomblob(16))));
INSERT INTO store_meta (key, value) VALUES ('generation', '1');
";

/// Version 3: each active memory's decay due time (see `decay`), so a sweep reads only the
/// memories whose time has passed. The rows written before are given theirs by the migrator
/// (`decay::ensure_rule`, in the same transaction), under the default rule. Also the index
/// the idempotency look-up (`turn_by_external_id`) needs.
const V3: &str = "
ALTER TABLE memories ADD COLUMN decay_due INTEGER;
CREATE INDEX memories_decay_due ON memories(namespace, decay_due) WHERE status = 'active' AND decay_due IS NOT NULL;
CREATE INDEX turns_external_id ON turns(namespace, external_id) WHERE external_id IS NOT NULL;
";

/// Version 4: fewer bytes per memory.
/// - `embedding_codec`: how `embedding` is to be read (see `embedding`): NULL for the
///   little-endian f32 of the rows written before, 1 for the int8 codes and scale every new row
///   gets (a quarter of the bytes). Old rows are not rewritten.
/// - `memories_claim` is dropped: no query of this store reads it (the columns stay).
/// - `memories_namespace_pinned` keeps only the pinned rows, the only ones its query asks for
///   (`pinned = 1`): before, every memory had an entry. Keyed by (namespace, status) so that
///   the pinned query's plan prefers it to `memories_namespace_status` (checked by a test).
const V4: &str = "
ALTER TABLE memories ADD COLUMN embedding_codec INTEGER;
DROP INDEX memories_claim;
DROP INDEX memories_namespace_pinned;
CREATE INDEX memories_namespace_pinned ON memories(namespace, status) WHERE pinned = 1;
";

/// Version 5: the tamper-evident history (see `chain` and docs/history-chain.md). Every turn and
/// memory event of a namespace is an entry of that namespace's hash chain in `history_chain`
/// (`seq` 1, 2, 3 … per namespace; `kind` 'turn' or 'event'; `ref_id` the turn id or the
/// event seq; the content hash recorded at write time, so a row whose content is later replaced
/// by a tombstone can keep its place in the chain); `chain_heads` holds each namespace's last
/// entry. The rows written before this version are chained by the migrator
/// (`chain::backfill`, in the same transaction): per namespace by time, turns before events,
/// then id, so an old store verifies after the upgrade.
const V5: &str = "
CREATE TABLE history_chain (
    namespace    TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    kind         TEXT    NOT NULL CHECK (kind IN ('event', 'turn')),
    ref_id       INTEGER NOT NULL,
    content_hash BLOB    NOT NULL,
    prev_hash    BLOB    NOT NULL,
    entry_hash   BLOB    NOT NULL,
    PRIMARY KEY (namespace, seq)
) WITHOUT ROWID;
CREATE TABLE chain_heads (
    namespace TEXT    PRIMARY KEY,
    seq       INTEGER NOT NULL,
    hash      BLOB    NOT NULL
) WITHOUT ROWID;
";

/// Version 6: erasure (see `erase` and docs/erasure.md). `erasures` keeps each erasure's
/// content-free record (time, reason, who, what kind of target, the ids it erased) and
/// `erased_rows` the rows it changed with their content hashes before and after (so the chain
/// checks an erased row against them); an erasure is an entry of the history chain of kind
/// `erasure`, so `history_chain` is rebuilt with that kind allowed (SQLite cannot change a
/// CHECK in place). `memories.erased_by` names the erasure that emptied a memory.
const V6: &str = "
CREATE TABLE history_chain_v6 (
    namespace    TEXT    NOT NULL,
    seq          INTEGER NOT NULL,
    kind         TEXT    NOT NULL CHECK (kind IN ('event', 'turn', 'erasure')),
    ref_id       INTEGER NOT NULL,
    content_hash BLOB    NOT NULL,
    prev_hash    BLOB    NOT NULL,
    entry_hash   BLOB    NOT NULL,
    PRIMARY KEY (namespace, seq)
) WITHOUT ROWID;
INSERT INTO history_chain_v6 SELECT namespace, seq, kind, ref_id, content_hash, prev_hash, entry_hash FROM history_chain;
DROP TABLE history_chain;
ALTER TABLE history_chain_v6 RENAME TO history_chain;
CREATE TABLE erasures (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT    NOT NULL,
    at        INTEGER NOT NULL,
    reason    TEXT    NOT NULL,
    by_whom   TEXT,
    target    TEXT    NOT NULL,
    memories  TEXT    NOT NULL,
    turns     TEXT    NOT NULL,
    redacted  TEXT    NOT NULL
);
CREATE INDEX erasures_namespace ON erasures(namespace, id);
CREATE TABLE erased_rows (
    erasure_id INTEGER NOT NULL REFERENCES erasures(id),
    kind       TEXT    NOT NULL,
    ref_id     INTEGER NOT NULL,
    before     BLOB    NOT NULL,
    after      BLOB    NOT NULL,
    PRIMARY KEY (kind, ref_id, erasure_id)
) WITHOUT ROWID;
CREATE INDEX erased_rows_erasure ON erased_rows(erasure_id);
ALTER TABLE memories ADD COLUMN erased_by INTEGER;
";

/// Version 7: world time (see `mnemo_contract::world_time` and docs/time.md): the interval
/// in which a memory's fact holds, in ms since the epoch, either end NULL when not stated.
const V7: &str = "
ALTER TABLE memories ADD COLUMN valid_from INTEGER;
ALTER TABLE memories ADD COLUMN valid_to INTEGER;
";

/// Undoes V7 (tests build version-6 stores with it).
#[cfg(test)]
pub(crate) const UNDO_V7: &str = "
ALTER TABLE memories DROP COLUMN valid_from;
ALTER TABLE memories DROP COLUMN valid_to;
PRAGMA user_version = 6;
";

/// Undoes V6 (tests build version-5 stores with it).
#[cfg(test)]
pub(crate) const UNDO_V6: &str = "
ALTER TABLE memories DROP COLUMN valid_from;
ALTER TABLE memories DROP COLUMN valid_to;
DROP TABLE erased_rows;
DROP TABLE erasures;
ALTER TABLE memories DROP COLUMN erased_by;
PRAGMA user_version = 5;
";

/// Undoes V5 (tests build pre-chain stores with it).
#[cfg(test)]
pub(crate) const UNDO_V5: &str = "
ALTER TABLE memories DROP COLUMN valid_from;
ALTER TABLE memories DROP COLUMN valid_to;
DROP TABLE erased_rows;
DROP TABLE erasures;
ALTER TABLE memories DROP COLUMN erased_by;
DROP TABLE history_chain;
DROP TABLE chain_heads;
PRAGMA user_version = 4;
";

/// Undoes V5 and V4 (tests build version-3 stores with it, rows written by this code included: their
/// embeddings must then be f32 again, which the caller sees to).
#[cfg(test)]
pub(crate) const UNDO_V4: &str = "
ALTER TABLE memories DROP COLUMN valid_from;
ALTER TABLE memories DROP COLUMN valid_to;
DROP TABLE erased_rows;
DROP TABLE erasures;
ALTER TABLE memories DROP COLUMN erased_by;
DROP TABLE history_chain;
DROP TABLE chain_heads;
DROP INDEX memories_namespace_pinned;
CREATE INDEX memories_namespace_pinned ON memories(namespace, pinned);
CREATE INDEX memories_claim ON memories(namespace, claim_entity_norm, claim_attribute_norm);
ALTER TABLE memories DROP COLUMN embedding_codec;
PRAGMA user_version = 3;
";

/// Refuse a database that is not ours (or not empty) or is newer than this code; returns its
/// schema version. Read-only, so a refused file is left exactly as it was.
pub(crate) fn inspect(conn: &Connection, path: &Path) -> Result<i64, StoreError> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let app_id: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let objects: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    if app_id != 0 && app_id != APPLICATION_ID {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            detail: format!("application_id is {app_id:#x}, Mnemo's is {APPLICATION_ID:#x}"),
        });
    }
    if version > known_version() {
        return Err(StoreError::FutureSchema { path: path.to_path_buf(), found: version, known: known_version() });
    }
    if version < 0 {
        return Err(StoreError::Foreign { path: path.to_path_buf(), detail: format!("user_version is {version}") });
    }
    if version == 0 && objects > 0 {
        return Err(StoreError::Foreign {
            path: path.to_path_buf(),
            detail: format!("it already has {objects} schema objects but no Mnemo schema version"),
        });
    }
    Ok(version)
}

/// Bring the database to the newest schema, re-checking under `BEGIN IMMEDIATE` so two
/// processes opening the same new file do not both migrate.
pub(crate) fn migrate(conn: &mut Connection, path: &Path) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version = inspect(&tx, path)?;
    for (step, sql) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        let target = step as i64 + 1;
        let fail = |source| StoreError::Migration { path: path.to_path_buf(), version: target, source };
        tx.execute_batch(sql).map_err(fail)?;
        tx.pragma_update(None, "user_version", target).map_err(fail)?;
    }
    // Version 5 chained the history; its backfill reads rows with today's columns, so it runs
    // once every step is applied.
    if version < 5 {
        crate::sqlite::chain::backfill(&tx).map_err(|e| StoreError::Migration {
            path: path.to_path_buf(),
            version: 5,
            source: rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                Some(format!("chaining the existing history: {e}")),
            ),
        })?;
    }
    crate::sqlite::ids::ensure_key(&tx)?;
    crate::sqlite::decay::ensure_rule(&tx).map_err(|source| StoreError::Migration {
        path: path.to_path_buf(),
        version: 3,
        source,
    })?;
    let app_id: i64 = tx.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    if app_id == 0 {
        tx.pragma_update(None, "application_id", APPLICATION_ID)?;
    }
    tx.commit()?;
    Ok(())
}
