//! The Store's tables. Step i brings the store schema to version i + 1; append, never edit.
//!
//! - ids are per namespace (see `ids`; V2), so a tenant's ids say nothing of other tenants;
//!   rows of V1 have BIGSERIAL ids (never reused); `rev` comes from the sequence `mnemo_rev`, assigned at
//!   the end of each write transaction under a lock (see `write`), so revisions become
//!   visible in the order they were handed out.
//! - entities, sources and provenance are JSON text for an exact round trip; the normalised
//!   entity names are also kept as an array, and (V5) one row per (namespace, name, memory)
//!   in `memory_entities` for `active_by_entities`.
//! - the embedding is BYTEA of little-endian f32 (bit-exact) beside its model id.
//! - row-level security: a row is visible when `mnemo.namespace` is its namespace, or `*`.
//!   The query role gets no DELETE: nothing is hard-deleted.

/// Migration steps.
pub(crate) const STEPS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8];

/// Grants for the query role (`{role}`, `{schema}` filled in).
pub(crate) const GRANTS: &str = "
GRANT USAGE ON SCHEMA {schema} TO {role};
GRANT SELECT, INSERT, UPDATE ON {schema}.turns, {schema}.memories, {schema}.memory_events TO {role};
GRANT SELECT ON {schema}.mnemo_schema_versions TO {role};
GRANT SELECT, INSERT, UPDATE ON {schema}.namespace_ids TO {role};
GRANT SELECT, INSERT, UPDATE ON {schema}.decay_rules TO {role};
GRANT SELECT, INSERT ON {schema}.memory_entities TO {role};
GRANT SELECT, INSERT ON {schema}.history_chain TO {role};
GRANT SELECT, INSERT, UPDATE ON {schema}.chain_heads TO {role};
GRANT SELECT, INSERT, UPDATE ON {schema}.erasures TO {role};
GRANT SELECT, INSERT ON {schema}.erased_rows TO {role};
GRANT DELETE ON {schema}.memory_entities TO {role};
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA {schema} TO {role};
";

const V1: &str = "
CREATE SEQUENCE mnemo_rev;

CREATE TABLE turns (
    id          BIGSERIAL PRIMARY KEY,
    namespace   TEXT   NOT NULL,
    source      TEXT   NOT NULL,
    at          BIGINT NOT NULL,
    text        TEXT   NOT NULL,
    external_id TEXT
);
CREATE INDEX turns_namespace ON turns (namespace, id);

CREATE TABLE memories (
    id                   BIGSERIAL PRIMARY KEY,
    namespace            TEXT    NOT NULL,
    kind                 TEXT    NOT NULL,
    content              TEXT    NOT NULL,
    claim_entity         TEXT,
    claim_attribute      TEXT,
    claim_value          TEXT,
    claim_entity_norm    TEXT,
    claim_attribute_norm TEXT,
    entities             TEXT    NOT NULL,
    entities_norm        TEXT[]  NOT NULL,
    importance           REAL    NOT NULL,
    reinforcements       BIGINT  NOT NULL DEFAULT 0,
    sources              TEXT    NOT NULL,
    provenance           TEXT    NOT NULL,
    created_at           BIGINT  NOT NULL,
    last_confirmed_at    BIGINT  NOT NULL,
    last_accessed_at     BIGINT,
    pinned               BOOLEAN NOT NULL,
    embedding_model      TEXT,
    embedding            BYTEA,
    status               TEXT    NOT NULL CHECK (status IN ('active', 'tombstoned')),
    tombstone_reason     TEXT,
    tombstoned_at        BIGINT,
    superseded_by        BIGINT REFERENCES memories (id),
    rev                  BIGINT  NOT NULL
);
CREATE INDEX memories_namespace_status ON memories (namespace, status, id);
CREATE INDEX memories_claim ON memories (namespace, claim_entity_norm, claim_attribute_norm) WHERE status = 'active';
CREATE INDEX memories_rev ON memories (rev);
CREATE INDEX memories_entities ON memories USING gin (entities_norm);

CREATE TABLE memory_events (
    seq       BIGSERIAL PRIMARY KEY,
    memory_id BIGINT NOT NULL REFERENCES memories (id),
    namespace TEXT   NOT NULL,
    at        BIGINT NOT NULL,
    event     TEXT   NOT NULL,
    turn_id   BIGINT REFERENCES turns (id),
    detail    TEXT   NOT NULL
);
CREATE INDEX memory_events_memory ON memory_events (memory_id, seq);

