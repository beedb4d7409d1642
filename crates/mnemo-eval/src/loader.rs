//! The scenario loader: TOML files → validated [`Scenario`]s.
//!
//! Every error names the file, the line and the field. Syntax and type errors come from the
//! toml deserializer with a byte span; the span is turned into a line, and into a field path
//! (`probes[2].at`) by walking the spanned document tree. Semantic errors (a bad offset, a probe
//! with nothing to check, an event that does nothing) use the spans of the fields themselves.
use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use mnemo_contract::time::parse_offset;
use mnemo_contract::{Namespace, Timestamp};
use serde::Deserialize;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::error::{EvalError, Result};
use crate::scenario::*;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Spanned<String>,
    #[serde(default)]
    about: Option<String>,
    start: Spanned<toml::Value>,
    #[serde(default)]
    namespace: Option<Spanned<String>>,
    #[serde(default)]
    settings: Option<Spanned<toml::Table>>,
    #[serde(default)]
    events: Vec<Spanned<RawEvent>>,
    #[serde(default)]
    probes: Vec<Spanned<RawProbe>>,
    #[serde(default)]
    expect: Option<RawExpect>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvent {
    at: Spanned<String>,
    #[serde(default)]
    say: Option<Spanned<String>>,
    #[serde(default)]
    world: Option<Spanned<RawWorld>>,
    #[serde(default)]
    answer: Option<Spanned<RawAnswer>>,
    #[serde(default)]
    namespace: Option<Spanned<String>>,
    #[serde(default)]
    source: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAnswer {
    text: Spanned<String>,
    by: Spanned<String>,
    #[serde(default)]
    escalation: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorld {
    source: Spanned<String>,
    entity: Spanned<String>,
    attribute: Spanned<String>,
    value: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProbe {
    at: Spanned<String>,
    #[serde(default)]
    query: Option<Spanned<String>>,
    #[serde(default)]
    entity: Option<Spanned<String>>,
    #[serde(default)]
    attribute: Option<Spanned<String>>,
    #[serde(default)]
    expect: Option<Spanned<String>>,
    #[serde(default)]
    stale: Vec<Spanned<String>>,
    #[serde(default)]
    in_pack: Vec<Spanned<String>>,
    #[serde(default)]
    absent: Vec<Spanned<String>>,
    #[serde(default)]
    namespace: Option<Spanned<String>>,
    #[serde(default)]
    decision: Option<Spanned<String>>,
    #[serde(default)]
    plan_uses: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    #[serde(default)]
    forgotten: Vec<Spanned<RawMatcher>>,
    #[serde(default)]
    kept: Vec<Spanned<RawMatcher>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatcher {
    #[serde(default)]
    entity: Option<Spanned<String>>,
    #[serde(default)]
    attribute: Option<Spanned<String>>,
    #[serde(default)]
    value: Option<Spanned<String>>,
    #[serde(default)]
    content: Option<Spanned<String>>,
    #[serde(default)]
    reason: Option<Spanned<String>>,
    #[serde(default)]
    namespace: Option<Spanned<String>>,
    #[serde(default)]
    count: Option<Spanned<i64>>,
}

/// A file's text with its name, to turn spans into `file:line: field` errors.
struct Src<'a> {
    file: String,
    text: &'a str,
}

impl Src<'_> {
    fn line_of(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end].iter().filter(|b| **b == b'\n').count() + 1
    }
    fn err(&self, span: Range<usize>, field: impl Into<String>, message: impl Into<String>) -> EvalError {
        EvalError::Scenario {
            file: self.file.clone(),
            line: self.line_of(span.start),
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Load every `*.toml` in each directory (sorted by file name; other files are ignored). A
/// path that is itself a `.toml` file is loaded as one scenario. Scenario names must be unique.
pub fn load_dirs(dirs: &[PathBuf]) -> Result<Vec<Scenario>> {
    let mut out: Vec<Scenario> = Vec::new();
    for dir in dirs {
        let files = if dir.is_file() { vec![dir.clone()] } else { toml_files(dir)? };
        for f in files {
            let s = load_file(&f)?;
            if let Some(prev) = out.iter().find(|p| p.name == s.name) {
                return Err(EvalError::Scenario {
                    file: f.display().to_string(),
                    line: 1,
                    field: "name".into(),
                    message: format!("scenario name {:?} is already used by {}", s.name, prev.file.display()),
                });
            }
            out.push(s);
        }
    }
    Ok(out)
}

/// The `*.toml` files of a directory, sorted by name; an error if there are none.
fn toml_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| EvalError::io(dir, format!("cannot read scenario directory: {e}")))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| EvalError::io(dir, e))?.path();
        if path.is_file() && path.extension().is_some_and(|x| x == "toml") {
            files.push(path);
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(EvalError::io(dir, "no *.toml scenario files in this directory"));
    }
    Ok(files)
}

/// Load one scenario file.
pub fn load_file(path: &Path) -> Result<Scenario> {
    let text = std::fs::read_to_string(path).map_err(|e| EvalError::io(path, e))?;
    parse_scenario(&text, path)
}

/// Parse and validate a scenario from its text; `file` is used in errors and kept.
pub fn parse_scenario(text: &str, file: &Path) -> Result<Scenario> {
    let src = Src { file: file.display().to_string(), text };
    let tree = DeTable::parse(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        src.err(span.clone(), field_of_line(text, span.start), e.message().to_string())
    })?;
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        src.err(span.clone(), field_at(tree.get_ref(), &span, e.message()), e.message().to_string())
    })?;
    build(&src, raw, file)
}

