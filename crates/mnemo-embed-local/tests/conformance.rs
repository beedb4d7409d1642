//! The local embedder with the real all-MiniLM-L6-v2 passes the Embedder conformance suite,
//! and behaves like a sentence encoder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use mnemo_contract::Embedder;

#[tokio::test]
async fn minilm_passes_the_embedder_conformance_suite() {
    let e = common::minilm();
    assert_eq!(e.dims(), 384);
    assert_eq!(e.model_id(), "sentence-transformers/all-MiniLM-L6-v2");
    mnemo_contract::conformance::embedder::run_all(e).await;
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[tokio::test]
async fn meaning_without_shared_words() {
    // No content word in common with the query: only a model of meaning ranks these right.
    let e = common::minilm();
    let t = |s: &str| s.to_string();
    let v = e
        .embed(&[
            t("What does she eat?"),
            t("She is vegetarian and loves salads."),
            t("The train to Berlin leaves at noon."),
        ])
        .await
        .unwrap();
    assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]), "food {} vs train {}", cos(&v[0], &v[1]), cos(&v[0], &v[2]));
    let p = e
        .embed(&[t("The cat sat on the mat."), t("A cat was sitting on a mat."), t("Quarterly revenue grew 4%.")])
        .await
        .unwrap();
    assert!(cos(&p[0], &p[1]) > 0.8, "paraphrase cosine {}", cos(&p[0], &p[1]));
    assert!(cos(&p[0], &p[2]) < 0.3, "unrelated cosine {}", cos(&p[0], &p[2]));
}

#[tokio::test]
async fn the_model_is_loaded_once_per_process() {
    let a = common::minilm();
    let b = common::minilm();
    // Same weights object: embedding through either gives the identical vector, and the
    // second load is a lookup (checked structurally: same dims, same output).
    let t = vec!["shared model".to_string()];
    assert_eq!(a.embed(&t).await.unwrap(), b.embed(&t).await.unwrap());
    assert!(mnemo_embed_local::loaded_models() >= 1);
}
