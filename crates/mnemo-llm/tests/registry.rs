#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! The crate's registrations: found by name, settings validated, live/replay refused loudly.
use std::path::Path;
use std::sync::Arc;

use mnemo_contract::registry::{self, EmbedderContext, ReasonerContext, Role, Section};
use mnemo_contract::{CoreError, Embedder, Reasoner};

/// `settings` as a component's section; its `[llm]` table, if any, is the shared `[llm]`
/// section given beside it (as a config file writes both).
fn with_section<T>(settings: &str, f: impl FnOnce(Section<'_>, Option<&toml::Table>) -> T) -> T {
    mnemo_llm::link();
    let mut table: toml::Table = toml::from_str(settings).unwrap();
    let llm = table.remove("llm").map(|v| v.as_table().unwrap().clone());
    let section = Section {
        settings: &table,
        origin: "test.toml [section]",
        data_dir: Path::new("/nonexistent"),
        config_dir: Path::new("/nonexistent"),
    };
    f(section, llm.as_ref())
}

fn embedder(settings: &str) -> Result<Arc<dyn Embedder>, CoreError> {
    with_section(settings, |section, llm| registry::build_embedder("fake", &EmbedderContext { section, llm }))
}

fn reasoner(settings: &str) -> Result<Arc<dyn Reasoner>, CoreError> {
    with_section(settings, |section, llm| registry::build_reasoner("llm", &ReasonerContext { section, llm }))
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
    let r = reasoner("[llm]\nclient = \"fake\"").unwrap();
    let info = r.model_info();
    assert_eq!(info.client, mnemo_contract::ClientKind::Fake);
    assert_eq!(info.model, "fake-qwen");
}

#[test]
fn the_client_is_never_implied_and_old_keys_say_where_they_went() {
    let e = config_err(reasoner(""));
    assert!(e.contains("[llm]") && e.contains("never implied"), "{e}");
    let e = config_err(reasoner("client = \"fake\""));
    assert!(e.contains("[llm] section now"), "{e}");
    // The [llm] section written inside the component's own section is refused the same way.
    let section = toml::Table::from_iter([("llm".to_string(), toml::Value::Table(toml::Table::new()))]);
    let e = config_err(registry::build_reasoner(
        "llm",
        &ReasonerContext {
            section: Section {
                settings: &section,
                origin: "test.toml [section]",
                data_dir: Path::new("/nonexistent"),
                config_dir: Path::new("/nonexistent"),
            },
            llm: Some(&toml::Table::new()),
        },
    ));
    assert!(e.contains("[llm] section now"), "{e}");
    let e = config_err(reasoner("[llm]\nclient = \"openai\""));
    assert!(e.contains("\"openai\"") && e.contains("fake, live, record, replay"), "{e}");
    let e = config_err(reasoner("[llm]\nclient = \"fake\"\ntemperature = 1"));
    assert!(e.contains("temperature"), "{e}");
    let e = config_err(reasoner("[llm]\nclient = \"replay\""));
    assert!(e.contains("cassette_dir"), "{e}");
}

#[test]
fn live_without_its_key_is_refused_naming_the_variable() {
    let e = config_err(reasoner("[llm]\nclient = \"live\"\napi_key_env = \"MNEMO_TEST_KEY_THAT_IS_NEVER_SET\""));
    assert!(e.contains("MNEMO_TEST_KEY_THAT_IS_NEVER_SET") && e.contains("API key"), "{e}");
}
