//! What turn a human's answer is recorded as.
//!
//! The answer goes through the normal remember path, from the principal `human:NAME`, so it
//! is extracted like any turn, by whichever model is configured. For an escalation about a
//! claim (`entity | attribute`), an answer the offline model could not read is made readable:
//!
//! - **tagged lines** (`[SEM] …`) are recorded as written;
//! - **the value alone** ("Carla", "50,000 USD per order") is recorded as the tagged line
//!   `[SEM] entity | attribute | value`;
//! - **a short sentence stating the value** is read for it: "it is Carla", "it's Carla",
//!   "that's Carla", "the answer is Carla", "the approver is Carla", "the approver of
//!   Northwind Labs is Carla", "Northwind Labs's approver is Carla", "Carla is the approver"
//!   (case aside; a final full stop, quotes around the value, "answer:" before it allowed) →
//!   the same tagged line with that value;
//! - **anything else is prose**: recorded as written, after a line naming what it answers. A
//!   live model extracts what it says; the offline model keeps it as one episode with no
//!   claim, so the escalation is answered but a later turn on the same claim may escalate
//!   again (the answer's `form` says `prose`, and the runtime's note says so).
//!
//! An escalation about no claim records every answer as prose.
use super::record::{AnswerForm, Escalation};

/// Most words a value alone may have (longer is taken as prose).
pub const MAX_VALUE_WORDS: usize = 8;
/// Most characters a value alone may have.
pub const MAX_VALUE_CHARS: usize = 120;

/// The turn an answer is recorded as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Composed {
    /// The turn's text.
    pub text: String,
    /// How the answer was read.
    pub form: AnswerForm,
    /// The value recorded for the claim (form `value`).
    pub value: Option<String>,
}

/// The turn recording `answer` (trimmed, non-empty) to `e`.
///
/// A human's answer is memory with the highest standing, so it answers the escalation and
/// nothing else: tagged lines are taken only when each is a `[SEM]` claim on the escalation's
/// own claim; any other tagged line (another entity's claim, a forget, a procedure) is refused.
pub fn compose(e: &Escalation, answer: &str) -> Result<Composed, String> {
    let answer = answer.trim();
    let tagged: Vec<&str> = answer.lines().map(str::trim).filter(|l| l.starts_with('[')).collect();
    if !tagged.is_empty() {
        let own = |l: &str| {
            let Some(c) = &e.claim else { return false };
            let Some(body) = l.strip_prefix("[SEM]") else { return false };
            let parts: Vec<&str> = body.split('|').map(str::trim).collect();
            parts.len() == 3
                && parts[0].eq_ignore_ascii_case(c.entity.trim())
                && parts[1].eq_ignore_ascii_case(c.attribute.trim())
                && !parts[2].is_empty()
        };
        if let Some(other) = tagged.iter().find(|l| !own(l)) {
            let about = e
                .claim
                .as_ref()
                .map(|c| format!("{} | {}", c.entity, c.attribute))
                .unwrap_or_else(|| "no claim".into());
            return Err(format!(
                "an answer to {} records what it asks ({about}) and nothing else; the tagged line {other:?} is not \
                 taken from an answer (answer with the value or a sentence)",
                e.id
            ));
        }
        return Ok(Composed { text: answer.to_string(), form: AnswerForm::Tagged, value: None });
    }
    if let Some(c) = &e.claim {
        if let Some(v) = value_of(answer, &c.entity, &c.attribute) {
            let text = format!("[SEM] {} | {} | {v}", c.entity, c.attribute);
            return Ok(Composed { text, form: AnswerForm::Value, value: Some(v) });
        }
    }
    let about = e.claim.as_ref().map(|c| format!(" (about {} | {})", c.entity, c.attribute)).unwrap_or_default();
    let text = format!("In answer to {:?}{about}:\n{answer}", e.task.query.trim());
    Ok(Composed { text, form: AnswerForm::Prose, value: None })
}

