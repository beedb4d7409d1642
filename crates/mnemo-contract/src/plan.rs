//! Planning from an assessed pack: what the agent will do with what memory let through.
//!
//! The Reasoner's plan step ([`crate::Reasoner::plan`]) reads the task and the pack's lines as
//! the assessor left them (grounded values in place, trust per memory) and answers a plan: the
//! answer, its steps, and the memories and values it uses. The agent checks a plan against the
//! pack before acting on it (mnemo-agent's faithfulness check); a plan that cites a memory the
//! pack does not hold, or states another value than the pack's, is refused and the turn
//! escalates.
//!
//! [`deterministic`] is the plan the offline fake model answers, and the default of a reasoner
//! that has no plan step of its own: it acts on the task's claim when the pack holds it, else on
//! the first memory whose claim the query names, else on the pack's first memory.
use serde::{Deserialize, Serialize};

use crate::model::{Claim, MemoryId, MemoryKind};
use crate::text::norm_name;
use crate::{ModelInfo, Task};

/// One memory of the pack as a plan is made from it (after grounding).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanLine {
    /// The memory.
    pub id: MemoryId,
    /// Its kind.
    pub kind: MemoryKind,
    /// What it says.
    pub content: String,
    /// Its claim, with the value the pack holds (the grounded one when a system of record
    /// corrected it).
    pub claim: Option<Claim>,
    /// The assessor's trust in it (None: ungraded).
    pub trust: Option<f64>,
}

/// A memory a plan uses, and the value it takes from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanUse {
    /// The memory.
    pub memory: MemoryId,
    /// The value the plan states for the memory's claim (None: the plan uses its content).
    pub value: Option<String>,
}

/// What a plan says, before who made it is attached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanDraft {
    /// The answer to the task, in one or two sentences.
    pub answer: String,
    /// The steps to take, in order (may be empty).
    pub steps: Vec<String>,
    /// The memories it uses, with their values.
    pub uses: Vec<PlanUse>,
}

/// A plan, and the model that made it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The answer to the task.
    pub answer: String,
    /// The steps to take.
    pub steps: Vec<String>,
    /// The memories it uses, with their values.
    pub uses: Vec<PlanUse>,
    /// Who planned (as the answer echoed it).
    pub model: ModelInfo,
}

impl PlanDraft {
    /// The plan with who made it.
    pub fn by(self, model: ModelInfo) -> Plan {
        Plan { answer: self.answer, steps: self.steps, uses: self.uses, model }
    }
}

/// The plan of the offline model: acts on the task's claim when a line asserts it, else on the
/// first line whose claim entity the query names, else on the first line; nothing when the pack
/// is empty.
pub fn deterministic(task: &Task, lines: &[PlanLine]) -> PlanDraft {
    let about = task.about.as_ref().map(|(e, a)| (norm_name(e), norm_name(a)));
    let query = norm_name(&task.query);
    let of_claim = |l: &&PlanLine| {
        let (Some((e, a)), Some(c)) = (&about, &l.claim) else { return false };
        &norm_name(&c.entity) == e && &norm_name(&c.attribute) == a
    };
    let named = |l: &&PlanLine| l.claim.as_ref().is_some_and(|c| query.contains(&norm_name(&c.entity)));
    let chosen = lines.iter().find(of_claim).or_else(|| lines.iter().find(named)).or_else(|| lines.first());
    let Some(line) = chosen else {
        return PlanDraft {
            answer: "Memory holds nothing to act on for this task.".into(),
            steps: vec![],
            uses: vec![],
        };
    };
    match &line.claim {
        Some(c) => PlanDraft {
            answer: format!("{} {} is {}.", c.entity, c.attribute, c.value),
            steps: vec![format!("Act on {} | {} = {} (memory {}).", c.entity, c.attribute, c.value, line.id)],
            uses: vec![PlanUse { memory: line.id, value: Some(c.value.clone()) }],
        },
        None => PlanDraft {
            answer: line.content.clone(),
            steps: vec![format!("Act on memory {}: {}", line.id, line.content)],
            uses: vec![PlanUse { memory: line.id, value: None }],
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: i64, claim: Option<(&str, &str, &str)>) -> PlanLine {
        PlanLine {
            id: MemoryId(n),
            kind: MemoryKind::Semantic,
            content: claim.map_or("free text".to_string(), |(e, a, v)| format!("{e} | {a} | {v}")),
            claim: claim.map(|(e, a, v)| Claim { entity: e.into(), attribute: a.into(), value: v.into() }),
            trust: Some(0.9),
        }
    }

    #[test]
    fn the_task_claim_is_used_with_the_packs_value() {
        let task = Task { query: "reorder".into(), about: Some(("IC-MC-44".into(), "Lead Time".into())) };
        let lines = [line(1, Some(("S-208", "city", "Lyon"))), line(2, Some(("IC-MC-44", "lead time", "35 days")))];
        let p = deterministic(&task, &lines);
        assert_eq!(p.uses, vec![PlanUse { memory: MemoryId(2), value: Some("35 days".into()) }]);
        assert!(p.answer.contains("35 days") && p.steps[0].contains("memory m2"), "{p:?}");
    }

    #[test]
    fn without_a_claim_the_named_entity_then_the_first_line() {
        let lines = [line(1, Some(("S-208", "city", "Lyon"))), line(2, Some(("Ben", "phone", "555")))];
        let named = Task { query: "call Ben".into(), about: None };
        assert_eq!(deterministic(&named, &lines).uses[0].memory, MemoryId(2));
        let unnamed = Task { query: "anything".into(), about: None };
        assert_eq!(deterministic(&unnamed, &lines).uses[0].memory, MemoryId(1));
        let empty = deterministic(&unnamed, &[]);
        assert!(empty.uses.is_empty() && empty.answer.contains("nothing"), "{empty:?}");
        let free = deterministic(&unnamed, &[line(3, None)]);
        assert_eq!(free.uses, vec![PlanUse { memory: MemoryId(3), value: None }]);
    }
}
