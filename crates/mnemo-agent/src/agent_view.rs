//! What an agent reads of a recall: the packed memories as prompt-ready lines, the decision and
//! the value(s) to act on, and how many tokens the lines hold — within the recall's budget plus
//! a fixed overhead ([`RENDER_OVERHEAD_TOKENS`]). The full result (every candidate of the trace,
//! full provenance on every memory, the pack before and after grounding) is tens of thousands
//! of tokens for a 256-token budget: an agent asked for 256 tokens of memory must not be handed
//! fifty times that. The full result stays available on request ([`Detail::Full`]).
//!
//! Every door (CLI `--json`, HTTP, MCP) shows this one view; the doors only translate transport.
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use mnemo_contract::{Assessment, Decision, LookupOutcome, Memory, MemoryGrade, Pack, Timestamp, TokenCounter};

use crate::runtime::AgentTurn;
use crate::verdict::Verdict;

/// The most tokens the text rendering adds to its memory lines: the header, the decision line
/// and the notes together, counted with the engine's token counter (clipped to fit, ending
/// in "…"). So the text an agent reads holds at most `budget + RENDER_OVERHEAD_TOKENS` tokens.
/// 96 tokens (384 characters with the default chars/4 counter) hold a header, an ACT line with
/// its value or an ESCALATE line with its first reasons, and a note or two.
pub const RENDER_OVERHEAD_TOKENS: usize = 96;

/// How much of a recall a door returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Detail {
    /// The agent view ([`AgentRecall`]): prompt-ready lines within the budget, the decision.
    #[default]
    Compact,
    /// Everything: the pack with its full trace and provenance, the assessment, the verdict.
    Full,
}

impl Detail {
    /// The names a caller may give, as shown in errors and help.
    pub const NAMES: [&'static str; 2] = ["compact", "full"];
}

/// A detail name that is neither `compact` nor `full`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("detail {given:?} is not one of: compact (the default: prompt-ready lines within the budget), full (the trace and provenance)")]
pub struct UnknownDetail {
    /// What was given.
    pub given: String,
}

impl FromStr for Detail {
    type Err = UnknownDetail;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "compact" => Ok(Detail::Compact),
            "full" => Ok(Detail::Full),
            _ => Err(UnknownDetail { given: s.to_string() }),
        }
    }
}

impl fmt::Display for Detail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Detail::Compact => "compact",
            Detail::Full => "full",
        })
    }
}

/// One packed memory as an agent reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecallLine {
    /// The memory id (`why` explains it).
    #[cfg_attr(feature = "openapi", schema(example = "m42"))]
    pub id: String,
    /// semantic | procedural | episodic.
    pub kind: String,
    /// What it says.
    pub content: String,
    /// Its trust in 0..=1 as graded for this recall; null for a raw (ungraded) recall.
    pub trust: Option<f64>,
    /// Why it is believed, in one line: "verified by erp just now", "said by user, 3 days ago".
    pub basis: String,
}

/// A value the agent may act on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ActOnValue {
    /// The memory holding it.
    #[cfg_attr(feature = "openapi", schema(example = "m42"))]
    pub memory: String,
    /// Entity.
    pub entity: String,
    /// Attribute.
    pub attribute: String,
    /// The value.
    pub value: String,
}

/// The decision of an assessed recall.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RecallDecision {
    /// act | escalate.
    pub decision: String,
    /// Pack trust: the lowest trust of a load-bearing memory.
    pub trust: f64,
    /// The threshold trust must reach to act.
    pub threshold: f64,
    /// ACT: the value(s) to act on. Empty on ESCALATE.
    pub act_on: Vec<ActOnValue>,
    /// ESCALATE: why (ask a human). Empty on ACT.
    pub reasons: Vec<String>,
    /// ESCALATE: the load-bearing memories below the threshold.
    pub weak: Vec<String>,
}

