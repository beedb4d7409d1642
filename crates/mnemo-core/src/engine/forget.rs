//! Explicit forgetting: resolve exactly the designated memories and tombstone them with the
//! command as the reason. No collateral: a claim command touches only that claim; a free-text
//! command only what the reasoner designates among the candidates it was shown AND the rule
//! below finds the memory to be about. [`Engine::forget_preview`] answers the same resolution
//! without writing anything (no turn, no tombstone): every door's `dry_run`.
//!
//! # The rule of a free-text forget
//!
//! The reasoner designates candidates (the offline model: every content word of the command
//! is among the memory's words); the engine then keeps, among those, only the memories the
//! command is *about*, and says why each matched. With W the command's content words (stop
//! words and the lone "s"/"t" of "Ben's"/"don't" aside, a plural 's' aside):
//! - **claim entity matches**: every word of W is a word of the claim's entity
//!   (`Northwind` → `Northwind Labs | owner | Ben`);
//! - **claim entity and attribute match**: W lies within the claim's entity and attribute
//!   words and touches both (`Ben's phone` → `Ben | phone | …`);
//! - **its own words match: …**: every word of W is among the memory's *own* words — its
//!   content and claim, after removing what it only *mentions*: web addresses (`https://…`,
//!   `www.…`, a host name such as `northwind.example`), e-mail addresses, file paths (`/…`,
//!   `~/…`, `./…`, `C:\…`) and inline code between backticks.
//!
//! A designated memory some word of W reaches only through such a mention is **kept** ("only
//! mentioned inside a web address: https://northwind.example/orders"): a procedure that orders
//! at `https://northwind.example/orders` is not about Northwind. A designated memory none of
//! whose words hold W (a live model reading a paraphrase) is taken, and its reason says the
//! model designated it. A **pinned** memory is never taken by a free-text forget unless
//! `include_pinned` is given: it is listed as "kept: pinned". An exact `entity | attribute`
//! forget takes that claim, pinned or not (the user named it), and says when it was pinned.
use serde::{Deserialize, Serialize};

use super::plan::TurnPlan;
use super::write::{Outcome, OutcomeKind};
use super::Engine;
use mnemo_contract::error::{CoreError, ModelErrorKind, ModelRole, Result};
use mnemo_contract::model::*;
use mnemo_contract::text::{content_words, guess_entities, norm_name};
use mnemo_contract::{ExtractedItem, Extraction, ForgetCommand, ModelInfo, SearchMode, SearchQuery};

/// Candidates shown to the reasoner for a free-text forget.
const FORGET_CANDIDATES: usize = 64;

/// How a forget command is applied.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForgetOptions {
    /// Let a free-text forget take pinned memories too (an exact `entity | attribute` forget
    /// takes a pinned claim without it).
    #[serde(default)]
    pub include_pinned: bool,
}

/// One memory a forget command matched, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForgetMatch {
    /// The memory (a memory said earlier in the same turn has no stored id yet: a virtual,
    /// negative one; a dry run never shows one).
    pub id: Option<MemoryId>,
    /// Its content.
    pub content: String,
    /// Whether it is pinned.
    pub pinned: bool,
    /// Why it matched ("claim entity matches", "claim entity and attribute match", "its own
    /// words match: …"), or for a kept one why it is kept ("pinned", "only mentioned inside a
    /// web address: …").
    pub why: String,
}

/// What a forget command takes and what it leaves, each with its reason: the answer of a
/// dry run, and the resolution a real forget applies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ForgetPreview {
    /// The command as read (`entity | attribute`, or the text).
    pub command: String,
    /// `claim` (an exact `entity | attribute`) or `text` (free text).
    pub by: String,
    /// Whether pinned memories may be taken by a free-text command.
    pub include_pinned: bool,
    /// What the command tombstones (a dry run: would tombstone).
    pub forget: Vec<ForgetMatch>,
    /// What it matched and leaves active, with why (pinned, only mentioned).
    pub kept: Vec<ForgetMatch>,
}

