//! Writing: upserted documents (their vectors, then their tantivy documents and overlay
//! entries, replacing any earlier version) and removals, each followed by a commit when one is
//! due; and queueing the vector log's operations.
use mnemo_contract::{IndexDoc, MemoryId, Namespace, Result};
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::IndexRecordOption;
use tantivy::{TantivyDocument, Term};

use super::vector_log::VecOp;
use super::{stale_err, terr, Inner, TantivyIndex};
use crate::brute::indexed_text;
use crate::vector::{AnnVectors, VectorIndex};

impl TantivyIndex {
    /// `Index::upsert`: vectors, then documents, then a commit if one is due.
    pub(super) fn upsert_docs(&self, docs: Vec<IndexDoc>) -> Result<()> {
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
    }

    /// `Index::remove`: the documents and vectors of `ids` in `namespace` (only there), then a
    /// commit if one is due.
    pub(super) fn remove_ids(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<()> {
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
}

/// Queue for the vector log the IVFs that changed wholesale (trained, dropped) in the last
/// vector operation; in RAM (`persist` false) they are only forgotten.
pub(super) fn queue_ivf_changes(vectors: &mut AnnVectors, pending: &mut Vec<VecOp>, persist: bool) {
    for ns in vectors.take_ivf_changes() {
        if persist {
            let snap = vectors.ivf_snapshot(&ns);
            pending.push(VecOp::Ivf(ns, snap));
        }
    }
}

/// Put a finished background training in place and queue what it changed for the log.
pub(super) fn adopt_training(g: &mut Inner, persist: bool) {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use mnemo_contract::{Index, SearchMode};

    use super::super::test_support::{doc, doc_in, ids, in_ram, ns, on_disk, search, unit};
    use super::*;

    #[tokio::test]
    async fn an_upsert_replaces_the_text_and_the_vector_of_its_id() {
        let idx = in_ram();
        idx.upsert(vec![doc(1, "kiwi tart", Some(unit(0)))]).await.unwrap();
        idx.upsert(vec![doc(1, "mango jam", Some(unit(2)))]).await.unwrap();
        assert!(search(&idx, "kiwi", None, SearchMode::Lexical).await.is_empty(), "the old text is gone");
        assert_eq!(ids(&search(&idx, "mango", None, SearchMode::Lexical).await), vec![1]);
        assert_eq!(idx.vector_count().unwrap(), 1, "one vector per id");
        let dense = search(&idx, "", Some(unit(2)), SearchMode::Dense).await;
        assert_eq!(ids(&dense), vec![1]);
        assert!(dense[0].score > 0.99, "the new vector is the one searched: {dense:?}");
    }

    #[tokio::test]
    async fn an_upsert_without_a_vector_removes_the_old_one() {
        let idx = in_ram();
        idx.upsert(vec![doc(1, "kiwi", Some(unit(0)))]).await.unwrap();
        idx.upsert(vec![doc(1, "kiwi", None)]).await.unwrap();
        assert_eq!(idx.vector_count().unwrap(), 0);
        assert!(search(&idx, "", Some(unit(0)), SearchMode::Dense).await.is_empty());
        assert_eq!(ids(&search(&idx, "kiwi", None, SearchMode::Lexical).await), vec![1], "the text stays");
    }

    #[tokio::test]
    async fn a_removal_deletes_the_document_and_its_vector_in_its_namespace_only() {
        let idx = in_ram();
        idx.upsert(vec![doc(1, "kiwi", Some(unit(0))), doc(2, "kiwi", Some(unit(1)))]).await.unwrap();
        idx.flush().await.unwrap();
        // Removing 1 from another namespace leaves it, vector included.
        idx.remove(&ns("b"), &[MemoryId(1)]).await.unwrap();
        assert_eq!(idx.vector_count().unwrap(), 2);
        idx.remove(&ns("a"), &[MemoryId(1)]).await.unwrap();
        assert_eq!(idx.vector_count().unwrap(), 1);
        assert_eq!(ids(&search(&idx, "kiwi", None, SearchMode::Lexical).await), vec![2]);
        assert_eq!(ids(&search(&idx, "", Some(unit(0)), SearchMode::Dense).await), vec![2], "only 2's vector is left");
        idx.flush().await.unwrap();
        assert_eq!(ids(&search(&idx, "kiwi", None, SearchMode::Lexical).await), vec![2], "and after the commit");
    }

    #[tokio::test]
    async fn on_disk_each_vector_change_is_queued_for_the_log_and_in_ram_none_is() {
        let ram = in_ram();
        ram.upsert(vec![doc(1, "kiwi", Some(unit(0)))]).await.unwrap();
        ram.remove(&ns("a"), &[MemoryId(1)]).await.unwrap();
        assert!(ram.read().unwrap().pending_vectors.is_empty(), "nothing to log in RAM");

        let dir = tempfile::tempdir().unwrap();
        let disk = on_disk(dir.path()).await;
        disk.flush().await.unwrap();
        disk.upsert(vec![doc(1, "kiwi", Some(unit(0))), doc_in("b", 2, "mango", Some(unit(1)))]).await.unwrap();
        disk.remove(&ns("a"), &[MemoryId(1)]).await.unwrap();
        let g = disk.read().unwrap();
        let ops: Vec<String> = g
            .pending_vectors
            .iter()
            .map(|op| match op {
                VecOp::Upsert(ns, id, ..) => format!("upsert {} {}", ns.as_str(), id.0),
                VecOp::Remove(id) => format!("remove {}", id.0),
                VecOp::Ivf(ns, _) => format!("ivf {}", ns.as_str()),
            })
            .collect();
        assert_eq!(ops, vec!["upsert a 1", "upsert b 2", "remove 1"], "in the order they happened");
    }
}
