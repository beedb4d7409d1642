//! Test doubles that stay out of the way: an embedder that gives every text the same vector (a
//! test that searches lexically), a reasoner that is never asked, and a plain semantic memory to
//! write straight to a store.
use async_trait::async_trait;

use crate::{
    Candidate, ClientKind, CoreError, Embedder, Extraction, Memory, MemoryId, MemoryKind, ModelErrorKind, ModelInfo,
    ModelRole, Namespace, NewMemory, Provenance, Reasoner, Result, Timestamp, Turn, Verdict, WriteOp,
};

/// Embeds every text as the same unit vector (model id `flat-2`).
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

/// For tests whose memories are written straight to the store: extraction fails (it is not
/// expected), every candidate is novel, no forget command designates anything.
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

/// Insert a semantic memory said by the user (importance 0.8, no claim, no entities).
pub fn semantic_insert(ns: &Namespace, content: &str, pinned: bool, created_at: Timestamp) -> WriteOp {
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
            created_at,
            pinned,
            embedding: None,
        },
        turn: None,
    }
}