ALTER TABLE turns ENABLE ROW LEVEL SECURITY;
ALTER TABLE turns FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON turns
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*')
    WITH CHECK (namespace = current_setting('mnemo.namespace', true));
ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON memories
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*')
    WITH CHECK (namespace = current_setting('mnemo.namespace', true));
ALTER TABLE memory_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_events FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON memory_events
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*')
    WITH CHECK (namespace = current_setting('mnemo.namespace', true));
";

/// Version 2: per-namespace id ranges and counters (see `ids`), partitioned like the rest.
const V2: &str = "
CREATE TABLE namespace_ids (
    namespace TEXT   PRIMARY KEY,
    tag       BIGINT NOT NULL UNIQUE CHECK (tag > 0 AND tag < 2097152),
    memories  BIGINT NOT NULL DEFAULT 0,
    turns     BIGINT NOT NULL DEFAULT 0
);
ALTER TABLE namespace_ids ENABLE ROW LEVEL SECURITY;
ALTER TABLE namespace_ids FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON namespace_ids
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*')
    WITH CHECK (namespace = current_setting('mnemo.namespace', true));
";

/// Version 3: the pinned memories of a namespace without reading its other memories (every
/// recall asks for them; a namespace holds few or none).
const V3: &str = "
CREATE INDEX memories_pinned ON memories (namespace, id) WHERE pinned AND status = 'active';
";

/// Version 4: each active memory's decay due time (see `decay`), so a sweep reads only the
/// memories whose time has passed, and per namespace the rule they were computed with. Rows
/// written before have no due time and their namespace no rule: the first sweep of the
/// namespace finds no rule recorded and computes them all (see `decay::due_for_decay`). Also
/// the index the idempotency look-up (`turn_by_external_id`) needs.
const V4: &str = "
ALTER TABLE memories ADD COLUMN decay_due BIGINT;
CREATE INDEX memories_decay_due ON memories (namespace, decay_due, id) WHERE status = 'active' AND decay_due IS NOT NULL;
CREATE INDEX turns_external_id ON turns (namespace, external_id) WHERE external_id IS NOT NULL;
CREATE TABLE decay_rules (
    namespace TEXT PRIMARY KEY,
    rule      TEXT NOT NULL
);
ALTER TABLE decay_rules ENABLE ROW LEVEL SECURITY;
ALTER TABLE decay_rules FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON decay_rules
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*')
    WITH CHECK (namespace = current_setting('mnemo.namespace', true));
";

/// Version 5: a memory's normalised entity names as rows `(namespace, entity, id)` with a
/// B-tree, for `active_by_entities` (every write's neighbour lookup). Why not the GIN index on
/// `entities_norm`: the overlap operator `&&` is not leakproof, so under row-level security
/// PostgreSQL may not use it as an index condition and scanned every active memory of the
/// namespace; text equality is leakproof. Kept by a trigger, so every insert path (writes,
/// imports) fills it; existing rows are copied here.
const V5: &str = "
SELECT set_config('mnemo.namespace', '*', true);
CREATE TABLE memory_entities (
    namespace TEXT   NOT NULL,
    entity    TEXT   NOT NULL,
    id        BIGINT NOT NULL REFERENCES memories (id),
    PRIMARY KEY (namespace, entity, id)
);
ALTER TABLE memory_entities ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_entities FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON memory_entities
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*');
INSERT INTO memory_entities (namespace, entity, id)
    SELECT m.namespace, e, m.id FROM memories m, unnest(m.entities_norm) e ON CONFLICT DO NOTHING;
CREATE FUNCTION memory_entities_of_row() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO memory_entities (namespace, entity, id)
        SELECT NEW.namespace, e, NEW.id FROM unnest(NEW.entities_norm) e ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;
CREATE TRIGGER memories_entities AFTER INSERT OR UPDATE OF entities_norm ON memories
    FOR EACH ROW EXECUTE FUNCTION memory_entities_of_row();
DROP INDEX IF EXISTS memories_entities;
";

