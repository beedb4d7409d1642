//! Recall's access times are written to the store in batches, not by a store write on every
//! recall: the first recall's at once (a store that cannot keep them is found out there), then
//! with the next write or decay sweep, when the oldest pending one has waited long enough by the
//! engine's clock, and when the engine is flushed. Until then the store shows the previous time.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use mnemo_core::engine::{EngineParts, RecallOptions};
use mnemo_core::*;
use mnemo_store::sqlite::SqliteStore;
use mnemo_store::tantivy_index::{TantivyIndex, TantivySettings};

/// Embeds every text as the same unit vector (the tests search lexically).
struct FlatEmbedder;

#[async_trait]
impl Embedder for FlatEmbedder {
    fn model_id(&self) -> &str {
        "flat-2"
    }
    fn dims(&self) -> usize {
        2
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|_| vec![0.6, 0.8]).collect())
    }
}

/// Memories are written straight to the store: the reasoner is never asked.
struct NoReasoner;

#[async_trait]
impl Reasoner for NoReasoner {
    async fn extract(&self, _: &Turn) -> Result<Extraction> {
        Err(CoreError::Reasoner("not used".into()))
    }
    async fn reconcile(&self, _: &Candidate, _: &[Memory]) -> Result<Verdict> {
        Ok(Verdict::Novel)
    }
    async fn resolve_forget(&self, _: &str, _: &[Memory]) -> Result<Vec<MemoryId>> {
        Ok(vec![])
    }
    fn model_info(&self) -> ModelInfo {
        ModelInfo { client: ClientKind::Rules, model: "none".into() }
    }
}

fn at() -> Timestamp {
    Timestamp(1_780_000_000_000)
}

fn engine(store: Arc<dyn Store>, index: Arc<dyn Index>, clock: Arc<SimClock>) -> Engine {
    Engine::new(EngineParts {
        store,
        index,
        embedder: Arc::new(FlatEmbedder),
        reasoner: Arc::new(NoReasoner),
        clock,
        tokens: Arc::new(CharTokenCounter),
        policy: EnginePolicy::default(),
    })
    .unwrap()
}

fn index() -> Arc<dyn Index> {
    let clock: Arc<dyn Clock> = Arc::new(SimClock::new(at()));
    Arc::new(TantivyIndex::in_memory(TantivySettings::default(), clock).unwrap())
}

fn semantic(content: &str, pinned: bool) -> WriteOp {
    WriteOp::Insert {
        memory: NewMemory {
            namespace: ns(),
            kind: MemoryKind::Semantic,
            content: content.to_string(),
            claim: None,
            entities: vec![],
            importance: 0.8,
            sources: vec!["user".into()],
            provenance: Provenance { turns: vec![], client: ClientKind::Rules, model: "test".into() },
            created_at: at(),
            pinned,
            embedding: None,
        },
        turn: None,
    }
}

fn ns() -> Namespace {
    Namespace::new("access").unwrap()
}

async fn recall(e: &Engine) -> Vec<MemoryId> {
    let opts = RecallOptions { mode: Some(SearchMode::Lexical), ..Default::default() };
    e.recall(&ns(), "Ben phone", &opts).await.unwrap().items.iter().map(|i| i.memory.id).collect()
}

async fn accessed(store: &Arc<dyn Store>, id: MemoryId) -> Option<Timestamp> {
    store.get_many(&ns(), &[id]).await.unwrap().remove(0).last_accessed_at
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_times_reach_the_store_in_batches_and_before_a_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Store> = Arc::new(SqliteStore::open(&dir.path().join("mnemo.db")).unwrap());
    let clock = Arc::new(SimClock::new(at()));
    let e = engine(store.clone(), index(), clock.clone());
    let id = store.apply(&ns(), at(), vec![semantic("Ben phone is 555-0100", false)]).await.unwrap()[0];
    e.sync_index(&|_, _| {}).await.unwrap();

    assert_eq!(recall(&e).await, vec![id]);
    assert_eq!(accessed(&store, id).await, Some(at()), "the first recall's access is written at once");

    // A later recall is recorded, not written...
    clock.advance(1_000);
    recall(&e).await;
    assert_eq!(accessed(&store, id).await, Some(at()), "pending: the store still shows the first access");
    // ...until the next sweep, which writes it before it reads anything.
    let swept = e.decay_sweep(&ns()).await.unwrap();
    assert!(swept.decayed.is_empty(), "a semantic memory does not decay");
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(1_000)), "the sweep wrote the pending access");

    // Pending accesses are written by the recall that finds the oldest waited a minute.
    clock.advance(1_000);
    recall(&e).await;
    clock.advance(59_999);
    recall(&e).await;
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(1_000)), "not yet a minute");
    clock.advance(1);
    recall(&e).await;
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(62_000)), "the newest access, written");

    // And by the next write, and by a flush of the engine (before a process exits).
    clock.advance(1_000);
    recall(&e).await;
    let WriteOp::Insert { memory, .. } = semantic("Ana desk is 4B", false) else { unreachable!() };
    let turn =
        NewTurn { namespace: ns(), source: "user".into(), at: at(), text: "Ana desk is 4B".into(), external_id: None };
    e.ingest(&ns(), vec![(turn, memory)]).await.unwrap();
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(63_000)), "the write wrote the pending access");
    clock.advance(1_000);
    recall(&e).await;
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(63_000)), "pending again");
    e.flush_index().await.unwrap();
    assert_eq!(accessed(&store, id).await, Some(at().plus_millis(64_000)), "the flush wrote the last access");
}
