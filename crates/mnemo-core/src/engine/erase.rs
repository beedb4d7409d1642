//! Erasure (see docs/erasure.md): what `forget` only tombstones, `erase` removes for good.
//!
//! The engine resolves a target into an [`ErasePlan`]:
//! - a **memory**: that memory;
//! - a **claim** `entity | attribute`: every version of it, tombstoned ones included (a phone's
//!   earlier numbers are the same person's data);
//! - a **subject** entity: every memory whose claim is about it or that names it among its
//!   entities;
//! - a **turn**: that raw turn, whole (the memories derived from it are listed, not erased:
//!   erase them too if they hold what the turn said).
//!
//! A memory whose content or tombstone reason holds a value of those (at least [`SWEEP_MIN_CHARS`] characters,
//! as a whole word: an episode that quoted the number) holds the erased data, and goes too.
//!
//! The values of the erased memories (a claim's value; a memory without a claim: its content)
//! and, for a subject, the subject's name as written, are cut out of the raw turns — out of
//! the turns the memories came from always, and out of every other turn of the namespace when
//! the value is at least [`SWEEP_MIN_CHARS`] characters long (a short value such as `no` or
//! `blue` would cut unrelated words) — each occurrence replaced by `[erased]`, matched without
//! regard to case and only as a whole word. The store then empties every content column and
//! keeps a content-free record; the index is rebuilt (its files rewritten without the erased
//! documents) and the recall cache emptied.
use serde::{Deserialize, Serialize};

use super::Engine;
use mnemo_contract::erase::{redact, ErasePlan, EraseTarget, ErasureRecord};
use mnemo_contract::error::{CoreError, Result};
use mnemo_contract::model::*;
use mnemo_contract::text::norm_name;

/// A value at least this long is cut out of every turn of the namespace, not only out of the
/// turns its memory came from.
pub const SWEEP_MIN_CHARS: usize = 5;

/// How an erasure is run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EraseOptions {
    /// Only say what would be erased (nothing is written).
    #[serde(default)]
    pub dry_run: bool,
    /// Who asks (the principal), kept in the record.
    #[serde(default)]
    pub by: Option<String>,
}

/// A memory an erasure takes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErasedMemory {
    /// The memory.
    pub id: MemoryId,
    /// Its content before — shown by a dry run only (an erasure's answer repeats nothing it
    /// erased).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Whether it was active (else: already tombstoned, an earlier version).
    pub active: bool,
    /// Why it is taken: `named`, `a version of the claim`, `about the subject`, `names the
    /// subject`, or `holds an erased value`.
    pub why: String,
}

/// What an erasure did (or, for a dry run, would do).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EraseReport {
    /// The target in words.
    pub target: String,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// The memories erased.
    pub memories: Vec<ErasedMemory>,
    /// The turns erased whole.
    pub turns: Vec<TurnId>,
    /// The turns the erased values are cut out of.
    pub redacted: Vec<TurnId>,
    /// Memories derived from an erased turn that are not erased (they may hold what it said:
    /// erase them too if so).
    pub derived: Vec<MemoryId>,
    /// The record kept (None for a dry run).
    pub erasure: Option<ErasureRecord>,
    /// The values cut out of the raw turns (claim values, claimless contents, a subject's
    /// names): in process only, for what else keeps text the engine does not own (the
    /// escalation ledger) — never serialised, never shown.
    #[serde(skip)]
    pub values: Vec<String>,
}

