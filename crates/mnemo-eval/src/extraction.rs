//! `mnemo bench extraction`: what a model makes of prose, measured on conversations whose facts
//! are written down (eval/real-model/conversations, format in eval/real-model/README.md).
//!
//! Each conversation is told turn by turn, at the times it gives, to a fresh data directory
//! through the configured runtime (the model seam decides who answers: the fake, a live model,
//! or a cassette); then what memory holds is read back and scored:
//!
//! - **facts kept**: the facts a turn states that some memory derived from that turn holds;
//! - **wrong tombstones** (the bar is 0): tombstoned memories that hold a fact which should
//!   still stand and none that was replaced — memory destroyed what it was not asked to;
//! - **final missing**: facts that should stand at the end and no active memory holds;
//! - **stale active**: replaced facts still held by an active memory (without the new value);
//! - **claims per semantic memory**: how much a model's facts can be reconciled by rule.
//!
//! A memory *holds* a fact when its content and claim hold every number of the fact's value and
//! at least half of the value's other terms (stemmed, as recall's relevance stems them): "1000 mg
//! twice a day" is held by "raised to 1000 mg twice daily", not by "500 mg twice a day".
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mnemo_agent::{Config, Runtime};
use mnemo_contract::relevance::content_terms;
use mnemo_contract::{Memory, MemoryKind, Namespace, SimClock, Status, Timestamp};
use mnemo_core::engine::OutcomeKind;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{EvalError, Result};

/// One conversation file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conversation {
    /// Its name (also the namespace it is told into).
    pub name: String,
    /// What it exercises, for people.
    #[serde(default)]
    pub about: String,
    /// The turns, in order.
    pub turns: Vec<ConversationTurn>,
    /// Where it was read from.
    #[serde(skip)]
    pub file: PathBuf,
}

/// One turn and the facts it states.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationTurn {
    /// When it is said (RFC 3339).
    pub at: String,
    /// Who says it.
    #[serde(default = "default_source")]
    pub source: String,
    /// What is said.
    pub text: String,
    /// The facts it states, `entity | attribute | value`.
    #[serde(default)]
    pub facts: Vec<String>,
    /// Facts of earlier turns it replaces (the same text as there).
    #[serde(default)]
    pub supersedes: Vec<String>,
}

fn default_source() -> String {
    "user".into()
}

/// A fact as `entity | attribute | value`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Fact {
    text: String,
    value: String,
}

fn bad(file: &Path, message: String) -> EvalError {
    EvalError::Io { path: file.display().to_string(), message }
}

fn fact(file: &Path, where_: &str, text: &str) -> Result<Fact> {
    let parts: Vec<&str> = text.split('|').map(str::trim).collect();
    match parts.as_slice() {
        [e, a, v] if !e.is_empty() && !a.is_empty() && !v.is_empty() => {
            Ok(Fact { text: text.trim().to_string(), value: v.to_string() })
        }
        _ => Err(bad(file, format!("{where_}: {text:?} is not `entity | attribute | value`"))),
    }
}

impl Conversation {
    /// Read and check one file: times parse and move forward, facts have three parts, a
    /// replaced fact is one an earlier turn states.
    pub fn load(file: &Path) -> Result<Conversation> {
        let text = std::fs::read_to_string(file).map_err(|e| bad(file, format!("cannot read: {e}")))?;
        let mut c: Conversation =
            toml::from_str(&text).map_err(|e| bad(file, mnemo_contract::text::toml_error(&e, Some(&text))))?;
        c.file = file.to_path_buf();
        if c.turns.is_empty() {
            return Err(bad(file, "no [[turns]]".into()));
        }
        Namespace::new(&c.name).map_err(|e| bad(file, format!("name: {e}")))?;
        let mut said: Vec<String> = Vec::new();
        let mut last: Option<Timestamp> = None;
        for (i, t) in c.turns.iter().enumerate() {
            let at = Timestamp::parse_rfc3339(&t.at).map_err(|e| bad(file, format!("turns[{i}].at: {e}")))?;
            if last.is_some_and(|l| at < l) {
                return Err(bad(file, format!("turns[{i}].at {} is before the turn above it", t.at)));
            }
            last = Some(at);
            if t.text.trim().is_empty() {
                return Err(bad(file, format!("turns[{i}].text is empty")));
            }
            for s in &t.supersedes {
                fact(file, &format!("turns[{i}].supersedes"), s)?;
                if !said.iter().any(|f| f == s.trim()) {
                    return Err(bad(file, format!("turns[{i}].supersedes {s:?}: no earlier turn states it")));
                }
            }
            for f in &t.facts {
                said.push(fact(file, &format!("turns[{i}].facts"), f)?.text);
            }
        }
        Ok(c)
    }

