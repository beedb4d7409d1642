//! Absolute relevance evidence on recall's candidates (the arithmetic and what each number
//! means: `mnemo_contract::relevance`). Fusion ranks as before; each trace entry whose row
//! recall holds (every packed memory, and the candidates the recall cache keeps) gains
//! `evidence`, which the assessor reads instead of the relative rank score.
use std::collections::HashMap;
use std::sync::Arc;

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
        let mut rows: HashMap<MemoryId, Arc<Memory>> =
            pack.items.iter().map(|i| (i.memory.id, i.memory.clone())).collect();
        let others: Vec<MemoryId> = pack.trace.iter().map(|t| t.id).filter(|id| !rows.contains_key(id)).collect();
        if !others.is_empty() {
            for p in self.recall_cache.lookup(ns, &others).found {
                rows.insert(p.memory.id, p.memory.clone());
            }
        }
        let q = QueryTerms::of(query);
        let held: Vec<(usize, &Arc<Memory>)> =
            pack.trace.iter().enumerate().filter_map(|(i, t)| rows.get(&t.id).map(|m| (i, m))).collect();
        let terms: Vec<Vec<String>> = held.iter().map(|(_, m)| memory_terms(m)).collect();
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
