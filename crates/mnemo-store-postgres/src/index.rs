//! The PostgreSQL [`Index`]: full text (any-term, ranked) and pgvector HNSW, fused by
//! weighted reciprocal rank exactly as the tantivy index (`mnemo_contract::fusion`).
//!
//! - Documents live in `index_docs` keyed by (namespace, id); an upsert never overwrites a
//!   newer revision of a document, and a removed document stays as a marker that no upsert
//!   revives (a tombstone is final), so several processes syncing one shared index cannot
//!   bring back a forgotten memory by replaying an older change.
//! - Vectors are stored untyped as f32, scaled to unit length (cosine does not depend on the
//!   length; the query is scaled too); the first vector fixes the dimensions (all vectors must
//!   then have them, at most [`MAX_DIMS`]), and the HNSW index is built on their
//!   half-precision copy, `embedding::halfvec(dims)` (schema V4 on; a unit vector's components
//!   always fit half precision, whose range ends at 65504): the graph takes 79 MB instead of
//!   130 at 100k, and a search in the server ~8% less time (bench/RESULTS.md, stop 21). The
//!   index chooses and orders the `limit` candidates by half-precision distance (at the
//!   boundary a document within ~1e-3 of the last one's distance may take its place); each
//!   hit's score is then the exact f32 cosine, and the hits are sorted by it. The graph is
//!   built at once when the first upsert is small, but after a bulk load (an upsert of [`BULK_UPSERT`] documents or
//!   more: a replay, a migration, a benchmark load) only at the next `flush`, small upsert or
//!   dense search (which waits for it), because building HNSW over loaded rows is much faster
//!   than inserting into it row by row. The build blocks writes to the index while it runs.
//! - Dense search runs HNSW with a candidate list (`hnsw.ef_search`) of `max(ef_search,
//!   limit)`, at most 1000 ([`ef_for`]; `ef_search` defaults to 200). At 10k memories of the
//!   bench's corpus 100 candidates found .90 of the exact top 10, 200 .97; at 100k 100 already
//!   found all of them, but the default must hold at every size (bench/RESULTS.md,
//!   "PostgreSQL dense recall at every size").
//! - The HNSW scan is iterative (pgvector 0.8, `hnsw.iterative_scan = strict_order`), so the
//!   namespace filter does not cut the candidate list to `ef_search` rows; and if the scan
//!   still returns fewer than `limit` rows while the namespace holds more vectors (the
//!   iterative scan stops at `hnsw.max_scan_tuples`), the query is answered by an exact scan
//!   of the namespace instead: no candidate is lost.
//! - Lexical search takes its candidates from a postings table (`index_terms`: namespace,
//!   lexeme, id, and the posting's share of `ts_rank`; B-tree): each query term's newest
//!   [`POSTINGS_PER_TERM`] documents of the namespace, ranked from the postings alone: the
//!   sum of a document's postings' weights is its `ts_rank` for the any-term query, so the
//!   documents themselves are not read. Only when a term's postings reach the bound (a
//!   candidate may then lack a cut posting's weight) are the candidates checked against
//!   their `tsvector` and ranked by `ts_rank` over it.
//!   Not a GIN index on the `tsvector`: `@@` is not leakproof, so under row-level security the
//!   planner may not use it as an index condition and matched every row of the namespace. The
//!   cost is bounded per term; `ts_rank` reads only the document and the query, so one
//!   namespace's scores never depend on another's content.
//! - Every write is committed at once, so the watermark is durable when set; `flush` only
//!   builds an HNSW index a bulk load deferred.
//! - The stamp (which store and which embedder the index was built from, see [`IndexStamp`])
//!   is one row of `index_stamp` (schema V6 on), as JSON: every server sharing the index reads
//!   the same one, so they agree on which embedder its vectors came from (a server configured
//!   with another one rebuilds the index at startup, and its stamp names that one after).
//!   `clear` deletes it with the documents.
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use async_trait::async_trait;
use mnemo_contract::fusion::{fusion_depth, rrf, sort_hits, FusionSettings};
use mnemo_contract::{
    CoreError, Hit, Index, IndexDoc, IndexStamp, IndexState, MemoryId, Namespace, Result, SearchMode, SearchQuery,
};
use serde::Deserialize;
use tokio::sync::OnceCell;

use crate::db::{Db, Scope};
use crate::error::{DbContext, PgError};
use crate::settings::PgSettings;

const STEPS: &[&str] = &[V1, V2, V3, V4, V5, V6];

/// The HNSW index's name (schema V4 on: over the vectors' half-precision copy).
pub const HNSW_INDEX: &str = "index_docs_hnsw_half";

/// The f32 HNSW index of schemas 1–3 (dropped by V4/V5, and by any graph build).
const LEGACY_HNSW_INDEX: &str = "index_docs_hnsw";

/// Dimensions at most: pgvector's HNSW indexes `halfvec` of up to 4,000 dimensions.
pub const MAX_DIMS: usize = 4000;

/// Lexical candidates taken per query term: the newest postings of the term in the namespace.
/// It bounds the lexical cost (at most this many rows ranked per term) however many documents
/// a common term matches; a rarer term's documents are all candidates still.
pub const POSTINGS_PER_TERM: i64 = 1000;

/// An upsert of this many documents or more is a bulk load: it does not build the HNSW
/// index (see the module docs).
pub const BULK_UPSERT: usize = 1000;

const V1: &str = "
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE index_docs (
    namespace TEXT    NOT NULL,
    id        BIGINT  NOT NULL,
    rev       BIGINT  NOT NULL DEFAULT 0,
    removed   BOOLEAN NOT NULL DEFAULT false,
    content   TEXT,
    tsv       tsvector,
    embedding vector,
    PRIMARY KEY (namespace, id)
);
CREATE INDEX index_docs_tsv ON index_docs USING gin (tsv);
CREATE TABLE index_meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO index_meta (key, value) VALUES ('watermark', 0), ('dims', 0);
ALTER TABLE index_docs ENABLE ROW LEVEL SECURITY;
ALTER TABLE index_docs FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON index_docs
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*');
";