    /// Every `*.toml` in `path` (sorted), or `path` itself when it is a file.
    pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Conversation>> {
        let mut out = Vec::new();
        for p in paths {
            if p.is_dir() {
                let mut files: Vec<PathBuf> = std::fs::read_dir(p)
                    .map_err(|e| bad(p, format!("cannot list: {e}")))?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|f| f.extension().is_some_and(|x| x == "toml"))
                    .collect();
                files.sort();
                for f in files {
                    out.push(Conversation::load(&f)?);
                }
            } else {
                out.push(Conversation::load(p)?);
            }
        }
        if out.is_empty() {
            return Err(EvalError::Io { path: format!("{paths:?}"), message: "no conversation (*.toml) found".into() });
        }
        Ok(out)
    }
}

/// Whether `m` holds the value `v` (see the module).
fn holds(m: &Memory, v: &str) -> bool {
    let mut text = m.content.clone();
    if let Some(c) = &m.claim {
        text.push_str(&format!(" {} {} {}", c.entity, c.attribute, c.value));
    }
    let have = content_terms(&text);
    let digits: String = text.chars().filter(char::is_ascii_digit).collect();
    let want = content_terms(v);
    let is_number = |t: &String| t.chars().all(|c| c.is_ascii_digit());
    let (numbers, words): (Vec<&String>, Vec<&String>) = want.iter().partition(|t| is_number(t));
    let numbers_held = numbers.iter().all(|n| have.contains(n) || digits.contains(n.as_str()));
    let words_held = words.iter().filter(|w| have.contains(w)).count();
    !want.is_empty() && numbers_held && words_held * 2 >= words.len()
}

fn memory_json(m: &Memory) -> Value {
    let status = match &m.status {
        Status::Active => json!("active"),
        Status::Tombstoned { reason, .. } => json!({"tombstoned": reason}),
    };
    json!({"id": m.id.0, "kind": m.kind, "content": m.content,
           "claim": m.claim.as_ref().map(|c| format!("{} | {} | {}", c.entity, c.attribute, c.value)),
           "status": status})
}

