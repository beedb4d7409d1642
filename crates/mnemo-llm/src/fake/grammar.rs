//! The tagged-line grammar: what the offline fake model understands, and what the eval
//! baselines read claims from raw turns with. It belongs to the fake, not to the engine: the
//! engine only ever sees model types (`ExtractedItem`), whoever extracted them.
//!
//! | line | meaning |
//! |---|---|
//! | `[SEM] entity \| attribute \| value` | semantic memory with a claim |
//! | `[SEM] free text` | semantic memory without a claim |
//! | `[PROC] free text` | procedural memory |
//! | `[EPI] free text` | episodic memory |
//! | `[FORGET] entity \| attribute` | forget exactly that claim |
//! | `[FORGET] free text` | forget what the text designates |
//!
//! Modifiers inside the tag: `pin`, `imp=0.2`, `many` (e.g. `[SEM pin imp=0.9]`,
//! `[SEM many] Maria Lopez | allergies | penicillin`: the attribute holds many values, so a new
//! value is added beside the others instead of superseding them), and world time: `from=D`
//! and `to=D`, the first and the last day the fact holds (`[SEM from=2019 to=2021] Ben | city |
//! Lisbon`; `[SEM from=next-monday] Standup | time | 10:00`). `D` is a date (`2021-03-04`,
//! `2021-03`, `2021`), an RFC 3339 time, or a relative date with '-' for spaces
//! (`yesterday`, `next-friday`, `in-2-weeks`, `3-days-ago`) resolved against the turn's time.
use serde::{Deserialize, Serialize};

use mnemo_contract::text::{fold_ws, guess_entities};
use mnemo_contract::world_time::{self, Validity};
use mnemo_contract::{Candidate, Cardinality, Claim, ExtractedItem, ForgetCommand, MemoryKind, Timestamp};

/// A parsed tagged line is an extracted item.
pub type TaggedLine = ExtractedItem;

/// The result of parsing a turn's text.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Parsed {
    /// Tagged lines, in order.
    pub lines: Vec<TaggedLine>,
    /// Problems found (unknown tag or modifier, bad number): said, never silently dropped.
    pub notes: Vec<String>,
}

impl Parsed {
    /// The memory candidates.
    pub fn candidates(&self) -> impl Iterator<Item = &Candidate> {
        self.lines.iter().filter_map(|l| match l {
            TaggedLine::Memory(c) => Some(c),
            TaggedLine::Forget(_) => None,
        })
    }
    /// The claims asserted (forget lines assert nothing).
    pub fn claims(&self) -> impl Iterator<Item = &Claim> {
        self.candidates().filter_map(|c| c.claim.as_ref())
    }
}

/// Parse every line of `text`. Untagged lines are prose and yield nothing here (the fake's
/// extract keeps a turn with no tagged line at all as one episode; the eval baselines read
/// only the claims of tagged lines).
pub fn parse(text: &str) -> Parsed {
    parse_at(text, Timestamp(0))
}

/// [`parse`] with relative dates of `from=` / `to=` resolved against `at` (the turn's time).
pub fn parse_at(text: &str, at: Timestamp) -> Parsed {
    let mut out = Parsed::default();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if !line.starts_with('[') {
            continue;
        }
        let Some(close) = line.find(']') else {
            out.notes.push(format!("line {}: tag has no closing ']'", n + 1));
            continue;
        };
        let tag = &line[1..close];
        let body = line[close + 1..].trim();
        let mut parts = tag.split_whitespace();
        let name = parts.next().unwrap_or("").to_ascii_uppercase();
        let mut pinned = false;
        let mut cardinality = Cardinality::One;
        let mut importance = None;
        let mut validity = Validity::default();
        for m in parts {
            if m.eq_ignore_ascii_case("pin") || m.eq_ignore_ascii_case("pinned") {
                pinned = true;
            } else if m.eq_ignore_ascii_case("many") {
                cardinality = Cardinality::Many;
            } else if let Some((end, v)) =
                m.strip_prefix("from=").map(|v| (false, v)).or(m.strip_prefix("to=").map(|v| (true, v)))
            {
                match world_time::parse_bound(v, at, end) {
                    Ok(t) if end => validity.to = Some(t),
                    Ok(t) => validity.from = Some(t),
                    Err(e) => out.notes.push(format!("line {}: {e}; ignored", n + 1)),
                }
            } else if let Some(v) = m.strip_prefix("imp=") {
                match v.parse::<f64>() {
                    // A finite number out of range is clamped by the engine, which says so;
                    // an infinite one (`inf`, `1e309`) cannot travel through a model's JSON
                    // answer, so it is refused here, with a note, for every reasoner alike.
                    Ok(x) if x.is_finite() => importance = Some(x),
                    Ok(x) if !x.is_nan() => out.notes.push(format!(
                        "line {}: imp={v} is out of range (not a finite number in 0..=1); ignored, the kind's default importance is used",
                        n + 1
                    )),
                    _ => out.notes.push(format!("line {}: imp={v:?} is not a number; ignored", n + 1)),
                }
            } else {
                out.notes.push(format!("line {}: unknown tag modifier {m:?}; ignored", n + 1));
            }
        }
        if body.is_empty() {
            out.notes.push(format!("line {}: [{name}] with no text; ignored", n + 1));
            continue;
        }
        let kind = match name.as_str() {
            "SEM" => MemoryKind::Semantic,
            "PROC" => MemoryKind::Procedural,
            "EPI" => MemoryKind::Episodic,
            "FORGET" => {
                out.lines.push(TaggedLine::Forget(parse_forget(body)));
                continue;
            }
            _ => {
                out.notes.push(format!("line {}: unknown tag [{name}]; line ignored", n + 1));
                continue;
            }
        };
        let claim = if kind == MemoryKind::Semantic { parse_claim(body) } else { None };
        if kind == MemoryKind::Semantic && claim.is_none() && body.contains('|') {
            out.notes.push(format!(
                "line {}: looks like a claim but is not `entity | attribute | value` with three non-empty parts; kept as free text",
                n + 1
            ));
        }
        let entities = match &claim {
            Some(c) => vec![c.entity.clone()],
            None => guess_entities(body),
        };
        out.lines.push(TaggedLine::Memory(Candidate {
            validity,
            kind,
            content: fold_ws(body),
            claim,
            entities,
            importance,
            pinned,
            cardinality,
        }));
    }
    out
}

