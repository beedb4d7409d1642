#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The crate's registrations: found by name, settings validated, live/replay refused loudly.
use std::path::Path;
use std::sync::Arc;

use mnemo_core::registry::{self, BuildContext, Component, Role};
use mnemo_core::{CoreError, SimClock, Timestamp};

fn build(role: Role, kind: &str, settings: &str) -> Result<Component, CoreError> {
    mnemo_llm::link();
    let table: toml::Table = toml::from_str(settings).unwrap();
    let ctx = BuildContext {
        settings: &table,
        origin: "test.toml [section]",
        data_dir: Path::new("/nonexistent"),
        config_dir: Path::new("/nonexistent"),
        clock: Arc::new(SimClock::new(Timestamp(0))),
        store: None,
        embedder: None,
        grounders: vec![],
    };
    registry::build(role, kind, &ctx)
}

fn config_err(r: Result<Component, CoreError>) -> String {
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
    let Component::Embedder(e) = build(Role::Embedder, "fake", "dims = 64").unwrap() else { panic!("not an embedder") };
    assert_eq!(e.dims(), 64);
    assert_eq!(e.model_id(), "fake-hash-bow-64");
    let Component::Embedder(e) = build(Role::Embedder, "fake", "").unwrap() else { panic!("not an embedder") };
    assert_eq!(e.dims(), 256);
    assert_eq!(e.embed(&["x".to_string()]).await.unwrap()[0].len(), 256);
}

#[test]
fn fake_embedder_settings_are_checked() {
    for bad in ["dims = 4", "dims = 5000", "dims = -1"] {
        let e = config_err(build(Role::Embedder, "fake", bad));
        assert!(e.contains("dims") && e.contains("test.toml"), "{bad}: {e}");
    }
    let e = config_err(build(Role::Embedder, "fake", "dim = 64"));
    assert!(e.contains("dim"), "{e}");
    assert!(config_err(build(Role::Embedder, "fake", "dims = \"big\"")).contains("test.toml"));
}

#[test]
fn llm_reasoner_builds_on_the_fake_and_says_so() {
    let Component::Reasoner(r) = build(Role::Reasoner, "llm", "client = \"fake\"\nmodel = \"qwen3-max\"").unwrap()
    else {
        panic!("not a reasoner")
    };
    let info = r.model_info();
    assert_eq!(info.client, mnemo_core::ClientKind::Fake);
    assert_eq!(info.model, "fake-qwen");
}

#[test]
fn live_and_replay_are_refused_never_faked() {
    for client in ["live", "replay"] {
        let e = config_err(build(Role::Reasoner, "llm", &format!("client = \"{client}\"")));
        assert!(e.contains(client) && e.contains("not built") && e.contains("never a silent fallback"), "{e}");
    }
    let e = config_err(build(Role::Reasoner, "llm", "client = \"openai\""));
    assert!(e.contains("unknown client \"openai\"") && e.contains("fake, live, replay"), "{e}");
    let e = config_err(build(Role::Reasoner, "llm", ""));
    assert!(e.contains("client"), "the client is never implied: {e}");
    let e = config_err(build(Role::Reasoner, "llm", "client = \"fake\"\ntemperature = 1"));
    assert!(e.contains("temperature"), "{e}");
    let e = config_err(build(Role::Reasoner, "llm", "client = \"fake\"\nmodel = \" \""));
    assert!(e.contains("model"), "{e}");
}
