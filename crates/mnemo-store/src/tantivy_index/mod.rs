//! `TantivyIndex`: BM25 over content + entities (tantivy) and dense vectors (an
//! [`AnnVectors`]: exact scan in small namespaces, IVF in big ones), fused by weighted
//! reciprocal rank.
//!
//! - ONE long-lived `IndexWriter`; commits are batched by size (`commit_every_docs`) and by
//!   age (`commit_interval_ms`, judged by the injected clock at the next write), on `flush()`
//!   and, best effort, on drop. A search sees the newest writes at once through the
//!   [`overlay`] of uncommitted documents and removals.
//! - The namespace is a raw term filter inside the tantivy query; vectors are partitioned by
//!   namespace, so a search scans only its own.
//! - On disk: `<path>/tantivy/` (tantivy's files) and `<path>/vectors-<gen>.log` (see
//!   [`vector_log`], which also holds each big namespace's IVF). Each commit's payload records the schema version, the Store watermark
//!   it covers and the vector log's valid length, so the watermark is never ahead of the
//!   documents. A missing, corrupt or other-version index reports `IndexState::Stale` and is
//!   wiped by `clear()` before the engine rebuilds it from the Store; so does a vector log
//!   whose block checksum fails or that is of the earlier format (see [`vector_log`]).
//! - A rebuild (`clear()`, then the engine's replay) is written beside the index in place and
//!   put in place at the flush that ends it ([`rebuild_aside`]): readers of other processes
//!   search the index before it meanwhile. An index opened read-only holds upserts and removals
//!   in memory only, so such a reader catches up with the store without writing.
//! - Segments: tantivy's merge policy starts merges after each commit; closing the writer (on
//!   drop and before `clear()` removes the files) waits for them, so a short-lived process (one
//!   CLI command, one commit) merges like a long-running one instead of leaving a segment per
//!   command and, at its exit, a half-written `.tmp` file.
mod entities;
mod overlay;
mod read_only_dir;
mod rebuild_aside;
mod schema;
mod searcher_cache;
mod settings;
mod shape;
pub mod vector_log;

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use mnemo_contract::registry::IndexContext;
use mnemo_contract::{
    Clock, CoreError, Hit, Index, IndexDoc, IndexErrorKind, IndexFigure, IndexStamp, IndexState, MemoryId, Namespace,
    Result, SearchQuery, Timestamp,
};
use tantivy::collector::TopDocs;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight, BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, Term};

use crate::brute::indexed_text;
use crate::fusion::{search_by_mode, sort_hits, FusionSettings};
use crate::vector::{AnnVectors, VectorIndex};
use overlay::{Overlay, Stats};
use schema::{Fields, Payload, SCHEMA_VERSION, TOKENIZER};
pub use settings::TantivySettings;
use vector_log::VecOp;

fn terr<E: std::error::Error + Send + Sync + 'static>(what: &str, e: E) -> CoreError {
    crate::index_error::index_error(format!("tantivy: {what}"), e)
}

/// The open tantivy index and its one writer (None: opened read-only).
struct Live {
    writer: Option<IndexWriter<TantivyDocument>>,
    reader: IndexReader,
    fields: Fields,
    analyzer: TextAnalyzer,
    /// At least the highest id this index ever held (committed or not): a document with a
    /// higher id was never added, so its upsert has no earlier version to delete (store ids are
    /// never reused; a bulk load's inserts skip a delete each, which every commit would have to
    /// look up in every segment).
    max_id: i64,
}

struct Inner {
    live: Option<Live>,
    /// Why the index must be rebuilt (cleared by `clear()`).
    stale: Option<String>,
    overlay: Overlay,
    vectors: AnnVectors,
    pending_vectors: Vec<VecOp>,
    /// Watermark set by the engine (durable at the next commit).
    watermark: u64,
    /// Watermark of the last commit.
    durable_watermark: u64,
    /// The store stamp that goes with `watermark` (durable at the next commit).
    stamp: Option<IndexStamp>,
    /// The stamp of the last commit.
    durable_stamp: Option<IndexStamp>,
    vectors_generation: u64,
    vectors_len: u64,
    /// Bytes of live vectors when the log was last rewritten (to judge when to compact).
    last_commit: Timestamp,
    /// A rebuild is being written beside the index in place, put in place at the next
    /// `flush()` ([`rebuild_aside`]); the vector logs of the index in place are kept until then.
    rebuilding: bool,
}

/// The tantivy hybrid index (see the module docs).
pub struct TantivyIndex {
    inner: RwLock<Inner>,
    settings: TantivySettings,
    fusion: FusionSettings,
    clock: Arc<dyn Clock>,
    /// The index directory; None in RAM.
    dir: Option<PathBuf>,
    /// Set when a search found the index damaged (tantivy panicked or failed reading a
    /// segment): `state()` then reports it stale so the engine rebuilds it.
    damaged: std::sync::Mutex<Option<String>>,
    /// Namespace sizes, term frequencies and id columns of the current searcher generation
    /// (`searcher_cache`).
    searcher_cache: searcher_cache::SearcherCache,
    /// A bulk load is under way (`Index::bulk_load`): commits by size only, at
    /// [`BULK_COMMIT_FACTOR`] × `commit_every_docs`.
    bulk: std::sync::atomic::AtomicBool,
}

/// During a bulk load a commit waits for this many times `commit_every_docs` pending documents
/// (and never for the age of the last commit): at 100k memories in batches of 5,000 the
/// age-or-size commits came at every second batch, 10 commits costing 1.6 s of the index's
/// 5.5 s. Bounded, not held to the end: pending vectors and texts stay in memory until the
/// commit (~15 MB at 50,000 documents of 256 dimensions), and peak RSS at 1M counts.
pub const BULK_COMMIT_FACTOR: usize = 5;

