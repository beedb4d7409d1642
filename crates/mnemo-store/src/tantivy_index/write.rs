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

