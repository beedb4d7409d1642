#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The Embedder conformance suite against FakeQwen, at the default and at the extreme sizes.
use std::sync::Arc;

use mnemo_contract::Embedder;
use mnemo_llm::FakeQwen;

#[tokio::test]
async fn fake_default_dims_conforms() {
    let e = FakeQwen::default();
    assert_eq!(e.dims(), 256);
    assert_eq!(e.model_id(), "fake-hash-bow-256");
    mnemo_contract::conformance::embedder::run_all(Arc::new(e)).await;
}

#[tokio::test]
async fn fake_large_dims_conforms() {
    let e = FakeQwen::new(1024).unwrap();
    assert_eq!(e.model_id(), "fake-hash-bow-1024");
    mnemo_contract::conformance::embedder::run_all(Arc::new(e)).await;
}

#[tokio::test]
async fn fake_smallest_dims_keeps_unit_length_and_determinism() {
    // At 8 dimensions collisions are everywhere, so ranking is not promised; the rest is.
    let e: Arc<dyn Embedder> = Arc::new(FakeQwen::new(8).unwrap());
    use mnemo_contract::conformance::embedder as suite;
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
fn vectors_are_pinned() {
    // The hash is FNV-1a, not std's randomised hasher, so a vector computed today equals one
    // persisted yesterday, in any process. If these pinned values change, persisted vectors go
    // stale: the model id must change with them.
    let v = FakeQwen::default().embed_one("lead time");
    let nonzero: Vec<(usize, f32)> = v.iter().enumerate().filter(|(_, x)| **x != 0.0).map(|(i, x)| (i, *x)).collect();
    // Two words (weight 1) and their 4 + 4 trigrams (0.5 / sqrt 4 each), normalised.
    let (w, t) = (1.0 / 2.5f32.sqrt(), 0.25 / 2.5f32.sqrt());
    let expected =
        [(30, t), (53, -t), (75, -w), (117, -t), (120, t), (123, w), (159, -t), (196, -t), (197, t), (214, -t)];
    assert_eq!(nonzero.len(), expected.len(), "{nonzero:?}");
    for ((i, x), (ei, ex)) in nonzero.iter().zip(expected) {
        assert_eq!(*i, ei);
        assert!((x - ex).abs() < 1e-6, "component {i}: {x} vs {ex}");
    }
}