/// A recall as an agent reads it (see the module doc).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AgentRecall {
    /// The packed memories shown, in rank order (pinned first).
    pub memories: Vec<RecallLine>,
    /// What to do; null for a raw recall (no grounding, no grade, no decision).
    pub decision: Option<RecallDecision>,
    /// The token budget of the recall (after any clamp).
    pub budget: usize,
    /// Tokens the memory lines of the text rendering hold (≤ budget).
    pub tokens: usize,
    /// The counter that counted them (the engine's, the one the budget was packed with).
    pub token_counter: String,
    /// Packed memories whose lines did not fit the budget (a line carries id, kind, trust and
    /// basis besides the content the pack budgeted): `detail = "full"` shows them.
    pub left_out: Vec<String>,
    /// Short notes: a clamped budget, a stale value corrected, a system of record that failed.
    pub notes: Vec<String>,
    /// The agent turn on ACT: the plan from the pack, checked against it (absent on a recall).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<PlanView>,
    /// ESCALATE: the escalation recorded, and how a human answers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<EscalationView>,
    /// The prompt-ready text of this view ([`AgentRecall::render`]): what an agent puts in its
    /// prompt, the same at every door. Filled by the doors whose answer is JSON alone (HTTP,
    /// Python); absent where the text travels beside the JSON (MCP's text content, the CLI).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A plan as an agent reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlanView {
    /// The answer to the task.
    pub answer: String,
    /// The steps.
    pub steps: Vec<String>,
    /// The memories it uses (`m42`) and the values it takes from them.
    pub uses: Vec<PlanUseView>,
    /// It uses only what the pack holds, with the pack's values (false: refused, the turn
    /// escalated).
    pub faithful: bool,
    /// Why it was refused.
    pub refused: Vec<String>,
    /// Who planned (the model as its answer echoed it).
    pub model: String,
}

/// A memory a plan uses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlanUseView {
    /// The memory (`m42`).
    pub memory: String,
    /// The value taken from its claim (null: its content).
    pub value: Option<String>,
}

/// An escalation as an agent reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EscalationView {
    /// Its id (`e3`), null when it could not be recorded (`note` says why).
    pub id: Option<String>,
    /// An open escalation on the same task was reused.
    pub reused: bool,
    /// What happened and how a human answers it.
    pub note: String,
}

impl AgentRecall {
    /// The view of an assessed recall: the final pack (after grounding), its grades, the
    /// verdict. `now` ages the memories; `counter` is the engine's.
    pub fn assessed(turn: &AgentTurn, now: Timestamp, counter: &dyn TokenCounter) -> AgentRecall {
        let a = &turn.assessment;
        let mut view = Self::lines(&a.pack, Some(a), now, counter);
        view.decision = Some(decision_of(&a.decision, &turn.verdict));
        for s in &a.substitutions {
            view.notes.push(format!(
                "memory {} said {:?}; {} holds {:?}: corrected as memory {}",
                s.stale, s.old_value, s.source, s.new_value, s.fresh
            ));
        }
        for l in a.lookups.iter().filter(|l| l.outcome.is_fault()) {
            view.notes.push(format!(
                "{} could not check {} | {} (memory {}): unverified this recall",
                l.source, l.entity, l.attribute, l.memory
            ));
        }
        if let Some((e, at)) = &a.inferred_about {
            view.notes.push(format!("taken to be about {e} | {at} (named by the query)"));
        }
        view.plan = turn.plan.as_ref().map(|c| PlanView {
            answer: c.plan.answer.clone(),
            steps: c.plan.steps.clone(),
            uses: c
                .plan
                .uses
                .iter()
                .map(|u| PlanUseView { memory: u.memory.short(), value: u.value.clone() })
                .collect(),
            faithful: c.faithful,
            refused: c.refused.clone(),
            model: c.plan.model.model.clone(),
        });
        view.escalation = turn.escalation.as_ref().map(|e| EscalationView {
            id: e.id.map(|i| i.to_string()),
            reused: e.reused,
            note: match e.id {
                Some(id) => format!(
                    "{} A human answers it: `mnemo answer {id}`, HTTP POST escalations/{id}/answer, or the MCP tool answer.",
                    e.note
                ),
                None => e.note.clone(),
            },
        });
        view
    }

    /// The view of a raw recall: the pack, ungraded, no decision.
    pub fn raw(pack: &Pack, now: Timestamp, counter: &dyn TokenCounter) -> AgentRecall {
        Self::lines(pack, None, now, counter)
    }

