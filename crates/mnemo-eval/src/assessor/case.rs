//! Assessor case files (docs/cases.md): a recall pack, the world's state, and a label.
//!
//! Errors name the file, the line and the field; an unknown key is an error.
use serde::Deserialize;
use std::ops::Range;
use std::path::{Path, PathBuf};

use mnemo_contract::time::parse_offset;
use mnemo_contract::{MemoryKind, Timestamp};
use toml::Spanned;

use crate::error::{EvalError, Result};

/// One labelled case.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// Unique name.
    pub name: String,
    /// The file and line it came from.
    pub file: PathBuf,
    /// Line of its `name`.
    pub line: usize,
    /// When the agent acts.
    pub now: Timestamp,
    /// The task's query.
    pub query: String,
    /// The claim the task is about.
    pub probe: (String, String),
    /// The label: the pack is sound enough to act on, or can be made sound by re-grounding.
    pub should_act: bool,
    /// Decisive (independent evidence) or a ladder member.
    pub decisive: bool,
    /// The ladder it belongs to.
    pub ladder: Option<String>,
    /// Domain, for reading the results (optional).
    pub domain: Option<String>,
    /// The pack, in rank order.
    pub memories: Vec<CaseMemory>,
    /// The systems of record: their rows now.
    pub world: Vec<WorldRow>,
    /// Sources that fail during this case.
    pub faults: Vec<Fault>,
}

/// A memory of the pack.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseMemory {
    /// Its kind.
    pub kind: MemoryKind,
    /// `(entity, attribute, value)`, if it asserts a claim.
    pub claim: Option<(String, String, String)>,
    /// Its content (default: `entity | attribute | value`).
    pub text: String,
    /// Time since last confirmation, in milliseconds.
    pub confirmed_ms: i64,
    /// Distinct corroborating sources (≥ 1).
    pub sources: usize,
    /// Restatements.
    pub restated: u32,
    /// Importance 0..=1.
    pub importance: f32,
    /// Relevance to the query, 0..=1, as recall's trace would give it.
    pub relevance: f64,
    /// Pinned.
    pub pinned: bool,
}

/// A system-of-record row.
#[derive(Clone, Debug, PartialEq)]
pub struct WorldRow {
    /// The source (one grounder per source).
    pub source: String,
    /// Entity.
    pub entity: String,
    /// Attribute.
    pub attribute: String,
    /// Current value.
    pub value: String,
}

/// How a source fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Every lookup errors (connection refused).
    Down,
    /// Every lookup hangs past its timeout.
    Slow,
    /// Every lookup answers something that cannot be a value.
    Garbage,
}

