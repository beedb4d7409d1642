//! What a caller acts on: the decision, the value(s) to act on, and for ESCALATE the weak
//! load-bearing memories and why. Derived from an assessment; recall's JSON carries it.
use serde::{Deserialize, Serialize};

use mnemo_contract::{Assessment, Decision, MemoryId, Task};

use crate::runtime::answer_of;

/// A value the agent may act on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActOn {
    /// The memory holding it (after any grounding substitution).
    pub memory: MemoryId,
    /// Entity.
    pub entity: String,
    /// Attribute.
    pub attribute: String,
    /// The value.
    pub value: String,
    /// How its trust was reached.
    pub basis: String,
}

/// A load-bearing memory below the threshold.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Weak {
    /// The memory.
    pub memory: MemoryId,
    /// Its content.
    pub content: String,
    /// Its trust.
    pub trust: f64,
    /// Why its trust is what it is.
    pub why: String,
}

/// The decision in a form a script can use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// "act" or "escalate".
    pub decision: String,
    /// Pack trust.
    pub trust: f64,
    /// The threshold.
    pub threshold: f64,
    /// ACT: the value(s) to act on — the task's claim when it has one, else every
    /// load-bearing claim (the highest-ranked memory per entity and attribute). Empty on ESCALATE.
    pub act_on: Vec<ActOn>,
    /// ESCALATE: load-bearing memories below the threshold, and why.
    pub weak: Vec<Weak>,
    /// ESCALATE: every reason.
    pub reasons: Vec<String>,
}

/// The verdict of `a` for `task`.
pub fn verdict(task: &Task, a: &Assessment) -> Verdict {
    let basis = |id: MemoryId| a.grades.iter().find(|g| g.id == id).map(|g| g.basis.clone()).unwrap_or_default();
    let (decision, reasons) = match &a.decision {
        Decision::Act => ("act", Vec::new()),
        Decision::Escalate { reasons } => ("escalate", reasons.clone()),
    };
    let mut act_on = Vec::new();
    if decision == "act" {
        let on = |m: &mnemo_contract::Memory| {
            m.claim.as_ref().map(|c| ActOn {
                memory: m.id,
                entity: c.entity.clone(),
                attribute: c.attribute.clone(),
                value: c.value.clone(),
                basis: basis(m.id),
            })
        };
        match task.about.as_ref().or(a.inferred_about.as_ref()) {
            Some((e, at)) => act_on.extend(answer_of(&a.pack, e, at).and_then(on)),
            None => {
                for m in a.pack.memories() {
                    let bearing = a.grades.iter().any(|g| g.id == m.id && g.load_bearing);
                    let Some(c) = m.claim.as_ref().filter(|_| bearing) else { continue };
                    let seen = act_on.iter().any(|x: &ActOn| c.is_on(&x.entity, &x.attribute));
                    if !seen {
                        act_on.extend(on(m));
                    }
                }
            }
        }
    }
    let weak = a
        .grades
        .iter()
        .filter(|g| decision == "escalate" && g.load_bearing && g.trust < a.threshold)
        .map(|g| Weak {
            memory: g.id,
            content: a.pack.memories().find(|m| m.id == g.id).map(|m| m.content.clone()).unwrap_or_default(),
            trust: g.trust,
            why: g.basis.clone(),
        })
        .collect();
    Verdict { decision: decision.to_string(), trust: a.trust, threshold: a.threshold, act_on, weak, reasons }
}
