//! `MemoryStore`: the reference [`Store`], in memory. It keeps the contract as plainly as it
//! can: namespaces a hard partition (every read filters by namespace first), `apply` atomic
//! (a write runs on a copy of the state, swapped in only when all of it succeeded), nothing
//! hard-deleted, a tombstone never reactivated (`crate::transition` refuses it), every change a
//! new store-wide rev. What each op makes of a memory, the decay due times, the history chain
//! and the erasure bookkeeping are the contract's shared code (`transition`, `decay_due`,
//! `chain`, `erase`), as in the SQLite and PostgreSQL stores.
//!
//! One process holds it, so it takes no namespace lock (the default `lock_namespace`), and it
//! has no file to back up or restore (`backup_to` and `replace_from_backup` say so).
mod chain;
mod erase;
mod state;
mod write;

use std::collections::hash_map::RandomState;
use std::collections::BTreeSet;
use std::hash::BuildHasher;
use std::sync::{Mutex, MutexGuard};

use async_trait::async_trait;

use crate::chain::{ChainHead, ChainRecord, ChainReport};
use crate::erase::{ErasePlan, ErasureRecord};
use crate::error::{CoreError, Result, StoreErrorKind};
use crate::{
    Memory, MemoryEvent, MemoryId, Namespace, NewTurn, Store, StoreIdentity, Timestamp, Turn, TurnId, WriteOp,
};

use state::State;

/// The reference in-memory store (see the module docs). A new one is empty.
pub struct MemoryStore {
    state: Mutex<State>,
    /// The key of the namespaces' id tags (see `State::next_id`).
    key: RandomState,
    identity: StoreIdentity,
}

impl Default for MemoryStore {
    fn default() -> Self {
        let key = RandomState::new();
        // A new store has a new identity: an index built from another store is never served.
        let id = format!("memory-{:016x}", key.hash_one("identity"));
        MemoryStore { state: Mutex::new(State::default()), key, identity: StoreIdentity { id, generation: 1 } }
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>> {
        self.state.lock().map_err(|_| {
            CoreError::store_message(
                StoreErrorKind::Other,
                "the in-memory store's lock was poisoned by an earlier panic",
            )
        })
    }

    /// Run `f` on what the store holds.
    fn read<T>(&self, f: impl FnOnce(&State) -> T) -> Result<T> {
        Ok(f(&*self.lock()?))
    }

    /// Run `f` on a copy of the state and keep the copy only if `f` succeeded: a write is all
    /// or none, and readers (who wait for the lock) never see half of one.
    fn write<T>(&self, f: impl FnOnce(&mut State, &RandomState) -> Result<T>) -> Result<T> {
        let mut guard = self.lock()?;
        let mut copy = guard.clone();
        let out = f(&mut copy, &self.key)?;
        *guard = copy;
        Ok(out)
    }
}

/// Why a file backup is refused: the store lives and dies with its process.
fn no_files(what: &str) -> CoreError {
    CoreError::InvalidInput(format!(
        "the in-memory reference store cannot be {what} from a file: it holds nothing beyond its process"
    ))
}

#[async_trait]
impl Store for MemoryStore {
    async fn record_turn(&self, turn: NewTurn) -> Result<Turn> {
        let mut turns = self.record_turns(vec![turn]).await?;
        turns.pop().ok_or_else(|| CoreError::store_message(StoreErrorKind::Other, "recording one turn returned none"))
    }

    async fn record_turns(&self, turns: Vec<NewTurn>) -> Result<Vec<Turn>> {
        self.write(|s, key| write::record_turns(s, key, turns))
    }

    async fn apply(&self, namespace: &Namespace, at: Timestamp, ops: Vec<WriteOp>) -> Result<Vec<MemoryId>> {
        self.write(|s, key| write::apply(s, key, namespace, at, ops))
    }

    async fn get_many(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        let ids: BTreeSet<MemoryId> = ids.iter().copied().collect();
        self.read(|s| {
            ids.iter().filter_map(|id| s.memories.get(id)).filter(|m| &m.namespace == namespace).cloned().collect()
        })
    }

    async fn active_by_entities(&self, namespace: &Namespace, entities: &[String]) -> Result<Vec<Memory>> {
        self.read(|s| s.active_by_entities(namespace, entities))
    }

    async fn active(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        self.read(|s| s.memories_of(namespace).filter(|m| m.status.is_active()).cloned().collect())
    }