fn build(src: &Src<'_>, raw: RawScenario, file: &Path) -> Result<Scenario> {
    let name = raw.name.get_ref().trim().to_string();
    if name.is_empty() || name == "all" {
        return Err(src.err(raw.name.span(), "name", "must be a non-empty name other than \"all\""));
    }
    let start = start_time(src, &raw.start)?;
    let namespace = match &raw.namespace {
        Some(ns) => namespace(src, ns, "namespace")?,
        None => Namespace::default(),
    };
    let (settings, settings_line) = match raw.settings {
        Some(s) => (s.get_ref().clone(), src.line_of(s.span().start)),
        None => (toml::Table::new(), 0),
    };
    let mut events = Vec::new();
    for (i, e) in raw.events.iter().enumerate() {
        events.push(event(src, i, e.get_ref(), e.span(), start, &namespace)?);
    }
    let mut probes = Vec::new();
    for (i, p) in raw.probes.iter().enumerate() {
        probes.push(probe(src, i, p.get_ref(), p.span(), start, &namespace)?);
    }
    let expect = match raw.expect {
        Some(x) => Expectations {
            forgotten: matchers(src, "expect.forgotten", &x.forgotten, true)?,
            kept: matchers(src, "expect.kept", &x.kept, false)?,
        },
        None => Expectations::default(),
    };
    if events.is_empty() && probes.is_empty() {
        return Err(src.err(0..0, "events", "a scenario needs at least one event or probe"));
    }
    Ok(Scenario {
        name,
        about: raw.about.unwrap_or_default(),
        file: file.to_path_buf(),
        start,
        namespace,
        settings,
        settings_line,
        events,
        probes,
        expect,
    })
}

fn start_time(src: &Src<'_>, v: &Spanned<toml::Value>) -> Result<Timestamp> {
    let text = match v.get_ref() {
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::String(s) => s.clone(),
        other => {
            return Err(src.err(
                v.span(),
                "start",
                format!("must be an RFC 3339 date-time, found a {}", other.type_str()),
            ))
        }
    };
    Timestamp::parse_rfc3339(&text).map_err(|e| {
        src.err(v.span(), "start", format!("{e}; write a full date-time with an offset, e.g. 2026-07-01T09:00:00Z"))
    })
}

