//! The local embedder with the real all-MiniLM-L6-v2 passes the Embedder conformance suite,
//! and behaves like a sentence encoder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use mnemo_contract::Embedder;

#[tokio::test]
async fn minilm_passes_the_embedder_conformance_suite() {
    let e = common::minilm();
    assert_eq!(e.dims(), 384);
    assert_eq!(e.model_id(), "sentence-transformers/all-MiniLM-L6-v2", "truncation by default: the id as before");
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

/// A text of `n` distinct words (each one word piece or more).
fn long_text(n: usize, tail: &str) -> String {
    let words = ["river", "garden", "violin", "lantern", "harbour", "meadow", "copper", "falcon"];
    let mut s: Vec<String> = (0..n).map(|i| words[i % words.len()].to_string()).collect();
    s.push(tail.to_string());
    s.join(" ")
}

#[tokio::test]
async fn windows_read_a_long_text_to_its_end_and_a_short_one_as_truncation_does() {
    use mnemo_embed_local::{LocalEmbedder, LocalSettings, LongTexts};
    let truncate = common::minilm();
    let windows = LocalEmbedder::load(&LocalSettings {
        long_texts: LongTexts::Windows,
        ..LocalSettings::of(&mnemo_models::MINILM, common::minilm_dir())
    })
    .unwrap();
    assert_eq!(windows.model_id(), "sentence-transformers/all-MiniLM-L6-v2+win256");
    let t = |s: &str| s.to_string();

    // Short: one window, the same vector bit for bit.
    let short = [t("She is vegetarian and loves salads.")];
    assert_eq!(windows.embed(&short).await.unwrap(), truncate.embed(&short).await.unwrap());

    // 600 words: what is said after the 256th piece reaches the vector only in windows.
    let a = [long_text(600, "My sister is allergic to penicillin."), long_text(600, "The invoice is due on Friday.")];
    let tw = truncate.embed(&a).await.unwrap();
    assert_eq!(tw[0], tw[1], "truncation drops the tail: both texts get one vector");
    let ww = windows.embed(&a).await.unwrap();
    assert_ne!(ww[0], ww[1], "windows read the tail");
    let q = windows.embed(&[t("Who is allergic to penicillin?")]).await.unwrap();
    assert!(cos(&q[0], &ww[0]) > cos(&q[0], &ww[1]), "the allergy's text is nearer the allergy question");
    let norm = cos(&ww[0], &ww[0]).sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "a unit vector: {norm}");
}