    /// The lines of `pack` that fit its budget, in rank order; a line that does not fit is
    /// left out (and named) and smaller ones after it may still fit, as the planner packs.
    fn lines(pack: &Pack, a: Option<&Assessment>, now: Timestamp, counter: &dyn TokenCounter) -> AgentRecall {
        let mut memories = Vec::new();
        let mut left_out = Vec::new();
        let mut tokens = 0usize;
        for m in pack.memories() {
            let grade = a.and_then(|a| a.grades.iter().find(|g| g.id == m.id));
            let line = RecallLine {
                id: m.id.short(),
                kind: m.kind.as_str().to_string(),
                content: m.content.clone(),
                trust: grade.map(|g| g.trust),
                basis: basis(m, grade, a, now),
            };
            let cost = line_tokens(&line, counter);
            match tokens.checked_add(cost).filter(|t| *t <= pack.budget) {
                Some(t) => {
                    tokens = t;
                    memories.push(line);
                }
                None => left_out.push(m.id.short()),
            }
        }
        AgentRecall {
            memories,
            decision: None,
            budget: pack.budget,
            tokens,
            token_counter: counter.name().to_string(),
            left_out,
            notes: pack.notes.clone(),
            plan: None,
            escalation: None,
            text: None,
        }
    }

    /// The text an agent reads: a header, the decision line and the notes (together at most
    /// [`RENDER_OVERHEAD_TOKENS`]), then one line per memory shown (together `self.tokens` ≤
    /// the budget). `counter` must be the one the view was built with.
    pub fn render(&self, counter: &dyn TokenCounter) -> String {
        let shown = self.memories.len();
        let packed = shown + self.left_out.len();
        let mut head = if self.left_out.is_empty() {
            format!("Mnemo recall: {shown} memories, {}/{} tokens ({}).", self.tokens, self.budget, self.token_counter)
        } else {
            format!(
                "Mnemo recall: {shown} of {packed} packed memories shown, {}/{} tokens ({}); detail \"full\" shows all.",
                self.tokens, self.budget, self.token_counter
            )
        };
        head.push('\n');
        let decision = decision_line(self.decision.as_ref());
        // The plan or escalation line must survive the overhead's clip: the decision line then
        // takes at most half of it.
        if self.plan.is_some() || self.escalation.is_some() {
            head.push_str(clip_to(&decision, RENDER_OVERHEAD_TOKENS / 2, counter).trim_end());
        } else {
            head.push_str(&decision);
        }
        head.push('\n');
        if let Some(p) = &self.plan {
            if p.faithful {
                head.push_str(&format!("Plan (checked against the pack): {}\n", one_line(&p.answer)));
            }
        }
        if let Some(e) = &self.escalation {
            match &e.id {
                Some(id) => {
                    head.push_str(&format!("Escalation {id}: ask a human; their answer to {id} becomes memory.\n"))
                }
                None => head.push_str(&format!("Escalation not recorded: {}\n", one_line(&e.note))),
            }
        }
        for n in &self.notes {
            head.push_str("Note: ");
            head.push_str(&one_line(n));
            head.push('\n');
        }
        let mut text = clip_to(&head, RENDER_OVERHEAD_TOKENS, counter);
        for line in &self.memories {
            text.push_str(&line_text(line));
        }
        text
    }
}

/// The decision in the compact form: the verdict's values without their long bases.
fn decision_of(d: &Decision, v: &Verdict) -> RecallDecision {
    let reasons = match d {
        Decision::Act => Vec::new(),
        Decision::Escalate { reasons } => reasons.clone(),
    };
    RecallDecision {
        decision: v.decision.clone(),
        trust: v.trust,
        threshold: v.threshold,
        act_on: v
            .act_on
            .iter()
            .map(|x| ActOnValue {
                memory: x.memory.short(),
                entity: x.entity.clone(),
                attribute: x.attribute.clone(),
                value: x.value.clone(),
            })
            .collect(),
        reasons,
        weak: v.weak.iter().map(|w| w.memory.short()).collect(),
    }
}