impl EraseReport {
    /// In words, one line per item.
    pub fn render(&self) -> String {
        let verb = if self.dry_run { "would erase" } else { "erased" };
        let mut out = format!("{verb} {}:\n", self.target);
        for m in &self.memories {
            let state = if m.active { "" } else { ", tombstoned" };
            match &m.content {
                Some(c) => out.push_str(&format!("  memory {} ({}{state}): {c}\n", m.id, m.why)),
                None => out.push_str(&format!("  memory {} ({}{state})\n", m.id, m.why)),
            }
        }
        for t in &self.turns {
            out.push_str(&format!("  turn {t} (whole)\n"));
        }
        for t in &self.redacted {
            out.push_str(&format!("  turn {t} (the erased values cut out)\n"));
        }
        if !self.derived.is_empty() {
            let ids: Vec<String> = self.derived.iter().map(|m| m.to_string()).collect();
            out.push_str(&format!(
                "  not erased: memories derived from the turn: {} (erase them too if they hold what it said)\n",
                ids.join(", ")
            ));
        }
        match &self.erasure {
            Some(e) => out.push_str(&format!("erasure {}: {}\n", e.id, e.describe())),
            None => out.push_str("dry run: nothing was erased; erasure cannot be undone\n"),
        }
        out
    }
}

