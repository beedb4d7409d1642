//! The dense side for benchmarks, tests and reports: vectors held, exact nearest neighbours,
//! and IVF training on demand.
use mnemo_contract::{Hit, Namespace, Result};

use super::write::queue_ivf_changes;
use super::TantivyIndex;
use crate::vector::VectorIndex;

impl TantivyIndex {
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
