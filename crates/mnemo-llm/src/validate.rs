//! Parsing and validating the model's JSON answers. Every field is checked; a problem is
//! described by its path (`candidates[1].kind: ...`) so the reasoner's error names it. Nothing
//! here panics on any input.
use std::collections::HashSet;

use mnemo_contract::world_time::{self, Validity};
use mnemo_contract::{
    Candidate, Cardinality, Claim, ExtractedItem, ForgetCommand, MemoryId, MemoryKind, Timestamp, Verdict,
};
use serde_json::{Map, Value};

/// Parse an answer as one JSON object. A single surrounding Markdown code fence (three
/// backticks, optionally `json`) is tolerated, since chat models add one even when told not to.
pub fn parse_json(content: &str) -> Result<Value, String> {
    let mut s = content.trim();
    if let Some(rest) = s.strip_prefix("```") {
        let rest = rest.strip_prefix("json").unwrap_or(rest);
        s = rest.strip_suffix("```").unwrap_or(rest).trim();
    }
    if s.is_empty() {
        return Err("the answer is empty".to_string());
    }
    let v: Value = serde_json::from_str(s).map_err(|e| format!("the answer is not valid JSON ({e})"))?;
    if v.is_object() {
        Ok(v)
    } else {
        Err(format!("the answer must be a JSON object, got {}", type_name(&v)))
    }
}

/// [`parse_json`], and when that fails, the first balanced JSON object inside the answer (a
/// small model often writes a sentence before or after it). Returns what was mended, for the
/// turn's notes.
pub fn parse_json_lenient(content: &str) -> Result<(Value, Vec<String>), String> {
    let strict = match parse_json(content) {
        Ok(v) => return Ok((v, Vec::new())),
        Err(e) => e,
    };
    match first_object(content).and_then(|s| serde_json::from_str::<Value>(s).ok()) {
        Some(v) if v.is_object() => {
            Ok((v, vec!["the model wrote text around its JSON answer; only the JSON object was read".to_string()]))
        }
        _ => Err(strict),
    }
}

