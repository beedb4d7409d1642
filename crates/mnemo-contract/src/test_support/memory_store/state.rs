//! What the in-memory store holds, and the reads over it. Every read filters by namespace
//! first: the partition holds in every query.
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasher, Hash, Hasher};

use crate::chain::{ErasedMark, NewEntry};
use crate::erase::ErasureRecord;
use crate::error::{CoreError, Result, StoreErrorKind};
use crate::ids::{IdKind, LOCAL_BITS, LOCAL_MASK};
use crate::model::{Memory, MemoryEvent, MemoryId, Namespace, Turn, TurnId};
use crate::text::norm_name;
use crate::transition;

/// Tags are 1 .. TAG_LIMIT (21 bits), so ids stay below 2^53 as the SQLite store's do.
const TAG_LIMIT: u64 = 1 << 21;

/// Everything the store holds. Cloned for a write (see `MemoryStore::write`): a write that
/// fails leaves the original untouched, which is how `apply` is all or none.
#[derive(Clone, Default)]
pub(super) struct State {
    /// Every memory, tombstones included (nothing is removed), by id.
    pub(super) memories: BTreeMap<MemoryId, Memory>,
    /// Every memory event by seq; an event's seq is the rev it gave its memory.
    pub(super) events: BTreeMap<u64, MemoryEvent>,
    /// Every turn, by id.
    pub(super) turns: BTreeMap<TurnId, Turn>,
    /// Each namespace's id tag (two namespaces never share one).
    pub(super) tags: BTreeMap<Namespace, i64>,
    /// Each namespace's history chain, in seq order (see `crate::chain`).
    pub(super) chains: BTreeMap<String, Vec<NewEntry>>,
    /// The erasure records, by erasure id (store-wide).
    pub(super) erasures: BTreeMap<i64, ErasureRecord>,
    /// What the erasures list for each erased row (see `ErasedMark`), by (kind, row id).
    pub(super) marks: BTreeMap<(crate::chain::EntryKind, i64), ErasedMark>,
    /// The memories an erasure emptied (never erased twice).
    pub(super) erased: BTreeSet<MemoryId>,
}

impl State {
    /// The last seq handed out (store-wide; events are never removed, so never reused): the
    /// store's newest rev.
    pub(super) fn last_seq(&self) -> u64 {
        self.events.keys().next_back().copied().unwrap_or(0)
    }

    /// The next seq (a memory's new rev).
    pub(super) fn next_seq(&self) -> u64 {
        self.last_seq() + 1
    }

    /// The tag of `ns` (its id range), drawn at its first write from a hash keyed by `key` (a
    /// random key of this store), so a tenant cannot tell from its ids how many namespaces
    /// came before it; a tag already taken draws the next candidate.
    fn tag(&mut self, key: &std::collections::hash_map::RandomState, ns: &Namespace) -> Result<i64> {
        if let Some(t) = self.tags.get(ns) {
            return Ok(*t);
        }
        for attempt in 0u32..64 {
            let mut h = key.build_hasher();
            ns.as_str().hash(&mut h);
            attempt.hash(&mut h);
            // 1 ..= TAG_LIMIT - 1: fits an i64.
            let tag = (1 + h.finish() % (TAG_LIMIT - 1)) as i64;
            if !self.tags.values().any(|t| *t == tag) {
                self.tags.insert(ns.clone(), tag);
                return Ok(tag);
            }
        }
        Err(CoreError::store_message(StoreErrorKind::Full, format!("no id range left for namespace {ns}")))
    }

    /// The next id of `kind` in `ns`: its tag above, its local number (1, 2, 3 … counted in the
    /// namespace alone) below, so a namespace's ids do not move with another's writes.
    pub(super) fn next_id(
        &mut self,
        key: &std::collections::hash_map::RandomState,
        ns: &Namespace,
        kind: IdKind,
    ) -> Result<i64> {
        let tag = self.tag(key, ns)?;
        // One more than the namespace's highest id of this kind (nothing is removed, so no
        // number is handed out twice).
        let range = (tag << LOCAL_BITS)..=(tag << LOCAL_BITS | LOCAL_MASK);
        let last = match kind {
            IdKind::Memory => {
                self.memories.range(MemoryId(*range.start())..=MemoryId(*range.end())).next_back().map(|(id, _)| id.0)
            }
            IdKind::Turn => {
                self.turns.range(TurnId(*range.start())..=TurnId(*range.end())).next_back().map(|(id, _)| id.0)
            }
        };
        let n = last.map_or(0, |id| id & LOCAL_MASK) + 1;
        if n > LOCAL_MASK {
            return Err(CoreError::store_message(StoreErrorKind::Full, format!("namespace {ns} has no ids left")));
        }
        Ok(tag << LOCAL_BITS | n)
    }

    /// The memories of `ns` (any status), by id.
    pub(super) fn memories_of<'a>(&'a self, ns: &'a Namespace) -> impl Iterator<Item = &'a Memory> + 'a {
        self.memories.values().filter(move |m| &m.namespace == ns)
    }

    /// The memory `id` of `ns` (any status); a missing or foreign id is NotFound.
    pub(super) fn existing_in(&self, ns: &Namespace, id: MemoryId, what: &str) -> Result<&Memory> {
        match self.memories.get(&id) {
            Some(m) if &m.namespace == ns => Ok(m),
            _ => Err(CoreError::NotFound(format!("{what}: memory {id} not found in namespace {ns}"))),
        }
    }

    /// The active memory `id` of `ns`, as a copy to change (a tombstone is never changed).
    pub(super) fn active_in(&self, ns: &Namespace, id: MemoryId, what: &str) -> Result<Memory> {
        transition::require_active(self.existing_in(ns, id, what)?.clone(), what)
    }

    /// A turn referenced by an op must exist in the batch's namespace.
    pub(super) fn check_turn(&self, ns: &Namespace, turn: Option<TurnId>, what: &str) -> Result<()> {
        match turn {
            None => Ok(()),
            Some(t) if self.turns.get(&t).is_some_and(|x| &x.namespace == ns) => Ok(()),
            Some(t) => Err(CoreError::NotFound(format!("{what}: turn {t} not found in namespace {ns}"))),
        }
    }

    /// Active memories of `ns` naming any of `entities` (compared normalised), by id.
    pub(super) fn active_by_entities(&self, ns: &Namespace, entities: &[String]) -> Vec<Memory> {
        let names: BTreeSet<String> = entities.iter().map(|e| norm_name(e)).filter(|e| !e.is_empty()).collect();
        self.memories_of(ns)
            .filter(|m| m.status.is_active() && m.entities.iter().any(|e| names.contains(&norm_name(e))))
            .cloned()
            .collect()
    }

    /// The events of memory `id`, oldest first.
    pub(super) fn events_of(&self, id: MemoryId) -> impl Iterator<Item = &MemoryEvent> {
        self.events.values().filter(move |e| e.memory == id)
    }

    /// Every namespace that holds anything (turns, memories or chain entries), by name.
    pub(super) fn namespaces(&self) -> BTreeSet<Namespace> {
        let mut out: BTreeSet<Namespace> = self.memories.values().map(|m| m.namespace.clone()).collect();
        out.extend(self.turns.values().map(|t| t.namespace.clone()));
        out
    }
}
