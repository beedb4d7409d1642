//! Embedder conformance suite: `run_all(embedder).await` panics on the first contract
//! violation, naming it.
//!
//! The contract: one vector per text, in order; each of `dims()` finite components and unit
//! length (within 1e-4); the same text gives the identical vector (determinism, so persisted
//! vectors stay comparable); a batch gives exactly what one-at-a-time gives; text that shares
//! words with a query scores a higher cosine than unrelated text; the empty string and
//! non-ASCII text give unit vectors too (an embedder whose API refuses empty input must map it
//! itself: the engine does not special-case it).
use std::sync::Arc;

use crate::Embedder;

const TOL: f32 = 1e-4;

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn s(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|t| t.to_string()).collect()
}

async fn embed(e: &dyn Embedder, texts: &[&str]) -> Vec<Vec<f32>> {
    let v = e.embed(&s(texts)).await.unwrap_or_else(|err| panic!("embed({texts:?}) failed: {err}"));
    assert_eq!(v.len(), texts.len(), "embed returned {} vectors for {} texts", v.len(), texts.len());
    v
}

/// A mixed set of texts: plain, empty, blank, punctuation, stop words only, non-ASCII, long.
fn corpus() -> Vec<String> {
    let long = "The quarterly supplier review covers lead times, defect rates and pricing. ".repeat(40);
    let mut v = s(&[
        "IC-MC-44 from S-208 | lead time | 21 days",
        "Always add a 5-day buffer for S-208 orders.",
        "",
        "   \n\t ",
        "?!... ---",
        "the of and to",
        "Größe der Lieferung: 12 Stück, Straße 5",
        "東京タワーで会いましょう",
        "Ünïcödé café — naïve résumé 🚚📦",
        "ΣΊΣΥΦΟΣ",
    ]);
    v.push(long);
    v
}

/// Run every check.
pub async fn run_all(e: Arc<dyn Embedder>) {
    identity(e.as_ref()).await;
    shape_and_unit_length(e.as_ref()).await;
    determinism(e.as_ref()).await;
    batch_equals_single(e.as_ref()).await;
    overlap_scores_higher(e.as_ref()).await;
    empty_and_non_ascii(e.as_ref()).await;
    empty_batch(e.as_ref()).await;
}

/// A model id is stated and dims are positive.
pub async fn identity(e: &dyn Embedder) {
    assert!(!e.model_id().trim().is_empty(), "model_id must not be empty");
    assert!(e.dims() > 0, "dims must be positive");
}

/// Every vector has `dims()` finite components and unit length.
pub async fn shape_and_unit_length(e: &dyn Embedder) {
    let texts = corpus();
    let vs = e.embed(&texts).await.unwrap_or_else(|err| panic!("embed failed: {err}"));
    assert_eq!(vs.len(), texts.len(), "one vector per text");
    for (t, v) in texts.iter().zip(&vs) {
        let head: String = t.chars().take(40).collect();
        assert_eq!(v.len(), e.dims(), "vector of {head:?} has {} dims, embedder says {}", v.len(), e.dims());
        assert!(v.iter().all(|x| x.is_finite()), "vector of {head:?} has a non-finite component");
        let norm = v.iter().map(|x| f64::from(*x) * f64::from(*x)).sum::<f64>().sqrt() as f32;
        assert!((norm - 1.0).abs() <= TOL, "vector of {head:?} has norm {norm}, not 1");
    }
}

/// The same text gives the identical vector, across calls.
pub async fn determinism(e: &dyn Embedder) {
    let texts = corpus();
    let a = e.embed(&texts).await.unwrap_or_else(|err| panic!("embed failed: {err}"));
    let b = e.embed(&texts).await.unwrap_or_else(|err| panic!("embed failed: {err}"));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert_eq!(x, y, "text #{i} gave different vectors on two calls");
    }
    let dup = embed(e, &["lead time for S-208", "lead time for S-208"]).await;
    assert_eq!(dup[0], dup[1], "the same text twice in one batch gave different vectors");
}

/// A batch gives exactly the one-at-a-time vectors, in order.
pub async fn batch_equals_single(e: &dyn Embedder) {
    let texts = corpus();
    let batch = e.embed(&texts).await.unwrap_or_else(|err| panic!("embed failed: {err}"));
    for (i, t) in texts.iter().enumerate() {
        let one = e.embed(std::slice::from_ref(t)).await.unwrap_or_else(|err| panic!("embed failed: {err}"));
        assert_eq!(one.len(), 1, "one text, one vector");
        assert_eq!(one[0], batch[i], "text #{i}: batch vector differs from the one-at-a-time vector");
    }
}

/// Text sharing words with a query scores a higher cosine than unrelated text.
pub async fn overlap_scores_higher(e: &dyn Embedder) {
    let triples = [
        (
            "What is the lead time for IC-MC-44 from S-208?",
            "IC-MC-44 from S-208 lead time is 21 days",
            "Ana prefers email over phone calls on Fridays.",
        ),
        (
            "How do we handle S-208 orders?",
            "Always add a 5-day buffer for S-208 orders.",
            "The quarterly town hall moved to the big meeting room.",
        ),
        (
            "Caroline went to the LGBTQ support group",
            "Caroline attended an LGBTQ support group meeting yesterday",
            "Melanie painted a sunrise over the lake last summer",
        ),
        ("Größe der Lieferung", "Die Lieferung hat die Größe 12", "Wetter morgen sonnig"),
    ];
    for (q, related, unrelated) in triples {
        let v = embed(e, &[q, related, unrelated]).await;
        let (r, u) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
        assert!(r > u, "query {q:?}: related text scores {r}, unrelated {u}; overlap must score higher");
    }
}

/// The empty string and non-ASCII texts give unit vectors; distinct non-ASCII texts differ.
pub async fn empty_and_non_ascii(e: &dyn Embedder) {
    let v = embed(e, &["", "東京タワー", "Straße", "🚚📦"]).await;
    for (i, x) in v.iter().enumerate() {
        let norm = x.iter().map(|c| c * c).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() <= TOL, "text #{i} has norm {norm}");
    }
    assert_ne!(v[1], v[2], "two different non-ASCII texts gave the same vector");
}

/// No texts, no vectors.
pub async fn empty_batch(e: &dyn Embedder) {
    let v = e.embed(&[]).await.unwrap_or_else(|err| panic!("embed(&[]) failed: {err}"));
    assert!(v.is_empty(), "embed(&[]) returned {} vectors", v.len());
}