/// The first `{…}` span whose braces balance (braces inside JSON strings skipped).
fn first_object(s: &str) -> Option<&str> {
    let start = s.find('{')?;
    let (mut depth, mut in_str, mut escaped) = (0usize, false, false);
    for (i, c) in s[start..].char_indices() {
        if in_str {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&s[start..start + i + 1]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Mend the slips of an extraction answer that have exactly one meaning, before validation;
/// returns the mended answer and one note per fix (the turn's notes say what was changed):
/// - empty or non-string `notes` entries are dropped;
/// - unknown keys on the answer or on a memory are dropped (a model's "confidence", "id");
/// - a kind in another case ("Semantic") is lower-cased;
/// - a claim on a procedural or episodic memory makes it semantic (a claim is a fact);
/// - a claim with an empty entity, attribute or value is dropped (the memory stays, claimless);
/// - empty entity names are dropped;
/// - a forget of an entity without its attribute becomes a free-text forget of the entity.
///
/// Anything else stays as the model wrote it, for validation to refuse and the one repair
/// attempt to correct.
pub fn normalise_extraction(v: &Value) -> (Value, Vec<String>) {
    let mut v = v.clone();
    let mut fixes = Vec::new();
    let Some(top) = v.as_object_mut() else { return (v, fixes) };
    let unknown: Vec<String> = top.keys().filter(|k| *k != "items" && *k != "notes").cloned().collect();
    for k in unknown {
        top.remove(&k);
        fixes.push(format!("dropped the answer's unknown key {k:?}"));
    }
    if let Some(Value::Array(notes)) = top.get_mut("notes") {
        let before = notes.len();
        notes.retain(|n| n.as_str().is_some_and(|s| !s.trim().is_empty()));
        if notes.len() < before {
            fixes.push(format!("dropped {} empty or non-text note(s) of the model", before - notes.len()));
        }
    }
    let Some(Value::Array(items)) = top.get_mut("items") else { return (v, fixes) };
    for (i, item) in items.iter_mut().enumerate() {
        if let Some(m) = item.get_mut("memory").and_then(Value::as_object_mut) {
            mend_memory(m, &format!("items[{i}].memory"), &mut fixes);
        }
        if let Some(f) = item.get_mut("forget").and_then(Value::as_object_mut) {
            let has = |k: &str| f.get(k).and_then(Value::as_str).is_some_and(|s| !s.trim().is_empty());
            let no_attribute =
                f.get("attribute").is_none_or(|a| a.is_null() || a.as_str().is_some_and(|s| s.trim().is_empty()));
            if has("entity") && no_attribute && !f.contains_key("text") {
                let entity = f.get("entity").cloned().unwrap_or(Value::Null);
                f.clear();
                f.insert("text".into(), entity);
                fixes.push(format!("items[{i}].forget names an entity without an attribute: forgetting by its text"));
            }
        }
    }
    (v, fixes)
}

fn mend_memory(m: &mut Map<String, Value>, path: &str, fixes: &mut Vec<String>) {
    const KEYS: [&str; 9] =
        ["kind", "content", "claim", "entities", "importance", "pinned", "cardinality", "valid_from", "valid_to"];
    let unknown: Vec<String> = m.keys().filter(|k| !KEYS.contains(&k.as_str())).cloned().collect();
    for k in unknown {
        m.remove(&k);
        fixes.push(format!("{path}: dropped unknown key {k:?}"));
    }
    // A validity end that is no date ("unknown", "ongoing", a number) says nothing: dropped,
    // and the memory kept (an open end).
    for end in ["valid_from", "valid_to"] {
        let dropped = match m.get(end) {
            Some(Value::Null) => Some(None),
            Some(Value::String(s)) => world_time::parse_date(s, Timestamp(0)).err().map(Some),
            Some(other) => Some(Some(format!("{other} is not a date"))),
            None => None,
        };
        if let Some(why) = dropped {
            m.remove(end);
            if let Some(why) = why {
                fixes.push(format!("{path}: dropped {end}: {why}"));
            }
        }
    }
    if let Some(Value::String(kind)) = m.get_mut("kind") {
        let lower = kind.trim().to_lowercase();
        if lower != *kind && ["semantic", "procedural", "episodic"].contains(&lower.as_str()) {
            *kind = lower;
        }
    }
    if let Some(Value::Object(c)) = m.get("claim") {
        let blank = ["entity", "attribute", "value"]
            .iter()
            .any(|k| c.get(*k).and_then(Value::as_str).is_none_or(|s| s.trim().is_empty()));
        if blank {
            m.insert("claim".into(), Value::Null);
            fixes.push(format!("{path}: dropped a claim without entity, attribute or value"));
        }
    }
    let has_claim = m.get("claim").is_some_and(Value::is_object);
    let kind = m.get("kind").and_then(Value::as_str).unwrap_or_default().to_string();
    if has_claim && (kind == "procedural" || kind == "episodic") {
        m.insert("kind".into(), Value::String("semantic".into()));
        fixes.push(format!("{path}: a {kind} memory with a claim is a fact: kept as semantic"));
    }
    if let Some(Value::Array(es)) = m.get_mut("entities") {
        let before = es.len();
        es.retain(|e| e.as_str().is_some_and(|s| !s.trim().is_empty()));
        if es.len() < before {
            fixes.push(format!("{path}: dropped empty entity names"));
        }
    }
}

/// The optional `reason` of a reconcile or forget answer, when it is non-empty text.
pub fn reason(v: &Value) -> Option<String> {
    v.get("reason").and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_string)
}

/// The JSON type of a value, for messages ("a string", "an array").
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `v` as an object holding every `required` key and no key outside `required` + `optional`.
fn object<'a>(
    v: &'a Value,
    path: &str,
    required: &[&str],
    optional: &[&str],
) -> Result<&'a Map<String, Value>, String> {
    let Value::Object(m) = v else {
        return Err(format!("{path} must be an object, got {}", type_name(v)));
    };
    if let Some(k) = m.keys().find(|k| !required.contains(&k.as_str()) && !optional.contains(&k.as_str())) {
        let mut known: Vec<&str> = required.iter().chain(optional).copied().collect();
        known.sort_unstable();
        return Err(format!("{path} has unknown key {k:?} (allowed: {})", known.join(", ")));
    }
    if let Some(k) = required.iter().find(|k| !m.contains_key(**k)) {
        return Err(format!("{path} is missing key {k:?}"));
    }
    Ok(m)
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn array<'a>(v: &'a Value, path: &str) -> Result<&'a Vec<Value>, String> {
    v.as_array().ok_or_else(|| format!("{path} must be an array, got {}", type_name(v)))
}