impl ForgetPreview {
    /// The preview as people read it (as `mnemo forget --dry-run` prints it).
    pub fn render(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let _ = writeln!(s, "dry run: [FORGET] {} ({}) — nothing written", self.command, self.by);
        if self.forget.is_empty() {
            let _ = writeln!(s, "  would forget nothing");
        }
        for m in &self.forget {
            let _ = writeln!(s, "  would forget {}: {}", label(m), m.why);
        }
        for m in &self.kept {
            let _ = writeln!(s, "  kept {}: {}", label(m), m.why);
        }
        s
    }
}

fn label(m: &ForgetMatch) -> String {
    let pin = if m.pinned { " [pinned]" } else { "" };
    match m.id {
        Some(id) if id.0 > 0 => format!("{id}{pin} {:?}", m.content),
        _ => format!("(said in this turn){pin} {:?}", m.content),
    }
}

fn check(command: &ForgetCommand) -> Result<()> {
    if command.describe().trim().is_empty()
        || (matches!(command, ForgetCommand::Claim { entity, attribute } if entity.trim().is_empty() || attribute.trim().is_empty()))
    {
        return Err(CoreError::InvalidInput("forget command is empty".into()));
    }
    Ok(())
}

impl Engine {
    /// Forget what `command` designates. The command is recorded as a turn from `source`
    /// (durable first, like any turn) and planned directly: no text goes through the model to
    /// find out what to forget.
    pub async fn forget(&self, ns: &Namespace, source: &str, command: &ForgetCommand) -> Result<super::RememberReport> {
        self.forget_with(ns, source, command, ForgetOptions::default()).await
    }

    /// [`Engine::forget`] with options (`include_pinned`).
    pub async fn forget_with(
        &self,
        ns: &Namespace,
        source: &str,
        command: &ForgetCommand,
        opts: ForgetOptions,
    ) -> Result<super::RememberReport> {
        check(command)?;
        let said = command.describe();
        let source = if source.trim().is_empty() { "user" } else { source.trim() };
        let _write = self.write_guard(ns).await?;
        let turn = self.record(ns, source, &format!("forget: {said}"), None).await?;
        let model = ModelInfo { client: ClientKind::Rules, model: "forget-command".into() };
        let extraction = Extraction { items: vec![ExtractedItem::Forget(command.clone())], model, notes: vec![] };
        self.apply_extraction_with(ns, turn, extraction, opts).await
    }

    /// What [`Engine::forget_with`] would tombstone and keep, and why each matched; writes
    /// nothing (no turn is recorded, nothing is tombstoned).
    pub async fn forget_preview(
        &self,
        ns: &Namespace,
        command: &ForgetCommand,
        opts: ForgetOptions,
    ) -> Result<ForgetPreview> {
        check(command)?;
        self.resolve_forget(ns, command, opts, &TurnPlan::default()).await
    }

    /// Plan a forget command: exactly the designated memories, stored or pending in this turn.
    pub(crate) async fn plan_forget(
        &self,
        ns: &Namespace,
        turn: &Turn,
        cmd: &ForgetCommand,
        opts: ForgetOptions,
        plan: &mut TurnPlan,
        notes: &mut Vec<String>,
    ) -> Result<Outcome> {
        let resolved = self.resolve_forget(ns, cmd, opts, plan).await?;
        let said = &resolved.command;
        for k in &resolved.kept {
            notes.push(format!("[FORGET] {said}: kept {}: {}", label(k), k.why));
        }
        let targets: Vec<MemoryId> = resolved.forget.iter().filter_map(|m| m.id).collect();
        if targets.is_empty() {
            return Ok(Outcome {
                kind: OutcomeKind::NothingToForget,
                memory: None,
                tombstoned: vec![],
                detail: format!("[FORGET] {said}: no active memory matched"),
            });
        }
        for id in &targets {
            plan.tombstone(
                *id,
                format!("forgotten on command: [FORGET] {said} (turn {})", turn.id),
                None,
                Some(turn.id),
            );
        }
        let why: Vec<String> = resolved
            .forget
            .iter()
            .map(|m| format!("{:?}{}: {}", m.content, if m.pinned { " [pinned]" } else { "" }, m.why))
            .collect();
        Ok(Outcome {
            kind: OutcomeKind::Forgotten,
            memory: targets.first().copied(),
            tombstoned: targets,
            detail: format!("[FORGET] {said}: tombstoned {{tombstoned}} ({})", why.join("; ")),
        })
    }

