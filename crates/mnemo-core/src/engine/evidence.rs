//! Absolute relevance evidence on recall's candidates (the arithmetic and what each number
//! means: `mnemo_contract::relevance`). Fusion ranks as before; each trace entry whose row
//! recall holds (every packed memory, and the candidates the recall cache keeps) gains
//! `evidence`, which the assessor reads instead of the relative rank score.
use std::sync::Arc;

use super::Engine;
use mnemo_contract::model::{Memory, MemoryId, Namespace};
use mnemo_contract::pack::Pack;
use mnemo_contract::relevance::{cosine, DenseCalibration, QueryTerms, RelevanceEvidence, CALIBRATION_TEXTS};

/// The embedder's calibration, measured once per engine, on the first recall that has a query
/// vector (a failure is not kept: the next such recall tries again).
pub(crate) type CalibrationCell = tokio::sync::OnceCell<DenseCalibration>;

/// Which query terms a memory holds: in its text, entities or claim.
pub(super) fn held_terms(q: &QueryTerms, m: &Memory) -> u64 {
    let mut held = q.held_in(&m.content);
    for e in &m.entities {
        held |= q.held_in(e);
    }
    if let Some(c) = &m.claim {
        held |= q.held_in(&c.entity) | q.held_in(&c.attribute) | q.held_in(&c.value);
    }
    held
}

/// Whether the query names the memory's claim entity or one of its entities.
pub(super) fn names_entity(q: &QueryTerms, m: &Memory) -> bool {
    m.claim.as_ref().is_some_and(|c| q.names(&c.entity)) || m.entities.iter().any(|e| q.names(e))
}

impl Engine {
    /// The embedder's cosine between unrelated texts (measured once), or why it is unknown.
    pub(super) async fn dense_calibration(&self) -> std::result::Result<DenseCalibration, String> {
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
        let q = QueryTerms::of(query);
        // The rows recall holds: the packed ones, and the other candidates the cache keeps.
        // Both lists are in trace order (the pack keeps the planner's order, the cache answers
        // in the order asked), so each is taken in turn, without a map.
        let others: Vec<MemoryId> = pack.trace.iter().filter(|t| !t.included).map(|t| t.id).collect();
        let cached = if others.is_empty() { Vec::new() } else { self.recall_cache.lookup(ns, &others).found };
        let (mut packed, mut cached) = (pack.items.iter().peekable(), cached.iter().peekable());
        let mut held: Vec<(usize, Arc<Memory>)> = Vec::with_capacity(pack.trace.len());
        for (i, t) in pack.trace.iter().enumerate() {
            let row = if t.included {
                packed.next_if(|p| p.memory.id == t.id).map(|p| p.memory.clone())
            } else {
                cached.next_if(|p| p.memory.id == t.id).map(|p| p.memory.clone())
            };
            if let Some(m) = row {
                held.push((i, m));
            }
        }
        let terms: Vec<u64> = held.iter().map(|(_, m)| held_terms(&q, m)).collect();
        let weights = q.weights(&terms);
        let model = self.embedder.model_id();
        let mut evidence = Vec::with_capacity(held.len());
        for ((i, m), doc) in held.iter().zip(&terms) {
            let lexical = q.coverage(&weights, *doc);
            let dense_z = match (embedding, calibration, &m.embedding) {
                (Some(e), Some(c), Some(v)) if v.model == model => cosine(e, &v.vector).map(|cos| c.z(cos)),
                _ => None,
            };
            evidence.push((*i, RelevanceEvidence::new(lexical, dense_z, names_entity(&q, m))));
        }
        for (i, e) in evidence {
            pack.trace[i].evidence = Some(e);
        }
    }
}
