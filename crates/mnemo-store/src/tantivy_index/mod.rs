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
//!
//! By job: [`open`] (create or open, the live tantivy parts), [`write`] (upserts, removals,
//! the vector log's queue), [`commit`] (commits, flush, clear and the rebuild's swap, drop),
//! [`search`] (lexical + dense fusion) and [`dense`] (the dense side for benchmarks and tests);
//! this file holds the state they share and the `Index` implementation.
mod commit;
mod dense;
mod entities;
mod open;
mod overlay;
mod read_only_dir;
mod rebuild_aside;
mod schema;
mod search;
mod searcher_cache;
mod settings;
mod shape;
#[cfg(test)]
mod test_support;
pub mod vector_log;
mod write;

use std::path::PathBuf;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use async_trait::async_trait;
use mnemo_contract::registry::IndexContext;
use mnemo_contract::{
    Clock, CoreError, Hit, Index, IndexDoc, IndexErrorKind, IndexFigure, IndexStamp, IndexState, MemoryId, Namespace,
    Result, SearchQuery, Timestamp,
};
use tantivy::tokenizer::TextAnalyzer;
use tantivy::{IndexReader, IndexWriter, TantivyDocument};

use crate::vector::AnnVectors;
use mnemo_contract::fusion::FusionSettings;
use overlay::Overlay;
use schema::Fields;
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
    /// The stop words' terms under `analyzer` (`query_stop_words`).
    stop_terms: std::collections::HashSet<String>,
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
    fn read(&self) -> Result<RwLockReadGuard<'_, Inner>> {
        self.inner.read().map_err(|_| poisoned())
    }

    fn write(&self) -> Result<RwLockWriteGuard<'_, Inner>> {
        self.inner.write().map_err(|_| poisoned())
    }

    /// Whether changes go to disk: an index opened read-only takes upserts and removals into
    /// memory only (the overlay and the vectors), so that a reader beside a writer catches up
    /// with the store without writing anything and without building a whole index in memory.
    fn persists(&self) -> bool {
        self.dir.is_some() && !self.settings.read_only
    }
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
        crate::blocking::blocking(|| self.upsert_docs(docs))
    }

    async fn remove(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<()> {
        crate::blocking::blocking(|| self.remove_ids(namespace, ids))
    }

    async fn search(&self, q: &SearchQuery) -> Result<Vec<Hit>> {
        crate::blocking::blocking(|| self.search_hits(q))
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
        crate::blocking::blocking(|| self.flush_pending())
    }

    async fn clear(&self) -> Result<()> {
        crate::blocking::blocking(|| self.clear_for_rebuild())
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
