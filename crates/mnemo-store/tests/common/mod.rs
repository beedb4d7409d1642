//! What the engine-over-backend tests of this crate share (the on-disk index's health): an
//! engine over a given store and index (with the contract's test doubles), and a semantic
//! memory to write. The engine's own tests are mnemo-core's.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemo_contract::test_support::{semantic_insert, FlatEmbedder, NoReasoner};
use mnemo_contract::*;
use mnemo_core::engine::EngineParts;
use mnemo_core::Engine;

pub fn at() -> Timestamp {
    Timestamp(1_780_000_000_000)
}

pub fn engine(store: Arc<dyn Store>, index: Arc<dyn Index>, clock: Arc<SimClock>) -> Engine {
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

pub fn semantic(ns: &Namespace, content: &str, pinned: bool) -> WriteOp {
    semantic_insert(ns, content, pinned, at())
}