impl TantivyIndex {
    /// An index in RAM (nothing persists).
    pub fn in_memory(settings: TantivySettings, clock: Arc<dyn Clock>) -> Result<Self> {
        settings.validate()?;
        let live = Self::create_live(None, &settings)?;
        let vectors = AnnVectors::new(settings.ann());
        Ok(Self::assemble(Some(live), None, settings, clock, None, None, vectors))
    }

    /// Open the index in `dir`, creating it when missing. A missing, corrupt or other-version
    /// index is reported by `state()` as stale (never an error here); only a failure to use
    /// the directory at all (permissions, a lock held by another process) is an error. Whatever
    /// sits at `dir` that is not an index of ours (a file, a dangling link, a directory of
    /// other things) is moved aside first (`shape`), and the index is stale, saying so.
    pub fn open(dir: &Path, settings: TantivySettings, clock: Arc<dyn Clock>) -> Result<Self> {
        settings.validate()?;
        let aside = if settings.read_only { None } else { shape::set_aside(dir)? };
        if !settings.read_only && dir.is_dir() {
            // What a killed rebuild left: finished (put in place) or not (removed).
            if let Some(note) = rebuild_aside::recover(dir)
                .map_err(|e| terr(&format!("cannot tidy up an earlier rebuild in {}", dir.display()), e))?
            {
                tracing::warn!("{note}");
            }
        }
        let tdir = dir.join(rebuild_aside::CURRENT_DIR);
        let fresh = |why: String, s: &TantivySettings| -> Result<Opened> {
            std::fs::create_dir_all(&tdir).map_err(|e| terr(&format!("cannot create {}", tdir.display()), e))?;
            Ok((Some(Self::create_live(Some(&tdir), s)?), Some(why), None))
        };
        if settings.read_only && !tdir.join("meta.json").exists() {
            return Err(CoreError::index_message(
                IndexErrorKind::ReadOnly,
                format!("no index at {} to open read-only", dir.display()),
            ));
        }
        let (live, stale, loaded) = if !tdir.join("meta.json").exists() {
            fresh(aside.unwrap_or_else(|| format!("no index at {}", dir.display())), &settings)?
        } else {
            match Self::open_live(dir, &tdir, &settings) {
                Ok((live, Ok(loaded))) => {
                    if !settings.read_only {
                        // Logs of other generations (a killed rebuild's) are never read again.
                        vector_log::remove_other_generations(dir, Some(loaded.0.vectors_generation));
                    }
                    (Some(live), None, Some(loaded))
                }
                Ok((live, Err(why))) => (Some(live), Some(why), None),
                Err(OpenError::Fatal(e)) => return Err(e),
                Err(OpenError::Corrupt(why)) => (None, Some(why), None),
            }
        };
        let vectors = AnnVectors::new(settings.ann());
        Ok(Self::assemble(live, stale, settings, clock, Some(dir.to_path_buf()), loaded, vectors))
    }