/// Tell `c` under `config` and score what memory holds afterwards: one JSON row.
pub async fn run_conversation(config: &Config, c: &Conversation) -> Result<Value> {
    let dir = tempfile::tempdir().map_err(|e| bad(&c.file, format!("temporary data directory: {e}")))?;
    let first = Timestamp::parse_rfc3339(&c.turns[0].at).map_err(|e| bad(&c.file, e.to_string()))?;
    let clock = Arc::new(SimClock::new(first));
    let runtime = Runtime::build(config, dir.path(), clock.clone(), Vec::new())
        .await
        .map_err(|e| bad(&c.file, format!("building the runtime: {e}")))?;
    let ns = Namespace::new(&c.name).map_err(|e| bad(&c.file, e.to_string()))?;
    let mut turn_ids = Vec::new();
    let (mut failed, mut models, mut unsupported, mut refused, mut notes) =
        (Vec::new(), BTreeSet::new(), 0usize, 0usize, Vec::new());
    for (i, t) in c.turns.iter().enumerate() {
        clock.set(Timestamp::parse_rfc3339(&t.at).map_err(|e| bad(&c.file, e.to_string()))?);
        eprintln!("  {}: turn {}/{}", c.name, i + 1, c.turns.len());
        match runtime.remember(&ns, &t.source, t.text.as_bytes()).await {
            Ok(r) => {
                turn_ids.push(Some(r.turn.id));
                models.insert(format!("{} / {}", r.model.client.as_str(), r.model.model));
                unsupported += r.outcomes.iter().filter(|o| o.kind == OutcomeKind::Unsupported).count();
                refused += r.notes.iter().filter(|n| n.contains("not applied")).count();
                notes.extend(r.notes.iter().map(|n| format!("turn {}: {n}", i + 1)));
            }
            Err(e) => {
                turn_ids.push(None);
                failed.push(json!({"turn": i + 1, "error": e.to_string()}));
            }
        }
    }
    let memories = runtime.engine().all_memories(&ns).await.map_err(|e| bad(&c.file, e.to_string()))?;

    let replaced: BTreeSet<String> =
        c.turns.iter().flat_map(|t| t.supersedes.iter().map(|s| s.trim().to_string())).collect();
    let mut all_facts: Vec<(usize, Fact)> = Vec::new();
    for (i, t) in c.turns.iter().enumerate() {
        for f in &t.facts {
            all_facts.push((i, fact(&c.file, "facts", f)?));
        }
    }
    let standing: Vec<&Fact> = all_facts.iter().map(|(_, f)| f).filter(|f| !replaced.contains(&f.text)).collect();
    let gone: Vec<&Fact> = all_facts.iter().map(|(_, f)| f).filter(|f| replaced.contains(&f.text)).collect();
    // The facts that replace each replaced one (those of the turns that say they replace it).
    let replacers = |old: &Fact| -> Vec<&Fact> {
        all_facts
            .iter()
            .filter(|(i, _)| c.turns[*i].supersedes.iter().any(|s| s.trim() == old.text))
            .map(|(_, f)| f)
            .collect()
    };

    let kept: Vec<&str> = all_facts
        .iter()
        .filter(|(i, f)| {
            turn_ids[*i]
                .is_some_and(|tid| memories.iter().any(|m| m.provenance.turns.contains(&tid) && holds(m, &f.value)))
        })
        .map(|(_, f)| f.text.as_str())
        .collect();
    let lost: Vec<&str> = all_facts.iter().map(|(_, f)| f.text.as_str()).filter(|t| !kept.contains(t)).collect();
    let active = |m: &&Memory| m.status.is_active();
    let wrong: Vec<Value> = memories
        .iter()
        .filter(|m| matches!(&m.status, Status::Tombstoned { reason, .. } if reason.starts_with("superseded")))
        .filter(|m| standing.iter().any(|f| holds(m, &f.value)) && !gone.iter().any(|f| holds(m, &f.value)))
        .map(memory_json)
        .collect();
    let final_missing: Vec<&str> = standing
        .iter()
        .filter(|f| !memories.iter().filter(active).any(|m| holds(m, &f.value)))
        .map(|f| f.text.as_str())
        .collect();
    let stale: Vec<&str> = gone
        .iter()
        .filter(|f| {
            let new = replacers(f);
            memories.iter().filter(active).any(|m| holds(m, &f.value) && !new.iter().any(|n| holds(m, &n.value)))
        })
        .map(|f| f.text.as_str())
        .collect();
    let semantic = memories.iter().filter(|m| m.kind == MemoryKind::Semantic).count();
    let with_claim = memories.iter().filter(|m| m.kind == MemoryKind::Semantic && m.claim.is_some()).count();
    let tombstones: Vec<Value> = memories.iter().filter(|m| !m.status.is_active()).map(memory_json).collect();
    Ok(json!({
        "conversation": c.name,
        "file": c.file.display().to_string(),
        "models": models.into_iter().collect::<Vec<_>>(),
        "turns": c.turns.len(),
        "failed_turns": failed,
        "facts": all_facts.len(),
        "facts_kept": kept.len(),
        "facts_lost": lost,
        "wrong_tombstones": wrong,
        "final_missing": final_missing,
        "stale_active": stale,
        "memories": memories.len(),
        "active": memories.iter().filter(active).count(),
        "semantic": semantic,
        "semantic_with_claim": with_claim,
        "unsupported_not_written": unsupported,
        "model_verdicts_refused": refused,
        "tombstones": tombstones,
        "notes": notes,
        "all_memories": memories.iter().map(memory_json).collect::<Vec<_>>(),
    }))
}

