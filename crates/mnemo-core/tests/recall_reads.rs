//! A recall plans with the recall cache's cards and reads full rows from the store only for
//! what it packs (and the cache does not hold): here the cache keeps one full row, so every
//! other candidate is a card only, and a store that counts its reads shows which rows a recall
//! read. A memory forgotten between the plan and that read is left out, and the pack says so.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use mnemo_contract::test_support::MemoryStore;
use mnemo_contract::{
    BackupInfo, CharTokenCounter, DecayRule, DueMemory, DuePage, ListPage, Memory, MemoryEvent, MemoryId, Namespace,
    NamespaceGuard, NewTurn, Result, SearchMode, SimClock, Store, StoreIdentity, Timestamp, TokenCounter, TraceReason,
    Turn, TurnId, WriteOp,
};
use mnemo_core::engine::RecallOptions;
use mnemo_core::Engine;

mod common;
use common::{at, engine, index};

/// A store (the contract's in-memory reference) that records the ids each `get_many` asked for and, once, tombstones a
/// chosen memory just before a read that asks for it (another process forgetting it).
struct Watched {
    inner: MemoryStore,
    reads: Mutex<Vec<Vec<MemoryId>>>,
    forget_on_read: Mutex<Option<MemoryId>>,
}

#[async_trait]
impl Store for Watched {
    async fn record_turn(&self, turn: NewTurn) -> Result<Turn> {
        self.inner.record_turn(turn).await
    }
    async fn apply(&self, namespace: &Namespace, at: Timestamp, ops: Vec<WriteOp>) -> Result<Vec<MemoryId>> {
        self.inner.apply(namespace, at, ops).await
    }
    async fn get_many(&self, namespace: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        self.reads.lock().unwrap().push(ids.to_vec());
        let forget = {
            let mut f = self.forget_on_read.lock().unwrap();
            match *f {
                Some(id) if ids.contains(&id) => f.take(),
                _ => None,
            }
        };
        if let Some(id) = forget {
            let op = WriteOp::Tombstone { id, reason: "forgotten elsewhere".into(), superseded_by: None, turn: None };
            self.inner.apply(namespace, at(), vec![op]).await?;
        }
        self.inner.get_many(namespace, ids).await
    }
    async fn active_by_entities(&self, namespace: &Namespace, entities: &[String]) -> Result<Vec<Memory>> {
        self.inner.active_by_entities(namespace, entities).await
    }
    async fn active(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        self.inner.active(namespace).await
    }
    async fn pinned(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        self.inner.pinned(namespace).await
    }
    async fn all_memories(&self, namespace: &Namespace) -> Result<Vec<Memory>> {
        self.inner.all_memories(namespace).await
    }
    async fn changed_since(&self, rev: u64, limit: usize) -> Result<Vec<Memory>> {
        self.inner.changed_since(rev, limit).await
    }
    async fn changes_since(&self, rev: u64, limit: usize) -> Result<mnemo_contract::Changes> {
        self.inner.changes_since(rev, limit).await
    }
    async fn max_rev(&self) -> Result<u64> {
        self.inner.max_rev().await
    }
    async fn history(&self, namespace: &Namespace, id: MemoryId) -> Result<Vec<MemoryEvent>> {
        self.inner.history(namespace, id).await
    }
    async fn turns(&self, namespace: &Namespace) -> Result<Vec<Turn>> {
        self.inner.turns(namespace).await
    }
    async fn latest_turn_at(&self, namespace: &Namespace) -> Result<Option<Timestamp>> {
        self.inner.latest_turn_at(namespace).await
    }
    async fn touch(&self, namespace: &Namespace, ids: &[MemoryId], at: Timestamp) -> Result<()> {
        self.inner.touch(namespace, ids, at).await
    }
    async fn touch_each(&self, namespace: &Namespace, accesses: &[(MemoryId, Timestamp)]) -> Result<()> {
        self.inner.touch_each(namespace, accesses).await
    }
    async fn namespaces(&self) -> Result<Vec<Namespace>> {
        self.inner.namespaces().await
    }
    async fn identity(&self) -> Result<Option<StoreIdentity>> {
        self.inner.identity().await
    }
    async fn rev_fingerprint(&self, rev: u64) -> Result<Option<String>> {
        self.inner.rev_fingerprint(rev).await
    }
    async fn lock_namespace(&self, namespace: &Namespace) -> Result<NamespaceGuard> {
        self.inner.lock_namespace(namespace).await
    }
    async fn backup_to(&self, dest: &Path) -> Result<BackupInfo> {
        self.inner.backup_to(dest).await
    }
    async fn replace_from_backup(&self, src: &Path) -> Result<BackupInfo> {
        self.inner.replace_from_backup(src).await
    }
    async fn list_memories(&self, namespace: &Namespace, page: &ListPage) -> Result<Vec<Memory>> {
        self.inner.list_memories(namespace, page).await
    }
    async fn turns_by_ids(&self, namespace: &Namespace, ids: &[TurnId]) -> Result<Vec<Turn>> {
        self.inner.turns_by_ids(namespace, ids).await
    }
    async fn turn_by_external_id(&self, namespace: &Namespace, external_id: &str) -> Result<Option<Turn>> {
        self.inner.turn_by_external_id(namespace, external_id).await
    }
    async fn due_for_decay(&self, namespace: &Namespace, rule: &DecayRule, page: &DuePage) -> Result<Vec<DueMemory>> {
        self.inner.due_for_decay(namespace, rule, page).await
    }
}