impl Engine {
    /// Erase `target` in `ns` for `reason` (see the module docs); a dry run writes nothing.
    /// Irreversible: backups made before still hold the content (a restore of one re-applies
    /// the erasures, see `restore`).
    pub async fn erase(
        &self,
        ns: &Namespace,
        target: &EraseTarget,
        reason: &str,
        opts: &EraseOptions,
    ) -> Result<EraseReport> {
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(CoreError::InvalidInput("erase needs a reason (it is kept in the erasure record)".into()));
        }
        if opts.dry_run {
            // A preview writes nothing: it takes no write lock, as forget's does not.
            return Ok(self.plan_erase(ns, target, reason, opts).await?.1);
        }
        let _write = self.write_guard(ns).await?;
        let (plan, mut report) = self.plan_erase(ns, target, reason, opts).await?;
        let erased = self.store.erase(ns, self.clock.now(), plan).await;
        // The index's files are rewritten without the erased documents (a sync would only mark
        // them deleted inside segments that keep their bytes), and the recall cache emptied —
        // also when the store failed after its commit (a compaction that did not finish), since
        // the erasure then happened: a rebuild after a failure before it costs time, not data.
        let rebuilt = self.rebuild_index(&|_, _| {}).await;
        let record = erased?;
        rebuilt?;
        for m in &mut report.memories {
            m.content = None;
        }
        report.erasure = Some(record);
        Ok(report)
    }

    /// The plan of an erasure, and its report as a dry run.
    async fn plan_erase(
        &self,
        ns: &Namespace,
        target: &EraseTarget,
        reason: &str,
        opts: &EraseOptions,
    ) -> Result<(ErasePlan, EraseReport)> {
        let erased: std::collections::HashSet<MemoryId> =
            self.store.erasures(ns).await?.into_iter().flat_map(|e| e.memories).collect();
        let mut memories: Vec<(Memory, &'static str)> = Vec::new();
        let mut whole: Vec<TurnId> = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut derived = Vec::new();
        match target {
            EraseTarget::Memory { id } => {
                let m = self.store.get_many(ns, &[*id]).await?.into_iter().next();
                let m = m.ok_or_else(|| CoreError::NotFound(format!("memory {id} in namespace {ns}")))?;
                memories.push((m, "named"));
            }
            EraseTarget::Turn { id } => {
                if self.store.turns_by_ids(ns, &[*id]).await?.is_empty() {
                    return Err(CoreError::NotFound(format!("turn {id} in namespace {ns}")));
                }
                whole.push(*id);
                derived = self
                    .store
                    .all_memories(ns)
                    .await?
                    .into_iter()
                    .filter(|m| !erased.contains(&m.id) && m.provenance.turns.contains(id))
                    .map(|m| m.id)
                    .collect();
            }
            EraseTarget::Claim { entity, attribute } => {
                let (e, a) = (norm_name(entity), norm_name(attribute));
                memories = self
                    .store
                    .all_memories(ns)
                    .await?
                    .into_iter()
                    .filter(|m| {
                        m.claim.as_ref().is_some_and(|c| norm_name(&c.entity) == e && norm_name(&c.attribute) == a)
                    })
                    .map(|m| (m, "a version of the claim"))
                    .collect();
                if memories.is_empty() {
                    return Err(CoreError::NotFound(format!(
                        "no memory of the claim {entity} | {attribute} in namespace {ns}"
                    )));
                }
            }
            EraseTarget::Subject { entity } => {
                let e = norm_name(entity);
                if e.is_empty() {
                    return Err(CoreError::InvalidInput("erase --subject needs an entity name".into()));
                }
                memories = self
                    .store
                    .all_memories(ns)
                    .await?
                    .into_iter()
                    .filter_map(|m| {
                        if m.claim.as_ref().is_some_and(|c| norm_name(&c.entity) == e) {
                            Some((m, "about the subject"))
                        } else if m.entities.iter().any(|x| norm_name(x) == e) {
                            Some((m, "names the subject"))
                        } else {
                            None
                        }
                    })
                    .collect();
                if memories.is_empty() {
                    return Err(CoreError::NotFound(format!("no memory of the subject {entity} in namespace {ns}")));
                }
                names.push(entity.trim().to_string());
                names
                    .extend(memories.iter().filter_map(|(m, _)| m.claim.as_ref().map(|c| c.entity.trim().to_string())));
            }
        }
        memories.retain(|(m, _)| !erased.contains(&m.id));
        if memories.is_empty() && whole.is_empty() {
            return Err(CoreError::InvalidInput(format!("{}: erased already", target.describe())));
        }
        // What to cut out of the turns: per memory its value, and the turns it came from.
        let mut values: Vec<String> = names.clone();
        let mut source_turns: Vec<TurnId> = Vec::new();
        for (m, _) in &memories {
            values.push(match &m.claim {
                Some(c) => c.value.clone(),
                None => m.content.clone(),
            });
        }
        values.retain(|v| !v.trim().is_empty());
        values.sort();
        values.dedup();
        // Short values are cut only from the turns their memories came from (a PIN "4821"
        // elsewhere may be anything); a subject's names the user gave are swept everywhere.
        let long: Vec<String> = values
            .iter()
            .filter(|v| v.trim().chars().count() >= SWEEP_MIN_CHARS || names.contains(v))
            .cloned()
            .collect();
        // Another memory whose content (or tombstone reason: "changed from X to Y") holds an
        // erased value (an episode that quoted the number) holds the erased data: it goes too.
        if !long.is_empty() {
            let taken: std::collections::HashSet<MemoryId> = memories.iter().map(|(m, _)| m.id).collect();
            for m in self.store.all_memories(ns).await? {
                let reason = match &m.status {
                    Status::Tombstoned { reason, .. } => reason.as_str(),
                    Status::Active => "",
                };
                let holds = redact(&m.content, &long).is_some() || redact(reason, &long).is_some();
                if !taken.contains(&m.id) && !erased.contains(&m.id) && holds {
                    memories.push((m, "holds an erased value"));
                }
            }
        }
        for (m, _) in &memories {
            source_turns.extend(m.provenance.turns.iter().copied());
            source_turns.extend(self.store.history(ns, m.id).await?.iter().filter_map(|e| e.turn));
        }
        let mut redact_plan = Vec::new();
        if !values.is_empty() {
            for t in self.store.turns(ns).await? {
                if whole.contains(&t.id) {
                    continue;
                }
                let cut = if source_turns.contains(&t.id) { redact(&t.text, &values) } else { redact(&t.text, &long) };
                if let Some(text) = cut {
                    redact_plan.push((t.id, text));
                }
            }
        }
        let report = EraseReport {
            target: target.describe(),
            dry_run: opts.dry_run,
            memories: memories
                .iter()
                .map(|(m, why)| ErasedMemory {
                    id: m.id,
                    content: Some(m.content.clone()),
                    active: m.status.is_active(),
                    why: why.to_string(),
                })
                .collect(),
            turns: whole.clone(),
            redacted: redact_plan.iter().map(|(t, _)| *t).collect(),
            derived,
            erasure: None,
            values: values.clone(),
        };
        let plan = ErasePlan {
            target: target.kind().to_string(),
            reason: reason.to_string(),
            by: opts.by.clone(),
            memories: memories.iter().map(|(m, _)| m.id).collect(),
            turns: whole,
            redact: redact_plan,
        };
        Ok((plan, report))
    }
}
