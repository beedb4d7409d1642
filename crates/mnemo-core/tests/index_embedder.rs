//! Which embedder made the index's vectors is in the index's stamp: an engine whose embedder
//! is another one (another model, or the same model at other dimensions) rebuilds the index
//! from the store at its first sync, re-embedding for the index; one with the same embedder
//! does not. An index that holds anything but whose stamp names no embedder (written before
//! the stamp recorded it) is rebuilt once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use async_trait::async_trait;
use mnemo_contract::test_support::FlatEmbedder;
use mnemo_contract::{Embedder, EmbedderIdentity, Index, Namespace, Result, SearchMode, SearchQuery, SimClock, Store};
use mnemo_core::engine::SyncReport;

mod common;
use common::{at, engine_with};

/// An embedder of another model id (or of FlatEmbedder's at other dimensions).
struct Other {
    model: &'static str,
    dims: usize,
}

#[async_trait]
impl Embedder for Other {
    fn model_id(&self) -> &str {
        self.model
    }
    fn dims(&self) -> usize {
        self.dims
    }
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut v = vec![0.0; self.dims];
        v[0] = 1.0;
        Ok(texts.iter().map(|_| v.clone()).collect())
    }
}

/// A new engine's first sync over the index, then a flush (the reference index reports its
/// flushed stamp, as a persistent one reports what it holds on disk).
async fn open(store: &Arc<dyn Store>, index: &Arc<dyn Index>, embedder: Arc<dyn Embedder>) -> SyncReport {
    let e = engine_with(store.clone(), index.clone(), Arc::new(SimClock::new(at())), embedder);
    let report = e.sync_index(&|_, _| {}).await.unwrap();
    e.flush_index().await.unwrap();
    report
}

async fn stamped_embedder(index: &Arc<dyn Index>) -> Option<EmbedderIdentity> {
    index.stamp().await.unwrap().and_then(|s| s.embedder)
}

/// A store of three memories (with FlatEmbedder's vectors) and an index synced with it by an
/// engine of FlatEmbedder.
async fn written() -> (Arc<dyn Store>, Arc<dyn Index>, Namespace) {
    let ns = Namespace::new("embedders").unwrap();
    let store = common::store();
    let index = common::index();
    let ops = ["amber falcon", "quiet stone", "river garden"].iter().map(|t| common::semantic(&ns, t, false)).collect();
    store.apply(&ns, at(), ops).await.unwrap();
    let first = open(&store, &index, Arc::new(FlatEmbedder)).await;
    assert_eq!(first.upserted, 3, "{first:?}");
    assert!(!first.rebuilt, "an empty index is filled, not rebuilt: {first:?}");
    (store, index, ns)
}

#[tokio::test]
async fn an_index_of_another_embedder_is_rebuilt_and_one_of_the_same_is_not() {
    let (store, index, ns) = written().await;
    let flat = EmbedderIdentity { model: "flat-2".into(), dims: 2 };
    assert_eq!(stamped_embedder(&index).await, Some(flat.clone()), "the sync stamps the embedder");

    // The same embedder again: nothing to do.
    let same = open(&store, &index, Arc::new(FlatEmbedder)).await;
    assert!(!same.rebuilt && same.upserted == 0, "{same:?}");

    // Another model: rebuilt, every memory re-embedded for the index, and said why.
    let other = Arc::new(Other { model: "other-3", dims: 3 });
    let r = open(&store, &index, other.clone()).await;
    assert!(r.rebuilt && r.upserted == 3, "{r:?}");
    let why = r.rebuilt_because.unwrap_or_default();
    assert!(why.contains("flat-2 (2 dimensions)") && why.contains("other-3 (3 dimensions)"), "{why}");
    assert_eq!(stamped_embedder(&index).await, Some(EmbedderIdentity { model: "other-3".into(), dims: 3 }));
    // The index holds the new model's vectors: a dense query of its dimensions finds them all.
    let q = SearchQuery {
        namespace: ns.clone(),
        text: String::new(),
        embedding: Some(vec![1.0, 0.0, 0.0]),
        limit: 10,
        mode: SearchMode::Dense,
    };
    assert_eq!(index.search(&q).await.unwrap().len(), 3);

    // Reopened with that one: not rebuilt again.
    let again = open(&store, &index, other).await;
    assert!(!again.rebuilt && again.upserted == 0, "{again:?}");

    // The same model id at other dimensions is another embedder too.
    let r = open(&store, &index, Arc::new(Other { model: "other-3", dims: 4 })).await;
    assert!(r.rebuilt && r.upserted == 3, "{r:?}");
}

#[tokio::test]
async fn an_index_whose_stamp_names_no_embedder_is_rebuilt_once() {
    let (store, index, _ns) = written().await;
    // What an older version left: a stamp without the embedder.
    let mut old = index.stamp().await.unwrap().unwrap();
    old.embedder = None;
    index.set_stamp(old).await.unwrap();
    index.flush().await.unwrap();

    let r = open(&store, &index, Arc::new(FlatEmbedder)).await;
    assert!(r.rebuilt && r.upserted == 3, "{r:?}");
    assert!(r.rebuilt_because.as_deref().is_some_and(|w| w.contains("does not record which embedder")), "{r:?}");
    assert_eq!(stamped_embedder(&index).await, Some(EmbedderIdentity { model: "flat-2".into(), dims: 2 }));
    let again = open(&store, &index, Arc::new(FlatEmbedder)).await;
    assert!(!again.rebuilt && again.upserted == 0, "once: {again:?}");
}

#[tokio::test]
async fn an_empty_store_has_nothing_to_reembed() {
    let store = common::store();
    let index = common::index();
    let r = open(&store, &index, Arc::new(FlatEmbedder)).await;
    assert!(!r.rebuilt, "{r:?}");
    assert_eq!(stamped_embedder(&index).await, Some(EmbedderIdentity { model: "flat-2".into(), dims: 2 }));
    // Another embedder over the empty index: nothing in it, nothing to say.
    let r = open(&store, &index, Arc::new(Other { model: "other-3", dims: 3 })).await;
    assert_eq!((r.upserted, r.removed), (0, 0), "{r:?}");
    assert_eq!(stamped_embedder(&index).await, Some(EmbedderIdentity { model: "other-3".into(), dims: 3 }));
}
