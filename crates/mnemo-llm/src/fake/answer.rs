//! The fake's answers to the reasoner's structured prompts. Each function takes the user
//! message (the input JSON), decides deterministically, and returns the answer JSON.
//!
//! What the fake recognises, and only that (a live model is expected to do better, notably
//! on paraphrase):
//! - extract: the tagged-line grammar, exactly (`super::grammar::parse`). A turn with no
//!   tag at all is kept as one episodic memory of what was said (its text, white space
//!   folded): the fake cannot extract facts from prose, but it can remember the words, so
//!   nothing said offline is silently dropped. Prose lines beside tagged ones are the tagged
//!   lines' context and yield nothing. Grammar notes (unknown modifier, bad number) go in the
//!   answer's `notes`.
//! - reconcile: with a claim, same normalised (entity, attribute) and the same value →
//!   duplicate; same (entity, attribute), another value → contradicts (all such neighbours);
//!   without a claim, a neighbour of the same kind whose content is equal after normalisation
//!   (white space folded, lower-cased, punctuation stripped) or whose set of content words is
//!   the same → duplicate; otherwise novel.
//! - resolve_forget: a memory is designated when every content word of the command is among
//!   its content words (its content and its claim), a plural 's' aside. The lone letters "s"
//!   and "t" left by an apostrophe ("Ben's", "don't") are not words of the command. A command
//!   without content words designates nothing.
//! - plan: `mnemo_contract::plan::deterministic` over the numbered memories: the task's claim
//!   when a memory asserts it, else the first memory whose claim entity the query names, else
//!   the first memory.

use super::grammar::{self, TaggedLine};
use mnemo_contract::text::{content_words, fold_ws, guess_entities};
use mnemo_contract::world_time;
use mnemo_contract::{Candidate, Cardinality, ForgetCommand, MemoryKind, Timestamp};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::error::LlmError;
use crate::prompts::{ExtractInput, MemoryView, PlanInput, ReconcileInput, ResolveForgetInput, Task};

fn input<T: DeserializeOwned>(task: Task, user: &str) -> Result<T, LlmError> {
    serde_json::from_str(user).map_err(|e| {
        LlmError::UnrecognisedPrompt(format!("the {} prompt's user message is not its input JSON: {e}", task.name()))
    })
}

/// Answer an extract prompt.
pub fn extract(user: &str) -> Result<String, LlmError> {
    let inp: ExtractInput = input(Task::Extract, user)?;
    let at = Timestamp::parse_rfc3339(&inp.turn.at).unwrap_or_default();
    let mut parsed = grammar::parse_at(&inp.turn.text, at);
    // The fake cannot read facts out of prose, but dropping what was said would lose it
    // silently: a turn that does not speak the grammar at all is kept as one episode of its
    // words. A turn with any tagged line (even a malformed one, which gets a note) speaks
    // the grammar, and its prose lines are only the context of its tagged lines.
    if !is_tagged(&inp.turn.text) {
        let content = fold_ws(&inp.turn.text);
        if !content.is_empty() {
            parsed.lines.push(TaggedLine::Memory(Candidate {
                validity: Default::default(),
                kind: MemoryKind::Episodic,
                entities: guess_entities(&content),
                content,
                claim: None,
                importance: None,
                pinned: false,
                cardinality: Cardinality::One,
            }));
        }
    }
    let mut items = Vec::new();
    for line in &parsed.lines {
        match line {
            TaggedLine::Memory(c) => {
                let mut memory = json!({
                    "kind": c.kind.as_str(),
                    "content": c.content,
                    "claim": c.claim.as_ref().map(|k| json!({"entity": k.entity, "attribute": k.attribute, "value": k.value})),
                    "entities": c.entities,
                    "importance": c.importance,
                    "pinned": c.pinned,
                    "cardinality": c.cardinality.as_str(),
                });
                // As a model answers: the first and the last day the fact holds, when stated.
                if let Some(from) = c.validity.from {
                    memory["valid_from"] = json!(world_time::day_text(from));
                }
                if let Some(to) = c.validity.to {
                    memory["valid_to"] = json!(world_time::last_day_text(to));
                }
                items.push(json!({ "memory": memory }))
            }
            TaggedLine::Forget(ForgetCommand::Claim { entity, attribute }) => {
                items.push(json!({"forget": {"entity": entity, "attribute": attribute}}))
            }
            TaggedLine::Forget(ForgetCommand::Text(t)) => items.push(json!({"forget": {"text": t}})),
        }
    }
    Ok(json!({"items": items, "notes": parsed.notes}).to_string())
}

/// Whether any line of `text` starts with a tag (`[`): such a turn speaks the grammar, and
/// what it says is only what its tagged lines say.
fn is_tagged(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with('['))
}