/// Postings: one row per (namespace, lexeme, document), for the lexical candidates. Why not
/// the GIN index on `tsv`: the match operator `@@` is not leakproof, so under row-level
/// security PostgreSQL may not use it as an index condition (it would run before the policy)
/// and scanned every row of the namespace (350 ms at 100k). Text equality is leakproof: the
/// B-tree on (namespace, term, id) answers a term's newest postings directly.
const V2: &str = "
SELECT set_config('mnemo.namespace', '*', true);
CREATE TABLE index_terms (
    namespace TEXT   NOT NULL,
    term      TEXT   NOT NULL,
    id        BIGINT NOT NULL,
    PRIMARY KEY (namespace, term, id)
);
ALTER TABLE index_terms ENABLE ROW LEVEL SECURITY;
ALTER TABLE index_terms FORCE ROW LEVEL SECURITY;
CREATE POLICY namespace_partition ON index_terms
    USING (namespace = current_setting('mnemo.namespace', true) OR current_setting('mnemo.namespace', true) = '*');
INSERT INTO index_terms (namespace, term, id)
    SELECT d.namespace, l.lexeme, d.id FROM index_docs d, unnest(d.tsv) l WHERE NOT d.removed AND d.tsv IS NOT NULL
    ON CONFLICT DO NOTHING;
DROP INDEX IF EXISTS index_docs_tsv;
";

/// A posting's share of `ts_rank` (default weights, normalisation 0) for an any-term query,
/// as SQL over the lexeme's positions array: for positions p1..pk (all of weight D, 0.1, as
/// `to_tsvector` writes them) `ts_rank` adds 0.1 · Σ_{j≤k} 1/j² (then divides by π²/6 and by
/// the query's distinct terms); no positions count as one, as in `ts_rank`.
macro_rules! posting_weight {
    ($positions:literal) => {
        concat!(
            "(SELECT sum(0.1::float8 / (j * j)) FROM generate_series(1, COALESCE(cardinality(",
            $positions,
            "), 1)) j)::real"
        )
    };
}

/// Version 3: each posting carries its share of the document's `ts_rank` (`weight`, see
/// `posting_weight`), in the primary key's leaf (`INCLUDE`), so the lexical candidates are
/// ranked from an index-only scan of the postings (from V5 on, with no document read unless a
/// term's postings were cut; see `lexical`). Before, every candidate's row was read (a
/// primary-key probe and a wide heap row each): ~3× the server CPU.
const V3: &str = concat!(
    "
SELECT set_config('mnemo.namespace', '*', true);
ALTER TABLE index_terms ADD COLUMN weight REAL;
UPDATE index_terms t SET weight = s.weight FROM (
    SELECT d.namespace, d.id, l.lexeme, ",
    posting_weight!("l.positions"),
    " AS weight
    FROM index_docs d, unnest(d.tsv) l WHERE NOT d.removed AND d.tsv IS NOT NULL) s
    WHERE t.namespace = s.namespace AND t.id = s.id AND t.term = s.lexeme;
DELETE FROM index_terms WHERE weight IS NULL;
ALTER TABLE index_terms ALTER COLUMN weight SET NOT NULL;
ALTER TABLE index_terms DROP CONSTRAINT index_terms_pkey;
ALTER TABLE index_terms ADD PRIMARY KEY (namespace, term, id) INCLUDE (weight);
"
);

/// Version 4: the HNSW graph is built over the vectors' half-precision copy (named
/// [`HNSW_INDEX`]) instead of `embedding::vector(dims)`: the f32 graph is dropped here and the
/// half-precision one built at the next flush, small upsert or dense search (as after a bulk
/// load; writes to the index and dense searches wait for that build). (A development build,
/// 03aff11, used version 4 for the same drop and an f32 graph of m = 8; V5 drops that too.)
const V4: &str = "DROP INDEX IF EXISTS index_docs_hnsw;";

/// Version 5: the postings made exact. From here the lexical search ranks documents from
/// their postings alone (see `lexical`), so a posting that an index of version 3 left behind
/// — written by two processes before index writes took the namespace lock, it may name a
/// lexeme its document no longer holds, or a removed document — would be served. Every
/// posting is checked against its document once: stale ones are deleted, wrong weights
/// recomputed. Also drops a leftover f32 graph (see V4), and scales to unit length the stored
/// vectors that half precision cannot hold (a component beyond 65504; later writes are scaled
/// before they are stored), so that the graph can be built over them.
const V5: &str = concat!(
    "
SELECT set_config('mnemo.namespace', '*', true);
DROP INDEX IF EXISTS index_docs_hnsw;
UPDATE index_docs SET embedding = l2_normalize(embedding)
    WHERE embedding IS NOT NULL AND (SELECT max(abs(x)) FROM unnest(embedding::real[]) x) > 65504;
CREATE TEMP TABLE live_postings ON COMMIT DROP AS
    SELECT d.namespace, d.id, l.lexeme AS term, ",
    posting_weight!("l.positions"),
    " AS weight
    FROM index_docs d, unnest(d.tsv) l WHERE NOT d.removed AND d.tsv IS NOT NULL;
DELETE FROM index_terms t WHERE NOT EXISTS (
    SELECT 1 FROM live_postings p WHERE p.namespace = t.namespace AND p.term = t.term AND p.id = t.id);
UPDATE index_terms t SET weight = p.weight FROM live_postings p
    WHERE p.namespace = t.namespace AND p.term = t.term AND p.id = t.id AND t.weight IS DISTINCT FROM p.weight;
INSERT INTO index_terms (namespace, term, id, weight) SELECT namespace, term, id, weight FROM live_postings
    ON CONFLICT (namespace, term, id) DO NOTHING;
"
);

/// Version 6: the index's stamp (see the module docs), one row at most (`singleton` is
/// always true), the JSON of [`IndexStamp`]. `index_meta` holds numbers only, and the stamp is a
/// document that grows with the contract (older stamps lack newer fields: they read as
/// their defaults). Before it the index recorded no stamp: the first server of this version
/// to start rebuilds it once, since it cannot tell which embedder its vectors came from.
const V6: &str = "
CREATE TABLE IF NOT EXISTS index_stamp (
    singleton BOOLEAN PRIMARY KEY DEFAULT true CHECK (singleton),
    stamp     TEXT    NOT NULL
);
";

