//! Corrections an assessor asks for, and how an applied set changes its assessment.
//!
//! An assessor does not write: it returns, inside its [`Assessment`], the corrections it wants
//! (a system of record holds a newer value for a packed memory; a system of record confirms
//! one). Whoever owns the memory applies them afterwards — the runtime through
//! `Engine::apply_corrections`, under the namespace's write lock; the assessor eval in memory —
//! and [`Assessment::settle`] then shows the corrected memories in the pack. So an assessor
//! loaded from a plugin library, which can only answer with data, corrects exactly as a linked
//! one does.
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

use crate::assessment::{Assessment, Substitution};
use crate::error::{AssessorErrorKind, CoreError, Result};
use crate::model::{Memory, MemoryId};

/// A write-back asked for by an assessor.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Correction {
    /// The system of record `source` holds `value` for the claim of packed memory `memory`,
    /// which says otherwise: tombstone it (superseded, reason naming the source) and insert the
    /// claim with the fresh value, sourced from `source`.
    Supersede {
        /// The stale memory (in the pack).
        memory: MemoryId,
        /// The value the system of record holds.
        value: String,
        /// The system of record.
        source: String,
    },
    /// The system of record `source` holds the value packed memory `memory` says: add the
    /// source and set its confirmation time to now.
    Confirm {
        /// The confirmed memory (in the pack).
        memory: MemoryId,
        /// The system of record.
        source: String,
    },
}

impl Correction {
    /// The packed memory it is about.
    pub fn memory(&self) -> MemoryId {
        match self {
            Correction::Supersede { memory, .. } | Correction::Confirm { memory, .. } => *memory,
        }
    }
    /// The system of record that asks for it.
    pub fn source(&self) -> &str {
        match self {
            Correction::Supersede { source, .. } | Correction::Confirm { source, .. } => source,
        }
    }
}

impl Assessment {
    /// Check the corrections against the pack they came with: each names a packed memory, a
    /// memory is corrected at most once, a supersede needs a claim and a non-blank value, and
    /// every source is named. An assessor (a plugin especially) that asks for anything else is
    /// refused here, before anything is written.
    pub fn check_corrections(&self) -> Result<()> {
        let mut seen = HashSet::new();
        for c in &self.corrections {
            let id = c.memory();
            let bad = |why: String| {
                CoreError::assessor_message(
                    AssessorErrorKind::BadAnswer,
                    format!("correction of memory {id} refused: {why}"),
                )
            };
            let Some(item) = self.pack.items.iter().find(|i| i.memory.id == id) else {
                return Err(bad("the memory is not in the pack that was assessed".into()));
            };
            if !seen.insert(id) {
                return Err(bad("the memory is corrected more than once".into()));
            }
            if c.source().trim().is_empty() {
                return Err(bad("no source named".into()));
            }
            if let Correction::Supersede { value, .. } = c {
                if item.memory.claim.is_none() {
                    return Err(bad("the memory makes no claim to supersede".into()));
                }
                if value.trim().is_empty() {
                    return Err(bad("the fresh value is blank".into()));
                }
            }
        }
        Ok(())
    }