    /// The one resolution of a forget command, for a real forget and a dry run alike.
    async fn resolve_forget(
        &self,
        ns: &Namespace,
        cmd: &ForgetCommand,
        opts: ForgetOptions,
        plan: &TurnPlan,
    ) -> Result<ForgetPreview> {
        let mut preview = ForgetPreview {
            command: cmd.describe(),
            by: match cmd {
                ForgetCommand::Claim { .. } => "claim".into(),
                ForgetCommand::Text(_) => "text".into(),
            },
            include_pinned: opts.include_pinned,
            forget: vec![],
            kept: vec![],
        };
        let matched =
            |m: &Memory, why: String| ForgetMatch { id: Some(m.id), content: m.content.clone(), pinned: m.pinned, why };
        match cmd {
            ForgetCommand::Claim { entity, attribute } => {
                let on_it = |m: &Memory| m.claim.as_ref().is_some_and(|c| c.is_on(entity, attribute));
                let mut found: Vec<Memory> = plan
                    .live(self.store.active_by_entities(ns, &[norm_name(entity)]).await?)
                    .into_iter()
                    .filter(|m| on_it(m))
                    .collect();
                found.extend(plan.pending().filter(|m| on_it(m)).cloned());
                for m in &found {
                    let why = if m.pinned {
                        "claim entity and attribute match (pinned: taken, as the claim was named exactly)".to_string()
                    } else {
                        "claim entity and attribute match".to_string()
                    };
                    preview.forget.push(matched(m, why));
                }
            }
            ForgetCommand::Text(text) => {
                let (candidates, chosen) = self.designated(ns, text, plan).await?;
                let wanted = command_words(text);
                for id in chosen {
                    let Some(m) = candidates.iter().find(|m| m.id == id) else { continue };
                    match about(&wanted, m) {
                        About::Kept(why) => preview.kept.push(matched(m, why)),
                        About::Matches(why) if m.pinned && !opts.include_pinned => preview.kept.push(matched(
                            m,
                            format!(
                                "pinned (it matched: {why}); a free-text forget never takes a pinned memory: \
                                 name it `entity | attribute`, or include pinned memories"
                            ),
                        )),
                        About::Matches(why) if m.pinned => preview
                            .forget
                            .push(matched(m, format!("{why} (pinned: taken, as pinned memories were included)"))),
                        About::Matches(why) => preview.forget.push(matched(m, why)),
                        About::Model => preview.forget.push(matched(
                            m,
                            format!(
                                "the model ({} / {}) designated it: none of its own words is a word of the command",
                                self.reasoner.model_info().client.as_str(),
                                self.reasoner.model_info().model
                            ),
                        )),
                    }
                }
            }
        }
        // Pending memories of this turn carry virtual ids until the batch is applied: the plan
        // tombstones them by those, and an answer names them by their content.
        Ok(preview)
    }

    /// The candidates of a free-text forget and the ones the reasoner designates among them.
    async fn designated(&self, ns: &Namespace, text: &str, plan: &TurnPlan) -> Result<(Vec<Memory>, Vec<MemoryId>)> {
        let embedding = self.embedder.embed(&[text.to_string()]).await?.into_iter().next();
        let hits = self
            .index
            .search(&SearchQuery {
                namespace: ns.clone(),
                text: text.to_string(),
                embedding,
                limit: FORGET_CANDIDATES,
                mode: SearchMode::Hybrid,
            })
            .await?;
        let ids: Vec<MemoryId> = hits.iter().map(|h| h.id).collect();
        let mut candidates: Vec<Memory> = plan.live(self.store.get_many(ns, &ids).await?);
        let entities: Vec<String> = guess_entities(text).iter().map(|e| norm_name(e)).collect();
        if !entities.is_empty() {
            for m in plan.live(self.store.active_by_entities(ns, &entities).await?) {
                if !candidates.iter().any(|c| c.id == m.id) {
                    candidates.push(m);
                }
            }
        }
        candidates.extend(plan.pending().cloned());
        if candidates.is_empty() {
            return Ok((candidates, vec![]));
        }
        let chosen = self.reasoner.resolve_forget(text, &candidates).await?;
        if let Some(bad) = chosen.iter().find(|id| !candidates.iter().any(|m| m.id == **id)) {
            return Err(CoreError::model_message(
                ModelRole::Reasoner,
                ModelErrorKind::BadAnswer,
                format!("forget resolution named memory {bad}, which was not among the candidates"),
            ));
        }
        let mut chosen = chosen;
        chosen.sort();
        chosen.dedup();
        Ok((candidates, chosen))
    }
}