const GRANTS: &str = "
GRANT USAGE ON SCHEMA {schema} TO {role};
GRANT SELECT, INSERT, UPDATE, DELETE ON {schema}.index_docs, {schema}.index_meta, {schema}.index_terms, {schema}.index_stamp TO {role};
GRANT SELECT ON {schema}.mnemo_schema_versions TO {role};
";

/// The `[index]` section of kind `postgres`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexSettings {
    /// As [`PgSettings::url`].
    #[serde(default)]
    pub url: String,
    /// As [`PgSettings::schema`].
    #[serde(default = "default_schema")]
    pub schema: String,
    /// As [`PgSettings::throwaway`].
    #[serde(default)]
    pub throwaway: bool,
    /// As [`PgSettings::pool_size`].
    #[serde(default = "default_pool_size")]
    pub pool_size: usize,
    /// Fusion weight of the lexical ranking.
    #[serde(default = "default_lexical_weight")]
    pub lexical_weight: f32,
    /// Fusion weight of the dense ranking.
    #[serde(default = "default_dense_weight")]
    pub dense_weight: f32,
    /// The RRF constant.
    #[serde(default = "default_rrf_k")]
    pub rrf_k: f32,
    /// HNSW candidate list size (pgvector's `hnsw.ef_search`, 1..=1000, default 200): a dense
    /// search asking `limit` rows keeps `max(ef_search, limit)` candidates, at most 1000
    /// ([`ef_for`]). So the engine's recall (64 candidates, fusion depth 100) and any search of
    /// up to 200 rows search with `ef_search`. At 10k memories of the bench's corpus 100 found
    /// .90 of the exact dense top 10, 150 .948, 200 .97; at 100k 100 already found all of them,
    /// and 200 costs ~2× the server time of 100 per search there (bench/RESULTS.md, "PostgreSQL
    /// dense recall at every size"): a deployment whose namespaces are large and clustered can
    /// set 100 back.
    #[serde(default = "default_ef_search")]
    pub ef_search: u32,
    /// Links per node of the HNSW graph (pgvector's `m`, 2..=100), used when the graph is
    /// built (a new index, after a bulk load or a `clear`); a graph built with another value
    /// is kept until then. Fewer links read fewer graph elements per search: at 100k memories
    /// 8 took ~30% less server CPU per dense search than 16 with recall@10 still ≥ .99, but
    /// at 10k recall@10 fell from ~.88 to ~.73 (bench/RESULTS.md, "PostgreSQL recall at 100k:
    /// the search's own cost"; measured on the f32 graph; on the half-precision one m 10 took
    /// 18% less time per search than 16 at 100k, stop 21), so the default stays pgvector's 16.
    #[serde(default = "default_hnsw_m")]
    pub hnsw_m: u32,
}

fn default_schema() -> String {
    PgSettings::default().schema
}
fn default_pool_size() -> usize {
    PgSettings::default().pool_size
}
fn default_lexical_weight() -> f32 {
    FusionSettings::default().lexical_weight
}
fn default_dense_weight() -> f32 {
    FusionSettings::default().dense_weight
}
fn default_rrf_k() -> f32 {
    FusionSettings::default().rrf_k
}
fn default_ef_search() -> u32 {
    200
}

/// pgvector's largest `hnsw.ef_search`.
const MAX_EF_SEARCH: u32 = 1000;

/// The HNSW candidate list of a dense search asking `limit` rows, with `[index] ef_search` =
/// `setting`: the setting, or the rows asked when they are more, at most 1000 (see
/// [`IndexSettings::ef_search`]). The setting alone decides the engine's recall (fusion depth
/// 100 at the default candidates), so lowering it lowers that search's cost.
pub fn ef_for(limit: usize, setting: u32) -> u32 {
    let rows = limit.min(MAX_EF_SEARCH as usize) as u32;
    setting.max(rows).min(MAX_EF_SEARCH)
}

fn default_hnsw_m() -> u32 {
    16
}

impl IndexSettings {
    /// Defaults on `url`.
    pub fn new(url: &str) -> Self {
        IndexSettings {
            url: url.to_string(),
            schema: default_schema(),
            throwaway: false,
            pool_size: default_pool_size(),
            lexical_weight: default_lexical_weight(),
            dense_weight: default_dense_weight(),
            rrf_k: default_rrf_k(),
            ef_search: default_ef_search(),
            hnsw_m: default_hnsw_m(),
        }
    }

    fn connection(&self) -> PgSettings {
        PgSettings {
            url: self.url.clone(),
            schema: self.schema.clone(),
            throwaway: self.throwaway,
            pool_size: self.pool_size,
        }
    }

    fn fusion(&self) -> FusionSettings {
        FusionSettings {
            lexical_weight: self.lexical_weight,
            dense_weight: self.dense_weight,
            rrf_k: self.rrf_k,
            ..FusionSettings::default()
        }
    }
}

/// The PostgreSQL index.
#[derive(Debug)]
pub struct PostgresIndex {
    db: Db,
    fusion: FusionSettings,
    ef_search: u32,
    hnsw_m: u32,
    ready: OnceCell<()>,
    /// The HNSW index is known to exist (reset by `clear`; another process's `clear` only
    /// makes a later search exact until the next build).
    hnsw_built: AtomicBool,
    /// The vectors' dimensions as last read (0: not known); checked against `index_meta` in
    /// every dense search's transaction.
    dims: AtomicI64,
    /// The stamp this process last read or wrote (None: not known). The engine records the
    /// stamp after every sync round, and with this store it rarely changes: an unchanged one
    /// is not written again (a round trip per write saved). Reset by `clear`.
    stamp: std::sync::Mutex<Option<IndexStamp>>,
}