/// Content normalised for duplicate detection: lower-cased, punctuation stripped, white space
/// folded.
pub fn norm_content(s: &str) -> String {
    let stripped: String =
        s.chars().filter(|c| c.is_alphanumeric() || c.is_whitespace()).flat_map(char::to_lowercase).collect();
    mnemo_contract::text::fold_ws(&stripped)
}

/// Answer a reconcile prompt.
pub fn reconcile(user: &str) -> Result<String, LlmError> {
    let inp: ReconcileInput = input(Task::Reconcile, user)?;
    let cand = &inp.candidate;
    let with_ids = || inp.neighbours.iter().filter_map(|n| n.id.map(|id| (id, n)));
    let verdict = match &cand.claim {
        Some(c) => {
            let claim = c.to_claim();
            let same_key: Vec<(i64, &MemoryView)> = with_ids()
                .filter(|(_, n)| n.claim.as_ref().is_some_and(|k| k.to_claim().key() == claim.key()))
                .collect();
            let dup = same_key.iter().find(|(_, n)| n.claim.as_ref().is_some_and(|k| claim.same_value(&k.value)));
            match dup {
                Some((id, _)) => json!({"verdict": "duplicate", "ids": [id]}),
                None if !same_key.is_empty() => {
                    let ids: Vec<i64> = same_key.iter().map(|(id, _)| *id).collect();
                    json!({"verdict": "contradicts", "ids": ids})
                }
                None => json!({"verdict": "novel", "ids": []}),
            }
        }
        None => {
            // The same statement only: the same words in the same order (case, punctuation and
            // spacing aside). The same words in another order may say the opposite ("the dog
            // bit the man"); paraphrase is a live model's call, the offline default is
            // conservative.
            let norm = norm_content(&cand.content);
            let dup =
                with_ids().find(|(_, n)| n.kind == cand.kind && !norm.is_empty() && norm_content(&n.content) == norm);
            match dup {
                Some((id, _)) => json!({"verdict": "duplicate", "ids": [id]}),
                None => json!({"verdict": "novel", "ids": []}),
            }
        }
    };
    Ok(verdict.to_string())
}

/// Whether `w` matches `word`, a plural 's' aside.
fn plural_eq(word: &str, w: &str) -> bool {
    word == w
        || word.strip_suffix('s').is_some_and(|stem| stem == w)
        || w.strip_suffix('s').is_some_and(|stem| stem == word)
}

/// Answer a resolve-forget prompt.
pub fn resolve_forget(user: &str) -> Result<String, LlmError> {
    let inp: ResolveForgetInput = input(Task::ResolveForget, user)?;
    let mut wanted = content_words(&inp.command);
    wanted.retain(|w| w != "s" && w != "t");
    let mut ids: Vec<i64> = Vec::new();
    if !wanted.is_empty() {
        for m in &inp.candidates {
            let Some(id) = m.id else { continue };
            let mut have = content_words(&m.content);
            if let Some(c) = &m.claim {
                for part in [&c.entity, &c.attribute, &c.value] {
                    have.extend(content_words(part));
                }
            }
            if wanted.iter().all(|w| have.iter().any(|h| plural_eq(h, w))) {
                ids.push(id);
            }
        }
    }
    Ok(json!({"ids": ids}).to_string())
}

/// The decision for any task, as JSON text.
pub fn answer(task: Task, user: &str) -> Result<String, LlmError> {
    match task {
        Task::Extract => extract(user),
        Task::Reconcile => reconcile(user),
        Task::ResolveForget => resolve_forget(user),
        Task::Plan => plan(user),
    }
}

/// The plan of the offline model ([`mnemo_contract::plan::deterministic`]) over the prompt's
/// numbered memories.
pub fn plan(user: &str) -> Result<String, LlmError> {
    let inp: PlanInput = input(Task::Plan, user)?;
    let task = mnemo_contract::Task {
        query: inp.task.query.clone(),
        about: inp.task.about.as_ref().map(|a| (a.entity.clone(), a.attribute.clone())),
    };
    // The store id of each line is its number: the answer names memories by number.
    let lines: Vec<mnemo_contract::PlanLine> = inp
        .memories
        .iter()
        .map(|m| mnemo_contract::PlanLine {
            id: mnemo_contract::MemoryId(m.id),
            kind: m.kind,
            content: m.content.clone(),
            claim: m.claim.as_ref().map(|c| mnemo_contract::Claim {
                entity: c.entity.clone(),
                attribute: c.attribute.clone(),
                value: c.value.clone(),
            }),
            trust: m.trust,
        })
        .collect();
    let draft = mnemo_contract::plan::deterministic(&task, &lines);
    let uses: Vec<Value> = draft.uses.iter().map(|u| json!({"id": u.memory.0, "value": u.value})).collect();
    // The steps name memories by their number in the prompt, as a model would.
    let steps: Vec<String> = draft.steps.iter().map(|s| number_refs(s, &lines)).collect();
    Ok(json!({"answer": draft.answer, "steps": steps, "uses": uses}).to_string())
}