fn namespace(src: &Src<'_>, v: &Spanned<String>, field: &str) -> Result<Namespace> {
    Namespace::new(v.get_ref()).map_err(|e| src.err(v.span(), field, e.to_string()))
}

fn offset(src: &Src<'_>, v: &Spanned<String>, field: &str, start: Timestamp) -> Result<Timestamp> {
    let ms = parse_offset(v.get_ref()).map_err(|e| src.err(v.span(), field, e.to_string()))?;
    Ok(start.plus_millis(ms))
}

/// A required non-empty string (after trimming).
fn text(src: &Src<'_>, v: &Spanned<String>, field: &str) -> Result<String> {
    if v.get_ref().trim().is_empty() {
        return Err(src.err(v.span(), field, "must not be empty"));
    }
    Ok(v.get_ref().clone())
}

fn event(
    src: &Src<'_>,
    i: usize,
    e: &RawEvent,
    span: Range<usize>,
    start: Timestamp,
    file_ns: &Namespace,
) -> Result<Event> {
    let f = |k: &str| format!("events[{i}].{k}");
    let at = offset(src, &e.at, &f("at"), start)?;
    let ns = match &e.namespace {
        Some(n) => namespace(src, n, &f("namespace"))?,
        None => file_ns.clone(),
    };
    let action = match (&e.say, &e.world) {
        (None, None) if e.answer.is_some() => {
            let a = e.answer.as_ref().map(Spanned::get_ref).ok_or_else(|| src.err(span.clone(), f("answer"), "missing"))?;
            let escalation = match &a.escalation {
                None => None,
                Some(id) => Some(text(src, id, &f("answer.escalation"))?),
            };
            Action::Answer {
                text: text(src, &a.text, &f("answer.text"))?,
                by: text(src, &a.by, &f("answer.by"))?,
                escalation,
            }
        }
        _ if e.answer.is_some() => {
            let a = e.answer.as_ref().map_or(span.clone(), Spanned::span);
            return Err(src.err(a, f("answer"), "an event has one of `say`, `world` or `answer`"));
        }
        (Some(say), None) => {
            let source = match &e.source {
                Some(s) => text(src, s, &f("source"))?,
                None => "user".to_string(),
            };
            Action::Say { source, text: text(src, say, &f("say"))? }
        }
        (None, Some(w)) => {
            if let Some(s) = &e.source {
                return Err(src.err(
                    s.span(),
                    f("source"),
                    "`source` is the speaker of `say`; a world event names its source inside `world`",
                ));
            }
            let w = w.get_ref();
            Action::World {
                source: text(src, &w.source, &f("world.source"))?,
                entity: text(src, &w.entity, &f("world.entity"))?,
                attribute: text(src, &w.attribute, &f("world.attribute"))?,
                value: text(src, &w.value, &f("world.value"))?,
            }
        }
        (Some(_), Some(w)) => {
            return Err(src.err(w.span(), f("world"), "an event has either `say` or `world`, not both"))
        }
        (None, None) => {
            return Err(src.err(
                span,
                format!("events[{i}]"),
                "an event needs `say` (a turn), `world` (a system-of-record change) or `answer` (a human answers an escalation)",
            ))
        }
    };
    Ok(Event {
        index: i,
        line: src.line_of(e.at.span().start),
        offset: e.at.get_ref().trim().to_string(),
        at,
        namespace: ns,
        action,
    })
}

