//! The static model distilled from the real all-MiniLM-L6-v2: made once per test run (about
//! 40 s), it passes the Embedder conformance suite, ranks by meaning, and refuses damaged or
//! missing files by name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use mnemo_contract::Embedder;
use mnemo_embed_local::distill::{distill, Recipe, Teacher};
use mnemo_embed_local::StaticEmbedder;
use mnemo_models::{MINILM, MINILM_STATIC};

/// The default recipe distilled afresh once per test run, into the target directory's scratch
/// space (replaced by the next run, never left behind in the system's temp dir).
fn distilled() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let teacher_dir = common::minilm_dir();
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("minilm-static-test");
        let mut calls = 0;
        let made = distill(
            &Teacher {
                name: "minilm",
                dir: &teacher_dir,
                model_id: MINILM.model_id,
                wheel_sha256: MINILM.wheel_sha256,
            },
            &Recipe::default(),
            &[],
            &out,
            512,
            &mut |done, total| {
                calls += 1;
                assert!(done <= total);
            },
        )
        .unwrap();
        assert!(calls > 1, "progress is reported per batch");
        assert!(made.pieces > 29_000, "every word piece but the markers: {}", made.pieces);
        assert!(made.variance_kept > 0.8 && made.variance_kept <= 1.0, "{}", made.variance_kept);
        out
    })
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[tokio::test]
async fn the_distilled_model_passes_the_embedder_conformance_suite() {
    let e = Arc::new(StaticEmbedder::load("minilm-static", distilled()).unwrap());
    assert_eq!(e.dims(), MINILM_STATIC.dims);
    assert_eq!(e.model_id(), "mnemo-static/all-MiniLM-L6-v2/mean-pca256-sif1e-4");
    let m = e.manifest();
    assert_eq!(m.teacher_wheel_sha256, MINILM.wheel_sha256);
    assert_eq!(m.vocab_size, 30522);
    mnemo_contract::conformance::embedder::run_all(e).await;
}

#[tokio::test]
async fn it_ranks_by_meaning_and_words_it_has_never_seen_together() {
    let e = StaticEmbedder::load("minilm-static", distilled()).unwrap();
    let t = |s: &str| s.to_string();
    let v = e
        .embed(&[
            t("The cat sat on the mat."),
            t("A kitten was lying on the rug."),
            t("Quarterly revenue grew 4%."),
            t("What does she eat?"),
            t("She is vegetarian and loves salads."),
            t("The train to Berlin leaves at noon."),
        ])
        .await
        .unwrap();
    assert!(
        cos(&v[0], &v[1]) > cos(&v[0], &v[2]) + 0.2,
        "cat/kitten {} vs revenue {}",
        cos(&v[0], &v[1]),
        cos(&v[0], &v[2])
    );
    assert!(cos(&v[3], &v[4]) > cos(&v[3], &v[5]), "food {} vs train {}", cos(&v[3], &v[4]), cos(&v[3], &v[5]));
    // A text with no word piece gets one fixed unit vector, not NaN.
    let empty = e.embed(&[t(""), t("   ")]).await.unwrap();
    assert_eq!(empty[0], empty[1]);
    assert!((empty[0].iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-6);
}

fn copy_model(to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for f in mnemo_embed_local::STATIC_FILES {
        std::fs::copy(distilled().join(f), to.join(f)).unwrap();
    }
}

#[test]
fn damaged_vectors_are_refused_by_their_checksum() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("damaged");
    copy_model(&dir);
    let path = dir.join("vectors.f32");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[4096] ^= 0x40;
    std::fs::write(&path, &bytes).unwrap();
    let err = StaticEmbedder::load("minilm-static", &dir).err().expect("damaged model refused").chain();
    assert!(err.contains("sha256") && err.contains("vectors.f32") && err.contains("distil the model again"), "{err}");
    // A truncated file is named by its size before any hashing.
    std::fs::write(&path, &bytes[..1000]).unwrap();
    let err = StaticEmbedder::load("minilm-static", &dir).err().unwrap().chain();
    assert!(err.contains("1000 bytes"), "{err}");
}

fn build(settings: &str) -> mnemo_contract::Result<Arc<dyn Embedder>> {
    common::build("static", settings)
}

#[test]
fn the_registered_kind_builds_from_a_directory_and_names_what_is_missing() {
    let dir = distilled().display().to_string().replace('\\', "/");
    let e = build(&format!("dir = {dir:?}")).unwrap();
    assert_eq!(e.dims(), 256);
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().display().to_string().replace('\\', "/");
    let err = build(&format!("dir = {dir:?}")).err().expect("no model, no embedder").to_string();
    assert!(err.contains("mnemo models fetch minilm-static") && err.contains("static.json"), "{err}");
    assert!(err.contains("test [embedder]"), "{err}");
    let err = build("model = \"minilm\"").err().unwrap().to_string();
    assert!(err.contains("not a known static model") && err.contains("minilm-static"), "{err}");
}
