//! Filtered recall: what memory held at a past system time T (as-of), and/or only the episodes
//! of a time window. A memory was held at T when it was recorded at or before T and was still
//! active then (tombstoned later, or never); an episode is in the window [since, until) when it
//! was recorded in it (semantic and procedural memories are not windowed: they hold until they
//! end). The index holds only what is active now, unwindowed, so such a recall ranks the
//! memories that pass the filter in a scratch index the caller hands in (an in-memory one),
//! then plans and packs them as recall does, with salience at T. Nothing is touched or cached:
//! the past is read, never written.
//!
//! A memory is packed as it was held at T: active. Its row is otherwise the row as stored now
//! (reinforcements and confirmations after T still count); the pack's notes say which packed
//! memories ended after T, when and why.
use std::collections::HashMap;
use std::sync::Arc;

use super::Engine;
use crate::planner::{decide, PlanCandidate, Quotas};
use mnemo_contract::error::{CoreError, Result};
use mnemo_contract::model::*;
use mnemo_contract::pack::{Pack, PackItem};
use mnemo_contract::time::Timestamp;
use mnemo_contract::Validity;
use mnemo_contract::{Index, SearchMode, SearchQuery};

use super::recall::RecallOptions;

/// What a filtered recall keeps (see the module).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecallFilter {
    /// What memory held at this system time (None: now).
    pub as_of: Option<Timestamp>,
    /// Only episodes recorded at or after this time.
    pub since: Option<Timestamp>,
    /// Only episodes recorded before this time.
    pub until: Option<Timestamp>,
    /// What was true in the world at this time, by the validity intervals memory holds (see
    /// `valid_at`): superseded values included where their interval holds.
    pub valid_at: Option<Timestamp>,
}

impl RecallFilter {
    /// Whether it filters anything (else recall answers as usual).
    pub fn is_set(&self) -> bool {
        self.as_of.is_some() || self.since.is_some() || self.until.is_some() || self.valid_at.is_some()
    }

    /// Whether `m` passes: held at `as_of` (now: active), and an episode within the window.
    /// An erased memory never does: its content is gone, and so is what it held then.
    fn keeps(&self, m: &Memory, world: Option<&HashMap<MemoryId, Validity>>) -> bool {
        if m.content.is_empty() {
            return false;
        }
        let held = match (world, self.valid_at) {
            // At a world time: every memory memory knew of, superseded ones included, whose
            // interval holds then.
            (Some(world), Some(t)) => world.get(&m.id).is_some_and(|v| v.holds_at(t)),
            _ => match self.as_of {
                Some(t) => held_at(m, t),
                None => m.status.is_active(),
            },
        };
        let in_window = m.kind != mnemo_contract::model::MemoryKind::Episodic
            || (self.since.is_none_or(|s| m.created_at >= s) && self.until.is_none_or(|u| m.created_at < u));
        held && in_window
    }
}

/// Whether `m` was held at system time `at`: recorded by then, and not yet tombstoned.
pub fn held_at(m: &Memory, at: Timestamp) -> bool {
    m.created_at <= at
        && match &m.status {
            Status::Active => true,
            Status::Tombstoned { at: ended, .. } => *ended > at,
        }
}

impl Engine {
    /// Recall a pack for `query` in `ns` from what memory held at `at` (see the module),
    /// ranked in `scratch`, an empty index this recall fills and searches. The pack's `as_of`
    /// is `at`; a time before the namespace's first memory, or after the engine's clock, is
    /// said in its notes.
    pub async fn recall_as_of(
        &self,
        ns: &Namespace,
        query: &str,
        opts: &RecallOptions,
        at: Timestamp,
        scratch: &dyn Index,
    ) -> Result<Pack> {
        let filter = RecallFilter { as_of: Some(at), ..RecallFilter::default() };
        self.recall_filtered(ns, query, opts, filter, scratch).await
    }

