//! What recall packs, kept in the engine so that a recall does not read its candidates row by
//! row from the store: each active memory the engine has seen (as the store holds it, vector
//! included: a pack carries it, `recall --json` shows its model and width) with its token
//! count, up to [`CAPACITY`]; each namespace's pinned memories; and, for many more memories
//! ([`CARD_CAPACITY`]), a [`Card`]: what the planner reads (kind, tokens, salience inputs,
//! pin, status, first turn) in 40 bytes. A recall plans with cards and reads from the store
//! only the full rows of what it packs that are not kept (at 1M memories, 36 of a recall's 64
//! candidates are packed: the rest never cost a read).
//!
//! Correctness rests on one number, `seen`: every store change up to that revision has been
//! applied here. The engine's index sync hands every change it replays to [`RecallCache::apply`]
//! (a row that is no longer active is dropped, so a superseded or forgotten memory is never
//! served), and a recall first brings `seen` up to the store's newest revision (a gap — another
//! process wrote and an index shared with it is ahead — empties the cache instead). A row read
//! from the store on a miss is kept only if no change was applied meanwhile (`epoch`), so a
//! read that raced with a write can never put back a row the write replaced. A recall's own
//! `touch` updates the access time here; one done by another process is not seen (it changes no
//! revision, and nothing recall ranks by).
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::planner::Plannable;
use mnemo_contract::decay_due::DecayInputs;
use mnemo_contract::model::{Memory, MemoryId, MemoryKind, Namespace, TurnId};
use mnemo_contract::time::Timestamp;

/// Memories kept at most; past it the one kept longest is dropped for each new one (a recall
/// reads its misses from the store and keeps them). A short memory with a 256-dimension vector
/// takes ~1.5 KB.
pub(crate) const CAPACITY: usize = 200_000;

/// Cards kept at most; past it they are all dropped at once (they hold no heap, so that is one
/// free, not a stall) and refilled from the rows recalls read. A card and its key take 49
/// bytes of the hash table, which doubles past 7/8 full: 1M cards take 2^21 slots (103 MB),
/// and this many at most 2^22 (205 MB; one more card would double it again).
pub(crate) const CARD_CAPACITY: usize = 3_500_000;

/// What the planner reads of a memory (see the module), without its id (the key it is kept
/// under) or namespace (an index into the cache's list of them): no heap, 40 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Card {
    last_confirmed_at: Timestamp,
    first_turn: i64,
    importance: f32,
    reinforcements: u32,
    tokens: u32,
    space: u32,
    sources: u16,
    kind: MemoryKind,
    pinned: bool,
    active: bool,
    has_turn: bool,
}

impl Card {
    fn of(m: &Memory, tokens: usize, space: u32) -> Self {
        let first = m.provenance.turns.first();
        Card {
            last_confirmed_at: m.last_confirmed_at,
            first_turn: first.map_or(0, |t| t.0),
            importance: m.importance,
            reinforcements: m.reinforcements,
            tokens: u32::try_from(tokens).unwrap_or(u32::MAX),
            space,
            sources: u16::try_from(m.sources.len()).unwrap_or(u16::MAX),
            kind: m.kind,
            pinned: m.pinned,
            active: m.status.is_active(),
            has_turn: first.is_some(),
        }
    }
}

/// A candidate as recall plans it: a memory's id and card.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Candidate {
    pub(crate) id: MemoryId,
    card: Card,
}

impl Candidate {
    /// Of a memory whose row recall holds (a miss read from the store, a pinned memory).
    pub(crate) fn of(p: &Packable, count: impl FnOnce(&str) -> usize) -> Self {
        Candidate { id: p.memory.id, card: Card::of(&p.memory, p.tokens(count), 0) }
    }

    /// Its token count.
    pub(crate) fn tokens(&self) -> usize {
        self.card.tokens as usize
    }