/// What the HNSW graph indexes for vectors of `dims` dimensions: each (unit) vector in half
/// precision (see the module docs). A dense search orders by the same expression, so that the
/// planner answers it from the graph.
fn graph_key(dims: i64) -> String {
    format!("embedding::halfvec({dims})")
}

/// `v` scaled to unit length (as stored and searched; a zero or non-finite length leaves it
/// as it is, for pgvector to index or refuse as before).
fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt();
    if norm.is_finite() && norm > 0.0 {
        v.iter().map(|x| (f64::from(*x) / norm) as f32).collect()
    } else {
        v.to_vec()
    }
}

/// One value of `index_meta` (by key, `$1`).
const META_SQL: &str = "SELECT value FROM index_meta WHERE key = $1";

/// The value `META_SQL` read for `key`; an error if the row is missing.
fn meta_value(rows: &[tokio_postgres::Row], key: &str) -> Result<i64> {
    match rows.first() {
        Some(r) => r.try_get(0).db("read index_meta"),
        None => Err(CoreError::index_message(
            mnemo_contract::IndexErrorKind::Damaged,
            format!("index_meta has no {key:?} row: the index schema is damaged"),
        )),
    }
}

/// A vector as pgvector's text form (Rust prints the shortest text that parses back to the
/// same f32, so the round trip is exact).
fn vector_text(v: &[f32]) -> String {
    let parts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", parts.join(","))
}

impl PostgresIndex {
    /// An index on `settings` (connects and migrates at first use).
    pub fn new(settings: &IndexSettings) -> std::result::Result<PostgresIndex, PgError> {
        settings.fusion().validate().map_err(|e| PgError::Settings(e.to_string()))?;
        if settings.ef_search == 0 || settings.ef_search > MAX_EF_SEARCH {
            return Err(PgError::Settings(format!("ef_search = {} must be 1..=1000", settings.ef_search)));
        }
        if !(2..=100).contains(&settings.hnsw_m) {
            return Err(PgError::Settings(format!("hnsw_m = {} must be 2..=100", settings.hnsw_m)));
        }
        Ok(PostgresIndex {
            db: Db::connect(&settings.connection())?,
            fusion: settings.fusion(),
            ef_search: settings.ef_search,
            hnsw_m: settings.hnsw_m,
            ready: OnceCell::new(),
            hnsw_built: AtomicBool::new(false),
            dims: AtomicI64::new(0),
            stamp: std::sync::Mutex::new(None),
        })
    }

    /// The database handle.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The stamp this process last read or wrote. Only a cache, held for no await: a panic
    /// while it was held cannot leave it half written, so a poisoned lock is taken as it is.
    fn known_stamp(&self) -> std::sync::MutexGuard<'_, Option<IndexStamp>> {
        self.stamp.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn ready(&self) -> Result<()> {
        self.ready.get_or_try_init(|| self.db.migrate("index", STEPS, GRANTS)).await?;
        Ok(())
    }

    async fn meta(tx: &deadpool_postgres::Transaction<'_>, key: &str) -> Result<i64> {
        let stmt = tx.prepare_cached(META_SQL).await.db("prepare")?;
        let rows = tx.query(&stmt, &[&key]).await.db("read index_meta")?;
        meta_value(&rows, key)
    }