/// A non-blank string.
fn text<'a>(v: &'a Value, path: &str) -> Result<&'a str, String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Ok(s),
        Value::String(_) => Err(format!("{path} must not be empty")),
        other => Err(format!("{path} must be a string, got {}", type_name(other))),
    }
}

fn ids(v: &Value, path: &str, allowed: &[MemoryId], what: &str) -> Result<Vec<MemoryId>, String> {
    let allowed: HashSet<MemoryId> = allowed.iter().copied().collect();
    let mut out: Vec<MemoryId> = Vec::new();
    for (i, x) in array(v, path)?.iter().enumerate() {
        let id = x.as_i64().map(MemoryId).ok_or_else(|| format!("{path}[{i}] must be an integer id, got {x}"))?;
        if !allowed.contains(&id) {
            return Err(format!("{path}[{i}] = {x} is not the id of any given {what}"));
        }
        if !out.contains(&id) {
            out.push(id);
        }
    }
    Ok(out)
}

/// An optional free-text `reason` (accepted for a live model's explanation; unused).
fn check_reason(m: &Map<String, Value>) -> Result<(), String> {
    match m.get("reason") {
        None | Some(Value::Null) | Some(Value::String(_)) => Ok(()),
        Some(other) => Err(format!("reason must be a string, got {}", type_name(other))),
    }
}

/// An extraction answer: `{"items": [{"memory": {...}} | {"forget": {...}}, ...]}`, in order.
/// Relative dates of `valid_from` / `valid_to` are resolved against `at`, the turn's time.
pub fn extraction(v: &Value, at: Timestamp) -> Result<Vec<ExtractedItem>, String> {
    let m = object(v, "answer", &["items"], &["notes"])?;
    let mut items = Vec::new();
    for (i, item) in array(&m["items"], "items")?.iter().enumerate() {
        let path = format!("items[{i}]");
        let obj = item.as_object().ok_or_else(|| format!("{path} must be an object, got {}", type_name(item)))?;
        match (obj.get("memory"), obj.get("forget"), obj.len()) {
            (Some(c), None, 1) => items.push(ExtractedItem::Memory(candidate(c, &join(&path, "memory"), at)?)),
            (None, Some(f), 1) => items.push(ExtractedItem::Forget(forget(f, &join(&path, "forget"))?)),
            _ => return Err(format!("{path} must be exactly one of {{\"memory\": …}} or {{\"forget\": …}}")),
        }
    }
    Ok(items)
}

/// The optional `notes` of an extraction answer: what the extractor noticed and did not extract.
pub fn extraction_notes(v: &Value) -> Result<Vec<String>, String> {
    match v.get("notes") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(n) => array(n, "notes")?
            .iter()
            .enumerate()
            .map(|(i, x)| text(x, &format!("notes[{i}]")).map(str::to_string))
            .collect(),
    }
}

