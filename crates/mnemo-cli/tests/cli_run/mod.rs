//! What the CLI's process tests share: run the built `mnemo` against a data directory, with
//! the variables that would reach past the test (data directory, namespace, log filter)
//! removed, and read what it printed. (Older test files still hold copies of these: issue 39.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// `mnemo --data-dir DIR`, to be given its arguments (and any variables) and run.
pub fn command(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    c.arg("--data-dir").arg(dir).env_remove("MNEMO_DATA_DIR").env_remove("MNEMO_NAMESPACE").env_remove("RUST_LOG");
    c
}

/// `mnemo --data-dir DIR ARGS…`, run to completion.
pub fn mnemo(dir: &Path, args: &[&str]) -> Output {
    command(dir).args(args).output().unwrap()
}

/// What it printed: stdout and stderr.
pub fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

/// What it printed, after asserting that it succeeded.
pub fn ok(o: &Output) -> (String, String) {
    let (out, err) = text(o);
    assert!(o.status.success(), "failed: {out}\n{err}");
    (out, err)
}

/// `mnemo --data-dir DIR ARGS…` that must succeed, its stdout read as JSON.
pub fn json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let out = ok(&mnemo(dir, args)).0;
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// The contents of the memories of a recall's JSON view, in pack order.
pub fn contents(v: &serde_json::Value) -> Vec<String> {
    v["memories"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|m| m["content"].as_str().unwrap().into())
        .collect()
}

/// The notes of a recall's JSON view, one per line.
pub fn notes(v: &serde_json::Value) -> String {
    v["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect::<Vec<_>>().join("\n")
}