    /// Fix the dimensions at `dims` if unset; an error if they are set to something else.
    async fn ensure_dims(&self, dims: usize) -> Result<()> {
        if dims > MAX_DIMS {
            return Err(CoreError::InvalidInput(format!(
                "a vector of {dims} dimensions: the PostgreSQL index takes at most {MAX_DIMS} \
                 (pgvector's HNSW over half-precision vectors)"
            )));
        }
        let mut client = self.db.client().await?;
        let tx = self.db.begin_as_owner(&mut client).await?;
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1), hashtext('index-ddl'))", &[&self.db.schema()])
            .await
            .db("lock the index schema")?;
        let have = Self::meta(&tx, "dims").await?;
        if have == 0 {
            tx.execute("UPDATE index_meta SET value = $1 WHERE key = 'dims'", &[&(dims as i64)])
                .await
                .db("record the dimensions")?;
        } else if have != dims as i64 {
            return Err(CoreError::InvalidInput(format!(
                "a vector of {dims} dimensions, but this index holds vectors of {have} dimensions \
                 (another embedder?): rebuild the index"
            )));
        }
        tx.commit().await.db("commit")?;
        self.dims.store(dims as i64, Ordering::Release);
        Ok(())
    }

    /// Build the HNSW index if the dimensions are fixed and it does not exist yet.
    async fn ensure_hnsw(&self) -> Result<()> {
        if self.hnsw_built.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut client = self.db.client().await?;
        let tx = self.db.begin_as_owner(&mut client).await?;
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1), hashtext('index-ddl'))", &[&self.db.schema()])
            .await
            .db("lock the index schema")?;
        let dims = Self::meta(&tx, "dims").await?;
        if dims == 0 {
            return tx.commit().await.db("commit");
        }
        let exists: bool = tx
            .query_one("SELECT to_regclass($1) IS NOT NULL", &[&HNSW_INDEX])
            .await
            .db("look for the HNSW index")?
            .try_get(0)
            .db("look for the HNSW index")?;
        if !exists {
            // Memory for the build (this transaction only): a graph built in memory is
            // several times faster than one spilled to disk. A leftover f32 graph (a process
            // of an older version built it after the migration dropped it) goes too: it would
            // cost every write.
            let sql = format!(
                "SET LOCAL maintenance_work_mem = '256MB'; DROP INDEX IF EXISTS {LEGACY_HNSW_INDEX}; \
                 CREATE INDEX IF NOT EXISTS {HNSW_INDEX} ON index_docs USING hnsw \
                 (({}) halfvec_cosine_ops) WITH (m = {})",
                graph_key(dims),
                self.hnsw_m
            );
            tx.batch_execute(&sql).await.db("build the HNSW index")?;
        }
        tx.commit().await.db("commit")?;
        self.hnsw_built.store(true, Ordering::Release);
        Ok(())
    }

    async fn lexical(&self, q: &SearchQuery, limit: usize) -> Result<Vec<Hit>> {
        // Candidates: each query term's newest postings (bounded). When no term reached the
        // bound, every matching document is a candidate with all its matched terms' weights,
        // so the sum of its postings' weights is its `ts_rank` (same formula, summed in float8
        // and rounded to real; `ts_rank` sums in float4: they differ in the last bits): the
        // documents are ranked from an index-only scan of the postings, never read. The
        // postings are exact: every index write replaces a document's postings in the
        // transaction that writes it, under the namespace's index-write lock (no stale posting
        // is left for a check against the document to drop; test
        // `rewritten_and_removed_documents_leave_no_stale_postings`; V5 checked the postings
        // older versions left). When a term reaches the bound, a candidate may lack that
        // term's weight (its posting was cut): then every candidate is checked against its
        // document and ranked by `ts_rank` over it (the `slow` branch; only one branch runs,
        // the other's filter is false).
        let sql = r"
            WITH terms AS (
                SELECT DISTINCT lexeme AS term FROM unnest(to_tsvector('english', $2)) WHERE lexeme !~ '[''\\]'),
            q AS (SELECT string_agg(quote_literal(term), ' | ')::tsquery AS q, count(*)::float8 AS n FROM terms),
            raw AS (
                SELECT terms.term, c.id, c.weight FROM terms CROSS JOIN LATERAL (
                    SELECT t.id, t.weight FROM index_terms t WHERE t.namespace = $1 AND t.term = terms.term
                    ORDER BY t.id DESC LIMIT $4) c),
            cut AS (
                SELECT COALESCE(bool_or(k >= $4), false) AS truncated
                FROM (SELECT count(*) AS k FROM raw GROUP BY term) per_term),
            cand AS (SELECT id, (sum(weight::float8) / 1.64493406685 / (SELECT n FROM q))::real AS w FROM raw GROUP BY id),
            fast AS (
                SELECT id, w::float8 AS r FROM cand WHERE NOT (SELECT truncated FROM cut)
                ORDER BY w DESC, id DESC LIMIT $3),
            slow AS (
                SELECT d.id, ts_rank(d.tsv, q.q)::float8 AS r
                FROM cand JOIN index_docs d ON d.namespace = $1 AND d.id = cand.id, q
                WHERE (SELECT truncated FROM cut) AND NOT d.removed AND d.tsv @@ q.q
                ORDER BY r DESC, d.id DESC LIMIT $3)
            SELECT id, r FROM fast UNION ALL SELECT id, r FROM slow";
        let rows = self
            .db
            .pipelined(
                Scope::Namespace(&q.namespace),
                "",
                sql,
                &[&q.namespace.as_str(), &q.text, &(limit as i64), &POSTINGS_PER_TERM],
            )
            .await?;
        let mut hits = Vec::with_capacity(rows.len());
        for r in rows {
            let id: i64 = r.try_get(0).db("lexical search")?;
            let rank: f64 = r.try_get(1).db("lexical search")?;
            hits.push((MemoryId(id), rank));
        }
        let best = hits.iter().map(|h| h.1).fold(0.0f64, f64::max);
        let mut out: Vec<Hit> = hits
            .into_iter()
            .map(|(id, r)| Hit { id, score: if best > 0.0 { (r / best).clamp(0.0, 1.0) as f32 } else { 0.0 } })
            .collect();
        sort_hits(&mut out);
        Ok(out)
    }

    /// The dimensions of the index's vectors (0: none yet), read from `index_meta`.
    async fn read_dims(&self, ns: &Namespace) -> Result<i64> {
        let rows = self.db.pipelined(Scope::Namespace(ns), "", META_SQL, &[&"dims"]).await?;
        let dims = meta_value(&rows, "dims")?;
        self.dims.store(dims, Ordering::Release);
        Ok(dims)
    }

    async fn dense(&self, q: &SearchQuery, e: &[f32], limit: usize) -> Result<Vec<Hit>> {
        let mut dims = self.dims.load(Ordering::Acquire);
        if dims == 0 || dims != e.len() as i64 {
            // Not known yet, or changed by a `clear` of another process: ask the index.
            dims = self.read_dims(&q.namespace).await?;
        }
        let v = pgvector::Vector::from(unit(e));
        let ns = q.namespace.as_str();
        let lim = limit as i64;
        let ef = ef_for(limit, self.ef_search);
        // `enable_sort = off`: the planner otherwise weighs the HNSW scan against a scan of
        // the namespace with a top-N sort, and its choice flips with the statistics (after an
        // ANALYZE the 100k bench's dense search became that exact scan, 154 ms instead of 6).
        // No plan but the HNSW index yields rows in distance order without a sort.
        let settings = format!(
            " SET LOCAL hnsw.ef_search = {ef}; SET LOCAL hnsw.iterative_scan = strict_order; SET LOCAL enable_sort = off;"
        );
        // The dimensions are read in the same transaction as the search (same round trip):
        // if another process cleared the index and it now holds other dimensions, the
        // search is asked once more with them.
        let mut rows = Vec::new();
        for attempt in 0..2 {
            if dims == 0 {
                return Ok(vec![]);
            }
            if e.len() as i64 != dims {
                return Err(CoreError::InvalidInput(format!(
                    "the query vector has {} dimensions, the index's vectors have {dims}",
                    e.len()
                )));
            }
            // Ordered by the half-precision distance (the index's), scored exactly.
            let ann = format!(
                "SELECT id, (embedding::vector({dims}) <=> $2::vector({dims}))::float8 FROM index_docs \
                 WHERE namespace = $1 AND NOT removed AND embedding IS NOT NULL \
                 ORDER BY {} <=> $2::halfvec({dims}) LIMIT $3",
                graph_key(dims)
            );
            let got = self
                .db
                .pipelined2(Scope::Namespace(&q.namespace), &settings, (META_SQL, &[&"dims"]), (&ann, &[&ns, &v, &lim]))
                .await;
            match got {
                Ok((meta, found)) if meta_value(&meta, "dims")? == dims => {
                    rows = found;
                    break;
                }
                other => {
                    let now = self.read_dims(&q.namespace).await?;
                    if now == dims || attempt == 1 {
                        let (_, found) = other?;
                        rows = found;
                        break;
                    }
                    dims = now;
                }
            }
        }
        if rows.len() < limit {
            let have: i64 = self
                .db
                .pipelined(
                    Scope::Namespace(&q.namespace),
                    "",
                    "SELECT count(*) FROM index_docs WHERE namespace = $1 AND NOT removed AND embedding IS NOT NULL",
                    &[&ns],
                )
                .await?
                .first()
                .map(|r| r.try_get(0))
                .transpose()
                .db("count vectors")?
                .unwrap_or(0);
            if have > rows.len() as i64 {
                // The approximate scan gave up early: answer exactly (no index on this form).
                let exact = "SELECT id, (embedding <=> $2)::float8 FROM index_docs \
                     WHERE namespace = $1 AND NOT removed AND embedding IS NOT NULL \
                     ORDER BY embedding <=> $2, id LIMIT $3";
                rows = self.db.pipelined(Scope::Namespace(&q.namespace), "", exact, &[&ns, &v, &lim]).await?;
            }
        }
        let mut found = Vec::with_capacity(rows.len());
        for r in rows {
            let id: i64 = r.try_get(0).db("dense search")?;
            let d: Option<f64> = r.try_get(1).db("dense search")?;
            found.push((id, d.filter(|d| d.is_finite()).unwrap_or(f64::INFINITY)));
        }
        // The index ordered them by half-precision distances: order them by the exact ones
        // (ties to the lower id, as the exact scan), before clamping makes the far ones equal.
        found.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        let out = found
            .into_iter()
            .map(|(id, d)| {
                let sim = if d.is_finite() { 1.0 - d } else { 0.0 };
                Hit { id: MemoryId(id), score: sim.clamp(0.0, 1.0) as f32 }
            })
            .collect();
        Ok(out)
    }

    /// One ranking, each statement in a pipelined read transaction of its own (one round
    /// trip): lexical, or dense on `embedding`. A deferred HNSW build is done first, on its
    /// own connection, so that no search holds one connection while it waits for another.
    async fn ranking(&self, q: &SearchQuery, embedding: Option<&[f32]>, limit: usize) -> Result<Vec<Hit>> {
        match embedding {
            None => self.lexical(q, limit).await,
            Some(e) => {
                self.ensure_hnsw().await?;
                self.dense(q, e, limit).await
            }
        }
    }

    /// The exact `k` nearest vectors of the namespace (no index), for measuring the HNSW
    /// answer against.
    pub async fn dense_exact(&self, namespace: &Namespace, e: &[f32], k: usize) -> Result<Vec<Hit>> {
        self.ready().await?;
        let mut client = self.db.client().await?;
        let tx = self.db.begin(&mut client, Scope::Namespace(namespace)).await?;
        let v = pgvector::Vector::from(e.to_vec());
        let rows = tx
            .query(
                "SELECT id, (embedding <=> $2)::float8 FROM index_docs \
                 WHERE namespace = $1 AND NOT removed AND embedding IS NOT NULL ORDER BY embedding <=> $2, id LIMIT $3",
                &[&namespace.as_str(), &v, &(k as i64)],
            )
            .await
            .db("exact dense search")?;
        tx.commit().await.db("commit")?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let id: i64 = r.try_get(0).db("exact dense search")?;
            let d: Option<f64> = r.try_get(1).db("exact dense search")?;
            out.push(Hit { id: MemoryId(id), score: d.map(|d| (1.0 - d).clamp(0.0, 1.0)).unwrap_or(0.0) as f32 });
        }
        Ok(out)
    }

    /// The number of vectors of the namespace (the exact fallback's bound).
    pub async fn vector_count(&self, namespace: &Namespace) -> Result<u64> {
        self.ready().await?;
        let mut client = self.db.client().await?;
        let tx = self.db.begin(&mut client, Scope::Namespace(namespace)).await?;
        let n: i64 = tx
            .query_one(
                "SELECT count(*) FROM index_docs WHERE namespace = $1 AND NOT removed AND embedding IS NOT NULL",
                &[&namespace.as_str()],
            )
            .await
            .db("count vectors")?
            .try_get(0)
            .db("count vectors")?;
        tx.commit().await.db("commit")?;
        Ok(n.max(0) as u64)
    }
}