    /// What its salience is computed from.
    pub(crate) fn salience(&self) -> DecayInputs {
        DecayInputs {
            kind: self.card.kind,
            pinned: self.card.pinned,
            importance: self.card.importance,
            reinforcements: self.card.reinforcements,
            sources: usize::from(self.card.sources),
            last_confirmed_at: self.card.last_confirmed_at,
        }
    }
}

impl Plannable for Candidate {
    fn id(&self) -> MemoryId {
        self.id
    }
    fn kind(&self) -> MemoryKind {
        self.card.kind
    }
    fn pinned(&self) -> bool {
        self.card.pinned
    }
    fn is_active(&self) -> bool {
        self.card.active
    }
    fn last_confirmed_at(&self) -> Timestamp {
        self.card.last_confirmed_at
    }
    fn first_turn(&self) -> Option<TurnId> {
        self.card.has_turn.then_some(TurnId(self.card.first_turn))
    }
}

/// A memory as recall packs it, with its token count computed once, when first packed.
#[derive(Debug)]
pub(crate) struct Packable {
    /// Shared with the packs that hold it (a recall copies no memory).
    pub(crate) memory: Arc<Memory>,
    tokens: OnceLock<usize>,
}

impl Packable {
    fn of(memory: Memory) -> Arc<Self> {
        Arc::new(Packable { memory: Arc::new(memory), tokens: OnceLock::new() })
    }

    /// Its token count by `count` (the engine's one counter), computed at most once.
    pub(crate) fn tokens(&self, count: impl FnOnce(&str) -> usize) -> usize {
        *self.tokens.get_or_init(|| count(&self.memory.content))
    }
}

struct Inner {
    /// Memories kept at most (0: the cache is off, every recall reads the store).
    capacity: usize,
    /// Every store change up to this revision has been applied.
    seen: u64,
    /// Bumped by every change applied and every clear: a miss read before it moved is stale.
    epoch: u64,
    rows: HashMap<MemoryId, Arc<Packable>>,
    /// The ids put in `rows`, oldest first: the next to drop when it is full. It may name ids
    /// dropped since (skipped when reached) or twice (dropped and put again); it is rebuilt
    /// from `rows` when it grows past twice the capacity.
    order: VecDeque<MemoryId>,
    pinned: HashMap<Namespace, Vec<Arc<Packable>>>,
    /// Cards kept at most (0: none).
    card_capacity: usize,
    /// The cards of active memories (possibly more than `rows` holds).
    cards: HashMap<MemoryId, Card>,
    /// The index cards name each namespace by (`Card::space`).
    space_of: HashMap<Namespace, u32>,
}

impl Inner {
    fn clear(&mut self) {
        self.epoch += 1;
        self.rows.clear();
        self.order.clear();
        self.pinned.clear();
        self.clear_cards();
    }

    fn clear_cards(&mut self) {
        self.cards = HashMap::new();
        self.space_of.clear();
    }

    /// Keep the card of an active memory (`tokens` its token count).
    fn put_card(&mut self, m: &Memory, tokens: usize) {
        if self.card_capacity == 0 {
            return;
        }
        if self.cards.len() >= self.card_capacity && !self.cards.contains_key(&m.id) {
            self.clear_cards();
        }
        let space = match self.space_of.get(&m.namespace) {
            Some(s) => *s,
            None => {
                // Past u32 namespaces (never in practice) start over rather than share an index.
                let s = match u32::try_from(self.space_of.len()) {
                    Ok(s) => s,
                    Err(_) => {
                        self.clear_cards();
                        0
                    }
                };
                self.space_of.insert(m.namespace.clone(), s);
                s
            }
        };
        self.cards.insert(m.id, Card::of(m, tokens, space));
    }

