//! The plan step of an agent turn, and the faithfulness check it must pass before the agent
//! acts: a plan may only use memories of the pack the assessor let through, with the values
//! the pack holds after grounding (a claim's value, or words a memory without a claim says). A plan that cites a memory the pack does not hold (a
//! tombstoned or unknown one), states another value for a claim than the pack's (the stale 21
//! days after the ERP said 35), or leaves out the claim the task is about, is refused: the turn
//! escalates with the reason.
use serde::{Deserialize, Serialize};

use mnemo_contract::plan::{Plan, PlanLine};
use mnemo_contract::text::norm_value;
use mnemo_contract::{Assessment, Decision, Namespace, Task};

use crate::runtime::AgentTurn;
use crate::verdict::Verdict;

/// A plan and what the check found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckedPlan {
    /// The plan as the model answered it.
    pub plan: Plan,
    /// It uses only what the pack holds, with the pack's values.
    pub faithful: bool,
    /// Why it was refused (empty when faithful).
    pub refused: Vec<String>,
}

/// The lines a plan is made from: the final pack's memories (grounded values in place), each
/// with the assessor's trust. Only an ACT turn is planned, so every load-bearing memory among
/// them is at or above the threshold.
pub fn lines_of(a: &Assessment) -> Vec<PlanLine> {
    a.pack
        .memories()
        .map(|m| PlanLine {
            id: m.id,
            kind: m.kind,
            content: m.content.clone(),
            claim: m.claim.clone(),
            trust: a.grades.iter().find(|g| g.id == m.id).map(|g| g.trust),
        })
        .collect()
}

/// Check `plan` for `task` against the `lines` it was given, the assessment they came from and
/// the verdict it would act on.
pub fn check(plan: Plan, task: &Task, lines: &[PlanLine], a: &Assessment, verdict: &Verdict) -> CheckedPlan {
    let mut refused = Vec::new();
    for u in &plan.uses {
        let Some(line) = lines.iter().find(|l| l.id == u.memory) else {
            let why = match a.substitutions.iter().find(|s| s.stale == u.memory) {
                Some(s) => format!(
                    "; it is stale: {} holds {:?} (memory {}), not {:?}",
                    s.source, s.new_value, s.fresh, s.old_value
                ),
                None => String::new(),
            };
            refused.push(format!("the plan cites memory {}, which the pack does not hold{why}", u.memory));
            continue;
        };
        match (&u.value, &line.claim) {
            (Some(v), Some(c)) if folded(v) != folded(&c.value) => refused.push(format!(
                "the plan states {} | {} = {v:?}; the pack holds {:?} (memory {})",
                c.entity, c.attribute, c.value, line.id
            )),
            // A memory without a claim holds its words: a value quoted from them is the pack's.
            (Some(v), None) if !contains_value(&folded(&line.content), &folded(v)) => refused.push(format!(
                "the plan states the value {v:?} for memory {}, which holds no claim and does not say it",
                line.id
            )),
            _ => {}
        }
    }
    let said = folded(&format!("{} {}", plan.answer, plan.steps.join(" ")));
    for s in &a.substitutions {
        let (old, new) = (folded(&s.old_value), folded(&s.new_value));
        if !old.is_empty() && contains_value(&said, &old) && !contains_value(&said, &new) {
            refused.push(format!(
                "the plan says {:?}, the stale value: {} holds {:?} (memory {})",
                s.old_value, s.source, s.new_value, s.fresh
            ));
        }
    }
    // A task about one claim (named, or taken from its query) is answered with that claim's
    // value; a task about no claim may use any of what the pack holds.
    let about_a_claim = task.about.is_some() || a.inferred_about.is_some();
    if let (true, [on]) = (about_a_claim, verdict.act_on.as_slice()) {
        // Citing the memory is not enough: the plan must state its value (in the use, or in
        // what it says), or it may act on another value while citing the right memory.
        let states_it = plan
            .uses
            .iter()
            .any(|u| u.memory == on.memory && u.value.as_deref().is_some_and(|v| folded(v) == folded(&on.value)));
        if !states_it && !contains_value(&said, &folded(&on.value)) {
            refused.push(format!(
                "the plan does not use {} | {} = {:?} (memory {}), the claim the task is about",
                on.entity, on.attribute, on.value, on.memory
            ));
        }
    }
    if plan.uses.is_empty() && !lines.is_empty() {
        refused.push("the plan cites no memory of the pack: what it acts on cannot be checked".to_string());
    }
    CheckedPlan { faithful: refused.is_empty(), plan, refused }
}