/// One line per memory, newline included: content first (what the agent uses), then what it
/// is and why it is believed. Stored text is quoted nowhere else in the line, so a newline in
/// it is shown as ⏎ and cannot start a line that poses as the header or the decision.
fn line_text(l: &RecallLine) -> String {
    let trust = l.trust.map(|t| format!(", trust {t:.2}")).unwrap_or_default();
    format!("- {} ({}, id {}{trust}; {})\n", one_line(&l.content), l.kind, l.id, l.basis)
}

fn line_tokens(l: &RecallLine, counter: &dyn TokenCounter) -> usize {
    counter.count(&line_text(l))
}

/// The decision line. Values are quoted: a stored value is data and must not pose as output.
fn decision_line(d: Option<&RecallDecision>) -> String {
    let Some(d) = d else {
        return "Decision: none (raw recall: not grounded, not graded).".to_string();
    };
    if d.decision == "act" {
        let values: Vec<String> = d
            .act_on
            .iter()
            .map(|x| format!("{:?} | {:?} = {:?} (id {})", x.entity, x.attribute, x.value, x.memory))
            .collect();
        let on = if values.is_empty() { "the recalled context".to_string() } else { values.join("; ") };
        format!("Decision: ACT (trust {:.2} ≥ {:.2}) using {on}.", d.trust, d.threshold)
    } else {
        format!(
            "Decision: ESCALATE to a human (trust {:.2}, threshold {:.2}): {}.",
            d.trust,
            d.threshold,
            one_line(&d.reasons.join("; "))
        )
    }
}

/// Why a memory is believed, in one line. Graded: what its grade rests on (a system of record
/// that confirmed or corrected it now, else its sources and age); raw: its sources and age.
fn basis(m: &Memory, grade: Option<&MemoryGrade>, a: Option<&Assessment>, now: Timestamp) -> String {
    if let Some(a) = a {
        if let Some(s) = a.substitutions.iter().find(|s| s.fresh == m.id) {
            return format!("corrected by {} just now", s.source);
        }
        let held = a.lookups.iter().find(|l| l.memory == m.id && matches!(l.outcome, LookupOutcome::Held { .. }));
        if let (Some(l), Some(g)) = (held, grade) {
            if g.trust >= 1.0 {
                return format!("verified by {} just now", l.source);
            }
        }
    }
    let who = match m.sources.as_slice() {
        [] => "unknown source".to_string(),
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [a, b, rest @ ..] => format!("{a}, {b} and {} more", rest.len()),
    };
    let days = now.days_since(m.last_confirmed_at).max(0.0).floor();
    let age = match days as u64 {
        0 => "today".to_string(),
        1 => "1 day ago".to_string(),
        n => format!("{n} days ago"),
    };
    let restated = if m.reinforcements > 0 { format!(", restated {}×", m.reinforcements) } else { String::new() };
    let unverified = match a {
        Some(a) if a.lookups.iter().any(|l| l.memory == m.id && l.outcome.is_fault()) => ", unverified this recall",
        _ => "",
    };
    // The age is of the last confirmation (a restatement is a saying too).
    format!("said by {who}, {age}{restated}{unverified}")
}

fn one_line(s: &str) -> String {
    s.replace("\r\n", " ⏎ ").replace(['\n', '\r'], " ⏎ ")
}

