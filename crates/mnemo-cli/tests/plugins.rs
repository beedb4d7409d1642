//! What the `mnemo` binary can assemble: every built-in kind is linked in, and plugin
//! libraries named in config are listed beside them with their origin.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::process::Command;

fn plugins_json(config: Option<&std::path::Path>) -> Vec<serde_json::Value> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    if let Some(c) = config {
        cmd.arg("--config").arg(c);
    }
    let o = cmd.args(["plugins", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn the_binary_links_every_expected_kind() {
    let rows = plugins_json(None);
    let expect = [
        ("store", "sqlite"),
        ("index", "tantivy"),
        ("index", "brute"),
        ("embedder", "fake"),
        ("reasoner", "llm"),
        ("grounder", "table"),
        ("assessor", "grounding"),
        ("assessor", "provenance"),
    ];
    for (role, kind) in expect {
        assert!(
            rows.iter().any(|r| r["role"] == role && r["kind"] == kind && r["origin"] == "built-in"),
            "{role} {kind} missing from {rows:?}"
        );
    }
}

#[test]
fn a_config_that_names_a_missing_library_fails_clearly() {
    let d = tempfile::tempdir().unwrap();
    let c = d.path().join("m.toml");
    std::fs::write(&c, "[[plugins]]\npath = \"libs/nothing\"\n").unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_mnemo")).arg("--config").arg(&c).arg("plugins").output().unwrap();
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("not found") && e.contains("libs/nothing"), "{e}");
}