/// The value an answer gives for `entity | attribute`, if it is the value alone or a short
/// sentence stating it.
pub fn value_of(answer: &str, entity: &str, attribute: &str) -> Option<String> {
    let a = tidy(answer);
    let (e, at) = (entity.trim().to_lowercase(), attribute.trim().to_lowercase());
    let prefixes = [
        "it is ".to_string(),
        "it's ".to_string(),
        "it’s ".to_string(),
        "that is ".to_string(),
        "that's ".to_string(),
        "that’s ".to_string(),
        "this is ".to_string(),
        "the answer is ".to_string(),
        "answer: ".to_string(),
        format!("the {at} of {e} is "),
        format!("the {at} for {e} is "),
        format!("the {at} at {e} is "),
        format!("{e}'s {at} is "),
        format!("{e}’s {at} is "),
        format!("{e} {at} is "),
        format!("{e} {at}: "),
        format!("the {at} is "),
        format!("{at} is "),
        format!("{at}: "),
    ];
    // Longest first: "the approver of X is" before "the approver is".
    let mut prefixes = prefixes.to_vec();
    prefixes.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in &prefixes {
        if let Some(rest) = strip_prefix_ci(&a, p) {
            return bare(rest);
        }
    }
    let suffixes = [
        format!(" is the {at} of {e}"),
        format!(" is the {at} for {e}"),
        format!(" is the {at} at {e}"),
        format!(" is {e}'s {at}"),
        format!(" is {e}’s {at}"),
        format!(" is the {at}"),
    ];
    for s in &suffixes {
        if let Some(rest) = strip_suffix_ci(&a, s) {
            return bare(rest);
        }
    }
    bare(&a)
}

/// `s` without a prefix that reads `lower` once lower-cased.
fn strip_prefix_ci<'a>(s: &'a str, lower: &str) -> Option<&'a str> {
    let mut seen = String::new();
    for (i, c) in s.char_indices() {
        if seen == lower {
            return Some(&s[i..]);
        }
        seen.extend(c.to_lowercase());
        if !lower.starts_with(&seen) {
            return None;
        }
    }
    None
}

/// `s` without a suffix that reads `lower` once lower-cased.
fn strip_suffix_ci<'a>(s: &'a str, lower: &str) -> Option<&'a str> {
    let mut seen = String::new();
    for (i, c) in s.char_indices().rev() {
        let mut both: String = c.to_lowercase().collect();
        both.push_str(&seen);
        seen = both;
        if !lower.ends_with(&seen) {
            return None;
        }
        if seen == lower {
            return Some(&s[..i]);
        }
    }
    None
}

/// Trimmed, without a final full stop or exclamation mark.
fn tidy(s: &str) -> String {
    s.trim().trim_end_matches(['.', '!']).trim().to_string()
}

/// `v` as a value alone: one short line, no claim separator, no sentence in it; quotes
/// around it removed.
fn bare(v: &str) -> Option<String> {
    let v = tidy(v);
    let v = strip_quotes(&v).trim().to_string();
    let words = v.split_whitespace().count();
    let verbs = [" is ", " are ", " was ", " were ", " will ", " should ", " has ", " have ", " i ", " we "];
    let padded = format!(" {} ", v.to_lowercase());
    let ok = !v.is_empty()
        && v.chars().count() <= MAX_VALUE_CHARS
        && words <= MAX_VALUE_WORDS
        && !v.contains(['|', '\n', '\r', '?'])
        && !v.chars().any(char::is_control)
        && !v.contains(". ")
        && !verbs.iter().any(|w| padded.contains(w));
    ok.then_some(v)
}

fn strip_quotes(v: &str) -> &str {
    for (open, close) in [('"', '"'), ('\'', '\''), ('“', '”'), ('‘', '’')] {
        if let Some(inner) = v.strip_prefix(open).and_then(|r| r.strip_suffix(close)) {
            return inner;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn v(a: &str) -> Option<String> {
        value_of(a, "Northwind Labs", "approver")
    }

    #[test]
    fn a_value_alone_or_a_sentence_stating_it_gives_the_value() {
        for a in [
            "Carla",
            "Carla.",
            "\"Carla\"",
            "it is Carla",
            "It's Carla.",
            "That's Carla",
            "the answer is Carla",
            "The approver is Carla.",
            "the approver of Northwind Labs is Carla",
            "Northwind Labs's approver is Carla",
            "Carla is the approver.",
            "Carla is the approver of Northwind Labs",
            "approver: Carla",
        ] {
            assert_eq!(v(a).as_deref(), Some("Carla"), "{a:?}");
        }
        assert_eq!(v("Carla Diaz from finance").as_deref(), Some("Carla Diaz from finance"));
        assert_eq!(value_of("50,000 USD per order", "Acme", "approval limit").as_deref(), Some("50,000 USD per order"));
    }

    #[test]
    fn prose_is_not_taken_for_a_value() {
        for a in [
            "I think Carla signs them, but ask Ben to be sure",
            "Carla is out this week. Ben signs meanwhile",
            "who knows?",
            "a | b",
            "It is Carla, but only for orders above the limit that finance has to see first",
        ] {
            assert_eq!(v(a), None, "{a:?}");
        }
    }
}