/// `entity | attribute | value` (the value may itself hold '|'); None unless all three are
/// non-empty.
pub fn parse_claim(body: &str) -> Option<Claim> {
    let mut it = body.splitn(3, '|');
    let (e, a, v) = (it.next()?.trim(), it.next()?.trim(), it.next()?.trim());
    if e.is_empty() || a.is_empty() || v.is_empty() {
        return None;
    }
    Some(Claim::new(e, a, v))
}

fn parse_forget(body: &str) -> ForgetCommand {
    let parts: Vec<&str> = body.split('|').map(str::trim).collect();
    if parts.len() == 2 && parts.iter().all(|p| !p.is_empty()) {
        ForgetCommand::Claim { entity: fold_ws(parts[0]), attribute: fold_ws(parts[1]) }
    } else {
        ForgetCommand::Text(fold_ws(body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infinite_importance_is_refused_with_a_note() {
        for v in ["inf", "1e309", "-inf"] {
            let p = parse(&format!("[SEM imp={v}] A | b | c"));
            let c: Vec<_> = p.candidates().collect();
            assert_eq!(c[0].importance, None, "{v}");
            assert!(p.notes.iter().any(|n| n.contains("out of range") && n.contains(v)), "{v}: {:?}", p.notes);
        }
        let p = parse("[SEM imp=5] A | b | c");
        assert_eq!(p.candidates().next().and_then(|c| c.importance), Some(5.0));
    }

    #[test]
    fn claim_line() {
        let p = parse("[SEM] IC-MC-44 from S-208 | lead time | 21 days");
        let c: Vec<_> = p.claims().collect();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].entity, "IC-MC-44 from S-208");
        assert_eq!(c[0].value, "21 days");
    }

    #[test]
    fn modifiers_and_kinds() {
        let p = parse(
            "hello\n[EPI imp=0.2] Met Ana at the fair.\n[PROC pin] Always add a 5-day buffer for S-208.\n[SEM weird] x",
        );
        let c: Vec<_> = p.candidates().collect();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].kind, MemoryKind::Episodic);
        assert_eq!(c[0].importance, Some(0.2));
        assert!(c[1].pinned);
        assert!(c[1].entities.contains(&"S-208".to_string()));
        assert_eq!(p.notes.len(), 1);
    }

    #[test]
    fn forget_lines() {
        let p = parse("[FORGET] Ben | phone\n[FORGET] the note about the standup");
        assert_eq!(
            p.lines,
            vec![
                TaggedLine::Forget(ForgetCommand::Claim { entity: "Ben".into(), attribute: "phone".into() }),
                TaggedLine::Forget(ForgetCommand::Text("the note about the standup".into())),
            ]
        );
        assert_eq!(p.claims().count(), 0);
    }

    #[test]
    fn many_modifier() {
        let p = parse("[SEM many] Maria Lopez | allergies | penicillin\n[SEM] Maria Lopez | dose | 5 mg");
        let c: Vec<_> = p.candidates().collect();
        assert_eq!(c[0].cardinality, Cardinality::Many);
        assert_eq!(c[1].cardinality, Cardinality::One);
        assert!(p.notes.is_empty());
    }

    #[test]
    fn from_and_to_give_a_validity_resolved_against_the_turn() {
        let at = Timestamp::parse_rfc3339("2026-12-04T15:00:00Z").unwrap();
        let day = |d: &str| Timestamp::parse_rfc3339(&format!("{d}T00:00:00Z")).unwrap();
        let p =
            parse_at("[SEM from=2019 to=2021] Ben | city | Lisbon\n[SEM from=next-monday] Standup | time | 10:00", at);
        let c: Vec<_> = p.candidates().collect();
        assert_eq!(c[0].validity, Validity { from: Some(day("2019-01-01")), to: Some(day("2022-01-01")) });
        assert_eq!(c[1].validity, Validity { from: Some(day("2026-12-07")), to: None });
        let p = parse_at("[SEM from=someday] A | b | c", at);
        assert!(p.candidates().next().unwrap().validity.is_unstated());
        assert!(p.notes[0].contains("\"someday\" is not a date"), "{:?}", p.notes);
    }
}
