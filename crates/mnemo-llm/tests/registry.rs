#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The crate's registrations: found by name, settings validated, live/replay refused loudly.
use std::path::Path;
use std::sync::Arc;

use mnemo_core::registry::{self, EmbedderContext, ReasonerContext, Role, Section};
use mnemo_core::{CoreError, Embedder, Reasoner};

fn with_section<T>(settings: &str, f: impl FnOnce(Section<'_>) -> T) -> T {
    mnemo_llm::link();
    let table: toml::Table = toml::from_str(settings).unwrap();
    f(Section { settings: &table, origin: "test.toml [section]", data_dir: Path::new("/nonexistent") })
}

fn embedder(settings: &str) -> Result<Arc<dyn Embedder>, CoreError> {
    with_section(settings, |section| registry::build_embedder("fake", &EmbedderContext { section }))
}

fn reasoner(settings: &str) -> Result<Arc<dyn Reasoner>, CoreError> {
    with_section(settings, |section| registry::build_reasoner("llm", &ReasonerContext { section }))
}

fn config_err<T>(r: Result<T, CoreError>) -> String {
    match r {
        Err(CoreError::Config(m)) => m,
        Err(other) => panic!("expected a config error, got {other}"),
        Ok(_) => panic!("expected a config error, got a component"),
    }
}

#[test]
fn kinds_are_registered() {
    mnemo_llm::link();
    assert!(registry::kinds(Role::Embedder).contains(&"fake"));
    assert!(registry::kinds(Role::Reasoner).contains(&"llm"));
}

#[tokio::test]
async fn fake_embedder_builds_with_dims() {
    let e = embedder("dims = 64").unwrap();
    assert_eq!(e.dims(), 64);
    assert_eq!(e.model_id(), "fake-hash-bow-64");
    let e = embedder("").unwrap();
    assert_eq!(e.dims(), 256);
    assert_eq!(e.embed(&["x".to_string()]).await.unwrap()[0].len(), 256);
}

#[test]
fn fake_embedder_settings_are_checked() {
    for bad in ["dims = 4", "dims = 5000", "dims = -1"] {
        let e = config_err(embedder(bad));
        assert!(e.contains("dims") && e.contains("test.toml"), "{bad}: {e}");
    }
    let e = config_err(embedder("dim = 64"));
    assert!(e.contains("dim"), "{e}");
    assert!(config_err(embedder("dims = \"big\"")).contains("test.toml"));
}

#[test]
fn llm_reasoner_builds_on_the_fake_and_says_so() {
    let r = reasoner("client = \"fake\"\nmodel = \"qwen3-max\"").unwrap();
    let info = r.model_info();
    assert_eq!(info.client, mnemo_core::ClientKind::Fake);
    assert_eq!(info.model, "fake-qwen");
}

#[test]
fn live_and_replay_are_refused_never_faked() {
    for client in ["live", "replay"] {
        let e = config_err(reasoner(&format!("client = \"{client}\"")));
        assert!(e.contains(client) && e.contains("not built") && e.contains("never a silent fallback"), "{e}");
    }
    let e = config_err(reasoner("client = \"openai\""));
    assert!(e.contains("unknown client \"openai\"") && e.contains("fake, live, replay"), "{e}");
    let e = config_err(reasoner(""));
    assert!(e.contains("client"), "the client is never implied: {e}");
    let e = config_err(reasoner("client = \"fake\"\ntemperature = 1"));
    assert!(e.contains("temperature"), "{e}");
    let e = config_err(reasoner("client = \"fake\"\nmodel = \" \""));
    assert!(e.contains("model"), "{e}");
}