    async fn pinned(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        self.read(|s| s.memories_of(namespace).filter(|m| m.status.is_active() && m.pinned).cloned().collect())
    }

    async fn all_memories(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        self.read(|s| s.memories_of(namespace).cloned().collect())
    }

    async fn changed_since(&self, rev: u64, limit: usize) -> Result<Vec<Memory>> {
        self.read(|s| {
            let mut changed: Vec<Memory> = s.memories.values().filter(|m| m.rev > rev).cloned().collect();
            changed.sort_by_key(|m| m.rev);
            changed.truncate(limit);
            changed
        })
    }

    async fn max_rev(&self) -> Result<u64> {
        self.read(|s| s.last_seq())
    }

    async fn history(&self, namespace: &Namespace, id: MemoryId) -> Result<Vec<MemoryEvent>> {
        self.read(|s| match s.memories.get(&id) {
            Some(m) if &m.namespace == namespace => s.events_of(id).cloned().collect(),
            _ => vec![],
        })
    }

    async fn turns(&self, namespace: &Namespace) -> Result<Vec<Turn>> {
        self.read(|s| s.turns.values().filter(|t| &t.namespace == namespace).cloned().collect())
    }

    async fn latest_turn_at(&self, namespace: &Namespace) -> Result<Option<Timestamp>> {
        self.read(|s| s.turns.values().rfind(|t| &t.namespace == namespace).map(|t| t.at))
    }

    async fn touch(&self, namespace: &Namespace, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        let accesses: Vec<(MemoryId, Timestamp)> = ids.iter().map(|id| (*id, at)).collect();
        self.touch_each(namespace, &accesses).await
    }

    async fn touch_each(&self, namespace: &Namespace, accesses: &[(MemoryId, Timestamp)]) -> Result<()> {
        // Touching cannot fail half way: no copy of the state to swap in.
        write::touch(&mut *self.lock()?, namespace, accesses);
        Ok(())
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>> {
        self.read(|s| s.namespaces().into_iter().collect())
    }

    async fn identity(&self) -> Result<Option<StoreIdentity>> {
        Ok(Some(self.identity.clone()))
    }

    /// The content hash of the event whose seq is `rev`, as the chain computes it: a store
    /// whose history at `rev` differs is told apart.
    async fn rev_fingerprint(&self, rev: u64) -> Result<Option<String>> {
        let guard = self.lock()?;
        match guard.events.get(&rev) {
            Some(e) => {
                let content = crate::chain::Content::Event(chain::event_content(&guard, e)?);
                Ok(Some(format!("{}:{}", e.memory.0, crate::chain::hex(&content.hash()))))
            }
            None => Ok(None),
        }
    }

    async fn turns_by_ids(&self, namespace: &Namespace, ids: &[TurnId]) -> Result<Vec<Turn>> {
        let ids: BTreeSet<TurnId> = ids.iter().copied().collect();
        self.read(|s| {
            ids.iter().filter_map(|id| s.turns.get(id)).filter(|t| &t.namespace == namespace).cloned().collect()
        })
    }

    async fn backup_to(&self, _dest: &std::path::Path) -> Result<crate::BackupInfo> {
        Err(no_files("backed up"))
    }

    async fn replace_from_backup(&self, _src: &std::path::Path) -> Result<crate::BackupInfo> {
        Err(no_files("restored"))
    }

    async fn verify_history(&self) -> Result<Option<Vec<ChainReport>>> {
        chain::verify_all(&*self.lock()?).map(Some)
    }

    async fn history_chain(&self, namespace: &Namespace, after: i64, limit: usize) -> Result<Option<Vec<ChainRecord>>> {
        chain::page(&*self.lock()?, namespace.as_str(), after, limit).map(Some)
    }

    async fn erase(&self, namespace: &Namespace, at: Timestamp, plan: ErasePlan) -> Result<ErasureRecord> {
        self.write(|s, _| erase::erase(s, namespace, at, plan))
    }

    async fn erasures(&self, namespace: &Namespace) -> Result<Vec<ErasureRecord>> {
        self.read(|s| s.erasures.values().filter(|r| r.namespace == namespace.as_str()).cloned().collect())
    }

    async fn chain_heads(&self) -> Result<Vec<ChainHead>> {
        self.read(chain::heads)
    }
}
