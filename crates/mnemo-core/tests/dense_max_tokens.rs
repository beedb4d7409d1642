//! `[recall] dense_max_tokens`: a memory whose text is longer is filed in the index without
//! its vector, so the dense ranking never votes for it while its words still find it; a
//! shorter one is filed with its vector. The store keeps every vector. Without the setting
//! every vector is filed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use mnemo_contract::test_support::{FlatEmbedder, NoReasoner};
use mnemo_contract::{
    CharTokenCounter, Embedding, EnginePolicy, MemoryId, Namespace, SearchMode, SearchQuery, SimClock, Store, WriteOp,
};
use mnemo_core::engine::EngineParts;
use mnemo_core::Engine;

mod common;
use common::at;

const SHORT: &str = "the amber falcon nests here";
/// Well over 16 tokens (chars / 4).
const LONG: &str = "the amber falcon nests on the north cliff every spring, and the wardens count its eggs \
                    from the hide below the old lighthouse before the first storms of the autumn";

/// A semantic memory written with FlatEmbedder's vector (as the write path stores every memory).
fn with_vector(ns: &Namespace, content: &str) -> WriteOp {
    let mut op = common::semantic(ns, content, false);
    if let WriteOp::Insert { memory, .. } = &mut op {
        memory.embedding = Some(Embedding { model: "flat-2".into(), vector: vec![0.6, 0.8] });
    }
    op
}

/// An engine with `dense_max_tokens`, after a sync of a store holding SHORT and LONG with their
/// vectors (ids in that order).
async fn synced(dense_max_tokens: Option<usize>) -> (Engine, Arc<dyn Store>, Namespace, Vec<MemoryId>) {
    let ns = Namespace::new("lengths").unwrap();
    let store = common::store();
    let ids = store.apply(&ns, at(), vec![with_vector(&ns, SHORT), with_vector(&ns, LONG)]).await.unwrap();
    let mut policy = EnginePolicy::default();
    policy.recall.dense_max_tokens = dense_max_tokens;
    let engine = Engine::new(EngineParts {
        store: store.clone(),
        index: common::index(),
        embedder: Arc::new(FlatEmbedder),
        reasoner: Arc::new(NoReasoner),
        clock: Arc::new(SimClock::new(at())),
        tokens: Arc::new(CharTokenCounter),
        policy,
    })
    .unwrap();
    engine.sync_index(&|_, _| {}).await.unwrap();
    (engine, store, ns, ids)
}

async fn found(engine: &Engine, ns: &Namespace, mode: SearchMode) -> Vec<MemoryId> {
    let q = SearchQuery {
        namespace: ns.clone(),
        text: "amber falcon".into(),
        embedding: Some(vec![0.6, 0.8]),
        limit: 10,
        mode,
    };
    let mut ids: Vec<MemoryId> = engine.search(&q).await.unwrap().into_iter().map(|h| h.id).collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn a_long_text_is_found_by_its_words_only() {
    let (engine, store, ns, ids) = synced(Some(16)).await;
    assert_eq!(found(&engine, &ns, SearchMode::Dense).await, vec![ids[0]], "only the short text has a vector filed");
    assert_eq!(found(&engine, &ns, SearchMode::Lexical).await, ids, "both are found by their words");
    let long = store.get_many(&ns, &ids[1..]).await.unwrap();
    assert!(long[0].embedding.is_some(), "the store keeps the long text's vector");
}

#[tokio::test]
async fn without_the_setting_every_vector_is_filed() {
    let (engine, _, ns, ids) = synced(None).await;
    assert_eq!(found(&engine, &ns, SearchMode::Dense).await, ids);
}

#[test]
fn zero_is_refused_by_name() {
    let mut policy = EnginePolicy::default();
    policy.recall.dense_max_tokens = Some(0);
    let e = policy.validate().unwrap_err().to_string();
    assert!(e.contains("recall.dense_max_tokens"), "{e}");
}
