//! The structured prompts of the LLM-backed reasoner: one system prompt per task (the task,
//! the rules and a strict JSON answer schema) and a user message that is the input as JSON.
//!
//! The first line of every system prompt is a task marker (`mnemo-task: extract/v1`). The
//! fake model recognises a prompt by that marker and by the user message parsing as the
//! task's input type below; anything else it refuses. A live model reads the same prompts,
//! so the fake exercises exactly the code path a live model will.
use mnemo_contract::{Claim, Memory, MemoryKind, Turn};
use serde::{Deserialize, Serialize};

/// A reasoner task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Task {
    /// Candidates and forget commands in a turn.
    Extract,
    /// A candidate against its neighbours.
    Reconcile,
    /// Which memories a free-text forget command designates.
    ResolveForget,
    /// A plan for a task from the assessed pack.
    Plan,
}

impl Task {
    /// Every task.
    pub const ALL: [Task; 4] = [Task::Extract, Task::Reconcile, Task::ResolveForget, Task::Plan];
    /// Short name, used in error messages.
    pub fn name(self) -> &'static str {
        match self {
            Task::Extract => "extract",
            Task::Reconcile => "reconcile",
            Task::ResolveForget => "resolve_forget",
            Task::Plan => "plan",
        }
    }
    /// The marker line that starts the system prompt.
    pub fn marker(self) -> &'static str {
        match self {
            Task::Extract => "mnemo-task: extract/v1",
            Task::Reconcile => "mnemo-task: reconcile/v1",
            Task::ResolveForget => "mnemo-task: resolve_forget/v1",
            Task::Plan => "mnemo-task: plan/v1",
        }
    }
    /// The full system prompt.
    pub fn system_prompt(self) -> &'static str {
        match self {
            Task::Extract => EXTRACT_SYSTEM,
            Task::Reconcile => RECONCILE_SYSTEM,
            Task::ResolveForget => RESOLVE_FORGET_SYSTEM,
            Task::Plan => PLAN_SYSTEM,
        }
    }
    /// The task a system prompt is for, by its first line; None when it has no known marker.
    pub fn of_system_prompt(system: &str) -> Option<Task> {
        let first = system.lines().next()?.trim();
        Task::ALL.into_iter().find(|t| t.marker() == first)
    }
}

const EXTRACT_SYSTEM: &str = r#"mnemo-task: extract/v1
You extract long-term memories from ONE conversation turn for Mnemo, a memory engine for AI agents.

Input: a JSON object {"turn": {"source": string, "at": RFC 3339 time, "text": string}}.

Kinds of memory (most memories are semantic):
- "semantic": what is true: a fact or preference about a person, thing or place (an allergy, a
  dose, a phone number, an owner, a lead time, an appointment, a name to use). When it states a
  property of something, give the claim {"entity", "attribute", "value"} (the value as written).