fn candidate(v: &Value, path: &str, at: Timestamp) -> Result<Candidate, String> {
    let m = object(
        v,
        path,
        &["kind", "content"],
        &["claim", "entities", "importance", "pinned", "cardinality", "valid_from", "valid_to"],
    )?;
    let kind_path = join(path, "kind");
    let kind = match text(&m["kind"], &kind_path)? {
        "semantic" => MemoryKind::Semantic,
        "procedural" => MemoryKind::Procedural,
        "episodic" => MemoryKind::Episodic,
        other => return Err(format!("{kind_path}: unknown kind {other:?} (known: semantic, procedural, episodic)")),
    };
    let content = text(&m["content"], &join(path, "content"))?.to_string();
    let claim = match m.get("claim") {
        None | Some(Value::Null) => None,
        Some(c) => Some(claim(c, &join(path, "claim"))?),
    };
    if claim.is_some() && kind != MemoryKind::Semantic {
        return Err(format!("{path}: a claim is only allowed on a semantic memory, this one is {kind}"));
    }
    let mut entities = Vec::new();
    match m.get("entities") {
        None | Some(Value::Null) => {}
        Some(e) => {
            let p = join(path, "entities");
            for (i, x) in array(e, &p)?.iter().enumerate() {
                entities.push(text(x, &format!("{p}[{i}]"))?.to_string());
            }
        }
    }
    // Reconcile neighbours are found by entity, so a claim's entity is always among them.
    if let Some(c) = &claim {
        let key = mnemo_contract::text::norm_name(&c.entity);
        if !entities.iter().any(|e| mnemo_contract::text::norm_name(e) == key) {
            entities.insert(0, c.entity.clone());
        }
    }
    let importance = match m.get("importance") {
        None | Some(Value::Null) => None,
        // Passed through as given, even out of 0..=1: the engine clamps and says so.
        Some(Value::Number(n)) => n.as_f64(),
        Some(other) => {
            return Err(format!("{}: must be a number or null, got {}", join(path, "importance"), type_name(other)))
        }
    };
    let pinned = match m.get("pinned") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("{}: must be a boolean, got {}", join(path, "pinned"), type_name(other))),
    };
    let cardinality = match m.get("cardinality") {
        None | Some(Value::Null) => Cardinality::One,
        Some(Value::String(s)) if s == "one" => Cardinality::One,
        Some(Value::String(s)) if s == "many" => Cardinality::Many,
        Some(other) => return Err(format!("{}: must be \"one\" or \"many\", got {other}", join(path, "cardinality"))),
    };
    // `valid_to` names the last day the fact holds: the interval ends the midnight after it.
    let bound = |key: &str, end: bool| -> Result<Option<Timestamp>, String> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                let p = join(path, key);
                world_time::parse_bound(text(v, &p)?, at, end).map(Some).map_err(|e| format!("{p}: {e}"))
            }
        }
    };
    let validity = Validity { from: bound("valid_from", false)?, to: bound("valid_to", true)? };
    Ok(Candidate { validity, kind, content, claim, entities, importance, pinned, cardinality })
}

fn claim(v: &Value, path: &str) -> Result<Claim, String> {
    let m = object(v, path, &["entity", "attribute", "value"], &[])?;
    let e = text(&m["entity"], &join(path, "entity"))?;
    let a = text(&m["attribute"], &join(path, "attribute"))?;
    let val = text(&m["value"], &join(path, "value"))?;
    Ok(Claim::new(e, a, val))
}

fn forget(v: &Value, path: &str) -> Result<ForgetCommand, String> {
    let is_text = v.as_object().is_some_and(|m| m.contains_key("text"));
    if is_text {
        let m = object(v, path, &["text"], &[])?;
        Ok(ForgetCommand::Text(mnemo_contract::text::fold_ws(text(&m["text"], &join(path, "text"))?)))
    } else {
        let m = object(v, path, &["entity", "attribute"], &[])
            .map_err(|e| format!("{e} (a forget is {{\"entity\", \"attribute\"}} or {{\"text\"}})"))?;
        Ok(ForgetCommand::Claim {
            entity: mnemo_contract::text::fold_ws(text(&m["entity"], &join(path, "entity"))?),
            attribute: mnemo_contract::text::fold_ws(text(&m["attribute"], &join(path, "attribute"))?),
        })
    }
}

/// A reconcile answer: `{"verdict": ..., "ids": [...]}`; ids must be among `neighbours`.
pub fn verdict(v: &Value, neighbours: &[MemoryId]) -> Result<Verdict, String> {
    let m = object(v, "answer", &["verdict", "ids"], &["reason"])?;
    check_reason(m)?;
    let ids = ids(&m["ids"], "ids", neighbours, "neighbour")?;
    match text(&m["verdict"], "verdict")? {
        "duplicate" => match ids.as_slice() {
            [one] => Ok(Verdict::Duplicate(*one)),
            _ => Err(format!("verdict \"duplicate\" needs exactly one id, got {}", ids.len())),
        },
        "contradicts" if ids.is_empty() => Err("verdict \"contradicts\" needs at least one id, got none".to_string()),
        "contradicts" => Ok(Verdict::Contradicts(ids)),
        "novel" if !ids.is_empty() => Err(format!("verdict \"novel\" takes no ids, got {}", ids.len())),
        "novel" => Ok(Verdict::Novel),
        other => Err(format!("unknown verdict {other:?} (known: duplicate, contradicts, novel)")),
    }
}