/// Serialise the index writes of each namespace across processes, in the transaction: two
/// servers catching up with the same changes at once (each replays the store's change feed
/// into the shared index) would otherwise lock the same postings in different orders and
/// deadlock. Namespaces are locked in sorted order, so two batches never wait on each other
/// in a cycle; the key space is the index's own, apart from the store's writer locks.
/// One statement, one round trip: PostgreSQL evaluates the volatile lock calls after the sort.
async fn lock_index_writes(tx: &deadpool_postgres::Transaction<'_>, schema: &str, namespaces: &[&str]) -> Result<()> {
    let key = format!("{schema}:index-write");
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1), hashtext(ns)) FROM unnest($2::text[]) AS u(ns) ORDER BY ns",
        &[&key, &namespaces],
    )
    .await
    .db("lock the namespaces' index writes")?;
    Ok(())
}

#[async_trait]
impl Index for PostgresIndex {
    async fn upsert(&self, docs: Vec<IndexDoc>) -> Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        self.ready().await?;
        let dims: Vec<usize> = docs.iter().filter_map(|d| d.embedding.as_ref().map(Vec::len)).collect();
        if let Some(first) = dims.first() {
            if let Some(other) = dims.iter().find(|d| *d != first) {
                return Err(CoreError::InvalidInput(format!(
                    "vectors of {first} and {other} dimensions in one upsert: all must have the same dimensions"
                )));
            }
            if *first == 0 {
                return Err(CoreError::InvalidInput("a vector of 0 dimensions".into()));
            }
            self.ensure_dims(*first).await?;
        }
        // The last version of an id wins (one row may be changed once per statement).
        let mut last: HashMap<(Namespace, MemoryId), usize> = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            last.insert((d.namespace.clone(), d.id), i);
        }
        let mut keep: Vec<usize> = last.into_values().collect();
        keep.sort_unstable();
        let (mut nss, mut ids, mut revs, mut texts, mut vecs) = (vec![], vec![], vec![], vec![], vec![]);
        for i in keep {
            let d = &docs[i];
            nss.push(d.namespace.as_str().to_string());
            ids.push(d.id.0);
            revs.push(i64::try_from(d.rev).unwrap_or(i64::MAX));
            texts.push(format!("{} {}", d.content, d.entities.join(" ")));
            vecs.push(d.embedding.as_deref().map(|v| vector_text(&unit(v))));
        }
        let mut client = self.db.client().await?;
        let tx = self.db.begin(&mut client, Scope::All).await?;
        let mut namespaces: Vec<&str> = nss.iter().map(String::as_str).collect();
        namespaces.sort_unstable();
        namespaces.dedup();
        lock_index_writes(&tx, self.db.schema(), &namespaces).await?;
        // The postings of the versions about to be replaced (found through their lexemes, so
        // by the postings' key). Under the namespace's index-write lock (above) no other
        // writer changes these documents meanwhile, so the postings stay exactly the
        // documents' lexemes: the lexical search ranks from them without reading a document.
        let del = tx
            .prepare_cached(
                "DELETE FROM index_terms t USING unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(ns, id, rev) \
                 JOIN index_docs d ON d.namespace = u.ns AND d.id = u.id CROSS JOIN unnest(d.tsv) l \
                 WHERE NOT d.removed AND d.rev <= u.rev \
                 AND t.namespace = d.namespace AND t.term = l.lexeme AND t.id = d.id",
            )
            .await
            .db("prepare postings delete")?;
        tx.execute(&del, &[&nss, &ids, &revs]).await.db("delete replaced postings")?;
        let stmt = tx
            .prepare_cached(
                "INSERT INTO index_docs (namespace, id, rev, removed, content, tsv, embedding) \
                 SELECT u.ns, u.id, u.rev, false, u.text, to_tsvector('english', u.text), u.vec::vector \
                 FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[]) AS u(ns, id, rev, text, vec) \
                 ON CONFLICT (namespace, id) DO UPDATE SET rev = excluded.rev, content = excluded.content, \
                 tsv = excluded.tsv, embedding = excluded.embedding \
                 WHERE NOT index_docs.removed AND index_docs.rev <= excluded.rev \
                 RETURNING namespace, id",
            )
            .await
            .db("prepare upsert")?;
        // The documents written (not those an older or removed version kept): their rows are
        // locked until commit, so their postings are replaced consistently.
        let written = tx.query(&stmt, &[&nss, &ids, &revs, &texts, &vecs]).await.db("upsert documents")?;
        let (mut w_ns, mut w_id) = (Vec::with_capacity(written.len()), Vec::with_capacity(written.len()));
        for r in written {
            w_ns.push(r.try_get::<_, String>(0).db("upsert documents")?);
            w_id.push(r.try_get::<_, i64>(1).db("upsert documents")?);
        }
        if !w_id.is_empty() {
            let ins = tx
                .prepare_cached(concat!(
                    "INSERT INTO index_terms (namespace, term, id, weight) \
                         SELECT d.namespace, l.lexeme, d.id, ",
                    posting_weight!("l.positions"),
                    " FROM unnest($1::text[], $2::bigint[]) AS u(ns, id) \
                         JOIN index_docs d ON d.namespace = u.ns AND d.id = u.id, unnest(d.tsv) l \
                         ON CONFLICT (namespace, term, id) DO UPDATE SET weight = excluded.weight"
                ))
                .await
                .db("prepare postings insert")?;
            tx.execute(&ins, &[&w_ns, &w_id]).await.db("write postings")?;
        }
        tx.commit().await.db("commit")?;
        if !dims.is_empty() && docs.len() < BULK_UPSERT {
            self.ensure_hnsw().await?;
        }
        Ok(())
    }

    async fn remove(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.ready().await?;
        let raw: Vec<i64> = ids.iter().map(|i| i.0).collect();
        let mut client = self.db.client().await?;
        let tx = self.db.begin(&mut client, Scope::Namespace(namespace)).await?;
        lock_index_writes(&tx, self.db.schema(), &[namespace.as_str()]).await?;
        let del = tx
            .prepare_cached(
                "DELETE FROM index_terms t USING index_docs d CROSS JOIN unnest(d.tsv) l \
                 WHERE d.namespace = $1 AND d.id = ANY($2) \
                 AND t.namespace = d.namespace AND t.term = l.lexeme AND t.id = d.id",
            )
            .await
            .db("prepare postings delete")?;
        tx.execute(&del, &[&namespace.as_str(), &raw]).await.db("delete postings")?;
        let stmt = tx
            .prepare_cached(
                "INSERT INTO index_docs (namespace, id, removed) SELECT $1, u.id, true FROM unnest($2::bigint[]) AS u(id) \
                 ON CONFLICT (namespace, id) DO UPDATE SET removed = true, content = NULL, tsv = NULL, embedding = NULL",
            )
            .await
            .db("prepare remove")?;
        tx.execute(&stmt, &[&namespace.as_str(), &raw]).await.db("remove documents")?;
        tx.commit().await.db("commit")
    }

    async fn search(&self, q: &SearchQuery) -> Result<Vec<Hit>> {
        if q.limit == 0 {
            return Ok(vec![]);
        }
        if q.mode == SearchMode::Dense && q.embedding.is_none() {
            return Err(CoreError::InvalidInput("a dense search needs a query embedding".into()));
        }
        self.ready().await?;
        Ok(match (q.mode, &q.embedding) {
            (SearchMode::Lexical, _) => self.ranking(q, None, q.limit).await?,
            (SearchMode::Dense, Some(e)) => self.ranking(q, Some(e.as_slice()), q.limit).await?,
            (SearchMode::Dense, None) => vec![],
            (SearchMode::Hybrid, e) => {
                let depth = fusion_depth(q.limit);
                // The two rankings on two connections at once: the server runs them in
                // parallel, so a hybrid search costs the slower of the two, not their sum.
                let dense = async {
                    match e {
                        Some(e) => self.ranking(q, Some(e.as_slice()), depth).await,
                        None => Ok(vec![]),
                    }
                };
                let (l, d) = tokio::try_join!(self.ranking(q, None, depth), dense)?;
                let l: Vec<MemoryId> = l.into_iter().map(|h| h.id).collect();
                let d: Vec<MemoryId> = d.into_iter().filter(|h| h.score > 0.0).map(|h| h.id).collect();
                rrf(&[(self.fusion.lexical_weight, &l), (self.fusion.dense_weight, &d)], self.fusion.rrf_k, q.limit)
            }
        })
    }

    async fn state(&self) -> Result<IndexState> {
        self.ready().await?;
        let rows = self.db.pipelined(Scope::All, "", META_SQL, &[&"watermark"]).await?;
        let w = meta_value(&rows, "watermark")?;
        Ok(IndexState::UpTo(u64::try_from(w).unwrap_or(0)))
    }

    async fn set_watermark(&self, rev: u64) -> Result<()> {
        self.ready().await?;
        let rev =
            i64::try_from(rev).map_err(|_| CoreError::InvalidInput(format!("watermark {rev} is out of range")))?;
        let mut client = self.db.client().await?;
        let tx = self.db.begin(&mut client, Scope::All).await?;
        // Several processes share the index: the watermark only moves forward (clear resets it).
        tx.execute("UPDATE index_meta SET value = GREATEST(value, $1) WHERE key = 'watermark'", &[&rev])
            .await
            .db("set the watermark")?;
        tx.commit().await.db("commit")
    }

    async fn flush(&self) -> Result<()> {
        // Writes are committed already; what a bulk load left to do is the HNSW build.
        self.ready().await?;
        self.ensure_hnsw().await
    }

    async fn clear(&self) -> Result<()> {
        self.ready().await?;
        let mut client = self.db.client().await?;
        let tx = self.db.begin_as_owner(&mut client).await?;
        tx.execute("SELECT pg_advisory_xact_lock(hashtext($1), hashtext('index-ddl'))", &[&self.db.schema()])
            .await
            .db("lock the index schema")?;
        // TRUNCATE, not DELETE: a later CREATE INDEX also indexes recently dead rows, and a
        // deleted vector of the old dimensions would fail the new index's cast.
        tx.batch_execute(&format!(
            "DROP INDEX IF EXISTS {LEGACY_HNSW_INDEX}; DROP INDEX IF EXISTS {HNSW_INDEX}; \
             TRUNCATE index_docs, index_terms; DELETE FROM index_stamp; \
             UPDATE index_meta SET value = 0 WHERE key IN ('watermark', 'dims')"
        ))
        .await
        .db("clear the index")?;
        self.hnsw_built.store(false, Ordering::Release);
        self.dims.store(0, Ordering::Release);
        tx.commit().await.db("commit")?;
        *self.known_stamp() = None;
        Ok(())
    }

    async fn stamp(&self) -> Result<Option<IndexStamp>> {
        self.ready().await?;
        let rows = self.db.pipelined(Scope::All, "", "SELECT stamp FROM index_stamp", &[]).await?;
        let stamp = match rows.first() {
            None => None,
            Some(row) => {
                let text: String = row.try_get(0).db("read the index stamp")?;
                Some(serde_json::from_str::<IndexStamp>(&text).map_err(|e| {
                    CoreError::index_message(
                        mnemo_contract::IndexErrorKind::Damaged,
                        format!("the index stamp in index_stamp cannot be read ({e}): rebuild the index"),
                    )
                })?)
            }
        };
        self.known_stamp().clone_from(&stamp);
        Ok(stamp)
    }

    async fn set_stamp(&self, stamp: IndexStamp) -> Result<()> {
        if self.known_stamp().as_ref() == Some(&stamp) {
            return Ok(());
        }
        self.ready().await?;
        let text = serde_json::to_string(&stamp)
            .map_err(|e| CoreError::InvalidInput(format!("the index stamp cannot be written as JSON: {e}")))?;
        self.db
            .pipelined(
                Scope::All,
                "",
                "INSERT INTO index_stamp (singleton, stamp) VALUES (true, $1) \
                 ON CONFLICT (singleton) DO UPDATE SET stamp = excluded.stamp",
                &[&text],
            )
            .await?;
        *self.known_stamp() = Some(stamp);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The candidate list: the setting (default 200, what dense recall@10 ≥ .95 at 10k needs),
    /// or the rows asked when they are more, never beyond pgvector's 1000; the setting alone
    /// decides the engine's recall (fusion depth 100), so lowering it lowers that search's cost.
    #[test]
    fn ef_is_the_setting_or_the_rows_asked() {
        assert_eq!(default_ef_search(), 200);
        let d = default_ef_search();
        assert_eq!(ef_for(10, d), 200, "the bench's top 10");
        assert_eq!(ef_for(fusion_depth(64), d), 200, "the engine's recall at 64 candidates");
        assert_eq!(ef_for(fusion_depth(64), 100), 100, "a lower setting lowers the recall's search");
        assert_eq!(ef_for(128, d), 200, "the bench's top 128");
        assert_eq!(ef_for(fusion_depth(200), d), 300, "a recall of 200 candidates (depth 300)");
        assert_eq!(ef_for(128, 100), 128);
        assert_eq!(ef_for(1, 4), 4);
        assert_eq!(ef_for(5, 4), 5);
        assert_eq!(ef_for(10, 1000), 1000);
        assert_eq!(ef_for(1001, 1), 1000);
        assert_eq!(ef_for(usize::MAX, 1), 1000);
        assert_eq!(ef_for(0, 1), 1);
    }

    #[test]
    fn ef_search_out_of_range_is_refused() {
        for ef in [0, 1001] {
            let s = IndexSettings { ef_search: ef, ..IndexSettings::new("postgres://nobody@127.0.0.1:1/none") };
            let e = PostgresIndex::new(&s).unwrap_err().to_string();
            assert!(e.contains("ef_search"), "{e}");
        }
    }
}
