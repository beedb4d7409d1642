//! What the unit tests of the index's parts share: small documents, queries and indexes.
#![allow(clippy::unwrap_used)]
use std::path::Path;
use std::sync::Arc;

use mnemo_contract::{Hit, Index, IndexDoc, MemoryId, Namespace, SearchMode, SearchQuery, SimClock, Timestamp};

use super::{TantivyIndex, TantivySettings};

/// A namespace by name.
pub(super) fn ns(name: &str) -> Namespace {
    Namespace::new(name).unwrap()
}

/// A unit vector of 4 dimensions along `axis`.
pub(super) fn unit(axis: usize) -> Vec<f32> {
    let mut v = vec![0.0; 4];
    v[axis] = 1.0;
    v
}

/// A document of namespace `a` unless it says otherwise.
pub(super) fn doc(id: i64, content: &str, embedding: Option<Vec<f32>>) -> IndexDoc {
    doc_in("a", id, content, embedding)
}

/// A document of `namespace`.
pub(super) fn doc_in(namespace: &str, id: i64, content: &str, embedding: Option<Vec<f32>>) -> IndexDoc {
    IndexDoc {
        id: MemoryId(id),
        namespace: ns(namespace),
        content: content.into(),
        entities: vec![],
        embedding,
        rev: id as u64,
    }
}

/// Settings that never commit on their own during a test (neither by size nor by age, the
/// clock standing still).
pub(super) fn settings() -> TantivySettings {
    TantivySettings { commit_every_docs: 1_000, commit_interval_ms: 60_000, ..TantivySettings::default() }
}

/// A clock standing still.
pub(super) fn clock() -> Arc<SimClock> {
    Arc::new(SimClock::new(Timestamp::from_millis(1_000_000)))
}

/// An index in RAM.
pub(super) fn in_ram() -> TantivyIndex {
    TantivyIndex::in_memory(settings(), clock()).unwrap()
}

/// An index on disk in `dir`, cleared so that it is ready for writes.
pub(super) async fn on_disk(dir: &Path) -> TantivyIndex {
    let idx = TantivyIndex::open(dir, settings(), clock()).unwrap();
    idx.clear().await.unwrap();
    idx
}

/// The hits of `text` (and `embedding`) in namespace `a` by `mode`.
pub(super) async fn search(idx: &TantivyIndex, text: &str, embedding: Option<Vec<f32>>, mode: SearchMode) -> Vec<Hit> {
    let q = SearchQuery { namespace: ns("a"), text: text.into(), embedding, limit: 10, mode };
    idx.search(&q).await.unwrap()
}

/// The ids of `hits`, in order.
pub(super) fn ids(hits: &[Hit]) -> Vec<i64> {
    hits.iter().map(|h| h.id.0).collect()
}
