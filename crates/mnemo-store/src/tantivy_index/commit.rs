//! Making changes durable: a commit (vector log, then tantivy's commit naming the watermark),
//! when one is due, a flush, a clear before a rebuild and putting the rebuild in place, and
//! the best-effort commit on drop.
use mnemo_contract::{CoreError, IndexErrorKind, Result};

use super::open::OpenError;
use super::schema::{self, Payload, SCHEMA_VERSION};
use super::write::adopt_training;
use super::{
    read_only_err, rebuild_aside, shape, stale_err, terr, vector_log, writer_of, Inner, Live, TantivyIndex,
    BULK_COMMIT_FACTOR,
};
use crate::vector::VectorIndex;

impl TantivyIndex {
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

    pub(super) fn maybe_commit(&self, g: &mut Inner) -> Result<()> {
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

    /// `Index::flush`: commit what awaits a commit, and put a finished rebuild in place.
    pub(super) fn flush_pending(&self) -> Result<()> {
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
    }

    /// `Index::clear`: start the index afresh (beside the index in place when on disk), for
    /// the engine to rebuild from the store.
    pub(super) fn clear_for_rebuild(&self) -> Result<()> {
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
                std::fs::create_dir_all(&rdir).map_err(|e| terr(&format!("cannot create {}", rdir.display()), e))?;
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

/// Whether anything awaits a commit.
fn dirty(g: &Inner) -> bool {
    g.overlay.pending > 0
        || g.watermark != g.durable_watermark
        || g.stamp != g.durable_stamp
        || !g.pending_vectors.is_empty()
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use mnemo_contract::{Index, IndexState, SearchMode};

    use super::super::test_support::{doc, ids, in_ram, on_disk, search, unit};
    use super::*;

    /// Documents in tantivy's committed segments, as the index's reader sees them now.
    fn committed_docs(idx: &TantivyIndex) -> u64 {
        idx.read().unwrap().live.as_ref().unwrap().reader.searcher().num_docs()
    }

    #[tokio::test]
    async fn a_commit_moves_pending_documents_into_segments_the_reader_sees() {
        let idx = in_ram();
        idx.upsert(vec![doc(1, "kiwi tart", None), doc(2, "kiwi jam", None)]).await.unwrap();
        assert_eq!(idx.read().unwrap().overlay.pending, 2, "held in the overlay until a commit");
        assert_eq!(committed_docs(&idx), 0, "nothing committed yet");
        idx.flush().await.unwrap();
        assert_eq!(idx.read().unwrap().overlay.pending, 0, "the overlay is dropped by the commit");
        // Found through the reloaded reader alone: without the reload the overlay's drop would
        // hide them until the next one.
        assert_eq!(committed_docs(&idx), 2);
        let mut found = ids(&search(&idx, "kiwi", None, SearchMode::Lexical).await);
        found.sort();
        assert_eq!(found, vec![1, 2]);
    }

    #[tokio::test]
    async fn a_flush_with_nothing_pending_makes_no_commit() {
        let idx = in_ram();
        idx.upsert(vec![doc(1, "kiwi", None)]).await.unwrap();
        idx.flush().await.unwrap();
        let committed_at = idx.read().unwrap().live.as_ref().unwrap().reader.searcher().generation().generation_id();
        idx.flush().await.unwrap();
        let now = idx.read().unwrap().live.as_ref().unwrap().reader.searcher().generation().generation_id();
        assert_eq!(now, committed_at, "no new searcher generation: nothing was committed");
        assert!(!dirty(&idx.read().unwrap()));
    }

    #[tokio::test]
    async fn a_commit_on_disk_names_the_watermark_and_the_vector_log_in_its_payload() {
        let dir = tempfile::tempdir().unwrap();
        let idx = on_disk(dir.path()).await;
        idx.upsert(vec![doc(1, "kiwi", Some(unit(0)))]).await.unwrap();
        idx.set_watermark(7).await.unwrap();
        assert!(!idx.read().unwrap().pending_vectors.is_empty(), "the vector waits for the log");
        assert_eq!(idx.state().await.unwrap(), IndexState::UpTo(0), "on disk the durable watermark counts");
        idx.flush().await.unwrap();
        let g = idx.read().unwrap();
        let metas = g.live.as_ref().unwrap().reader.searcher().index().load_metas().unwrap();
        let payload: Payload = serde_json::from_str(metas.payload.as_deref().unwrap()).unwrap();
        assert_eq!((payload.schema, payload.watermark), (SCHEMA_VERSION, 7));
        assert_eq!((payload.vectors_generation, payload.vectors_len), (g.vectors_generation, g.vectors_len));
        assert!(payload.vectors_len > 0, "the vector is in the log the payload names");
        assert!(g.pending_vectors.is_empty());
        assert_eq!(g.durable_watermark, 7);
    }

    #[tokio::test]
    async fn a_clear_on_disk_rebuilds_beside_the_index_until_the_flush_puts_it_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let idx = on_disk(dir.path()).await;
        idx.flush().await.unwrap();
        assert!(!dir.path().join(rebuild_aside::REBUILD_DIR).exists(), "the first rebuild is in place");
        idx.upsert(vec![doc(1, "kiwi", None)]).await.unwrap();
        idx.flush().await.unwrap();
        idx.clear().await.unwrap();
        assert!(idx.read().unwrap().rebuilding);
        assert!(dir.path().join(rebuild_aside::REBUILD_DIR).is_dir(), "written beside the index in place");
        idx.upsert(vec![doc(2, "mango", None)]).await.unwrap();
        idx.flush().await.unwrap();
        assert!(!idx.read().unwrap().rebuilding);
        assert!(!dir.path().join(rebuild_aside::REBUILD_DIR).exists(), "put in place by the flush");
        assert_eq!(ids(&search(&idx, "mango", None, SearchMode::Lexical).await), vec![2]);
        assert!(search(&idx, "kiwi", None, SearchMode::Lexical).await.is_empty(), "the old index is gone");
        assert_eq!(idx.segment_count().unwrap().map(|n| n > 0), Some(true));
    }

    #[tokio::test]
    async fn segments_are_counted_on_disk_only() {
        let idx = in_ram();
        idx.upsert(vec![doc(1, "kiwi", None)]).await.unwrap();
        idx.flush().await.unwrap();
        assert_eq!(idx.segment_count().unwrap(), None);
    }
}
