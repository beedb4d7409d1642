//! Loading real plugin libraries: the template, and fixtures that misbehave in every way the
//! host must survive.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod support;

use std::path::PathBuf;

use mnemo_contract::registry::Role;
use mnemo_contract::{CoreError, GrounderErrorKind};
use mnemo_plugin_host::{HostError, LoadedPlugin, PluginSet};

const FIXTURES: &[&str] =
    &["plugin-template", "fixture-panicking", "fixture-abi-v2", "fixture-bad-json", "fixture-no-entry"];

fn lib(name: &str) -> PathBuf {
    let dir = support::build(FIXTURES);
    support::library(&dir, name)
}

fn no_static(_: Role, _: &str) -> Option<String> {
    None
}

fn settings(s: &str) -> toml::Table {
    s.parse().unwrap()
}

/// The plugin host's error found by walking `e`'s source chain.
fn host_error(e: &CoreError) -> Option<&HostError> {
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(h) = c.downcast_ref::<HostError>() {
            return Some(h);
        }
        cause = c.source();
    }
    None
}

#[tokio::test(flavor = "multi_thread")]
async fn the_template_loads_lists_its_kind_and_answers() {
    let set = PluginSet::load(&[lib("plugin-template")], &no_static).unwrap();
    let m = set.plugins()[0].manifest();
    assert_eq!(m.name, "plugin-template");
    assert_eq!(m.kinds[0].kind, "template");
    let d = tempfile::tempdir().unwrap();
    let g = set.grounder("template", &settings("source = \"tpl\""), "test", d.path()).await.unwrap().unwrap();
    assert_eq!(g.source(), "tpl");
    assert_eq!(g.lookup("Ada", "name length").await.unwrap().unwrap().value, "3 characters");
    assert!(g.lookup("Ada", "colour").await.unwrap().is_none());
    // bad settings are the plugin's error, named
    let e = set.grounder("template", &settings("sauce = 1"), "x.toml [grounders[0]]", d.path()).await.err().unwrap();
    assert!(e.to_string().contains("x.toml [grounders[0]]") && e.to_string().contains("sauce"), "{e}");
    // a kind it does not provide is simply not there
    assert!(set.grounder("nope", &toml::Table::new(), "t", d.path()).await.unwrap().is_none());
}

#[test]
fn the_platform_prefix_and_suffix_may_be_left_out() {
    let full = lib("plugin-template");
    let bare = full.parent().unwrap().join("plugin-template");
    assert_eq!(mnemo_plugin_host::resolve_library_path(&bare).unwrap(), std::fs::canonicalize(full).unwrap());
}

#[test]
fn another_abi_version_is_refused_naming_both() {
    let e = LoadedPlugin::load(&lib("fixture-abi-v2")).unwrap_err();
    assert!(matches!(e, HostError::AbiVersion { plugin: 2, host: 1, .. }), "{e:?}");
    let msg = e.to_string();
    assert!(msg.contains("ABI version 2") && msg.contains("ABI version 1"), "{msg}");
}

#[test]
fn a_library_without_the_entry_symbol_is_refused() {
    let e = LoadedPlugin::load(&lib("fixture-no-entry")).unwrap_err();
    assert!(matches!(e, HostError::MissingSymbol { .. }), "{e:?}");
    assert!(e.to_string().contains("mnemo_plugin_v1"), "{e}");
}

#[test]
fn a_file_that_is_not_a_library_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("libfake.so");
    std::fs::write(&p, "this is text, not a shared library\n").unwrap();
    let e = LoadedPlugin::load(&p).unwrap_err();
    assert!(matches!(e, HostError::NotALibrary { .. }), "{e:?}");
    assert!(e.to_string().contains("libfake.so"), "{e}");
    let e = LoadedPlugin::load(&d.path().join("missing.so")).unwrap_err();
    assert!(matches!(e, HostError::NotFound { .. }), "{e:?}");
}

#[test]
fn a_kind_already_registered_is_refused() {
    let t = lib("plugin-template");
    let e = PluginSet::load(&[t.clone(), t.clone()], &no_static).unwrap_err();
    assert!(matches!(&e, HostError::KindTaken { kind, .. } if kind == "template"), "{e:?}");
    let builtin = |r: Role, k: &str| (r == Role::Grounder && k == "template").then(|| "built-in".to_string());
    let e = PluginSet::load(&[t], &builtin).unwrap_err();
    assert!(e.to_string().contains("already registered by built-in"), "{e}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_panicking_plugin_fails_the_call_and_the_host_lives_on() {
    let set = PluginSet::load(&[lib("fixture-panicking")], &no_static).unwrap();
    let d = tempfile::tempdir().unwrap();
    let g = set.grounder("panicking", &toml::Table::new(), "t", d.path()).await.unwrap().unwrap();
    for _ in 0..2 {
        let err = g.lookup("SKU-1", "stock on hand").await.unwrap_err();
        // The plugin reported a failure of its own: kept as the cause, not a bad answer.
        assert_eq!(err.grounder_kind(), Some(GrounderErrorKind::Other), "{err}");
        assert!(matches!(host_error(&err), Some(HostError::PluginFailed { .. })), "{err:?}");
        let e = err.to_string();
        assert!(e.contains("panicked") && e.contains("SKU-1"), "{e}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_json_from_a_plugin_is_an_error() {
    let set = PluginSet::load(&[lib("fixture-bad-json")], &no_static).unwrap();
    let d = tempfile::tempdir().unwrap();
    let g = set.grounder("bad_json", &toml::Table::new(), "t", d.path()).await.unwrap().unwrap();
    let err = g.lookup("SKU-1", "stock").await.unwrap_err();
    assert_eq!(err.grounder_kind(), Some(GrounderErrorKind::BadAnswer), "{err}");
    let host = host_error(&err).expect("the host's error is in the chain");
    assert!(matches!(host, HostError::MalformedJson { .. }), "{host:?}");
    // The engine says what the host said, as before the chain was kept.
    assert_eq!(err.to_string(), format!("grounder error: {host}"));
    let e = err.to_string();
    assert!(e.contains("malformed JSON") && e.contains("fixture-bad-json"), "{e}");
}