fn probe(
    src: &Src<'_>,
    i: usize,
    p: &RawProbe,
    span: Range<usize>,
    start: Timestamp,
    file_ns: &Namespace,
) -> Result<Probe> {
    let f = |k: &str| format!("probes[{i}].{k}");
    let at = offset(src, &p.at, &f("at"), start)?;
    let ns = match &p.namespace {
        Some(n) => namespace(src, n, &f("namespace"))?,
        None => file_ns.clone(),
    };
    let about = match (&p.entity, &p.attribute) {
        (Some(e), Some(a)) => Some((text(src, e, &f("entity"))?, text(src, a, &f("attribute"))?)),
        (Some(e), None) => {
            return Err(src.err(e.span(), f("attribute"), "a probe with `entity` needs `attribute` too"))
        }
        (None, Some(a)) => return Err(src.err(a.span(), f("entity"), "a probe with `attribute` needs `entity` too")),
        (None, None) => None,
    };
    let list = |v: &[Spanned<String>], k: &str| -> Result<Vec<String>> {
        v.iter().enumerate().map(|(j, s)| text(src, s, &format!("probes[{i}].{k}[{j}]"))).collect()
    };
    let in_pack = list(&p.in_pack, "in_pack")?;
    let absent = list(&p.absent, "absent")?;
    let stale = list(&p.stale, "stale")?;
    if about.is_none() {
        if in_pack.is_empty() && absent.is_empty() {
            return Err(src.err(
                span,
                format!("probes[{i}]"),
                "a probe needs `entity` and `attribute`, or `in_pack` (or `absent`)",
            ));
        }
        if let Some(v) = &p.expect {
            return Err(src.err(v.span(), f("expect"), "`expect` needs the probe's `entity` and `attribute`"));
        }
        if let Some(v) = p.stale.first() {
            return Err(src.err(v.span(), f("stale"), "`stale` needs the probe's `entity` and `attribute`"));
        }
    }
    let expect = p.expect.as_ref().map(|e| text(src, e, &f("expect"))).transpose()?;
    let decision = match &p.decision {
        None => None,
        Some(d) => match d.get_ref().trim() {
            "act" => Some(true),
            "escalate" => Some(false),
            other => {
                return Err(src.err(d.span(), f("decision"), format!("must be \"act\" or \"escalate\", not {other:?}")))
            }
        },
    };
    let plan_uses = p.plan_uses.as_ref().map(|v| text(src, v, &f("plan_uses"))).transpose()?;
    let query = match (&p.query, &about) {
        (Some(q), _) => text(src, q, &f("query"))?,
        (None, Some((e, a))) => format!("What is the {a} of {e}?"),
        (None, None) => return Err(src.err(span, f("query"), "a probe without `entity` needs a `query`")),
    };
    Ok(Probe {
        index: i,
        line: src.line_of(p.at.span().start),
        offset: p.at.get_ref().trim().to_string(),
        at,
        namespace: ns,
        query,
        about,
        expect,
        stale,
        in_pack,
        absent,
        decision,
        plan_uses,
    })
}

fn matchers(src: &Src<'_>, field: &str, raw: &[Spanned<RawMatcher>], forgotten: bool) -> Result<Vec<Matcher>> {
    let mut out = Vec::new();
    for (i, m) in raw.iter().enumerate() {
        let f = |k: &str| format!("{field}[{i}].{k}");
        let span = m.span();
        let m = m.get_ref();
        let opt = |v: &Option<Spanned<String>>, k: &str| v.as_ref().map(|s| text(src, s, &f(k))).transpose();
        let matcher = Matcher {
            line: src.line_of(span.start),
            namespace: m.namespace.as_ref().map(|n| namespace(src, n, &f("namespace"))).transpose()?,
            entity: opt(&m.entity, "entity")?,
            attribute: opt(&m.attribute, "attribute")?,
            value: opt(&m.value, "value")?,
            content: opt(&m.content, "content")?,
            reason: opt(&m.reason, "reason")?,
            count: match &m.count {
                Some(c) if *c.get_ref() >= 1 => usize::try_from(*c.get_ref()).ok(),
                Some(c) => return Err(src.err(c.span(), f("count"), "must be at least 1")),
                None => None,
            },
        };
        if matcher.entity.is_some() != matcher.attribute.is_some() {
            return Err(src.err(span, format!("{field}[{i}]"), "a claim matcher needs both `entity` and `attribute`"));
        }
        if matcher.value.is_some() && matcher.entity.is_none() {
            return Err(src.err(span, f("value"), "`value` needs `entity` and `attribute`"));
        }
        if matcher.entity.is_none() && matcher.content.is_none() {
            return Err(src.err(
                span,
                format!("{field}[{i}]"),
                "a matcher needs `entity` + `attribute` (a claim) or `content` (a substring)",
            ));
        }
        if let (false, Some(r)) = (forgotten, &m.reason) {
            return Err(src.err(r.span(), f("reason"), "`reason` applies to `forgotten` matchers only"));
        }
        out.push(matcher);
    }
    Ok(out)
}