    /// The assessment once its corrections are applied: `applied[i]` is the memory that
    /// `corrections[i]` resulted in (the fresh memory of a supersede, the updated memory of a
    /// confirm). The pack shows them in place of the memories they correct, the grades follow
    /// them, and each supersede is recorded as a substitution.
    pub fn settle(mut self, applied: Vec<Memory>) -> Result<Assessment> {
        if applied.len() != self.corrections.len() {
            // Whoever applied them broke the contract (the assessor's answer was checked before).
            return Err(CoreError::assessor_message(
                AssessorErrorKind::Other,
                format!("{} corrections asked for, {} applied", self.corrections.len(), applied.len()),
            ));
        }
        for (c, memory) in self.corrections.iter().zip(applied) {
            let id = c.memory();
            let Some(item) = self.pack.items.iter_mut().find(|i| i.memory.id == id) else {
                return Err(CoreError::assessor_message(
                    AssessorErrorKind::Other,
                    format!("correction of memory {id}: the memory is not in the pack"),
                ));
            };
            if let Correction::Supersede { value, source, .. } = c {
                let old_value = item.memory.claim.as_ref().map(|cl| cl.value.clone()).unwrap_or_default();
                self.substitutions.push(Substitution {
                    stale: id,
                    fresh: memory.id,
                    source: source.clone(),
                    old_value,
                    new_value: value.clone(),
                });
                for g in self.grades.iter_mut().filter(|g| g.id == id) {
                    g.id = memory.id;
                }
            }
            item.memory = std::sync::Arc::new(memory);
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::model::*;
    use crate::pack::{Pack, PackItem};
    use crate::time::Timestamp;
    use crate::{Decision, MemoryGrade};

    fn memory(id: i64, claim: Option<(&str, &str, &str)>) -> Memory {
        let at = Timestamp::parse_rfc3339("2026-07-01T00:00:00Z").unwrap();
        Memory { claim: claim.map(|(e, a, v)| Claim::new(e, a, v)), ..crate::model::fixtures::memory(id, at) }
    }

    fn assessment(corrections: Vec<Correction>) -> Assessment {
        let items = vec![memory(1, Some(("SKU-1", "stock", "40"))), memory(2, None)];
        let grades = items
            .iter()
            .map(|m| MemoryGrade { id: m.id, trust: 1.0, load_bearing: true, basis: String::new() })
            .collect();
        Assessment {
            pack: Pack {
                items: items
                    .into_iter()
                    .map(|m| PackItem { memory: std::sync::Arc::new(m), score: 1.0, tokens: 1 })
                    .collect(),
                ..Pack::default()
            },
            trust: 1.0,
            threshold: 0.5,
            decision: Decision::Act,
            grades,
            substitutions: vec![],
            lookups: vec![],
            inferred_about: None,
            corrections,
        }
    }

    #[test]
    fn a_settled_supersede_replaces_the_memory_its_grade_and_records_a_substitution() {
        let a = assessment(vec![
            Correction::Supersede { memory: MemoryId(1), value: "35".into(), source: "wms".into() },
            Correction::Confirm { memory: MemoryId(2), source: "wms".into() },
        ]);
        a.check_corrections().unwrap();
        let fresh = memory(9, Some(("SKU-1", "stock", "35")));
        let mut confirmed = memory(2, None);
        confirmed.sources.push("wms".into());
        let s = a.settle(vec![fresh.clone(), confirmed.clone()]).unwrap();
        assert_eq!(s.pack.items[0].memory, fresh.into());
        assert_eq!(s.pack.items[1].memory, confirmed.into());
        assert_eq!(s.grades[0].id, MemoryId(9));
        assert_eq!(s.grades[1].id, MemoryId(2));
        assert_eq!(
            s.substitutions,
            vec![Substitution {
                stale: MemoryId(1),
                fresh: MemoryId(9),
                source: "wms".into(),
                old_value: "40".into(),
                new_value: "35".into()
            }]
        );
    }

    #[test]
    fn corrections_that_do_not_fit_the_pack_are_refused_naming_why() {
        let cases = [
            (Correction::Confirm { memory: MemoryId(7), source: "wms".into() }, "not in the pack"),
            (Correction::Supersede { memory: MemoryId(2), value: "1".into(), source: "wms".into() }, "no claim"),
            (Correction::Supersede { memory: MemoryId(1), value: " ".into(), source: "wms".into() }, "blank"),
            (Correction::Confirm { memory: MemoryId(1), source: "".into() }, "no source"),
        ];
        for (c, why) in cases {
            let e = assessment(vec![c]).check_corrections().unwrap_err();
            // The assessor's answer is at fault, not the runtime.
            assert_eq!(e.assessor_kind(), Some(AssessorErrorKind::BadAnswer), "{e}");
            let e = e.to_string();
            assert!(e.contains(why), "{e}");
        }
        let twice = assessment(vec![
            Correction::Confirm { memory: MemoryId(1), source: "a".into() },
            Correction::Confirm { memory: MemoryId(1), source: "b".into() },
        ]);
        assert!(twice.check_corrections().unwrap_err().to_string().contains("more than once"));
        let e = assessment(vec![Correction::Confirm { memory: MemoryId(1), source: "a".into() }])
            .settle(vec![])
            .unwrap_err();
        assert_eq!(e.assessor_kind(), Some(AssessorErrorKind::Other), "{e}");
        assert_eq!(e.to_string(), "assessor error: 1 corrections asked for, 0 applied");
    }
}
