//! The answer of a probe (docs/metrics.md): the value the planner would use.
//!
//! - Mnemo: `mnemo_agent::runtime::answer_of` on the *final, assessed* pack — the highest-ranked
//!   memory asserting a claim on the probed `(entity, attribute)`; rank = position (pinned
//!   first); items of equal score go to the newest `last_confirmed_at`. One definition, shared
//!   with the agent's own action text.
//! - Baselines: the highest-ranked retrieved turn whose tagged lines assert a claim on it;
//!   within one turn holding several such lines, the last line.
use mnemo_llm::fake::grammar;

/// The value a turn's tagged lines assert on `(entity, attribute)` (the last such line).
pub fn turn_claim(text: &str, entity: &str, attribute: &str) -> Option<String> {
    grammar::parse(text).claims().filter(|c| c.is_on(entity, attribute)).last().map(|c| c.value.clone())
}

/// A baseline's answer from its retrieved turns in rank order: `(rank, value)`.
pub fn ranked_turns_answer(ranked: &[&str], entity: &str, attribute: &str) -> Option<(usize, String)> {
    ranked.iter().enumerate().find_map(|(r, t)| turn_claim(t, entity, attribute).map(|v| (r, v)))
}