/// The memory the query matches best; the other two are longer than it.
const BEST: &str = "Ben phone number: office desk";

fn ns() -> Namespace {
    Namespace::new("reads").unwrap()
}

/// An engine whose recall cache keeps one full row (and every card), over three memories
/// written in this order: the one the query matches best first, so its row is not kept.
async fn setup() -> (Engine, Arc<Watched>, Vec<MemoryId>) {
    let store = Arc::new(Watched {
        inner: MemoryStore::new(),
        reads: Mutex::new(Vec::new()),
        forget_on_read: Mutex::new(None),
    });
    let e = engine(store.clone(), index(), Arc::new(SimClock::new(at()))).with_recall_cache(1);
    let ids = store
        .apply(
            &ns(),
            at(),
            vec![
                common::semantic(&ns(), BEST, false),
                common::semantic(&ns(), "Ben likes the phone plan he picked up at the mall last spring", false),
                common::semantic(&ns(), "Ben drives to work at the office every morning through town", false),
            ],
        )
        .await
        .unwrap();
    e.sync_index(&|_, _| {}).await.unwrap();
    store.reads.lock().unwrap().clear();
    (e, store, ids)
}

fn lexical(budget: usize) -> RecallOptions {
    RecallOptions { mode: Some(SearchMode::Lexical), budget: Some(budget), no_touch: true, ..Default::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_packed_rows_are_read() {
    let (e, store, ids) = setup().await;
    // Room for the best match only.
    let budget = CharTokenCounter.count(BEST);
    let pack = e.recall(&ns(), "Ben phone number office desk", &lexical(budget)).await.unwrap();
    assert_eq!(pack.items.len(), 1, "{:?}", pack.trace);
    assert_eq!(pack.items[0].memory.id, ids[0]);
    assert_eq!(*pack.items[0].memory, store.inner.get_many(&ns(), &[ids[0]]).await.unwrap()[0], "its full row");
    assert!(pack.trace.len() >= 2, "other candidates were planned: {:?}", pack.trace);
    let reads = store.reads.lock().unwrap().clone();
    assert_eq!(reads, vec![vec![ids[0]]], "one row read, the packed one (the candidates came from cards)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_forgotten_before_its_row_is_read_is_left_out_and_said() {
    let (e, store, ids) = setup().await;
    *store.forget_on_read.lock().unwrap() = Some(ids[0]);
    let pack = e.recall(&ns(), "Ben phone number office desk", &lexical(1024)).await.unwrap();
    let packed: Vec<MemoryId> = pack.items.iter().map(|i| i.memory.id).collect();
    assert!(!packed.contains(&ids[0]), "the forgotten memory is not packed: {packed:?}");
    assert!(packed.contains(&ids[1]), "the others are: {packed:?}");
    let entry = pack.trace.iter().find(|t| t.id == ids[0]).unwrap();
    assert!(!entry.included && entry.reason == TraceReason::Tombstoned, "{entry:?}");
    assert!(pack.notes.iter().any(|n| n.contains("forgotten while this recall ran")), "{:?}", pack.notes);
    let used: usize = pack.items.iter().map(|i| i.tokens).sum();
    assert_eq!(pack.used, used, "the tokens of what is packed");
}
