//! What the engine tests share: an engine over a given store and index (the contract's
//! in-memory references and test doubles, `mnemo_contract::test_support`: the engine is tested
//! without a backend), and a semantic memory to write.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemo_contract::test_support::{semantic_insert, FlatEmbedder, MemoryIndex, MemoryStore, NoReasoner};
use mnemo_contract::{CharTokenCounter, Embedder, EnginePolicy, Index, Namespace, SimClock, Store, Timestamp, WriteOp};
use mnemo_core::engine::EngineParts;
use mnemo_core::Engine;

pub fn at() -> Timestamp {
    Timestamp(1_780_000_000_000)
}

pub fn engine(store: Arc<dyn Store>, index: Arc<dyn Index>, clock: Arc<SimClock>) -> Engine {
    engine_with(store, index, clock, Arc::new(FlatEmbedder))
}

/// `engine` with another embedder.
pub fn engine_with(
    store: Arc<dyn Store>,
    index: Arc<dyn Index>,
    clock: Arc<SimClock>,
    embedder: Arc<dyn Embedder>,
) -> Engine {
    Engine::new(EngineParts {
        store,
        index,
        embedder,
        reasoner: Arc::new(NoReasoner),
        clock,
        tokens: Arc::new(CharTokenCounter),
        policy: EnginePolicy::default(),
    })
    .unwrap()
}

/// A new, empty reference store.
pub fn store() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

/// A new, empty reference index.
pub fn index() -> Arc<dyn Index> {
    Arc::new(MemoryIndex::new())
}

pub fn semantic(ns: &Namespace, content: &str, pinned: bool) -> WriteOp {
    semantic_insert(ns, content, pinned, at())
}