/// A value as the check compares it: white space folded, case ignored ("35 Days" is "35 days").
fn folded(s: &str) -> String {
    norm_value(s).to_lowercase()
}

/// `value` appears in `text` as whole words.
fn contains_value(text: &str, value: &str) -> bool {
    !value.is_empty()
        && text.match_indices(value).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + value.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
}

/// A refused plan turns the decision into ESCALATE with the check's reasons.
pub fn escalate_if_refused(checked: &CheckedPlan, a: &mut Assessment, verdict: &mut Verdict) {
    if checked.faithful {
        return;
    }
    escalate(checked.refused.iter().map(|r| format!("plan refused: {r}")).collect(), a, verdict);
}

/// The decision becomes ESCALATE for `reasons`, in the assessment and the verdict alike.
fn escalate(reasons: Vec<String>, a: &mut Assessment, verdict: &mut Verdict) {
    a.decision = Decision::Escalate { reasons: reasons.clone() };
    verdict.decision = "escalate".into();
    verdict.act_on.clear();
    verdict.reasons = reasons;
}

impl crate::runtime::Runtime {
    /// On ACT: ask the reasoner for a plan from the assessed pack, check it, and keep it on the
    /// turn; a refused plan, or a plan step that failed (the model unreachable), turns the
    /// decision into ESCALATE with the reason, and the escalation is raised like any other.
    pub async fn plan_turn(&self, ns: &Namespace, task: &Task, turn: &mut AgentTurn) {
        if turn.verdict.decision != "act" {
            return;
        }
        let lines = lines_of(&turn.assessment);
        let checked = match self.engine().plan(task, &lines).await {
            Ok(plan) => check(plan, task, &lines, &turn.assessment, &turn.verdict),
            Err(e) => {
                let reason = format!("the plan step failed ({e}); nothing was checked, so nothing is acted on");
                escalate(vec![reason], &mut turn.assessment, &mut turn.verdict);
                turn.action = crate::runtime::action_text(task, &turn.assessment);
                turn.escalation = self.raise_escalation(ns, task, &turn.assessment, &turn.verdict).await;
                return;
            }
        };
        if checked.faithful {
            turn.action = format!(
                "ACT: {} (plan by {}, checked against the pack; pack trust {:.2} ≥ {:.2})",
                one_line(&checked.plan.answer),
                checked.plan.model.model,
                turn.assessment.trust,
                turn.assessment.threshold
            );
        } else {
            tracing::warn!(namespace = %ns, refused = ?checked.refused, "the plan was refused; the turn escalates");
            escalate_if_refused(&checked, &mut turn.assessment, &mut turn.verdict);
            turn.action = crate::runtime::action_text(task, &turn.assessment);
            turn.escalation = self.raise_escalation(ns, task, &turn.assessment, &turn.verdict).await;
        }
        turn.plan = Some(checked);
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_compare_without_case() {
        assert_eq!(folded(" 35  Days "), folded("35 days"));
    }

    #[test]
    fn values_match_as_whole_words() {
        assert!(contains_value("lead time is 21 days", "21 days"));
        assert!(!contains_value("lead time is 121 days", "21 days"));
        assert!(!contains_value("x", ""));
    }
}