/// What a free-text command is to a memory the reasoner designated.
#[derive(Debug, PartialEq)]
enum About {
    /// It is about it: the reason.
    Matches(String),
    /// A word of the command reaches it only through a mention: why it is kept.
    Kept(String),
    /// None of its own words is a word of the command (a model's reading of a paraphrase).
    Model,
}

/// The content words of a free-text command: stop words and the lone "s"/"t" of an apostrophe
/// ("Ben's", "don't") aside.
fn command_words(text: &str) -> Vec<String> {
    let mut w = content_words(text);
    w.retain(|w| w != "s" && w != "t");
    w.dedup();
    w
}

/// Whether `w` matches `word`, a plural 's' aside.
fn plural_eq(word: &str, w: &str) -> bool {
    word == w
        || word.strip_suffix('s').is_some_and(|stem| stem == w)
        || w.strip_suffix('s').is_some_and(|stem| stem == word)
}

fn within(wanted: &[String], have: &[String]) -> bool {
    !wanted.is_empty() && wanted.iter().all(|w| have.iter().any(|h| plural_eq(h, w)))
}

fn touches(wanted: &[String], have: &[String]) -> bool {
    wanted.iter().any(|w| have.iter().any(|h| plural_eq(h, w)))
}

/// Whether `wanted` (the command's words) makes the memory one the command is about: the
/// module's rule.
fn about(wanted: &[String], m: &Memory) -> About {
    let mut own = String::new();
    let mut mentions: Vec<Mention> = Vec::new();
    let mut take = |s: &str| {
        let (o, mut ms) = split_mentions(s);
        own.push_str(&o);
        own.push(' ');
        mentions.append(&mut ms);
    };
    take(&m.content);
    if let Some(c) = &m.claim {
        let entity = content_words(&c.entity);
        let attribute = content_words(&c.attribute);
        if within(wanted, &entity) {
            return About::Matches("claim entity matches".into());
        }
        let both: Vec<String> = entity.iter().chain(&attribute).cloned().collect();
        if within(wanted, &both) && touches(wanted, &entity) && touches(wanted, &attribute) {
            return About::Matches("claim entity and attribute match".into());
        }
        take(&c.entity);
        take(&c.attribute);
        take(&c.value);
    }
    let own_words = content_words(&own);
    if within(wanted, &own_words) {
        return About::Matches(format!("its own words match: {}", wanted.join(", ")));
    }
    // A word of the command the memory holds only inside a mention: it is not about it.
    for w in wanted.iter().filter(|w| !own_words.iter().any(|h| plural_eq(h, w))) {
        if let Some(mention) = mentions.iter().find(|x| content_words(&x.text).iter().any(|h| plural_eq(h, w))) {
            return About::Kept(format!("only mentioned inside {}: {}", mention.kind, mention.text));
        }
    }
    if touches(wanted, &own_words) {
        let held: Vec<&str> =
            wanted.iter().filter(|w| own_words.iter().any(|h| plural_eq(h, w))).map(String::as_str).collect();
        return About::Matches(format!("its own words match: {} (the rest by the model's reading)", held.join(", ")));
    }
    About::Model
}

/// Something a text only mentions: a web address, an e-mail address, a file path, code.
#[derive(Clone, Debug, PartialEq)]
struct Mention {
    /// "a web address", "an e-mail address", "a file path", "code".
    kind: &'static str,
    /// As written.
    text: String,
}