- "procedural": a standing instruction on how to act, said as a rule ("always ...", "never
  ...", "to do X, do Y"). A fact is not procedural.
- "episodic": a notable event that happened at a time (an order placed, a visit).
A forget command asks to forget something: either exactly one claim (entity + attribute) or
whatever a free text designates.

Tagged lines are authoritative and must be followed exactly:
  [SEM] entity | attribute | value   -> semantic, with that claim, content = the line's text
  [SEM] free text                    -> semantic, no claim
  [PROC] free text                   -> procedural
  [EPI] free text                    -> episodic
  [FORGET] entity | attribute        -> forget that claim
  [FORGET] free text                 -> forget what the text designates
Tag modifiers: "pin" sets pinned = true; "imp=X" sets importance = X; "many" sets
cardinality = "many". Untagged prose: extract
only durable, useful memories; small talk yields nothing.

Answer with ONE JSON object and nothing else, exactly this schema (no other keys):
{"items": [ {"memory": {"kind": "semantic" | "procedural" | "episodic",
                       "content": string (non-empty, self-contained),
                       "claim": null | {"entity": string, "attribute": string, "value": string},
                       "entities": [string],
                       "importance": null | number,
                       "pinned": boolean,
                       "cardinality": "one" | "many"}}
          | {"forget": {"entity": string, "attribute": string} | {"text": string}} ],
 "notes": [string] (optional: what you could not extract and why)}
Items come in the order the turn states them (a forget applies to what was said before it).
"cardinality" says how many values the claim's attribute holds at once: "one" (a lead time, an
owner, a dose: a new value replaces the old) or "many" (allergies, phone numbers, skills: a new
value is added beside the others).
Rules: a claim only on a semantic memory; "entities" lists the names of things the memory is
about (the claim's entity included); importance null unless the turn states one. One fact per
memory: a turn that states two facts gives two items. Every memory must be said by the turn:
never add facts the turn does not state.

Example. Turn text: "Tom Becker is allergic to nuts and his email is tom@acme.example. Please
always ship his orders by courier." Answer:
{"items": [
 {"memory": {"kind": "semantic", "content": "Tom Becker is allergic to nuts.",
  "claim": {"entity": "Tom Becker", "attribute": "allergy", "value": "nuts"},
  "entities": ["Tom Becker"], "importance": null, "pinned": false, "cardinality": "many"}},
 {"memory": {"kind": "semantic", "content": "Tom Becker's email is tom@acme.example.",
  "claim": {"entity": "Tom Becker", "attribute": "email", "value": "tom@acme.example"},
  "entities": ["Tom Becker"], "importance": null, "pinned": false, "cardinality": "one"}},
 {"memory": {"kind": "procedural", "content": "Always ship Tom Becker's orders by courier.",
  "claim": null, "entities": ["Tom Becker"], "importance": null, "pinned": false, "cardinality": "one"}}],
 "notes": []}"#;

const RECONCILE_SYSTEM: &str = r#"mnemo-task: reconcile/v1
You reconcile a NEW candidate memory against EXISTING active memories for Mnemo, a memory engine.

Input: a JSON object {"candidate": memory, "neighbours": [memory]} where a memory is
{"id": integer (absent on the candidate), "kind": string, "content": string,
 "claim": null | {"entity", "attribute", "value"}, "confirmed_at": RFC 3339 time (neighbours)}.
A neighbour's id is its number in this list (1, 2, 3, ...).

Decide ONE verdict:
- "duplicate": the candidate states the same thing as exactly one neighbour (same fact, maybe
  paraphrased). "ids" = [that neighbour's id].
- "contradicts": the candidate is a NEW VALUE of the SAME property of the SAME subject as some
  neighbours state (the same person's dose changed, the same supplier's lead time changed, a
  changed preference or instruction on the same matter). "ids" = ALL of them.
- "novel": neither. "ids" = []. A different property of the same subject is novel (an allergy
  and a dose, a phone number and an address). A further value of a property that holds many
  values is novel (a second allergy, a second phone number, another skill).
When in doubt, answer "novel": a wrong "contradicts" destroys a true memory.

Answer with ONE JSON object and nothing else, exactly this schema (no other keys):
{"verdict": "duplicate" | "contradicts" | "novel", "ids": [integer], "reason": string (optional)}
Every id must be the id of a given neighbour."#;

const RESOLVE_FORGET_SYSTEM: &str = r#"mnemo-task: resolve_forget/v1
You resolve a request to forget, for Mnemo, a memory engine. Forget precisely: designate the
memories the request is about, and ONLY those; a neighbouring memory must not be taken out.
When the request designates nothing, designate nothing.

Input: a JSON object {"command": string, "candidates": [memory]} where a memory is
{"id": integer, "kind": string, "content": string,
 "claim": null | {"entity", "attribute", "value"}, "confirmed_at": RFC 3339 time}.
A candidate's id is its number in this list (1, 2, 3, ...).

Answer with ONE JSON object and nothing else, exactly this schema (no other keys):
{"ids": [integer], "reason": string (optional)}
Every id must be the id of a given candidate."#;

const PLAN_SYSTEM: &str = r#"mnemo-task: plan/v1
You plan what an AI agent does for a task, for Mnemo, a memory engine that audits what it
recalls. You may use ONLY the memories given: they are what memory holds on the task after
checking (a value a system of record corrected is already the corrected one). Never use a
value that is not in a given memory, never change a value, never cite a memory not given.

Input: a JSON object {"task": {"query": string, "about": null | {"entity", "attribute"}},
"memories": [memory]} where a memory is {"id": integer, "kind": string, "content": string,
"claim": null | {"entity", "attribute", "value"}, "trust": number | null}.
A memory's id is its number in this list (1, 2, 3, ...). When "about" names a claim, the plan
acts on that claim's value.

Answer with ONE JSON object and nothing else, exactly this schema (no other keys):
{"answer": string (one or two sentences), "steps": [string],
 "uses": [{"id": integer, "value": string | null}]}
"uses" lists every memory the plan relies on; "value" is the claim value taken from it,
exactly as the memory holds it (null when the plan uses the memory's content, not a claim).
Every id must be the id of a given memory."#;

/// A claim as it appears in prompts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimView {
    /// Entity.
    pub entity: String,
    /// Attribute.
    pub attribute: String,
    /// Value.
    pub value: String,
}

impl From<&Claim> for ClaimView {
    fn from(c: &Claim) -> Self {
        ClaimView { entity: c.entity.clone(), attribute: c.attribute.clone(), value: c.value.clone() }
    }
}

impl ClaimView {
    /// As a core claim (normalised like `Claim::new`).
    pub fn to_claim(&self) -> Claim {
        Claim::new(&self.entity, &self.attribute, &self.value)
    }
}

/// A memory as it appears in prompts (candidate: no id, no time).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryView {
    /// Memory id (absent on a reconcile candidate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Kind.
    pub kind: MemoryKind,
    /// Content text.
    pub content: String,
    /// Claim, if any.
    pub claim: Option<ClaimView>,
    /// Last confirmation, RFC 3339 (absent on a reconcile candidate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirmed_at: Option<String>,
}

impl MemoryView {
    /// A stored memory as the `number`-th of a prompt's list. Prompts name memories by their
    /// position, never by store id: store ids differ between data directories, so a request
    /// holding them could only replay into a copy of the store it was recorded from.
    pub fn numbered(number: usize, m: &Memory) -> Self {
        MemoryView { id: Some(number as i64), ..MemoryView::from(m) }
    }
}

impl From<&Memory> for MemoryView {
    fn from(m: &Memory) -> Self {
        MemoryView {
            id: Some(m.id.0),
            kind: m.kind,
            content: m.content.clone(),
            claim: m.claim.as_ref().map(ClaimView::from),
            confirmed_at: Some(m.last_confirmed_at.to_rfc3339()),
        }
    }
}

/// The turn in an extract prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnView {
    /// Who said it.
    pub source: String,
    /// When, RFC 3339.
    pub at: String,
    /// The raw text.
    pub text: String,
}

