//! Absolute relevance evidence on recall's candidates (the arithmetic and what each number
//! means: `mnemo_contract::relevance`). Fusion ranks as before; each trace entry whose row
//! recall holds (every packed memory, and the candidates the recall cache keeps) gains
//! `evidence`, which the assessor reads instead of the relative rank score.
use std::collections::HashMap;
use std::sync::Arc;

use super::recall_cache::Packable;
use super::Engine;
use crate::model::{Memory, MemoryId, Namespace};
use crate::planner::Pack;
use crate::relevance::{cosine, memory_terms, DenseCalibration, QueryTerms, RelevanceEvidence, CALIBRATION_TEXTS};

/// The embedder's calibration, measured once per engine, on the first recall that has a query
/// vector (a failure is not kept: the next such recall tries again).
pub(crate) type CalibrationCell = tokio::sync::OnceCell<DenseCalibration>;

/// Whether the query names the memory's claim entity or one of its entities.
fn names_entity(q: &QueryTerms, m: &Memory) -> bool {
    m.claim.as_ref().is_some_and(|c| q.names(&c.entity)) || m.entities.iter().any(|e| q.names(e))
}

impl Engine {
    /// The embedder's cosine between unrelated texts (measured once), or why it is unknown.
    async fn dense_calibration(&self) -> std::result::Result<DenseCalibration, String> {
        self.dense_calibration
            .get_or_try_init(|| async {
                let texts: Vec<String> = CALIBRATION_TEXTS.iter().map(|t| t.to_string()).collect();
                let vectors = self.embedder.embed(&texts).await.map_err(|e| e.to_string())?;
                DenseCalibration::from_vectors(&vectors).ok_or_else(|| "the embedder returned no vectors".to_string())
            })
            .await
            .copied()
    }

    /// Fill `pack.trace[..].evidence` for `query` (its vector: `embedding`).
    pub(super) async fn attach_evidence(
        &self,
        ns: &Namespace,
        query: &str,
        embedding: Option<&[f32]>,
        pack: &mut Pack,
    ) {
        let calibration = match embedding {
            None => None,
            Some(_) => match self.dense_calibration().await {
                Ok(c) => Some(c),
                Err(why) => {
                    pack.notes.push(format!(
                        "dense relevance evidence off for this recall: the embedder could not be calibrated ({why})"
                    ));
                    None
                }
            },
        };
        // Rows (and their terms, computed once per memory) from the recall cache; a packed
        // memory the cache does not keep is weighed from the pack.
        let ids: Vec<MemoryId> = pack.trace.iter().map(|t| t.id).collect();
        let cached: HashMap<MemoryId, Arc<Packable>> =
            self.recall_cache.lookup(ns, &ids).found.into_iter().map(|p| (p.memory.id, p)).collect();
        let packed: HashMap<MemoryId, &Arc<Memory>> = pack.items.iter().map(|i| (i.memory.id, &i.memory)).collect();
        let mut held: Vec<(usize, Arc<Memory>)> = Vec::with_capacity(ids.len());
        let mut terms: Vec<std::borrow::Cow<'_, [String]>> = Vec::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            if let Some(p) = cached.get(id) {
                held.push((i, p.memory.clone()));
                terms.push(std::borrow::Cow::Borrowed(p.terms()));
            } else if let Some(m) = packed.get(id) {
                held.push((i, (*m).clone()));
                terms.push(std::borrow::Cow::Owned(memory_terms(m)));
            }
        }
        let q = QueryTerms::of(query);
        let weights = q.weights(&terms);
        let model = self.embedder.model_id();
        for ((i, m), doc) in held.iter().zip(&terms) {
            let lexical = q.coverage(&weights, doc);
            let dense_z = match (embedding, calibration, &m.embedding) {
                (Some(e), Some(c), Some(v)) if v.model == model => cosine(e, &v.vector).map(|cos| c.z(cos)),
                _ => None,
            };
            pack.trace[*i].evidence = Some(RelevanceEvidence::new(lexical, dense_z, names_entity(&q, m)));
        }
    }
}