/// A failing source.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    /// The source.
    pub source: String,
    /// How it fails.
    pub kind: FaultKind,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    cases: Vec<Spanned<RawCase>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: Spanned<String>,
    now: Spanned<toml::Value>,
    query: Spanned<String>,
    probe: Spanned<RawProbe>,
    should_act: bool,
    #[serde(default = "yes")]
    decisive: bool,
    #[serde(default)]
    ladder: Option<String>,
    #[serde(default)]
    domain: Option<String>,
    #[serde(default)]
    memories: Vec<Spanned<RawMemory>>,
    #[serde(default)]
    world: Vec<Spanned<RawWorld>>,
    #[serde(default)]
    faults: Vec<Spanned<RawFault>>,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProbe {
    entity: String,
    attribute: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMemory {
    kind: Spanned<String>,
    #[serde(default)]
    claim: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    text: Option<String>,
    confirmed: Spanned<String>,
    #[serde(default)]
    sources: Option<Spanned<i64>>,
    #[serde(default)]
    restated: Option<u32>,
    #[serde(default)]
    importance: Option<Spanned<f64>>,
    #[serde(default)]
    relevance: Option<Spanned<f64>>,
    #[serde(default)]
    pinned: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWorld {
    source: String,
    entity: String,
    attribute: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    source: String,
    kind: Spanned<String>,
}

struct Src<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Src<'_> {
    fn line(&self, offset: usize) -> usize {
        let end = offset.min(self.text.len());
        self.text.as_bytes()[..end].iter().filter(|b| **b == b'\n').count() + 1
    }
    fn err(&self, span: Range<usize>, field: impl Into<String>, message: impl Into<String>) -> EvalError {
        EvalError::Scenario {
            file: self.file.display().to_string(),
            line: self.line(span.start),
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Load every `*.toml` case file of each directory (or the file itself), sorted by name.
/// Case names must be unique across all files.
pub fn load_cases(paths: &[PathBuf]) -> Result<Vec<Case>> {
    let mut out: Vec<Case> = Vec::new();
    for p in paths {
        let files = if p.is_file() {
            vec![p.clone()]
        } else {
            let rd = std::fs::read_dir(p).map_err(|e| EvalError::io(p, format!("cannot read case directory: {e}")))?;
            let mut v = Vec::new();
            for e in rd {
                let path = e.map_err(|e| EvalError::io(p, e))?.path();
                if path.is_file() && path.extension().is_some_and(|x| x == "toml") {
                    v.push(path);
                }
            }
            v.sort();
            if v.is_empty() {
                return Err(EvalError::io(p, "no *.toml case files in this directory"));
            }
            v
        };
        for f in files {
            let text = std::fs::read_to_string(&f).map_err(|e| EvalError::io(&f, e))?;
            for c in parse_cases(&text, &f)? {
                if let Some(prev) = out.iter().find(|x| x.name == c.name) {
                    return Err(EvalError::Scenario {
                        file: f.display().to_string(),
                        line: c.line,
                        field: "name".into(),
                        message: format!(
                            "case name {:?} is already used in {}:{}",
                            c.name,
                            prev.file.display(),
                            prev.line
                        ),
                    });
                }
                out.push(c);
            }
        }
    }
    Ok(out)
}

/// Parse one case file's text.
pub fn parse_cases(text: &str, file: &Path) -> Result<Vec<Case>> {
    let src = Src { file, text };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let msg = e.message().to_string();
        let field = msg.split('`').nth(1).unwrap_or("(document)").to_string();
        src.err(span, field, msg)
    })?;
    if raw.cases.is_empty() {
        return Err(src.err(0..0, "cases", "a case file needs at least one [[cases]]"));
    }
    raw.cases.iter().enumerate().map(|(i, c)| build(&src, i, c.get_ref())).collect()
}

fn build(src: &Src<'_>, i: usize, c: &RawCase) -> Result<Case> {
    let f = |k: &str| format!("cases[{i}].{k}");
    let name = c.name.get_ref().trim().to_string();
    if name.is_empty() {
        return Err(src.err(c.name.span(), f("name"), "must not be empty"));
    }
    let now_text = match c.now.get_ref() {
        toml::Value::Datetime(d) => d.to_string(),
        toml::Value::String(s) => s.clone(),
        other => {
            return Err(src.err(
                c.now.span(),
                f("now"),
                format!("must be an RFC 3339 date-time, not a {}", other.type_str()),
            ))
        }
    };
    let now = Timestamp::parse_rfc3339(&now_text).map_err(|e| src.err(c.now.span(), f("now"), e.to_string()))?;
    if c.query.get_ref().trim().is_empty() {
        return Err(src.err(c.query.span(), f("query"), "must not be empty"));
    }
    let probe = c.probe.get_ref();
    if probe.entity.trim().is_empty() || probe.attribute.trim().is_empty() {
        return Err(src.err(c.probe.span(), f("probe"), "needs a non-empty entity and attribute"));
    }
    if !c.decisive && c.ladder.is_none() {
        return Err(src.err(c.name.span(), f("ladder"), "a case with decisive = false names its `ladder`"));
    }
    let mut memories = Vec::new();
    for (j, m) in c.memories.iter().enumerate() {
        memories.push(memory(src, &format!("cases[{i}].memories[{j}]"), m.get_ref())?);
    }
    let mut world = Vec::new();
    for (j, w) in c.world.iter().enumerate() {
        let r = w.get_ref();
        if [&r.source, &r.entity, &r.attribute, &r.value].iter().any(|s| s.trim().is_empty()) {
            return Err(src.err(
                w.span(),
                format!("cases[{i}].world[{j}]"),
                "source, entity, attribute and value must not be empty",
            ));
        }
        world.push(WorldRow {
            source: r.source.clone(),
            entity: r.entity.clone(),
            attribute: r.attribute.clone(),
            value: r.value.clone(),
        });
    }
    let mut faults = Vec::new();
    for (j, x) in c.faults.iter().enumerate() {
        let r = x.get_ref();
        let kind = match r.kind.get_ref().as_str() {
            "down" => FaultKind::Down,
            "slow" => FaultKind::Slow,
            "garbage" => FaultKind::Garbage,
            other => {
                return Err(src.err(
                    r.kind.span(),
                    format!("cases[{i}].faults[{j}].kind"),
                    format!("must be down, slow or garbage, not {other:?}"),
                ))
            }
        };
        faults.push(Fault { source: r.source.clone(), kind });
    }
    Ok(Case {
        name,
        file: src.file.to_path_buf(),
        line: src.line(c.name.span().start),
        now,
        query: c.query.get_ref().clone(),
        probe: (probe.entity.clone(), probe.attribute.clone()),
        should_act: c.should_act,
        decisive: c.decisive,
        ladder: c.ladder.clone(),
        domain: c.domain.clone(),
        memories,
        world,
        faults,
    })
}

fn memory(src: &Src<'_>, at: &str, m: &RawMemory) -> Result<CaseMemory> {
    let f = |k: &str| format!("{at}.{k}");
    let kind = MemoryKind::parse(m.kind.get_ref()).map_err(|e| src.err(m.kind.span(), f("kind"), e.to_string()))?;
    let claim = match &m.claim {
        None => None,
        Some(c) => match c.get_ref().as_slice() {
            [e, a, v] if !e.trim().is_empty() && !a.trim().is_empty() && !v.trim().is_empty() => {
                Some((e.clone(), a.clone(), v.clone()))
            }
            _ => return Err(src.err(c.span(), f("claim"), "must be [entity, attribute, value], none empty")),
        },
    };
    let text = match (&m.text, &claim) {
        (Some(t), _) if !t.trim().is_empty() => t.clone(),
        (_, Some((e, a, v))) => format!("{e} | {a} | {v}"),
        _ => return Err(src.err(m.kind.span(), f("text"), "a memory needs `claim` or `text`")),
    };
    let confirmed_ms =
        parse_offset(m.confirmed.get_ref()).map_err(|e| src.err(m.confirmed.span(), f("confirmed"), e.to_string()))?;
    let sources = match &m.sources {
        None => 1,
        Some(s) if *s.get_ref() >= 1 => usize::try_from(*s.get_ref()).unwrap_or(1),
        Some(s) => return Err(src.err(s.span(), f("sources"), "must be at least 1")),
    };
    let unit = |v: &Option<Spanned<f64>>, k: &str, default: f64| -> Result<f64> {
        match v {
            None => Ok(default),
            Some(x) if (0.0..=1.0).contains(x.get_ref()) => Ok(*x.get_ref()),
            Some(x) => Err(src.err(x.span(), f(k), "must be within 0..=1")),
        }
    };
    let default_importance = if kind == MemoryKind::Episodic { 0.5 } else { 0.8 };
    Ok(CaseMemory {
        kind,
        claim,
        text,
        confirmed_ms,
        sources,
        restated: m.restated.unwrap_or(0),
        importance: unit(&m.importance, "importance", default_importance)? as f32,
        relevance: unit(&m.relevance, "relevance", 1.0)?,
        pinned: m.pinned,
    })
}