/// The field path at byte `offset` of the document (e.g. `probes[2].at`), completed with the
/// field a "missing field" / "unknown field" message names when the path stops at a table.
fn field_at(doc: &DeTable<'_>, span: &Range<usize>, message: &str) -> String {
    // An empty span (a field missing from the whole document) points at no field of its own.
    let path = if span.is_empty() { Vec::new() } else { path_in_table(doc, span.start).unwrap_or_default() };
    let mut out = String::new();
    for seg in &path {
        if !seg.starts_with('[') && !out.is_empty() {
            out.push('.');
        }
        out.push_str(seg);
    }
    let named = message
        .split('`')
        .nth(1)
        .filter(|_| message.starts_with("missing field") || message.starts_with("unknown field"));
    match named {
        Some(n) if path.last().map(String::as_str) != Some(n) => {
            if out.is_empty() {
                n.to_string()
            } else {
                format!("{out}.{n}")
            }
        }
        _ if out.is_empty() => "(document)".to_string(),
        _ => out,
    }
}

fn contains(span: &Range<usize>, offset: usize) -> bool {
    offset >= span.start && offset < span.end.max(span.start + 1)
}

fn path_in_table(t: &DeTable<'_>, offset: usize) -> Option<Vec<String>> {
    // Keys are visited in map order; spans do not overlap, so the first hit is the one.
    let mut by_pos: BTreeMap<usize, (&Spanned<std::borrow::Cow<'_, str>>, &Spanned<DeValue<'_>>)> = BTreeMap::new();
    for (k, v) in t.iter() {
        by_pos.insert(k.span().start, (k, v));
    }
    for (k, v) in by_pos.values() {
        let key = k.get_ref().to_string();
        if contains(&k.span(), offset) {
            return Some(vec![key]);
        }
        if let Some(mut rest) = path_in_value(v, offset) {
            rest.insert(0, key);
            return Some(rest);
        }
    }
    None
}

fn path_in_value(v: &Spanned<DeValue<'_>>, offset: usize) -> Option<Vec<String>> {
    match v.get_ref() {
        DeValue::Table(t) => {
            if let Some(p) = path_in_table(t, offset) {
                return Some(p);
            }
        }
        DeValue::Array(a) => {
            for (i, e) in a.iter().enumerate() {
                if let Some(mut p) = path_in_value(e, offset) {
                    p.insert(0, format!("[{i}]"));
                    return Some(p);
                }
            }
        }
        _ => {}
    }
    contains(&v.span(), offset).then(Vec::new)
}

/// For a syntax error (no document tree): the key written on that line, or the table header.
fn field_of_line(text: &str, offset: usize) -> String {
    let end = offset.min(text.len());
    let start = text.as_bytes()[..end].iter().rposition(|b| *b == b'\n').map_or(0, |p| p + 1);
    let line = text.get(start..).and_then(|t| t.lines().next()).unwrap_or("").trim();
    if line.starts_with('[') {
        return line.trim_matches(|c| c == '[' || c == ']').trim().to_string();
    }
    match line.split_once('=') {
        Some((k, _)) if !k.trim().is_empty() => k.trim().to_string(),
        _ => "(syntax)".to_string(),
    }
}
