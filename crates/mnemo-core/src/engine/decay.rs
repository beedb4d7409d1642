//! The decay sweep: memories of decaying kinds whose salience fell below the threshold are
//! tombstoned with reason "decayed" and their score.
use serde::{Deserialize, Serialize};

use super::Engine;
use crate::error::Result;
use crate::model::*;
use crate::salience::salience;

/// What a sweep did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DecayReport {
    /// Active memories examined.
    pub examined: usize,
    /// (memory, salience) of those tombstoned.
    pub decayed: Vec<(MemoryId, f64)>,
}

impl Engine {
    /// Sweep one namespace at the clock's now.
    pub async fn decay_sweep(&self, ns: &Namespace) -> Result<DecayReport> {
        let _write = self.write_guard(ns).await?;
        let now = self.clock.now();
        let active = self.store.active(ns).await?;
        let mut report = DecayReport { examined: active.len(), decayed: vec![] };
        let mut ops = Vec::new();
        for m in &active {
            if !self.policy.kinds.of(m.kind).decays || m.pinned {
                continue;
            }
            let s = salience(m, now, &self.policy);
            if s < self.policy.decay.threshold {
                report.decayed.push((m.id, s));
                ops.push(WriteOp::Tombstone {
                    id: m.id,
                    reason: format!("decayed: salience {s:.4} < threshold {:.4}", self.policy.decay.threshold),
                    superseded_by: None,
                    turn: None,
                });
            }
        }
        if !ops.is_empty() {
            self.store.apply(ns, now, ops).await?;
            self.sync().await?;
        }
        Ok(report)
    }
}
