//! Without the model files the embedder refuses to build, naming the fetch command.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod common;

use std::sync::Arc;

use mnemo_contract::Embedder;

fn build(settings: &str) -> mnemo_contract::Result<Arc<dyn Embedder>> {
    common::build("local", settings)
}

#[test]
fn a_missing_model_names_the_fetch_command() {
    let empty = tempfile::tempdir().unwrap();
    let dir = empty.path().display().to_string().replace('\\', "/");
    let err = build(&format!("dir = {dir:?}")).err().expect("no model, no embedder").to_string();
    assert!(err.contains("mnemo models fetch minilm"), "{err}");
    assert!(err.contains("config.json"), "names the missing file: {err}");
    assert!(err.contains("test [embedder]"), "names the config origin: {err}");
}

#[test]
fn bad_settings_are_named() {
    let err = build("model = \"gpt-9\"").err().unwrap().to_string();
    assert!(err.contains("gpt-9") && err.contains("minilm"), "{err}");
    let err = build("batch_size = 0\ndir = \"/nonexistent\"").err().unwrap().to_string();
    assert!(err.contains("batch_size"), "{err}");
    let err = build("colour = \"red\"").err().unwrap().to_string();
    assert!(err.contains("colour"), "{err}");
    let err = build("long_texts = \"chunks\"").err().unwrap().to_string();
    assert!(err.contains("long_texts") && err.contains("windows") && err.contains("truncate"), "{err}");
}