/// Version 6: the tamper-evident history (see `chain` and docs/history-chain.md), as in the
/// SQLite store: every turn and memory event of a namespace is an entry of that namespace's
/// hash chain in `history_chain` (`seq` 1, 2, 3 … per namespace; `kind` 'turn' or 'event';
/// `ref_id` the turn id or the event seq; the content hash recorded at write time, so a row
/// whose content is later replaced by a tombstone can keep its place); `chain_heads` holds each
/// namespace's last entry and is the row a write locks to append. The query role may insert
/// entries and move heads, never update or delete an entry. The rows written before this
/// version are chained once, in Rust, at the first use of the store after the migration
/// (`chain::backfill_once`: per namespace by time, turns before events, then id), so an old
/// store verifies after the upgrade.
const V6: &str = "
CREATE TABLE history_chain (
    namespace    TEXT   NOT NULL,
    seq          BIGINT NOT NULL,
    kind         TEXT   NOT NULL CHECK (kind IN ('event', 'turn')),
    ref_id       BIGINT NOT NULL,
    content_hash BYTEA  NOT NULL,
    prev_hash    BYTEA  NOT NULL,
    entry_hash   BYTEA  NOT NULL,
    PRIMARY KEY (namespace, seq)
);
CREATE TABLE chain_heads (
    namespace TEXT   PRIMARY KEY,
    seq       BIGINT NOT NULL,
    hash      BYTEA  NOT NULL
);
ALTER TABLE history_chain ENABLE ROW LEVEL SECURITY;
ALTER TABLE history_chain FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON history_chain
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*')
    WITH CHECK (namespace = current_setting('mnemo.namespace', true));
ALTER TABLE chain_heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE chain_heads FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON chain_heads
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*')
    WITH CHECK (namespace = current_setting('mnemo.namespace', true));
";

/// Version 7: erasure (see `erase` and docs/erasure.md), as in the SQLite store: `erasures`
/// keeps each erasure's content-free record, `erased_rows` the rows it changed with their
/// content hashes before and after; an erasure is an entry of the history chain of kind
/// `erasure`; `memories.erased_by` names the erasure that emptied a memory. The query role may
/// delete an erased memory's `memory_entities` rows (its only DELETE).
const V7: &str = "
ALTER TABLE history_chain DROP CONSTRAINT IF EXISTS history_chain_kind_check;
ALTER TABLE history_chain ADD CONSTRAINT history_chain_kind_check CHECK (kind IN ('event', 'turn', 'erasure'));
CREATE TABLE erasures (
    id        BIGSERIAL PRIMARY KEY,
    namespace TEXT   NOT NULL,
    at        BIGINT NOT NULL,
    reason    TEXT   NOT NULL,
    by_whom   TEXT,
    target    TEXT   NOT NULL,
    memories  TEXT   NOT NULL,
    turns     TEXT   NOT NULL,
    redacted  TEXT   NOT NULL
);
CREATE INDEX erasures_namespace ON erasures (namespace, id);
CREATE TABLE erased_rows (
    erasure_id BIGINT NOT NULL REFERENCES erasures (id),
    namespace  TEXT   NOT NULL,
    kind       TEXT   NOT NULL,
    ref_id     BIGINT NOT NULL,
    before     BYTEA  NOT NULL,
    after      BYTEA  NOT NULL,
    PRIMARY KEY (kind, ref_id, erasure_id)
);
CREATE INDEX erased_rows_erasure ON erased_rows (erasure_id);
ALTER TABLE memories ADD COLUMN erased_by BIGINT;
ALTER TABLE erasures ENABLE ROW LEVEL SECURITY;
ALTER TABLE erasures FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON erasures
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*')
    WITH CHECK (namespace = current_setting('mnemo.namespace', true));
ALTER TABLE erased_rows ENABLE ROW LEVEL SECURITY;
ALTER TABLE erased_rows FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON erased_rows
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*')
    WITH CHECK (namespace = current_setting('mnemo.namespace', true));
";

/// Version 8: world time (see `mnemo_contract::world_time` and docs/time.md): the interval in
/// which a memory's fact holds, in ms since the epoch, either end NULL when not stated.
const V8: &str = "
ALTER TABLE memories ADD COLUMN valid_from BIGINT;
ALTER TABLE memories ADD COLUMN valid_to BIGINT;
";