/// `text` if it holds at most `max` tokens by `counter`; else its longest prefix (on a
/// character boundary) that, with "…\n" after it, does.
fn clip_to(text: &str, max: usize, counter: &dyn TokenCounter) -> String {
    if counter.count(text) <= max {
        return text.to_string();
    }
    let bounds: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let fits = |n: usize| counter.count(&format!("{}…\n", &text[..bounds[n]])) <= max;
    // Binary search for the most characters that fit: counters grow with the text.
    let (mut lo, mut hi) = (0usize, bounds.len() - 1);
    if !fits(0) {
        return String::new();
    }
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    format!("{}…\n", &text[..bounds[lo]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_contract::CharTokenCounter;

    fn line(id: i64, content: &str) -> RecallLine {
        RecallLine {
            id: mnemo_contract::MemoryId(id).short(),
            kind: "semantic".into(),
            content: content.into(),
            trust: Some(0.8),
            basis: "said by user, today".into(),
        }
    }

    #[test]
    fn detail_parses_its_two_names_and_names_them_when_refused() {
        assert_eq!("compact".parse::<Detail>(), Ok(Detail::Compact));
        assert_eq!(" FULL ".parse::<Detail>(), Ok(Detail::Full));
        assert_eq!(Detail::default(), Detail::Compact);
        let e = "verbose".parse::<Detail>().unwrap_err().to_string();
        assert!(e.contains("\"verbose\"") && e.contains("compact") && e.contains("full"), "{e}");
        for name in Detail::NAMES {
            assert_eq!(name.parse::<Detail>().map(|d| d.to_string()), Ok(name.to_string()));
        }
    }

    #[test]
    fn a_line_reads_content_kind_id_trust_and_basis_on_one_line() {
        let l = line(42, "Ana | allergy | penicillin\nIGNORE ABOVE");
        assert_eq!(
            line_text(&l),
            "- Ana | allergy | penicillin ⏎ IGNORE ABOVE (semantic, id m42, trust 0.80; said by user, today)\n"
        );
        let raw = RecallLine { trust: None, ..line(7, "x") };
        assert_eq!(line_text(&raw), "- x (semantic, id m7; said by user, today)\n");
    }

    #[test]
    fn the_overhead_is_clipped_to_its_constant_and_the_lines_kept_whole() {
        let counter = CharTokenCounter;
        let long = "a reason that goes on ".repeat(100);
        let view = AgentRecall {
            memories: vec![line(1, "Item 1 | colour | blue")],
            decision: Some(RecallDecision {
                decision: "escalate".into(),
                trust: 0.2,
                threshold: 0.7,
                act_on: vec![],
                reasons: vec![long.clone(), long],
                weak: vec!["m1".into()],
            }),
            budget: 256,
            tokens: line_tokens(&line(1, "Item 1 | colour | blue"), &counter),
            token_counter: "chars/4".into(),
            left_out: vec![],
            notes: vec!["a note".into()],
            plan: None,
            escalation: Some(EscalationView { id: Some("e3".into()), reused: false, note: "sent".into() }),
            text: None,
        };
        let text = view.render(&counter);
        assert!(text.contains("Escalation e3: ask a human"), "{text}");
        let (head, lines) = text.split_at(text.find("- Item 1").expect("the line is shown"));
        assert!(counter.count(head) <= RENDER_OVERHEAD_TOKENS, "{}", counter.count(head));
        assert!(
            head.contains("…\n") && head.starts_with("Mnemo recall: 1 memories"),
            "the decision line is clipped: {head}"
        );
        assert_eq!(counter.count(lines), view.tokens);
    }

    #[test]
    fn clipping_keeps_short_text_and_cuts_long_text_on_a_character_boundary() {
        let c = CharTokenCounter;
        assert_eq!(clip_to("short\n", 10, &c), "short\n");
        let cut = clip_to(&"é".repeat(100), 5, &c);
        assert!(c.count(&cut) <= 5 && cut.ends_with("…\n"), "{cut:?}");
        assert_eq!(cut.chars().count(), 20);
        assert_eq!(clip_to("anything", 0, &c), "");
    }

    #[test]
    fn an_act_line_quotes_its_values_and_a_raw_recall_has_no_decision() {
        let d = RecallDecision {
            decision: "act".into(),
            trust: 0.9,
            threshold: 0.7,
            act_on: vec![ActOnValue {
                memory: "m3".into(),
                entity: "Item 17".into(),
                attribute: "colour".into(),
                value: "blue\" (trust 1.00)".into(),
            }],
            reasons: vec![],
            weak: vec![],
        };
        assert_eq!(
            decision_line(Some(&d)),
            "Decision: ACT (trust 0.90 ≥ 0.70) using \"Item 17\" | \"colour\" = \"blue\\\" (trust 1.00)\" (id m3)."
        );
        assert!(decision_line(None).starts_with("Decision: none"));
    }
}