    /// Recall a pack for `query` in `ns` from the memories `filter` keeps (see the module),
    /// ranked in `scratch`, an empty index this recall fills and searches. The pack's `as_of`
    /// is the filter's; a time before the namespace's first memory, after the engine's clock,
    /// or a window with nothing in it, is said in its notes. A window that ends before it
    /// starts is refused.
    pub async fn recall_filtered(
        &self,
        ns: &Namespace,
        query: &str,
        opts: &RecallOptions,
        filter: RecallFilter,
        scratch: &dyn Index,
    ) -> Result<Pack> {
        if let (Some(s), Some(u)) = (filter.since, filter.until) {
            if u <= s {
                return Err(CoreError::InvalidInput(format!(
                    "the episode window ends ({u}) before it starts ({s}): until must be after since"
                )));
            }
        }
        let now = self.clock.now();
        // A time after now answers what memory holds now (said in the notes): planned and graded
        // at now, not at a future time that would age memories that have not aged.
        let at = filter.as_of.map_or(now, |t| t.min(now));
        let mut notes = Vec::new();
        if filter.as_of.is_some() {
            notes.push(format!("as of {at}: what memory held then (recorded by then, not yet forgotten)"));
        }
        // A window asks for that period: nothing in it is cut for its age, and salience is
        // taken at the window's end (a January episode is as fresh as it was in January).
        let windowed = filter.since.is_some() || filter.until.is_some();
        let salience_at = filter.until.map_or(at, |u| u.min(at));
        let threshold = if windowed { 0.0 } else { self.policy.decay.threshold };
        if windowed {
            let from = filter.since.map_or("the first".to_string(), |t| t.to_string());
            let to = filter.until.map_or("now".to_string(), |t| t.to_string());
            notes.push(format!(
                "episodes recorded from {from} until {to} only (facts and rules are not windowed; nothing is cut for its age)"
            ));
        }
        let (budget, limit, mode) = self.recall_settings(opts, &mut notes)?;
        if let Some(asked) = filter.as_of.filter(|t| *t > now) {
            notes.push(format!(
                "as of {asked}, which is after now ({now}): memory cannot hold what is not yet recorded, so this is what it holds now"
            ));
        }
        let all = self.store.all_memories(ns).await?;
        let first = all.iter().map(|m| m.created_at).min();
        let world = filter.valid_at.map(|_| super::valid_at::world_validity(&all, at));
        if let (Some(t), Some(world)) = (filter.valid_at, &world) {
            notes.extend(valid_at_notes(t, world));
        }
        // Packed as held then (active); what ended later is said of each one packed.
        let mut ended = std::collections::HashMap::new();
        let held: Vec<Memory> = all
            .into_iter()
            .filter(|m| filter.keeps(m, world.as_ref()))
            .map(|mut m| {
                if !m.status.is_active() {
                    ended.insert(m.id, ended_note(&m, filter.as_of.is_some()));
                    m.status = Status::Active;
                }
                m
            })
            .collect();
        match first {
            None => notes.push(format!("namespace {ns} holds no memory at all")),
            Some(f) if at < f => {
                notes.push(format!("as of {at}, before the namespace's first memory ({f}): memory held nothing then"))
            }
            Some(_) if held.is_empty() && filter.valid_at.is_some() => {}
            Some(_) if held.is_empty() && filter.as_of.is_some() => {
                notes.push(format!("as of {at}: every memory recorded by then had already been forgotten"))
            }
            Some(_) if held.is_empty() => notes.push("no memory passes the filter".to_string()),
            Some(_) => {}
        }
        if (filter.since.is_some() || filter.until.is_some())
            && !held.iter().any(|m| m.kind == mnemo_contract::model::MemoryKind::Episodic)
        {
            notes.push("no episode was recorded in that window".to_string());
        }
        let embedding = match mode {
            SearchMode::Lexical => None,
            _ => self.embedder.embed(&[query.to_string()]).await?.into_iter().next(),
        };
        let docs = self.index_docs(&held).await?;
        if !docs.is_empty() {
            scratch.upsert(docs).await?;
        }
        let search = SearchQuery { namespace: ns.clone(), text: query.to_string(), embedding, limit, mode };
        let hits = scratch.search(&search).await?;
        let relevance: std::collections::HashMap<MemoryId, f32> = hits.iter().map(|h| (h.id, h.score)).collect();
        let mut candidates: Vec<PlanCandidate> = held
            .into_iter()
            .filter(|m| relevance.contains_key(&m.id) || m.pinned)
            .map(|m| {
                let tokens = self.tokens.count(&m.content);
                PlanCandidate {
                    relevance: f64::from(relevance.get(&m.id).copied().unwrap_or(0.0)).clamp(0.0, 1.0),
                    salience: mnemo_contract::salience::salience(&m, salience_at, &self.policy),
                    tokens,
                    decays: self.policy.kinds.of(m.kind).decays,
                    memory: Arc::new(m),
                }
            })
            .collect();
        super::neighbours::share(
            &mut candidates,
            self.policy.recall.neighbour_share,
            self.policy.recall.neighbour_turns,
        );
        let shares =
            [self.policy.kinds.semantic.quota, self.policy.kinds.procedural.quota, self.policy.kinds.episodic.quota];
        let planned = decide(candidates, budget, Quotas { shares }, threshold);
        let items =
            planned.packed.into_iter().map(|(memory, score, tokens)| PackItem { memory, score, tokens }).collect();
        let mut pack = Pack {
            items,
            trace: planned.trace,
            budget: planned.budget,
            used: planned.used,
            notes,
            // A world time is graded as memory holds it now (or as of): never re-grounded,
            // a system of record answers for now, not for then.
            as_of: (filter.as_of.is_some() || filter.valid_at.is_some()).then_some(at),
            valid_at: filter.valid_at,
        };
        let later: Vec<String> = pack.items.iter().filter_map(|i| ended.remove(&i.memory.id)).collect();
        pack.notes.extend(later);
        self.attach_evidence(ns, query, search.embedding.as_deref(), &mut pack).await;
        self.attach_previous_values(ns, query, filter.as_of, &mut pack).await?;
        Ok(pack)
    }
}