/// "memory m2" → "memory 2": the deterministic planner writes ids as short ids; here they are
/// the prompt's numbers.
fn number_refs(step: &str, lines: &[mnemo_contract::PlanLine]) -> String {
    let mut out = step.to_string();
    for l in lines {
        out = out.replace(&format!("memory {}", l.id), &format!("memory {}", l.id.0));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn answer_value(task: Task, user: &str) -> Value {
        serde_json::from_str(&answer(task, user).unwrap()).unwrap()
    }

    fn mem(id: i64, kind: &str, content: &str, claim: Option<(&str, &str, &str)>) -> Value {
        json!({"id": id, "kind": kind, "content": content,
               "claim": claim.map(|(e, a, v)| json!({"entity": e, "attribute": a, "value": v}))})
    }

    #[test]
    fn reconcile_claims() {
        let user = json!({
            "candidate": {"kind": "semantic", "content": "x", "claim": {"entity": "ic-mc-44  FROM s-208", "attribute": "Lead Time", "value": "35 days"}},
            "neighbours": [
                mem(1, "semantic", "a", Some(("IC-MC-44 from S-208", "lead time", "21 days"))),
                mem(2, "semantic", "b", Some(("IC-MC-44 from S-208", "price", "3 USD"))),
                mem(3, "semantic", "c", Some(("IC-MC-44 from S-208", "lead time", "28 days"))),
            ]
        });
        let v = answer_value(Task::Reconcile, &user.to_string());
        assert_eq!(v, json!({"verdict": "contradicts", "ids": [1, 3]}));
    }

    #[test]
    fn reconcile_text_duplicates() {
        let user = json!({
            "candidate": {"kind": "procedural", "content": "Always add a 5-day buffer for S-208 orders.", "claim": null},
            "neighbours": [
                mem(7, "episodic", "always add a 5-day buffer for s-208 orders", None),
                mem(8, "procedural", "For S-208 orders, always add a buffer: 5 day", None),
                mem(9, "procedural", "always add a 5-day buffer, for S-208 orders!", None),
            ]
        });
        // 7 has the wrong kind; 8 has the same words in another order (not the same statement);
        // 9 is the same statement, punctuation aside.
        assert_eq!(answer_value(Task::Reconcile, &user.to_string()), json!({"verdict": "duplicate", "ids": [9]}));
        let opposite = json!({
            "candidate": {"kind": "episodic", "content": "The dog bit the man.", "claim": null},
            "neighbours": [mem(3, "episodic", "The man bit the dog.", None)]
        });
        assert_eq!(answer_value(Task::Reconcile, &opposite.to_string()), json!({"verdict": "novel", "ids": []}));
    }

    #[test]
    fn forget_plural_and_precision() {
        let user = json!({
            "command": "the note about standups",
            "candidates": [
                mem(1, "procedural", "The daily standup is at 9:30.", None),
                mem(2, "procedural", "Sprint review is on Fridays.", None),
            ]
        });
        assert_eq!(answer_value(Task::ResolveForget, &user.to_string()), json!({"ids": [1]}));
        let nothing = json!({"command": "forget the note", "candidates": [mem(1, "semantic", "note", None)]});
        assert_eq!(answer_value(Task::ResolveForget, &nothing.to_string()), json!({"ids": []}));
    }

    #[test]
    fn plan_acts_on_the_task_claim_by_its_number() {
        let user = json!({
            "task": {"query": "reorder", "about": {"entity": "IC-MC-44", "attribute": "lead time"}},
            "memories": [
                {"id": 1, "kind": "semantic", "content": "a", "claim": {"entity": "S-208", "attribute": "city", "value": "Lyon"}, "trust": 0.9},
                {"id": 2, "kind": "semantic", "content": "b", "claim": {"entity": "IC-MC-44", "attribute": "lead time", "value": "35 days"}, "trust": 1.0}
            ]
        });
        let v = answer_value(Task::Plan, &user.to_string());
        assert_eq!(v["uses"], json!([{"id": 2, "value": "35 days"}]));
        assert_eq!(v["steps"], json!(["Act on IC-MC-44 | lead time = 35 days (memory 2)."]));
    }

    #[test]
    fn wrong_input_is_refused() {
        assert!(matches!(answer(Task::Reconcile, "{\"turn\": 1}"), Err(LlmError::UnrecognisedPrompt(_))));
        assert!(matches!(answer(Task::Extract, "not json"), Err(LlmError::UnrecognisedPrompt(_))));
    }
}