    fn assemble(
        live: Option<Live>,
        stale: Option<String>,
        settings: TantivySettings,
        clock: Arc<dyn Clock>,
        dir: Option<PathBuf>,
        loaded: Option<Loaded>,
        empty: AnnVectors,
    ) -> Self {
        let now = clock.now();
        let (watermark, generation, len, stamp, vectors) = match loaded {
            Some((p, v)) => (p.watermark, p.vectors_generation, p.vectors_len, p.stamp, v),
            None => (0, 0, 0, None, empty),
        };
        let mut inner = Inner {
            live,
            stale,
            overlay: Overlay::default(),
            vectors,
            pending_vectors: Vec::new(),
            watermark,
            durable_watermark: watermark,
            durable_stamp: stamp.clone(),
            stamp,
            vectors_generation: generation,
            vectors_len: len,
            last_commit: now,
            rebuilding: false,
        };
        // What the settle after loading changed (an IVF trained or dropped) goes to the log.
        queue_ivf_changes(&mut inner.vectors, &mut inner.pending_vectors, dir.is_some());
        let fusion = settings.fusion();
        TantivyIndex {
            inner: RwLock::new(inner),
            settings,
            fusion,
            clock,
            dir,
            damaged: std::sync::Mutex::new(None),
            searcher_cache: searcher_cache::SearcherCache::default(),
            bulk: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn create_live(tdir: Option<&Path>, s: &TantivySettings) -> Result<Live> {
        let (sch, fields) = schema::schema();
        let index = match tdir {
            None => tantivy::Index::create_in_ram(sch),
            Some(d) => tantivy::Index::create_in_dir(d, sch)
                .map_err(|e| terr(&format!("cannot create index in {}", d.display()), e))?,
        };
        Self::live_of(index, fields, s, tdir).map_err(|e| match e {
            OpenError::Fatal(e) => e,
            OpenError::Corrupt(why) => CoreError::index_message(IndexErrorKind::Damaged, why),
        })
    }

    fn live_of(
        index: tantivy::Index,
        fields: Fields,
        s: &TantivySettings,
        tdir: Option<&Path>,
    ) -> std::result::Result<Live, OpenError> {
        let analyzer = schema::analyzer(s.stemming);
        index.tokenizers().register(TOKENIZER, analyzer.clone());
        let writer = if s.read_only {
            None
        } else {
            let writer = index.writer_with_num_threads(1, s.writer_memory_mb * 1024 * 1024).map_err(|e| match e {
                tantivy::TantivyError::LockFailure(..) => {
                    OpenError::Fatal(terr("cannot open the index writer (is another process using this index?)", e))
                }
                e => OpenError::Corrupt(format!("cannot open the index writer: {e}")),
            })?;
            // Files a killed commit left behind (e.g. a `.del` file the next commit would write
            // again under the same name) are not referenced by meta.json: remove them first.
            writer
                .garbage_collect_files()
                .wait()
                .map_err(|e| OpenError::Corrupt(format!("cannot clean up files of an unfinished commit: {e}")))?;
            // So are the temporary files of an atomic write (`meta.json`, `.managed.json`) that
            // a killed process left: only the writer, whose lock this process now holds, makes
            // them.
            if let Some(tdir) = tdir {
                remove_temporary_files(tdir);
            }
            Some(writer)
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| OpenError::Corrupt(format!("cannot open a reader: {e}")))?;
        let mut max_id = i64::MIN;
        for segment in reader.searcher().segment_readers() {
            let ids = segment
                .fast_fields()
                .i64("id")
                .map_err(|e| OpenError::Corrupt(format!("cannot read the id column: {e}")))?;
            // The column's statistics cover its deleted documents too.
            max_id = max_id.max(ids.max_value());
        }
        Ok(Live { writer, reader, fields, analyzer, max_id })
    }

    /// Open an existing index: the live parts, and either its payload + vectors or why it is
    /// stale.
    fn open_live(dir: &Path, tdir: &Path, s: &TantivySettings) -> std::result::Result<OpenedLive, OpenError> {
        let opened = if s.read_only {
            read_only_dir::ReadOnlyDirectory::open(tdir)
                .map_err(tantivy::TantivyError::from)
                .and_then(tantivy::Index::open)
        } else {
            tantivy::Index::open_in_dir(tdir)
        };
        let index =
            opened.map_err(|e| OpenError::Corrupt(format!("cannot open the index in {}: {e}", tdir.display())))?;
        if s.verify_on_open {
            let damaged = index
                .validate_checksum()
                .map_err(|e| OpenError::Corrupt(format!("{}: cannot verify the index files: {e}", tdir.display())))?;
            if !damaged.is_empty() {
                let mut names: Vec<String> = damaged.iter().map(|p| p.display().to_string()).collect();
                names.sort();
                return Err(OpenError::Corrupt(format!(
                    "{}: damaged index files (checksum mismatch): {}",
                    tdir.display(),
                    names.join(", ")
                )));
            }
        }
        let fields =
            schema::fields_of(&index.schema()).map_err(|e| OpenError::Corrupt(format!("{}: {e}", tdir.display())))?;
        let metas = index
            .load_metas()
            .map_err(|e| OpenError::Corrupt(format!("{}: cannot read meta.json: {e}", tdir.display())))?;
        let live = Self::live_of(index, fields, s, Some(tdir))?;
        let payload: Payload = match metas.payload.as_deref().map(serde_json::from_str::<Payload>) {
            Some(Ok(p)) => p,
            Some(Err(e)) => return Ok((live, Err(format!("{}: unreadable commit payload: {e}", tdir.display())))),
            None => return Ok((live, Err(format!("{}: no Mnemo commit payload", tdir.display())))),
        };
        if payload.schema != SCHEMA_VERSION {
            return Ok((
                live,
                Err(format!(
                    "{}: schema version {} (this build writes {SCHEMA_VERSION})",
                    tdir.display(),
                    payload.schema
                )),
            ));
        }
        if payload.stemming != s.stemming {
            return Ok((
                live,
                Err(format!(
                    "{}: built with stemming = {}, configured {}",
                    tdir.display(),
                    payload.stemming,
                    s.stemming
                )),
            ));
        }
        let mut vectors = AnnVectors::new(s.ann());
        if payload.vectors_len > 0 {
            // Every block's checksum is verified: a damaged or earlier-format log is stale.
            if let Err(why) = vector_log::load(dir, payload.vectors_generation, payload.vectors_len, &mut vectors) {
                return Ok((live, Err(why)));
            }
        }
        // The log restores each IVF as it was; train or drop where the settings now differ.
        vectors.settle();
        Ok((live, Ok((payload, vectors))))
    }

    fn read(&self) -> Result<RwLockReadGuard<'_, Inner>> {
        self.inner.read().map_err(|_| poisoned())
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, Inner>> {
        self.inner.write().map_err(|_| poisoned())
    }

    /// Commit pending changes: vectors first (appended, synced), then the tantivy commit whose
    /// payload names the vector log length and the watermark, then a reader reload; only then is
    /// the overlay dropped.
    fn commit(&self, g: &mut Inner) -> Result<()> {
        if self.settings.read_only {
            // Nothing was written (nor made stale): the files on disk are as they were.
            return Err(read_only_err());
        }
        let result = tracing::info_span!("index_commit").in_scope(|| self.try_commit(g));
        if let Err(e) = &result {
            // Whatever half of the commit happened, the directory can no longer be trusted to
            // match the watermark: it is rebuilt from the store (searches still see the
            // overlay until then).
            g.stale = Some(format!("a commit failed: {e}"));
        }
        result
    }

    fn try_commit(&self, g: &mut Inner) -> Result<()> {
        let Some(live) = g.live.as_mut() else { return Err(stale_err(g)) };
        let (generation, len) = match &self.dir {
            None => (0, 0),
            Some(dir) => {
                // Per vector: its codes, scale, id, op, list and namespace (~32 bytes).
                let live_bytes = (g.vectors.len() * (g.vectors.dims() + 36)) as u64;
                let compact = g.vectors_len == 0 || g.vectors_len > 2 * live_bytes + (64 << 20);
                if compact {
                    // A new generation with only the live vectors; the old one is removed after
                    // the commit that stops naming it.
                    let generation = g.vectors_generation + 1;
                    (generation, vector_log::write_generation(dir, generation, &g.vectors)?)
                } else if g.pending_vectors.is_empty() {
                    (g.vectors_generation, g.vectors_len)
                } else {
                    (
                        g.vectors_generation,
                        vector_log::append(dir, g.vectors_generation, g.vectors_len, &g.pending_vectors)?,
                    )
                }
            }
        };
        let payload = Payload {
            schema: SCHEMA_VERSION,
            stemming: self.settings.stemming,
            watermark: g.watermark,
            vectors_generation: generation,
            vectors_len: len,
            stamp: g.stamp.clone(),
        };
        let text = serde_json::to_string(&payload).map_err(|e| terr("cannot encode the commit payload", e))?;
        let mut prepared = writer_of(live)?.prepare_commit().map_err(|e| terr("cannot prepare a commit", e))?;
        prepared.set_payload(&text);
        prepared.commit().map_err(|e| terr("commit failed", e))?;
        live.reader.reload().map_err(|e| terr("cannot reload the reader", e))?;
        // During a rebuild the index in place still names its own log (removed at the swap).
        if generation != g.vectors_generation && !g.rebuilding {
            if let Some(dir) = &self.dir {
                vector_log::remove_other_generations(dir, Some(generation));
            }
        }
        g.vectors_generation = generation;
        g.vectors_len = len;
        g.pending_vectors.clear();
        g.overlay.clear();
        g.durable_watermark = g.watermark;
        g.durable_stamp = g.stamp.clone();
        g.last_commit = self.clock.now();
        Ok(())
    }

    /// Whether changes go to disk: an index opened read-only takes upserts and removals into
    /// memory only (the overlay and the vectors), so that a reader beside a writer catches up
    /// with the store without writing anything and without building a whole index in memory.
    fn persists(&self) -> bool {
        self.dir.is_some() && !self.settings.read_only
    }

    fn maybe_commit(&self, g: &mut Inner) -> Result<()> {
        if self.settings.read_only {
            return Ok(());
        }
        let pending = g.overlay.pending;
        let every = self.settings.commit_every_docs;
        let due = if self.bulk.load(std::sync::atomic::Ordering::Relaxed) {
            pending >= every.saturating_mul(BULK_COMMIT_FACTOR)
        } else {
            let age = self.clock.now().millis().saturating_sub(g.last_commit.millis());
            pending >= every || (pending > 0 && age >= self.settings.commit_interval_ms as i64)
        };
        if due {
            self.commit(g)?;
        }
        Ok(())
    }

    /// Put the rebuild written beside the index in place (after its last commit) and reopen it
    /// there ([`rebuild_aside`]). A failure leaves the index stale: the engine rebuilds it again.
    fn put_rebuild_in_place(&self, g: &mut Inner) -> Result<()> {
        let Some(dir) = &self.dir else {
            g.rebuilding = false;
            return Ok(());
        };
        let result = (|| {
            if let Some(live) = g.live.as_mut() {
                close_writer(live);
            }
            g.live = None;
            rebuild_aside::swap_in(dir).map_err(|e| terr("cannot put the rebuilt index in place", e))?;
            vector_log::remove_other_generations(dir, Some(g.vectors_generation));
            let tdir = dir.join(rebuild_aside::CURRENT_DIR);
            let index = tantivy::Index::open_in_dir(&tdir)
                .map_err(|e| terr(&format!("cannot open the rebuilt index in {}", tdir.display()), e))?;
            let fields = schema::fields_of(&index.schema())
                .map_err(|e| CoreError::index_message(IndexErrorKind::Damaged, format!("{}: {e}", tdir.display())))?;
            Self::live_of(index, fields, &self.settings, Some(&tdir)).map_err(|e| match e {
                OpenError::Fatal(e) => e,
                OpenError::Corrupt(why) => CoreError::index_message(IndexErrorKind::Damaged, why),
            })
        })();
        g.rebuilding = false;
        // A new reader counts its generations afresh: nothing cached of the old one holds.
        self.searcher_cache.clear();
        match result {
            Ok(live) => {
                g.live = Some(live);
                Ok(())
            }
            Err(e) => {
                g.stale = Some(format!("the rebuilt index could not be put in place: {e}"));
                Err(e)
            }
        }
    }

    /// Lexical hits of `q` (committed + overlay), scores normalised by the query's best
    /// attainable BM25 score (Σ over its terms of idf·(k1+1)), best first.
    fn lexical(&self, g: &Inner, q: &SearchQuery, limit: usize) -> Result<Vec<Hit>> {
        let Some(live) = g.live.as_ref() else { return Err(stale_err(g)) };
        let mut analyzer = live.analyzer.clone();
        let mut terms = schema::tokens(&mut analyzer, &q.text);
        terms.sort();
        terms.dedup();
        if terms.is_empty() || limit == 0 {
            return Ok(vec![]);
        }
        let searcher = live.reader.searcher();
        let committed = self.committed_sizes(&searcher, live.fields, &q.namespace)?;
        let pending = g.overlay.ns_sizes(&q.namespace);
        let stats = Stats {
            searcher: &searcher,
            overlay: &g.overlay,
            ns: &q.namespace,
            ns_field: live.fields.ns,
            sizes: (committed.0 + pending.0, committed.1 + pending.1),
            cache: &self.searcher_cache,
        };
        let n = stats.total_num_docs().map_err(|e| terr("statistics", e))?;
        let avg = stats.total_num_tokens(live.fields.text).map_err(|e| terr("statistics", e))? as f32 / n as f32;
        let mut weights = Vec::with_capacity(terms.len());
        let mut max = 0.0f32;
        for t in &terms {
            let term = Term::from_field_text(live.fields.text, t);
            let df = stats.doc_freq(&term).map_err(|e| terr("statistics", e))?;
            if df == 0 {
                continue;
            }
            let w = Bm25Weight::for_one_term(df, n, avg);
            max += w.max_score();
            weights.push((t.clone(), w));
        }
        if weights.is_empty() || max <= 0.0 {
            return Ok(vec![]);
        }
        let mut hits: Vec<Hit> =
            g.overlay.score(&q.namespace, &weights).into_iter().map(|(id, s)| Hit { id, score: s }).collect();
        let should: Vec<(Occur, Box<dyn Query>)> = weights
            .iter()
            .map(|(t, _)| {
                let tq: Box<dyn Query> =
                    Box::new(TermQuery::new(Term::from_field_text(live.fields.text, t), IndexRecordOption::WithFreqs));
                (Occur::Should, tq)
            })
            .collect();
        let ns_filter: Box<dyn Query> = Box::new(ConstScoreQuery::new(
            Box::new(TermQuery::new(
                Term::from_field_text(live.fields.ns, q.namespace.as_str()),
                IndexRecordOption::Basic,
            )),
            0.0,
        ));
        let query =
            BooleanQuery::new(vec![(Occur::Must, ns_filter), (Occur::Must, Box::new(BooleanQuery::new(should)))]);
        let want = limit + g.overlay.hidden_bound(&q.namespace);
        let top = searcher
            .search_with_statistics_provider(&query, &TopDocs::with_limit(want).order_by_score(), &stats)
            .map_err(|e| terr("search failed", e))?;
        let generation = searcher.generation();
        let mut columns = std::collections::HashMap::new();
        for (score, addr) in top {
            let col = match columns.entry(addr.segment_ord) {
                std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => v.insert(
                    self.searcher_cache
                        .id_column(generation, addr.segment_ord, || {
                            searcher.segment_reader(addr.segment_ord).fast_fields().i64("id")
                        })
                        .map_err(|e| terr("id column", e))?,
                ),
            };
            let Some(id) = col.first(addr.doc_id) else { continue };
            let id = MemoryId(id);
            if !g.overlay.hides(&q.namespace, id) {
                hits.push(Hit { id, score });
            }
        }
        for h in &mut hits {
            h.score = (h.score / max).clamp(0.0, 1.0);
        }
        sort_hits(&mut hits);
        hits.truncate(limit);
        Ok(hits)
    }

    /// The committed documents of `ns` and their total length, kept for the searcher's
    /// generation (a commit makes a new one), so a search does not scan the namespace each time.
    fn committed_sizes(&self, searcher: &tantivy::Searcher, fields: Fields, ns: &Namespace) -> Result<(u64, u64)> {
        self.searcher_cache
            .ns_sizes(searcher.generation(), ns, || overlay::committed_sizes(searcher, fields.ns, fields.text, ns))
            .map_err(|e| terr("statistics", e))
    }

    /// Put a finished background training in place (logged at the next commit), so that
    /// searches use it at once instead of the old structure until the next write: a search
    /// after ingest stops would otherwise scan the lists of the previous, smaller training.
    fn adopt_finished_training(&self) -> Result<()> {
        if !self.read()?.vectors.has_finished_training() {
            return Ok(());
        }
        adopt_training(&mut *self.write()?, self.persists());
        Ok(())
    }

    /// The index as a search reads it, every upserted document analysed: those that wait for
    /// it are analysed under the write lock, which is then downgraded to the read lock the
    /// search holds, so that no write slips in between (its documents would hide their committed
    /// versions from the search without being scored: a memory found in neither version).
    fn read_analysed(&self) -> Result<RwLockReadGuard<'_, Inner>> {
        {
            let g = self.read()?;
            if !g.overlay.needs_tokens() {
                return Ok(g);
            }
        }
        let mut g = self.write()?;
        let inner = &mut *g;
        if let Some(live) = inner.live.as_mut() {
            inner.overlay.tokenise(&mut live.analyzer);
        }
        Ok(RwLockWriteGuard::downgrade(g))
    }

    /// The vectors of upserted documents, filed in runs (a document without a vector removes
    /// its old one, in order); each change queued for the vector log when on disk. The IVFs a
    /// run changed wholesale are queued before its vectors, whose lists are then those of the
    /// structure in force after the run (what a replay of the log rebuilds).
    fn upsert_vectors(&self, g: &mut Inner, docs: &[IndexDoc]) -> Result<()> {
        let persist = self.persists();
        let mut run: Vec<(&Namespace, MemoryId, &[f32])> = Vec::new();
        for d in docs {
            match &d.embedding {
                Some(v) => run.push((&d.namespace, d.id, v)),
                None => {
                    file_run(g, &mut run, persist)?;
                    if g.vectors.remove(d.id) && persist {
                        g.pending_vectors.push(VecOp::Remove(d.id));
                    }
                    queue_ivf_changes(&mut g.vectors, &mut g.pending_vectors, persist);
                }
            }
        }
        file_run(g, &mut run, persist)
    }

    /// Segments of the last commit on disk (merges included), for tests and reports; None in
    /// RAM or when the index is stale.
    pub fn segment_count(&self) -> Result<Option<usize>> {
        let g = self.read()?;
        match (&self.dir, g.live.as_ref()) {
            (Some(_), Some(live)) => {
                let metas =
                    live.reader.searcher().index().searchable_segment_metas().map_err(|e| terr("segments", e))?;
                Ok(Some(metas.len()))
            }
            _ => Ok(None),
        }
    }

    /// Vectors held (for tests and reports).
    pub fn vector_count(&self) -> Result<usize> {
        Ok(self.read()?.vectors.len())
    }

    /// The exact `limit` nearest vectors of `ns` to `embedding`, best first (what the dense
    /// search approximates once a namespace has an IVF; for benchmarks and tests).
    pub fn dense_exact(&self, ns: &Namespace, embedding: &[f32], limit: usize) -> Result<Vec<Hit>> {
        let g = self.read()?;
        Ok(g.vectors
            .search_exact(ns, embedding, limit)?
            .into_iter()
            .map(|(id, s)| Hit { id, score: s.clamp(0.0, 1.0) })
            .collect())
    }

    /// Lists of `ns`'s IVF (None: its dense search is exact).
    pub fn dense_ivf_lists(&self, ns: &Namespace) -> Result<Option<usize>> {
        Ok(self.read()?.vectors.ivf_lists(ns))
    }

    /// Start training `ns`'s IVF anew in the background (put in place at a later write or
    /// flush, persisted at the commit after that); false when `ann = "exact"` or the namespace
    /// holds fewer than 2 vectors. The index trains on its own as namespaces grow: this is for
    /// benchmarks (writes during a training) and tests.
    pub fn start_dense_retrain(&self, ns: &Namespace) -> Result<bool> {
        Ok(self.write()?.vectors.start_retrain(ns))
    }

    /// Wait for the dense trainings in flight and put them in place (persisted at the next
    /// commit). For benchmarks and tests: writes and flushes adopt finished trainings anyway.
    pub fn finish_dense_training(&self) -> Result<()> {
        crate::blocking::blocking(|| {
            let mut g = self.write()?;
            let g = &mut *g;
            g.vectors.finish_training();
            queue_ivf_changes(&mut g.vectors, &mut g.pending_vectors, self.persists());
            Ok(())
        })
    }

    /// Train `ns`'s IVF anew and wait for it (see `start_dense_retrain`).
    pub fn retrain_dense(&self, ns: &Namespace) -> Result<bool> {
        let started = self.start_dense_retrain(ns)?;
        self.finish_dense_training()?;
        Ok(started)
    }
}

/// Close the writer of `live` once the merges it started have ended (tantivy's own drop
/// abandons them: their segments are never used, and the process may exit in the middle of a
/// file write).
fn close_writer(live: &mut Live) {
    if let Some(writer) = live.writer.take() {
        if let Err(e) = writer.wait_merging_threads() {
            tracing::warn!("the index's segment merges did not finish: {e}");
        }
    }
}

/// Remove the temporary files tantivy's atomic writes make in `tdir` (`.tmp` and a random
/// suffix, renamed over their target when complete) that a killed process left behind. Best
/// effort: a file that stays is removed at a later open.
fn remove_temporary_files(tdir: &Path) {
    let Ok(rd) = std::fs::read_dir(tdir) else { return };
    for e in rd.flatten() {
        if e.file_name().to_string_lossy().starts_with(".tmp") && e.file_type().is_ok_and(|t| t.is_file()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The committed payload and its vectors.
type Loaded = (Payload, AnnVectors);

/// What opening found: the live index (None when corrupt), why it is stale, and the committed
/// payload with its vectors (None when stale).
type Opened = (Option<Live>, Option<String>, Option<Loaded>);

/// An opened index and either its payload + vectors or why it is stale.
type OpenedLive = (Live, std::result::Result<Loaded, String>);

/// Queue for the vector log the IVFs that changed wholesale (trained, dropped) in the last
/// vector operation; in RAM (`persist` false) they are only forgotten.
fn queue_ivf_changes(vectors: &mut AnnVectors, pending: &mut Vec<VecOp>, persist: bool) {
    for ns in vectors.take_ivf_changes() {
        if persist {
            let snap = vectors.ivf_snapshot(&ns);
            pending.push(VecOp::Ivf(ns, snap));
        }
    }
}

/// Put a finished background training in place and queue what it changed for the log.
fn adopt_training(g: &mut Inner, persist: bool) {
    g.vectors.adopt_finished();
    queue_ivf_changes(&mut g.vectors, &mut g.pending_vectors, persist);
}

/// File a run of vectors (see `upsert_vectors`) and empty it.
fn file_run(g: &mut Inner, run: &mut Vec<(&Namespace, MemoryId, &[f32])>, persist: bool) -> Result<()> {
    if run.is_empty() {
        return Ok(());
    }
    let codes = g.vectors.upsert_many(run)?;
    queue_ivf_changes(&mut g.vectors, &mut g.pending_vectors, persist);
    if persist {
        for ((ns, id, _), code) in run.iter().zip(codes) {
            let list = g.vectors.list_of(*id);
            g.pending_vectors.push(VecOp::Upsert((*ns).clone(), *id, code, list));
        }
    }
    run.clear();
    Ok(())
}

/// The tantivy documents of upserted memories (replacing any earlier version), then their
/// overlay entries, so a search sees them before the commit.
fn upsert_documents(g: &mut Inner, docs: Vec<IndexDoc>) -> Result<()> {
    let Some(live) = g.live.as_mut() else { return Err(stale_err(g)) };
    let mut added = Vec::with_capacity(docs.len());
    for d in docs {
        let text = indexed_text(&d);
        // Read-only (no writer): the document is held in the overlay only, hiding its
        // committed version as an uncommitted upsert does.
        if d.id.0 <= live.max_id {
            let id_field = live.fields.id;
            if let Some(writer) = live.writer.as_mut() {
                writer.delete_term(Term::from_field_i64(id_field, d.id.0));
            }
        }
        live.max_id = live.max_id.max(d.id.0);
        let mut doc = TantivyDocument::default();
        doc.add_i64(live.fields.id, d.id.0);
        doc.add_text(live.fields.ns, d.namespace.as_str());
        doc.add_text(live.fields.text, &text);
        let mut entity_keys: Vec<String> =
            d.entities.iter().filter_map(|e| crate::entity_match::entity_key(e)).collect();
        entity_keys.sort();
        entity_keys.dedup();
        for k in &entity_keys {
            doc.add_text(live.fields.entity, k);
        }
        if let Some(writer) = live.writer.as_mut() {
            writer.add_document(doc).map_err(|e| terr("cannot add a document", e))?;
        }
        added.push((d.id, d.namespace, text, entity_keys));
    }
    tracing::info_span!("index_overlay").in_scope(|| {
        for (id, ns, text, entity_keys) in added {
            g.overlay.put(id, &ns, text, entity_keys);
        }
    });
    Ok(())
}

enum OpenError {
    /// The index cannot be used as it is: rebuild.
    Corrupt(String),
    /// Nothing can be done here (e.g. locked by another process).
    Fatal(CoreError),
}

/// Whether anything awaits a commit.
fn dirty(g: &Inner) -> bool {
    g.overlay.pending > 0
        || g.watermark != g.durable_watermark
        || g.stamp != g.durable_stamp
        || !g.pending_vectors.is_empty()
}

fn read_only_err() -> CoreError {
    CoreError::index_message(
        IndexErrorKind::ReadOnly,
        "the index was opened read-only (its data directory cannot be written): searches work, writes do not",
    )
}

/// The writer of an index opened for writing.
fn writer_of(live: &mut Live) -> Result<&mut IndexWriter<TantivyDocument>> {
    live.writer.as_mut().ok_or_else(read_only_err)
}

fn poisoned() -> CoreError {
    CoreError::index_message(IndexErrorKind::Other, "tantivy index lock poisoned by an earlier panic")
}

fn stale_err(g: &Inner) -> CoreError {
    CoreError::index_message(
        IndexErrorKind::Stale,
        format!(
            "the index must be rebuilt before use ({}); the engine's sync_index does it",
            g.stale.as_deref().unwrap_or("unusable")
        ),
    )
}

#[async_trait]
impl Index for TantivyIndex {
    async fn upsert(&self, docs: Vec<IndexDoc>) -> Result<()> {
        crate::blocking::blocking(|| {
            let mut g = self.write()?;
            let g = &mut *g;
            if g.live.is_none() {
                return Err(stale_err(g));
            }
            crate::vector::check_batch(&docs, g.vectors.dims())?;
            // The vectors first, all at once (filing a batch is much cheaper than one by one).
            tracing::info_span!("index_vectors").in_scope(|| self.upsert_vectors(g, &docs))?;
            tracing::info_span!("index_documents").in_scope(|| upsert_documents(g, docs))?;
            self.maybe_commit(g)
        })
    }

    async fn remove(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<()> {
        crate::blocking::blocking(|| {
            let mut g = self.write()?;
            let g = &mut *g;
            let Some(live) = g.live.as_mut() else { return Err(stale_err(g)) };
            for id in ids {
                // Delete only within the namespace asked: the partition holds for removals too.
                let q = BooleanQuery::new(vec![
                    (
                        Occur::Must,
                        Box::new(TermQuery::new(Term::from_field_i64(live.fields.id, id.0), IndexRecordOption::Basic))
                            as Box<dyn Query>,
                    ),
                    (
                        Occur::Must,
                        Box::new(TermQuery::new(
                            Term::from_field_text(live.fields.ns, namespace.as_str()),
                            IndexRecordOption::Basic,
                        )),
                    ),
                ]);
                // Read-only: the removal is held in the overlay only.
                if let Some(writer) = live.writer.as_mut() {
                    writer.delete_query(Box::new(q)).map_err(|e| terr("cannot delete", e))?;
                }
                g.overlay.remove(namespace, *id);
                if g.vectors.namespace_of(*id) == Some(namespace) {
                    g.vectors.remove(*id);
                    if self.persists() {
                        g.pending_vectors.push(VecOp::Remove(*id));
                    }
                    queue_ivf_changes(&mut g.vectors, &mut g.pending_vectors, self.persists());
                }
            }
            self.maybe_commit(g)
        })
    }

    async fn search(&self, q: &SearchQuery) -> Result<Vec<Hit>> {
        crate::blocking::blocking(|| {
            self.adopt_finished_training()?;
            let g = self.read_analysed()?;
            if g.live.is_none() {
                return Err(stale_err(&g));
            }
            // A damaged segment can make tantivy panic deep inside a read; contained here, it makes
            // the index stale (rebuilt from the store) instead of taking the process down.
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let hits = search_by_mode(q, &self.fusion, &g.vectors, |limit| self.lexical(&g, q, limit))?;
                match g.live.as_ref() {
                    Some(live) if self.settings.entity_boost > 0.0 => entities::boost_matches(
                        hits,
                        self.settings.entity_boost,
                        &live.reader.searcher(),
                        live.fields,
                        &g.overlay,
                        &q.namespace,
                        &q.text,
                    ),
                    _ => Ok(hits),
                }
            }));
            let result = match result {
                Ok(r) => r,
                Err(panic) => {
                    let what = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    Err(CoreError::index_message(
                        IndexErrorKind::Damaged,
                        format!("the index is damaged (a search failed inside tantivy: {what})"),
                    ))
                }
            };
            if let Err(e) = &result {
                if let Ok(mut d) = self.damaged.lock() {
                    *d = Some(e.to_string());
                }
            }
            result
        })
    }

    async fn state(&self) -> Result<IndexState> {
        if let Some(why) = self.damaged.lock().ok().and_then(|d| d.clone()) {
            return Ok(IndexState::Stale(why));
        }
        let g = self.read()?;
        Ok(match &g.stale {
            Some(why) => IndexState::Stale(why.clone()),
            None if self.dir.is_none() => IndexState::UpTo(g.watermark),
            None => IndexState::UpTo(g.durable_watermark),
        })
    }

    async fn set_watermark(&self, rev: u64) -> Result<()> {
        self.write()?.watermark = rev;
        Ok(())
    }

    async fn flush(&self) -> Result<()> {
        crate::blocking::blocking(|| {
            let mut g = self.write()?;
            if g.live.is_none() {
                return Err(stale_err(&g));
            }
            // A training finished since the last write is put in place (and logged) now.
            adopt_training(&mut g, self.persists());
            let g = &mut *g;
            // Read-only: every write was refused, so nothing of the store's is waiting here (an
            // IVF retrained at open lives in memory only).
            if dirty(g) && !self.settings.read_only {
                self.commit(g)?;
            }
            if g.rebuilding {
                self.put_rebuild_in_place(g)?;
            }
            Ok(())
        })
    }

    async fn clear(&self) -> Result<()> {
        crate::blocking::blocking(|| {
            if let Ok(mut d) = self.damaged.lock() {
                *d = None;
            }
            if self.settings.read_only {
                return Err(read_only_err());
            }
            let mut g = self.write()?;
            let g = &mut *g;
            // What the old index's last generation held goes (under the write lock, so that no
            // search of the old index, which holds the read lock, fills it again afterwards).
            self.searcher_cache.clear();
            match &self.dir {
                Some(dir) => {
                    // Never reuse the old files: a damaged segment must not survive a rebuild.
                    // The rebuild is written beside the index in place, which readers of other
                    // processes go on searching until the next flush puts the rebuild in place
                    // ([`rebuild_aside`]). The writer goes first (its merges end first, so none
                    // writes into a directory being replaced).
                    if let Some(live) = g.live.as_mut() {
                        close_writer(live);
                    }
                    g.live = None;
                    // Whatever was put at the path since it was opened is moved aside too.
                    if let Some(note) = shape::set_aside(dir)? {
                        tracing::warn!("{note}");
                    }
                    let rdir = dir.join(rebuild_aside::REBUILD_DIR);
                    if std::fs::symlink_metadata(&rdir).is_ok() {
                        std::fs::remove_dir_all(&rdir)
                            .map_err(|e| terr(&format!("cannot remove {}", rdir.display()), e))?;
                    }
                    std::fs::create_dir_all(&rdir)
                        .map_err(|e| terr(&format!("cannot create {}", rdir.display()), e))?;
                    g.live = Some(Self::create_live(Some(&rdir), &self.settings)?);
                    g.rebuilding = true;
                }
                None => {
                    let Some(live) = g.live.as_mut() else { return Err(stale_err(g)) };
                    // Drop uncommitted documents first: delete_all_documents only covers segments.
                    let writer = writer_of(live)?;
                    writer.rollback().map_err(|e| terr("cannot roll back", e))?;
                    writer.delete_all_documents().map_err(|e| terr("cannot delete all documents", e))?;
                }
            }
            g.overlay.clear();
            g.vectors.clear();
            g.pending_vectors.clear();
            g.watermark = 0;
            g.stamp = None;
            // Force a fresh vector generation at the commit below, newer than every log on disk
            // (the index in place keeps its own until the rebuild replaces it).
            if let Some(dir) = &self.dir {
                g.vectors_generation = g.vectors_generation.max(vector_log::newest_generation(dir));
            }
            g.vectors_len = 0;
            g.stale = None;
            self.commit(g)
        })
    }

    async fn figures(&self, namespace: &Namespace) -> Result<Vec<IndexFigure>> {
        Ok(self.read()?.vectors.state_of(namespace).map(|s| s.figures()).unwrap_or_default())
    }

    async fn bulk_load(&self, on: bool) -> Result<()> {
        self.bulk.store(on, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    async fn stamp(&self) -> Result<Option<IndexStamp>> {
        let g = self.read()?;
        Ok(if self.dir.is_none() { g.stamp.clone() } else { g.durable_stamp.clone() })
    }

    async fn set_stamp(&self, stamp: IndexStamp) -> Result<()> {
        self.write()?.stamp = Some(stamp);
        Ok(())
    }
}

impl Drop for TantivyIndex {
    fn drop(&mut self) {
        // Best effort: a crash instead of a drop loses only what the Store replays anyway.
        // A commit (10-20 ms, an fsync) must not stall an executor's other tasks.
        crate::blocking::blocking(|| {
            if let Ok(mut g) = self.inner.write() {
                if g.live.is_some() && g.stale.is_none() && dirty(&g) {
                    let _ = self.commit(&mut g);
                }
                // What a rebuild committed is put in place (consistent up to its watermark,
                // from which the next open replays the store); a killed process's is not.
                if g.rebuilding && g.live.is_some() && g.stale.is_none() {
                    if let Err(e) = self.put_rebuild_in_place(&mut g) {
                        tracing::warn!("the rebuilt index was not put in place: {e}");
                    }
                }
                // The merges the commits started finish before the writer goes: a short-lived
                // process (one CLI command, one commit) would otherwise never merge, leaving a
                // segment per command, and its exit could cut the write of tantivy's
                // `.managed.json` short, leaving a `.tmp` file.
                if let Some(live) = g.live.as_mut() {
                    close_writer(live);
                }
            }
        });
    }
}

fn build(ctx: &IndexContext<'_>) -> Result<Arc<dyn Index>> {
    let s: TantivySettings = ctx.settings()?;
    let idx = if s.in_memory {
        TantivyIndex::in_memory(s, ctx.clock.clone())?
    } else {
        let dir = ctx.data_path(&s.path)?;
        TantivyIndex::open(&dir, s, ctx.clock.clone())?
    };
    Ok(Arc::new(idx))
}

mnemo_contract::register_index!(
    "tantivy",
    "tantivy BM25 + dense vectors (exact; IVF in big namespaces), weighted rank fusion; persistent (or in RAM)",
    build
);