/// The markdown table of the rows of [`run_conversation`].
pub fn markdown(rows: &[Value]) -> String {
    let mut s = String::from(
        "| conversation | model | facts kept | wrong tombstones | final missing | stale active | claims / semantic | unsupported | refused verdicts | failed turns |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let n = |k: &str| r[k].as_u64().unwrap_or(0);
        let len = |k: &str| r[k].as_array().map_or(0, Vec::len);
        s.push_str(&format!(
            "| {} | {} | {}/{} | {} | {} | {} | {}/{} | {} | {} | {} |\n",
            r["conversation"].as_str().unwrap_or("?"),
            r["models"]
                .as_array()
                .map(|m| m.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                .unwrap_or_default(),
            n("facts_kept"),
            n("facts"),
            len("wrong_tombstones"),
            len("final_missing"),
            len("stale_active"),
            n("semantic_with_claim"),
            n("semantic"),
            n("unsupported_not_written"),
            n("model_verdicts_refused"),
            len("failed_turns"),
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mnemo_contract::{ClientKind, MemoryId, Provenance};

    fn mem(content: &str) -> Memory {
        let at = Timestamp(0);
        Memory {
            validity: Default::default(),
            id: MemoryId(1),
            namespace: Namespace::default(),
            kind: MemoryKind::Semantic,
            content: content.into(),
            claim: None,
            entities: vec![],
            importance: 0.5,
            reinforcements: 0,
            sources: vec![],
            provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "m".into() },
            created_at: at,
            last_confirmed_at: at,
            last_accessed_at: None,
            pinned: false,
            embedding: None,
            status: Status::Active,
            rev: 1,
        }
    }

    #[test]
    fn a_memory_holds_a_value_by_its_numbers_and_half_its_words() {
        assert!(holds(&mem("Dose raised to 1000 mg twice daily."), "1000 mg twice a day"));
        assert!(!holds(&mem("Maria takes 500 mg twice a day."), "1000 mg twice a day"));
        assert!(holds(&mem("Maria Lopez is allergic to penicillin."), "penicillin"));
        assert!(!holds(&mem("Maria Lopez is allergic to latex."), "penicillin"));
        assert!(holds(&mem("New number 555-0199."), "555-0199"));
        assert!(!holds(&mem("anything"), "?"), "a value without terms is held by nothing");
    }

    #[test]
    fn a_conversation_file_is_checked() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.toml");
        let write = |s: &str| std::fs::write(&f, s).unwrap();
        write("name = \"c\"\n[[turns]]\nat = \"2026-01-01T00:00:00Z\"\ntext = \"x\"\nfacts = [\"a | b\"]\n");
        assert!(Conversation::load(&f).unwrap_err().to_string().contains("entity | attribute | value"));
        write("name = \"c\"\n[[turns]]\nat = \"2026-01-01T00:00:00Z\"\ntext = \"x\"\nsupersedes = [\"a | b | c\"]\n");
        assert!(Conversation::load(&f).unwrap_err().to_string().contains("no earlier turn"));
        write("name = \"c\"\n[[turns]]\nat = \"2026-01-02T00:00:00Z\"\ntext = \"x\"\n[[turns]]\nat = \"2026-01-01T00:00:00Z\"\ntext = \"y\"\n");
        assert!(Conversation::load(&f).unwrap_err().to_string().contains("before"));
        write("name = \"c\"\n[[turns]]\nat = \"2026-01-01T00:00:00Z\"\ntext = \"x\"\nfacts = [\"a | b | c\"]\n");
        assert_eq!(Conversation::load(&f).unwrap().turns.len(), 1);
    }
}