    fn put(&mut self, p: Arc<Packable>) {
        if self.capacity == 0 {
            return;
        }
        let id = p.memory.id;
        if self.rows.insert(id, p).is_some() {
            return;
        }
        self.order.push_back(id);
        // One row dropped per row added, not a share of the cache at once: dropping 100k rows
        // in one go stalled the write that filled it for half a second at 1M memories.
        // Which row goes does not matter for correctness: a miss is read from the store.
        while self.rows.len() > self.capacity {
            let Some(oldest) = self.order.pop_front() else { break };
            if oldest != id {
                self.rows.remove(&oldest);
            }
        }
        if self.order.len() > 2 * self.capacity {
            let rows = &self.rows;
            let mut seen = std::collections::HashSet::with_capacity(rows.len());
            self.order.retain(|id| rows.contains_key(id) && seen.insert(*id));
        }
    }

    fn remove(&mut self, id: MemoryId) {
        // Its place in `order` is left, skipped when reached.
        self.rows.remove(&id);
        self.cards.remove(&id);
    }
}

/// The recall cache (see the module).
pub(crate) struct RecallCache {
    inner: Mutex<Inner>,
    /// Whether cards are kept (so `apply` counts tokens).
    keeps_cards: bool,
}

impl Default for RecallCache {
    fn default() -> Self {
        RecallCache::with_capacity(CAPACITY)
    }
}

/// What the cache holds of a request: what was found (in request order) and the ids to read
/// from the store, with the epoch to hand back with what was read.
pub(crate) struct Lookup<T = Arc<Packable>> {
    pub(crate) found: Vec<T>,
    pub(crate) missing: Vec<MemoryId>,
    pub(crate) epoch: u64,
}