/// A text's own words, and what it only mentions (see the module's rule). Inline code between
/// backticks goes first (it may hold spaces), then each white-space-separated token is looked
/// at with its surrounding punctuation trimmed.
fn split_mentions(text: &str) -> (String, Vec<Mention>) {
    let mut mentions = Vec::new();
    let mut rest = String::new();
    let segments: Vec<&str> = text.split('`').collect();
    for (i, seg) in segments.iter().enumerate() {
        // An odd segment is inside backticks when a backtick closes it (a segment follows).
        if i % 2 == 1 && i + 1 < segments.len() {
            if !seg.trim().is_empty() {
                mentions.push(Mention { kind: "code", text: format!("`{seg}`") });
            }
            rest.push(' ');
        } else {
            if i > 0 && i % 2 == 1 {
                rest.push('`');
            }
            rest.push_str(seg);
        }
    }
    let mut own = Vec::new();
    for tok in rest.split_whitespace() {
        let t =
            tok.trim_matches(|c: char| matches!(c, ',' | ';' | ':' | '(' | ')' | '<' | '>' | '"' | '\'' | '[' | ']'));
        let t = t.trim_end_matches(['.', '!', '?']);
        match mention_kind(t) {
            Some(kind) => mentions.push(Mention { kind, text: t.to_string() }),
            None => own.push(tok),
        }
    }
    (own.join(" "), mentions)
}

/// What kind of mention a token is, if it is one.
fn mention_kind(t: &str) -> Option<&'static str> {
    if t.is_empty() {
        return None;
    }
    let lower = t.to_ascii_lowercase();
    if lower.contains("://") || lower.starts_with("www.") || lower.starts_with("mailto:") {
        return Some(if lower.starts_with("mailto:") { "an e-mail address" } else { "a web address" });
    }
    if let Some((user, host)) = t.split_once('@') {
        if !user.is_empty() && is_host(host) {
            return Some("an e-mail address");
        }
    }
    if t.starts_with('/') && t.len() > 1
        || t.starts_with("~/")
        || t.starts_with("./")
        || t.starts_with("../")
        || t.contains('\\')
    {
        return Some("a file path");
    }
    let host = t.split('/').next().unwrap_or(t);
    if is_host(host) {
        return Some("a web address");
    }
    None
}

/// A host name: two or more dot-separated labels of letters, digits and '-', the last all
/// letters and at least two long (`northwind.example`, `erp.acme.com`; not `3.5`, `e.g`).
fn is_host(s: &str) -> bool {
    let labels: Vec<&str> = s.split('.').collect();
    labels.len() >= 2
        && labels.iter().all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        && labels.last().is_some_and(|l| l.len() >= 2 && l.chars().all(|c| c.is_ascii_alphabetic()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(&'static str, String)> {
        split_mentions(text).1.into_iter().map(|m| (m.kind, m.text)).collect()
    }

    #[test]
    fn mentions_are_told_apart_from_own_words() {
        let (own, m) = split_mentions("[PROC] Order parts at https://northwind.example/orders every Monday.");
        assert_eq!(own, "[PROC] Order parts at every Monday.");
        assert_eq!(m, vec![Mention { kind: "a web address", text: "https://northwind.example/orders".into() }]);
        assert_eq!(
            kinds("mail ben@northwind.example today"),
            vec![("an e-mail address", "ben@northwind.example".into())]
        );
        assert_eq!(
            kinds("see northwind.example/orders, then"),
            vec![("a web address", "northwind.example/orders".into())]
        );
        assert_eq!(
            kinds("the file /srv/northwind/orders.csv"),
            vec![("a file path", "/srv/northwind/orders.csv".into())]
        );
        assert_eq!(kinds("run `northwind sync` nightly"), vec![("code", "`northwind sync`".into())]);
        // Not mentions: codes and names that are what a memory is about, numbers, abbreviations.
        for plain in ["S-208 takes 3.5 days, e.g. in May.", "Northwind Labs | lead time | 21 days", "a/b testing"] {
            assert!(kinds(plain).is_empty(), "{plain}: {:?}", kinds(plain));
        }
        // An unclosed backtick is not code.
        assert!(kinds("it's `odd").is_empty());
    }
}