/// The user message of an extract prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtractInput {
    /// The turn.
    pub turn: TurnView,
    /// Only when asked for (`[llm] ask_dates`) and for a turn that states a date ("yesterday",
    /// "from 2019 to 2021"): how to write dates and validity intervals. Absent otherwise, so
    /// such a turn is asked exactly as before (its cassette key unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dates: Option<String>,
}

impl ExtractInput {
    /// The input for `turn`; `ask_dates`: with the date instruction when the turn states one.
    pub fn of(turn: &Turn, ask_dates: bool) -> Self {
        ExtractInput {
            turn: TurnView { source: turn.source.clone(), at: turn.at.to_rfc3339(), text: turn.text.clone() },
            dates: if ask_dates { dates_hint(turn) } else { None },
        }
    }
}

/// The date instruction of an extract prompt, for a turn that states a date.
fn dates_hint(turn: &Turn) -> Option<String> {
    use mnemo_contract::world_time::{find_dates, stated_validity};
    if find_dates(&turn.text, turn.at).is_empty() && stated_validity(&turn.text, turn.at).is_unstated() {
        return None;
    }
    let day = turn.at.to_rfc3339();
    let day = day.split('T').next().unwrap_or_default();
    Some(format!(
        "This turn was said on {day}. Write each relative date of a memory (yesterday, next Friday, in two \
         weeks) as the date it means. When the turn says when a fact holds in the world (\"from 2019 to 2021\", \
         \"starting next Monday\", \"until Friday\"), add to that memory \"valid_from\" and/or \"valid_to\": \
         the first and the last day it holds, as YYYY-MM-DD."
    ))
}

/// The user message of a reconcile prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReconcileInput {
    /// The new candidate.
    pub candidate: MemoryView,
    /// Active neighbours, with ids.
    pub neighbours: Vec<MemoryView>,
}

/// The user message of a resolve-forget prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResolveForgetInput {
    /// The free-text command.
    pub command: String,
    /// Memories it may designate, with ids.
    pub candidates: Vec<MemoryView>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip() {
        for t in Task::ALL {
            assert_eq!(Task::of_system_prompt(t.system_prompt()), Some(t));
        }
        assert_eq!(Task::of_system_prompt("You are a helpful assistant."), None);
        assert_eq!(Task::of_system_prompt(""), None);
    }
}

/// The task of a plan prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanTaskView {
    /// The query.
    pub query: String,
    /// The claim the task is about.
    pub about: Option<AboutView>,
}

/// `entity | attribute` in a plan prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AboutView {
    /// Entity.
    pub entity: String,
    /// Attribute.
    pub attribute: String,
}

/// A pack line in a plan prompt: numbered, never a store id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanMemoryView {
    /// Its number in the list.
    pub id: i64,
    /// Kind.
    pub kind: MemoryKind,
    /// Content.
    pub content: String,
    /// Claim, with the value the pack holds.
    pub claim: Option<ClaimView>,
    /// The assessor's trust.
    pub trust: Option<f64>,
}

/// The user message of a plan prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanInput {
    /// The task.
    pub task: PlanTaskView,
    /// The pack's lines, numbered 1..n.
    pub memories: Vec<PlanMemoryView>,
}

impl PlanInput {
    /// The prompt input for `task` over `lines`.
    pub fn of(task: &mnemo_contract::Task, lines: &[mnemo_contract::PlanLine]) -> Self {
        PlanInput {
            task: PlanTaskView {
                query: task.query.clone(),
                about: task.about.as_ref().map(|(e, a)| AboutView { entity: e.clone(), attribute: a.clone() }),
            },
            memories: lines
                .iter()
                .enumerate()
                .map(|(i, l)| PlanMemoryView {
                    id: i as i64 + 1,
                    kind: l.kind,
                    content: l.content.clone(),
                    claim: l.claim.as_ref().map(ClaimView::from),
                    trust: l.trust.map(|t| (t * 100.0).round() / 100.0),
                })
                .collect(),
        }
    }
}