/// A resolve-forget answer: `{"ids": [...]}`; ids must be among `candidates`.
pub fn forget_ids(v: &Value, candidates: &[MemoryId]) -> Result<Vec<MemoryId>, String> {
    let m = object(v, "answer", &["ids"], &["reason"])?;
    check_reason(m)?;
    ids(&m["ids"], "ids", candidates, "candidate")
}

/// A plan answer: a non-empty answer, steps as strings, and the memories used (each a given
/// number, once) with the value taken (a string, or null).
pub fn plan(v: &Value, numbers: &[MemoryId]) -> Result<mnemo_contract::plan::PlanDraft, String> {
    let m = object(v, "answer", &["answer", "steps", "uses"], &[])?;
    let answer = text(&m["answer"], "answer")?.trim().to_string();
    let steps = array(&m["steps"], "steps")?
        .iter()
        .enumerate()
        .map(|(i, s)| text(s, &format!("steps[{i}]")).map(|t| t.trim().to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let allowed: HashSet<MemoryId> = numbers.iter().copied().collect();
    let mut uses: Vec<mnemo_contract::PlanUse> = Vec::new();
    for (i, u) in array(&m["uses"], "uses")?.iter().enumerate() {
        let path = format!("uses[{i}]");
        let o = object(u, &path, &["id"], &["value"])?;
        let id = o["id"]
            .as_i64()
            .map(MemoryId)
            .ok_or_else(|| format!("{path}.id must be an integer id, got {}", o["id"]))?;
        if !allowed.contains(&id) {
            return Err(format!("{path}.id = {} is not the id of any given memory", o["id"]));
        }
        let value = match o.get("value") {
            None | Some(Value::Null) => None,
            Some(v) => Some(text(v, &format!("{path}.value"))?.trim().to_string()),
        };
        if uses.iter().any(|x| x.memory == id) {
            return Err(format!("{path}.id = {} is listed twice", o["id"]));
        }
        uses.push(mnemo_contract::PlanUse { memory: id, value });
    }
    Ok(mnemo_contract::plan::PlanDraft { answer, steps, uses })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_epoch(v: &Value) -> Result<Vec<ExtractedItem>, String> {
        extraction(v, Timestamp(0))
    }
    use serde_json::json;

    #[test]
    fn fences_are_tolerated_but_prose_is_not() {
        assert!(parse_json("```json\n{\"ids\": []}\n```").is_ok());
        assert!(parse_json("Sure! {\"ids\": []}").unwrap_err().contains("not valid JSON"));
        assert!(parse_json("[1]").unwrap_err().contains("must be a JSON object"));
        assert!(parse_json("  ").unwrap_err().contains("empty"));
    }

    #[test]
    fn candidate_fields_are_checked() {
        let bad = |c: Value| at_epoch(&json!({"items": [{"memory": c}]})).unwrap_err();
        assert!(bad(json!({"kind": "semantic"})).contains("missing key \"content\""));
        assert!(bad(json!({"kind": "semantic", "content": " "})).contains("items[0].memory.content must not be empty"));
        assert!(bad(json!({"kind": "semantic", "content": "x", "colour": 1})).contains("unknown key \"colour\""));
        assert!(bad(
            json!({"kind": "episodic", "content": "x", "claim": {"entity": "a", "attribute": "b", "value": "c"}})
        )
        .contains("only allowed on a semantic"));
        assert!(bad(json!({"kind": "semantic", "content": "x", "importance": "high"})).contains("importance"));
        assert!(bad(json!({"kind": "semantic", "content": "x", "pinned": "yes"})).contains("pinned"));
        assert!(bad(json!({"kind": "semantic", "content": "x", "entities": [""]})).contains("entities[0]"));
        assert!(bad(json!({"kind": "semantic", "content": "x", "claim": {"entity": "a", "value": "c"}}))
            .contains("attribute"));
    }

    #[test]
    fn claim_entity_is_added_and_importance_passed_through() {
        let items = at_epoch(&json!({"items": [{"memory": {"kind": "semantic", "content": "x", "importance": 1.7,
            "claim": {"entity": "Ben", "attribute": "phone", "value": "555"}}}]}))
        .unwrap();
        let c: Vec<Candidate> = items
            .into_iter()
            .filter_map(|i| match i {
                ExtractedItem::Memory(c) => Some(c),
                ExtractedItem::Forget(_) => None,
            })
            .collect();
        assert_eq!(c[0].entities, vec!["Ben"]);
        assert_eq!(c[0].importance, Some(1.7));
        assert!(!c[0].pinned);
    }

    #[test]
    fn items_keep_order_and_shape() {
        let items = at_epoch(&json!({"items": [
            {"memory": {"kind": "semantic", "content": "x"}},
            {"forget": {"text": "x"}},
            {"memory": {"kind": "episodic", "content": "y"}}]}))
        .unwrap();
        assert!(matches!(items[1], ExtractedItem::Forget(_)));
        assert!(matches!(&items[2], ExtractedItem::Memory(c) if c.content == "y"));
        let e =
            at_epoch(&json!({"items": [{"memory": {"kind": "semantic", "content": "x"}, "forget": {"text": "x"}}]}))
                .unwrap_err();
        assert!(e.contains("exactly one"), "{e}");
        assert!(at_epoch(&json!({"candidates": []})).is_err());
    }

    #[test]
    fn forgets_are_checked() {
        let bad = |f: Value| at_epoch(&json!({"items": [{"forget": f}]})).unwrap_err();
        assert!(bad(json!({"entity": "Ben"})).contains("missing key \"attribute\""));
        assert!(bad(json!({"text": "x", "entity": "Ben"})).contains("unknown key \"entity\""));
        assert!(bad(json!("Ben")).contains("must be an object"));
    }

    #[test]
    fn verdict_shapes() {
        let n = [MemoryId(1), MemoryId(2)];
        assert_eq!(
            verdict(&json!({"verdict": "contradicts", "ids": [2, 1, 2]}), &n).unwrap(),
            Verdict::Contradicts(vec![MemoryId(2), MemoryId(1)])
        );
        assert!(verdict(&json!({"verdict": "duplicate", "ids": [1, 2]}), &n).unwrap_err().contains("exactly one"));
        assert!(verdict(&json!({"verdict": "novel", "ids": [1]}), &n).unwrap_err().contains("takes no ids"));
        assert!(verdict(&json!({"verdict": "contradicts", "ids": []}), &n).unwrap_err().contains("at least one"));
        assert!(verdict(&json!({"verdict": "same", "ids": []}), &n).unwrap_err().contains("unknown verdict"));
        assert!(verdict(&json!({"verdict": "novel", "ids": ["1"]}), &n).unwrap_err().contains("integer"));
        assert!(verdict(&json!({"verdict": "novel", "ids": [], "reason": 3}), &n).unwrap_err().contains("reason"));
    }

    #[test]
    fn a_validity_is_read_in_days_and_a_non_date_is_dropped_with_a_note() {
        // Friday 2026-12-04.
        let at = Timestamp::parse_rfc3339("2026-12-04T15:00:00Z").unwrap();
        let day = |d: &str| Timestamp::parse_rfc3339(&format!("{d}T00:00:00Z")).unwrap();
        let answer = json!({"items": [
            {"memory": {"kind": "semantic", "content": "Ben lived in Lisbon", "valid_from": "2019", "valid_to": "2021"}},
            {"memory": {"kind": "semantic", "content": "Standup at 10:00", "valid_from": "next Monday", "valid_to": null}},
            {"memory": {"kind": "semantic", "content": "Ana leads", "valid_from": "unknown", "valid_to": 2021}}]});
        let (mended, fixes) = normalise_extraction(&answer);
        let items = extraction(&mended, at).unwrap();
        let validity = |i: usize| match &items[i] {
            ExtractedItem::Memory(c) => c.validity,
            other => panic!("{other:?}"),
        };
        assert_eq!(validity(0), Validity { from: Some(day("2019-01-01")), to: Some(day("2022-01-01")) });
        assert_eq!(validity(1), Validity { from: Some(day("2026-12-07")), to: None });
        assert!(validity(2).is_unstated());
        assert_eq!(fixes.len(), 2, "{fixes:?}");
        assert!(fixes[0].contains("dropped valid_from") && fixes[0].contains("\"unknown\" is not a date"), "{fixes:?}");
    }
}