/// What a valid-at recall says: the world time and how intervals were read, and a time before
/// every stated start or after every stated end.
fn valid_at_notes(t: Timestamp, world: &HashMap<MemoryId, Validity>) -> Vec<String> {
    let mut notes = vec![format!(
        "valid at {t}: what was true in the world then, by the intervals the turns stated (a replaced value \
         ends where its successor begins; a memory that states none is taken as true throughout)"
    )];
    let starts = world.values().filter_map(|v| v.from).min();
    let ends = world.values().filter_map(|v| v.to).max();
    let open_ended = world.values().any(|v| v.to.is_none());
    let holding = world.values().filter(|v| v.holds_at(t)).count();
    let stated_none = world.values().filter(|v| v.holds_at(t) && v.is_unstated()).count();
    match (starts, ends) {
        (Some(s), _) if t < s => notes.push(format!(
            "{t} is before every stated start (the earliest is {s}): memory knows of nothing true then but what states no time"
        )),
        (_, Some(e)) if t >= e && !open_ended => notes.push(format!("{t} is after every stated end (the latest is {e})")),
        _ => {}
    }
    if holding == 0 {
        notes.push(format!("nothing memory holds was true in the world at {t} by the intervals stated"));
    } else if stated_none > 0 {
        notes.push(format!("{stated_none} of the memories true then state no interval (taken as true throughout)"));
    }
    notes
}

/// The note of a memory held at the recall's time that ended later.
/// `as_of`: the recall is of a past system time (else of a world time, and memory no longer
/// holds the value now).
fn ended_note(m: &Memory, as_of: bool) -> String {
    let then = if as_of { "was held then" } else { "was true then, and memory no longer holds it" };
    match &m.status {
        Status::Tombstoned { reason, at, superseded_by: Some(by) } => {
            format!("memory {} {then}; superseded by {by} at {at}: {reason}", m.id)
        }
        Status::Tombstoned { reason, at, superseded_by: None } => {
            format!("memory {} {then}; tombstoned at {at}: {reason}", m.id)
        }
        Status::Active => format!("memory {} is still held", m.id),
    }
}

#[cfg(test)]
pub(super) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mnemo_contract::model::{ClientKind, MemoryKind, Provenance};

    /// A semantic memory recorded at `created` (ms) with `status`: the time tests' fixture.
    pub(in crate::engine) fn memory(created: i64, status: Status) -> Memory {
        Memory {
            validity: Default::default(),
            id: MemoryId(1),
            namespace: Namespace::default(),
            kind: MemoryKind::Semantic,
            content: "x".into(),
            claim: None,
            entities: vec![],
            importance: 0.5,
            reinforcements: 0,
            sources: vec![],
            provenance: Provenance { client: ClientKind::Rules, model: "t".into(), turns: vec![] },
            created_at: Timestamp::from_millis(created),
            last_confirmed_at: Timestamp::from_millis(created),
            last_accessed_at: None,
            pinned: false,
            embedding: None,
            status,
            rev: 1,
        }
    }

    #[test]
    fn held_from_its_recording_until_its_tombstone() {
        let ended = |t| Status::Tombstoned { reason: "r".into(), at: Timestamp::from_millis(t), superseded_by: None };
        let active = memory(100, Status::Active);
        assert!(!held_at(&active, Timestamp::from_millis(99)), "not yet recorded");
        assert!(held_at(&active, Timestamp::from_millis(100)));
        assert!(held_at(&active, Timestamp::from_millis(10_000)));
        let gone = memory(100, ended(200));
        assert!(held_at(&gone, Timestamp::from_millis(199)));
        assert!(!held_at(&gone, Timestamp::from_millis(200)), "tombstoned at that instant: no longer held");
        assert!(!held_at(&gone, Timestamp::from_millis(300)));
    }
}
