//! A store written with the fake embedder, reopened with the local one: the index is rebuilt
//! with local vectors (the store keeps the fake ones) and recall finds by meaning.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

// The built-in kinds the runtime assembles (the binary links them; the agent library does not).
use mnemo_llm as _;
use mnemo_store as _;
use std::sync::Arc;

use mnemo_agent::{Config, Runtime};
use mnemo_contract::{Clock, MemoryKind, Namespace, SearchMode, SimClock, Timestamp};
use mnemo_core::engine::RecallOptions;

fn config(embedder: &str) -> Config {
    let over: toml::Table = toml::from_str(embedder).unwrap();
    Config::embedded_default().unwrap().with_overrides(&over, "test").unwrap()
}

#[tokio::test]
async fn a_fake_embedder_store_reopened_with_the_local_one_is_reembedded_for_the_index() {
    mnemo_embed_local::link();
    let dir = tempfile::tempdir().unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SimClock::new(Timestamp::parse_rfc3339("2026-07-01T09:00:00Z").unwrap()));
    let ns = Namespace::new("reopen").unwrap();
    let facts = [
        "[EPI] Ana is vegetarian and never eats meat",
        "[EPI] The forklift battery was replaced on Tuesday",
        "[EPI] Ben drives a red pickup truck to the warehouse",
        "[EPI] The quarterly audit moved to the big meeting room",
    ];
    {
        let rt =
            Runtime::build(&config("[embedder]\nkind = \"fake\""), dir.path(), clock.clone(), vec![]).await.unwrap();
        for f in facts {
            rt.engine().remember(&ns, "user", f).await.unwrap();
        }
        assert_eq!(rt.engine().embedding_dims(), 256);
    }
    let local = format!("[embedder]\nkind = \"local\"\ndir = {:?}", common::minilm_dir().display().to_string());
    let rt = Runtime::build(&config(&local), dir.path(), clock.clone(), vec![]).await.unwrap();
    let engine = rt.engine();
    assert_eq!(engine.embedder_model(), "sentence-transformers/all-MiniLM-L6-v2");

    // The store keeps what it had: fake vectors, with their model id.
    let stored = engine.active_memories(&ns).await.unwrap();
    assert_eq!(stored.len(), facts.len());
    assert!(stored.iter().all(|m| m.kind == MemoryKind::Episodic));
    assert!(stored.iter().all(|m| m.embedding.as_ref().is_some_and(|e| e.model != engine.embedder_model())));

    // Dense search takes a 384-dim query: the index holds local vectors now. Not one word of
    // the query is in the answer.
    let opts = RecallOptions { budget: Some(40), mode: Some(SearchMode::Dense), candidates: Some(4), no_touch: true };
    let pack = engine.recall(&ns, "what food does she avoid?", &opts).await.unwrap();
    let top = pack.memories().next().expect("a dense recall finds something");
    assert!(top.content.contains("vegetarian"), "top memory: {:?}", top.content);

    // A new memory written now carries the local model's vector, and hybrid recall works.
    rt.engine().remember(&ns, "user", "[EPI] Carla is allergic to peanuts").await.unwrap();
    let opts = RecallOptions { budget: Some(40), mode: Some(SearchMode::Hybrid), candidates: Some(8), no_touch: true };
    let pack = engine.recall(&ns, "which nuts are dangerous for Carla", &opts).await.unwrap();
    assert!(pack.memories().next().is_some_and(|m| m.content.contains("peanuts")));
    drop(rt);

    // Reopened again with the same local embedder: no rebuild needed, recall still right.
    let rt = Runtime::build(&config(&local), dir.path(), clock, vec![]).await.unwrap();
    let opts = RecallOptions { budget: Some(40), mode: Some(SearchMode::Dense), candidates: Some(4), no_touch: true };
    let pack = rt.engine().recall(&ns, "what food does she avoid?", &opts).await.unwrap();
    assert!(pack.memories().next().is_some_and(|m| m.content.contains("vegetarian")));
}
