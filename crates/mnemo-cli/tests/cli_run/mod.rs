//! What the CLI's process tests share: run the built `mnemo` against a data directory, with
//! the variables that would reach past the test (data directory, namespace, log filter)
//! removed, and read what it printed. A test file keeps only what is its own (fixed flags,
//! extra variables) around [`command`].
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The repository's root, which the committed cassettes, configs and README are relative to.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `mnemo --data-dir DIR`, to be given its arguments (and any variables) and run.
pub fn command(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    c.arg("--data-dir").arg(dir).env_remove("MNEMO_DATA_DIR").env_remove("MNEMO_NAMESPACE").env_remove("RUST_LOG");
    c
}

/// [`command`] without the model seam's variables either (replay, record, offline, base URL,
/// API key), so the test alone decides which model client the run gets.
pub fn command_without_model_env(dir: &Path) -> Command {
    let mut c = command(dir);
    for v in ["MNEMO_OFFLINE", "MNEMO_REPLAY", "MNEMO_RECORD", "MNEMO_LLM_BASE_URL", "DASHSCOPE_API_KEY"] {
        c.env_remove(v);
    }
    c
}

/// `mnemo -q`, run from the repository root with the model's answers replayed from `cassette`
/// (a path under the root), never recorded or sent anywhere.
pub fn replaying(cassette: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    c.current_dir(repo_root())
        .env("MNEMO_REPLAY", repo_root().join(cassette))
        .env_remove("MNEMO_RECORD")
        .env_remove("MNEMO_LLM_BASE_URL")
        .arg("-q");
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

/// What it printed on stdout, after asserting that it succeeded.
pub fn ok_stdout(o: &Output) -> String {
    ok(o).0
}

/// The stdout of `mnemo ARGS…` read as JSON, after asserting that it succeeded (`args` name the
/// command when it did not print one JSON document).
pub fn stdout_json(o: &Output, args: &[&str]) -> Value {
    let out = ok_stdout(o);
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("`mnemo {}` stdout is not one JSON document ({e}): {out}", args.join(" ")))
}

/// `mnemo --data-dir DIR ARGS…` that must succeed, its stdout read as JSON.
pub fn json(dir: &Path, args: &[&str]) -> Value {
    stdout_json(&mnemo(dir, args), args)
}

/// The contents of the memories of a recall's JSON view, in pack order.
pub fn contents(v: &Value) -> Vec<String> {
    v["memories"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|m| m["content"].as_str().unwrap().into())
        .collect()
}

/// The notes of a recall's JSON view, one per line.
pub fn notes(v: &Value) -> String {
    v["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect::<Vec<_>>().join("\n")
}

/// Whether `key` is a key anywhere in `v`, at any depth.
pub fn has_key(v: &Value, key: &str) -> bool {
    match v {
        Value::Object(m) => m.contains_key(key) || m.values().any(|x| has_key(x, key)),
        Value::Array(a) => a.iter().any(|x| has_key(x, key)),
        _ => false,
    }
}