impl RecallCache {
    /// A cache of at most `capacity` memories (0: off) and [`CARD_CAPACITY`] cards (none when off).
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        let card_capacity = if capacity == 0 { 0 } else { CARD_CAPACITY.max(capacity) };
        RecallCache::with_capacities(capacity, card_capacity)
    }

    /// A cache of at most `capacity` memories and `card_capacity` cards.
    pub(crate) fn with_capacities(capacity: usize, card_capacity: usize) -> Self {
        let inner = Inner {
            capacity,
            seen: 0,
            epoch: 0,
            rows: HashMap::new(),
            order: VecDeque::new(),
            pinned: HashMap::new(),
            card_capacity,
            cards: HashMap::new(),
            space_of: HashMap::new(),
        };
        RecallCache { inner: Mutex::new(inner), keeps_cards: card_capacity > 0 }
    }

    /// The lock; a poisoned one (a panic while held) is recovered by emptying the cache.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => {
                let mut g = poisoned.into_inner();
                g.clear();
                g
            }
        }
    }

    /// The revision up to which every change has been applied.
    #[cfg(test)]
    pub(crate) fn seen(&self) -> u64 {
        self.lock().seen
    }

    /// Apply the rows the store changed above `from` (its current rows, as the index sync read
    /// them), through revision `to`: active ones are kept (their tokens counted by `count`),
    /// the others dropped. A gap (changes between `seen` and `from` this cache never saw)
    /// empties it first.
    pub(crate) fn apply(&self, from: u64, to: u64, rows: &[Memory], count: &dyn Fn(&str) -> usize) {
        // Counted before the lock is taken: a recall waits for it.
        let counts = |m: &Memory| self.keeps_cards && m.status.is_active();
        let tokens: Vec<usize> = rows.iter().map(|m| if counts(m) { count(&m.content) } else { 0 }).collect();
        let mut g = self.lock();
        if from > g.seen {
            g.clear();
        }
        g.epoch += 1;
        for (m, tokens) in rows.iter().zip(tokens) {
            g.pinned.remove(&m.namespace);
            if m.status.is_active() {
                g.put(Packable::of(m.clone()));
                g.put_card(m, tokens);
            } else {
                g.remove(m.id);
            }
        }
        g.seen = g.seen.max(to);
    }

    /// Make sure every change up to `newest` is accounted for: when changes were made that
    /// this cache never saw, it is emptied (and has then seen everything up to `newest`).
    pub(crate) fn catch_up(&self, newest: u64) {
        let mut g = self.lock();
        if g.seen < newest {
            g.clear();
            g.seen = newest;
        }
    }

    /// Empty it (the store or the index was replaced or rebuilt).
    pub(crate) fn reset(&self) {
        let mut g = self.lock();
        g.clear();
        g.seen = 0;
    }

    /// The memories of `ns` among `ids` that are cached, and the rest.
    pub(crate) fn lookup(&self, ns: &Namespace, ids: &[MemoryId]) -> Lookup {
        let g = self.lock();
        let mut found = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        for id in ids {
            match g.rows.get(id) {
                Some(p) if &p.memory.namespace == ns => found.push(p.clone()),
                _ => missing.push(*id),
            }
        }
        Lookup { found, missing, epoch: g.epoch }
    }

    /// The cards of `ns`'s memories among `ids` that are kept, and the rest.
    pub(crate) fn lookup_cards(&self, ns: &Namespace, ids: &[MemoryId]) -> Lookup<Candidate> {
        let g = self.lock();
        let mut found = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        let space = g.space_of.get(ns).copied();
        for id in ids {
            match g.cards.get(id) {
                Some(card) if Some(card.space) == space => found.push(Candidate { id: *id, card: *card }),
                _ => missing.push(*id),
            }
        }
        Lookup { found, missing, epoch: g.epoch }
    }

    /// Keep memories read from the store after `lookup` (or `lookup_cards`) returned `epoch`,
    /// unless a change was applied since; returns them as packable either way, with their
    /// cards (tokens counted by `count`).
    pub(crate) fn fill(
        &self,
        epoch: u64,
        read: Vec<Memory>,
        count: &dyn Fn(&str) -> usize,
    ) -> Vec<(Arc<Packable>, Candidate)> {
        let read: Vec<(Arc<Packable>, Candidate)> = read
            .into_iter()
            .map(|m| {
                let p = Packable::of(m);
                let c = Candidate::of(&p, count);
                (p, c)
            })
            .collect();
        let mut g = self.lock();
        if g.epoch == epoch {
            for (p, c) in &read {
                if p.memory.status.is_active() {
                    g.put(p.clone());
                    g.put_card(&p.memory, c.tokens());
                }
            }
        }
        read
    }

    /// The cached pinned memories of `ns`, or the epoch to hand back with a store read.
    pub(crate) fn pinned(&self, ns: &Namespace) -> Result<Vec<Arc<Packable>>, u64> {
        let g = self.lock();
        g.pinned.get(ns).cloned().ok_or(g.epoch)
    }

    /// Keep `ns`'s pinned memories read after `pinned` returned `epoch`, unless a change was
    /// applied since; returns them as packable either way.
    pub(crate) fn fill_pinned(&self, ns: &Namespace, epoch: u64, read: Vec<Memory>) -> Vec<Arc<Packable>> {
        let read: Vec<Arc<Packable>> = read.into_iter().map(Packable::of).collect();
        let mut g = self.lock();
        if g.epoch == epoch && g.capacity > 0 {
            g.pinned.insert(ns.clone(), read.clone());
        }
        read
    }

    /// Record a recall's access time of `ids` of `ns` (written to the store later, see `access`).
    pub(crate) fn touched(&self, ns: &Namespace, ids: &[MemoryId], at: Timestamp) {
        let mut g = self.lock();
        for id in ids {
            let Some(p) = g.rows.get(id) else { continue };
            if &p.memory.namespace != ns {
                continue;
            }
            let mut memory = p.memory.clone();
            let m = Arc::make_mut(&mut memory);
            m.last_accessed_at = m.last_accessed_at.max(Some(at));
            let tokens = p.tokens.clone();
            g.rows.insert(*id, Arc::new(Packable { memory, tokens }));
        }
        if let Some(list) = g.pinned.get_mut(ns) {
            for p in list.iter_mut().filter(|p| ids.contains(&p.memory.id)) {
                let mut memory = p.memory.clone();
                let m = Arc::make_mut(&mut memory);
                m.last_accessed_at = m.last_accessed_at.max(Some(at));
                *p = Arc::new(Packable { memory, tokens: p.tokens.clone() });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mnemo_contract::model::{ClientKind, Embedding, MemoryKind, Provenance, Status};

    fn memory(id: i64, rev: u64, content: &str) -> Memory {
        Memory {
            validity: Default::default(),
            id: MemoryId(id),
            namespace: Namespace::default(),
            kind: MemoryKind::Semantic,
            content: content.into(),
            claim: None,
            entities: vec![],
            importance: 0.5,
            reinforcements: 0,
            sources: vec!["user".into()],
            provenance: Provenance { turns: vec![], client: ClientKind::Fake, model: "f".into() },
            created_at: Timestamp(0),
            last_confirmed_at: Timestamp(0),
            last_accessed_at: None,
            pinned: false,
            embedding: Some(Embedding { model: "m".into(), vector: vec![1.0, 0.0] }),
            status: Status::Active,
            rev,
        }
    }

    fn count(text: &str) -> usize {
        text.len()
    }

    fn card_ids(c: &RecallCache, ns: &Namespace, ids: &[i64]) -> Vec<i64> {
        let ids: Vec<MemoryId> = ids.iter().map(|i| MemoryId(*i)).collect();
        c.lookup_cards(ns, &ids).found.iter().map(|c| c.id.0).collect()
    }

    fn forgotten(mut m: Memory, rev: u64) -> Memory {
        m.status = Status::Tombstoned { reason: "test".into(), at: Timestamp(1), superseded_by: None };
        m.rev = rev;
        m
    }

    fn contents(c: &RecallCache, ids: &[i64]) -> Vec<String> {
        let ids: Vec<MemoryId> = ids.iter().map(|i| MemoryId(*i)).collect();
        c.lookup(&Namespace::default(), &ids).found.iter().map(|p| p.memory.content.clone()).collect()
    }

    #[test]
    fn applied_changes_replace_and_drop_rows() {
        let c = RecallCache::default();
        c.apply(0, 2, &[memory(1, 1, "a"), memory(2, 2, "b")], &count);
        assert_eq!(contents(&c, &[1, 2]), vec!["a", "b"]);
        let found = c.lookup(&Namespace::default(), &[MemoryId(1)]).found;
        assert_eq!(*found[0].memory, memory(1, 1, "a"), "kept as the store holds it");
        c.apply(2, 4, &[memory(1, 3, "a2"), forgotten(memory(2, 2, "b"), 4)], &count);
        assert_eq!(contents(&c, &[1, 2]), vec!["a2"], "the new row, and the forgotten one gone");
        assert_eq!(c.seen(), 4);
    }

    #[test]
    fn a_read_that_raced_with_a_change_is_not_kept() {
        let c = RecallCache::default();
        let miss = c.lookup(&Namespace::default(), &[MemoryId(1)]);
        assert_eq!(miss.missing, vec![MemoryId(1)]);
        // The store is read (old row)... a write lands and is applied... then the read returns.
        c.apply(0, 2, &[forgotten(memory(1, 1, "old"), 2)], &count);
        let served = c.fill(miss.epoch, vec![memory(1, 1, "old")], &count);
        assert_eq!(served.len(), 1, "this recall uses what it read");
        assert!(contents(&c, &[1]).is_empty(), "but the cache does not keep it");
        // Without a change in between, a read is kept.
        let miss = c.lookup(&Namespace::default(), &[MemoryId(3)]);
        c.fill(miss.epoch, vec![memory(3, 3, "c")], &count);
        assert_eq!(contents(&c, &[3]), vec!["c"]);
    }

    #[test]
    fn a_gap_empties_the_cache() {
        let c = RecallCache::default();
        c.apply(0, 2, &[memory(1, 1, "a"), memory(2, 2, "b")], &count);
        // Changes 3..=5 were made elsewhere and never applied here.
        c.catch_up(5);
        assert!(contents(&c, &[1, 2]).is_empty());
        assert_eq!(c.seen(), 5);
        c.apply(2, 2, &[], &count);
        c.apply(7, 8, &[memory(3, 8, "c")], &count);
        assert_eq!(contents(&c, &[3]), vec!["c"], "a batch after a gap starts a fresh cache");
        assert_eq!(c.seen(), 8);
    }

    #[test]
    fn pinned_lists_are_dropped_by_any_change_in_their_namespace() {
        let c = RecallCache::default();
        let ns = Namespace::default();
        let epoch = c.pinned(&ns).unwrap_err();
        c.fill_pinned(&ns, epoch, vec![memory(1, 1, "p")]);
        assert_eq!(c.pinned(&ns).unwrap().len(), 1);
        c.apply(1, 2, &[forgotten(memory(1, 1, "p"), 2)], &count);
        assert!(c.pinned(&ns).is_err(), "read again after the change");
    }

    #[test]
    fn a_cache_of_capacity_zero_keeps_nothing() {
        let c = RecallCache::with_capacity(0);
        c.apply(0, 1, &[memory(1, 1, "a")], &count);
        assert!(contents(&c, &[1]).is_empty());
        let epoch = c.pinned(&Namespace::default()).unwrap_err();
        c.fill_pinned(&Namespace::default(), epoch, vec![memory(2, 1, "p")]);
        assert!(c.pinned(&Namespace::default()).is_err());
    }

    #[test]
    fn a_full_cache_drops_its_oldest_row_for_each_new_one() {
        let c = RecallCache::with_capacity(3);
        let rows: Vec<Memory> = (1..=5).map(|i| memory(i, i as u64, &format!("m{i}"))).collect();
        c.apply(0, 5, &rows, &count);
        assert_eq!(contents(&c, &[1, 2, 3, 4, 5]), vec!["m3", "m4", "m5"], "the newest three");
        // A replaced row keeps its place; a forgotten one frees its slot.
        c.apply(5, 7, &[memory(3, 6, "m3b"), forgotten(memory(4, 4, "m4"), 7)], &count);
        c.apply(7, 8, &[memory(6, 8, "m6")], &count);
        assert_eq!(contents(&c, &[3, 4, 5, 6]), vec!["m3b", "m5", "m6"]);
        c.apply(8, 9, &[memory(7, 9, "m7")], &count);
        assert_eq!(contents(&c, &[3, 5, 6, 7]), vec!["m5", "m6", "m7"], "then the oldest goes");
    }

    #[test]
    fn the_drop_order_stays_bounded_when_rows_come_and_go() {
        let c = RecallCache::with_capacity(4);
        let mut rev = 0;
        for round in 0..100 {
            rev += 2;
            c.apply(
                rev - 2,
                rev,
                &[memory(1, rev - 1, &format!("r{round}")), forgotten(memory(2, 1, "x"), rev)],
                &count,
            );
            rev += 1;
            c.apply(rev - 1, rev, &[memory(2, rev, "back")], &count);
        }
        let g = c.lock();
        assert!(g.order.len() <= 2 * g.capacity + 1, "order holds {} ids", g.order.len());
        assert!(g.rows.keys().all(|id| g.order.contains(id)), "every kept row can be dropped in turn");
        drop(g);
        assert_eq!(contents(&c, &[1, 2]), vec!["r99", "back"]);
    }

    #[test]
    fn tokens_are_counted_once() {
        let c = RecallCache::default();
        c.apply(0, 1, &[memory(1, 1, "abcd")], &count);
        let p = c.lookup(&Namespace::default(), &[MemoryId(1)]).found.remove(0);
        assert_eq!(p.tokens(|t| t.len()), 4);
        assert_eq!(p.tokens(|_| 99), 4, "the first count is kept");
    }

    #[test]
    fn a_card_takes_40_bytes() {
        // CARD_CAPACITY's memory figures assume it.
        assert_eq!(std::mem::size_of::<Card>(), 40);
    }

    #[test]
    fn cards_are_kept_past_the_rows_and_follow_every_change() {
        let c = RecallCache::with_capacities(2, 100);
        let mut rows: Vec<Memory> = (1..=5).map(|i| memory(i, i as u64, &format!("m{i}"))).collect();
        rows[1].provenance.turns = vec![TurnId(7)];
        rows[1].pinned = true;
        rows[1].reinforcements = 3;
        c.apply(0, 5, &rows, &count);
        let ns = Namespace::default();
        assert_eq!(contents(&c, &[1, 2, 3, 4, 5]), vec!["m4", "m5"], "two full rows");
        assert_eq!(card_ids(&c, &ns, &[1, 2, 3, 4, 5, 6]), vec![1, 2, 3, 4, 5], "five cards");
        let two = c.lookup_cards(&ns, &[MemoryId(2)]).found[0];
        assert_eq!(two.tokens(), 2);
        assert_eq!(two.first_turn(), Some(TurnId(7)));
        assert!(two.pinned() && two.is_active());
        assert_eq!(two.salience(), DecayInputs::of(&rows[1]), "salience reads the same inputs");
        assert_eq!(c.lookup_cards(&ns, &[MemoryId(1)]).found[0].first_turn(), None);
        // A forgotten memory loses its card; a replaced one gets the new card.
        c.apply(5, 7, &[forgotten(memory(1, 1, "m1"), 6), memory(3, 7, "m3 longer")], &count);
        assert_eq!(card_ids(&c, &ns, &[1, 2, 3]), vec![2, 3]);
        assert_eq!(c.lookup_cards(&ns, &[MemoryId(3)]).found[0].tokens(), 9);
        // Another namespace's memory is not a card of this one, also when both hold cards.
        let other = Namespace::new("other").unwrap();
        assert!(card_ids(&c, &other, &[2, 3]).is_empty());
        let mut theirs = memory(8, 8, "theirs");
        theirs.namespace = other.clone();
        c.apply(7, 8, &[theirs], &count);
        assert_eq!(card_ids(&c, &other, &[2, 3, 8]), vec![8]);
        assert_eq!(card_ids(&c, &ns, &[2, 3, 8]), vec![2, 3]);
        // A gap drops them with the rows.
        c.catch_up(10);
        assert!(card_ids(&c, &ns, &[2, 3]).is_empty());
    }

    #[test]
    fn a_read_that_raced_with_a_change_keeps_no_card() {
        let c = RecallCache::default();
        let ns = Namespace::default();
        let miss = c.lookup_cards(&ns, &[MemoryId(1)]);
        assert_eq!(miss.missing, vec![MemoryId(1)]);
        c.apply(0, 2, &[forgotten(memory(1, 1, "old"), 2)], &count);
        let served = c.fill(miss.epoch, vec![memory(1, 1, "old")], &count);
        assert_eq!(served[0].1.id, MemoryId(1), "this recall plans with what it read");
        assert!(card_ids(&c, &ns, &[1]).is_empty(), "but no card is kept");
        let miss = c.lookup_cards(&ns, &[MemoryId(3)]);
        c.fill(miss.epoch, vec![memory(3, 3, "c"), forgotten(memory(4, 3, "d"), 3)], &count);
        assert_eq!(card_ids(&c, &ns, &[3, 4]), vec![3], "a read active row is kept, a tombstoned one not");
    }

    #[test]
    fn cards_past_their_capacity_start_over_and_none_are_kept_when_off() {
        let c = RecallCache::with_capacities(10, 3);
        let ns = Namespace::default();
        let rows: Vec<Memory> = (1..=4).map(|i| memory(i, i as u64, "m")).collect();
        c.apply(0, 4, &rows, &count);
        assert_eq!(card_ids(&c, &ns, &[1, 2, 3, 4]), vec![4], "dropped at once, then the new one kept");
        assert_eq!(contents(&c, &[1, 2, 3, 4]).len(), 4, "the rows are not touched");
        let off = RecallCache::with_capacity(0);
        off.apply(0, 1, &[memory(1, 1, "a")], &count);
        assert!(card_ids(&off, &ns, &[1]).is_empty());
    }
}
