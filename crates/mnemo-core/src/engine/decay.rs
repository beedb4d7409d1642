//! The decay sweep: memories of decaying kinds whose salience fell below the threshold are
//! tombstoned with reason "decayed" and their score.
//!
//! The sweep reads only the memories whose decay due time has passed (`Store::due_for_decay`,
//! a range query on a store that keeps the due time; see `decay_due`), page by page, and
//! re-checks each one's real salience, so it tombstones exactly what a full scan would.
use serde::{Deserialize, Serialize};

use super::Engine;
use mnemo_contract::decay_due::{DecayRule, DuePage};
use mnemo_contract::error::Result;
use mnemo_contract::model::*;
use mnemo_contract::salience::salience;

/// Due memories read per store call.
const SWEEP_PAGE: usize = 1_000;

/// What a sweep did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DecayReport {
    /// Memories examined: those whose decay due time had passed (not the whole namespace).
    pub examined: usize,
    /// (memory, salience) of those tombstoned.
    pub decayed: Vec<(MemoryId, f64)>,
}

impl Engine {
    /// Sweep one namespace at the clock's now.
    pub async fn decay_sweep(&self, ns: &Namespace) -> Result<DecayReport> {
        let _write = self.write_guard(ns).await?;
        let now = self.clock.now();
        let rule = DecayRule::of(&self.policy);
        let threshold = self.policy.decay.threshold;
        let mut report = DecayReport::default();
        let mut after = None;
        loop {
            let page = self.store.due_for_decay(ns, &rule, &DuePage { now, after, limit: SWEEP_PAGE }).await?;
            report.examined += page.len();
            let mut ops = Vec::new();
            for d in &page {
                let m = &d.memory;
                if !rule.decays(m.kind) || m.pinned || !m.status.is_active() {
                    continue;
                }
                let s = salience(m, now, &self.policy);
                if s < threshold {
                    report.decayed.push((m.id, s));
                    ops.push(WriteOp::Tombstone {
                        id: m.id,
                        reason: format!("decayed: salience {s:.4} < threshold {threshold:.4}"),
                        superseded_by: None,
                        turn: None,
                    });
                }
            }
            if !ops.is_empty() {
                self.store.apply(ns, now, ops).await?;
            }
            match page.last() {
                Some(last) if page.len() >= SWEEP_PAGE => after = Some((last.due, last.memory.id)),
                _ => break,
            }
        }
        if !report.decayed.is_empty() {
            self.sync().await?;
        }
        Ok(report)
    }
}
