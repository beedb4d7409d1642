//! What the engine tests share: an embedder and a reasoner that stay out of the way, an engine
//! over a given store and index (the contract's in-memory references, `mnemo_contract::
//! test_support`: the engine is tested without a backend), and a semantic memory to write.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use mnemo_contract::test_support::{MemoryIndex, MemoryStore};
use mnemo_contract::{
    Candidate, CharTokenCounter, ClientKind, CoreError, Embedder, EnginePolicy, Extraction, Index, Memory, MemoryId,
    MemoryKind, ModelErrorKind, ModelInfo, ModelRole, Namespace, NewMemory, Provenance, Reasoner, Result, SimClock,
    Store, Timestamp, Turn, Verdict, WriteOp,
};
use mnemo_core::engine::EngineParts;
use mnemo_core::Engine;

/// Embeds every text as the same unit vector (the tests search lexically).
pub struct FlatEmbedder;

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
pub struct NoReasoner;

#[async_trait]
impl Reasoner for NoReasoner {
    async fn extract(&self, _: &Turn) -> Result<Extraction> {
        Err(CoreError::model_message(ModelRole::Reasoner, ModelErrorKind::Other, "not used"))
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

/// A new, empty reference store.
pub fn store() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

/// A new, empty reference index.
pub fn index() -> Arc<dyn Index> {
    Arc::new(MemoryIndex::new())
}

pub fn semantic(ns: &Namespace, content: &str, pinned: bool) -> WriteOp {
    WriteOp::Insert {
        memory: NewMemory {
            validity: Default::default(),
            namespace: ns.clone(),
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
