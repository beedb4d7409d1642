//! The model seam from the command line: loud, never a silent fallback to the fake.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;
use std::process::{Command, Output};

fn mnemo(dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mnemo"));
    c.arg("--data-dir").arg(dir).args(args);
    for v in [
        "MNEMO_DATA_DIR",
        "MNEMO_NAMESPACE",
        "MNEMO_OFFLINE",
        "MNEMO_REPLAY",
        "MNEMO_RECORD",
        "DASHSCOPE_API_KEY",
        "RUST_LOG",
    ] {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn live_without_a_key_or_offline_is_an_error_naming_the_variable() {
    let d = tempfile::tempdir().unwrap();
    let data = d.path().join("data");
    let o = mnemo(&data, &[], &["--live", "remember", "Hi, this is Maria Lopez. I'm allergic to penicillin."]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("DASHSCOPE_API_KEY"), "{err}");
    assert!(!data.exists(), "nothing was written");
    let o = mnemo(&data, &[("DASHSCOPE_API_KEY", "sk-x"), ("MNEMO_OFFLINE", "1")], &["--live", "remember", "x"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("MNEMO_OFFLINE"));
}

#[test]
fn the_mode_is_said_on_stderr_and_stdout_stays_clean() {
    let d = tempfile::tempdir().unwrap();
    let o = mnemo(d.path(), &[], &["remember", "--json", "[SEM] Ben | phone | 555"]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("model client: fake"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["model"]["client"], "fake");
    let o = mnemo(d.path(), &[], &["-q", "recall", "Ben"]);
    assert!(o.status.success() && o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_replay_miss_names_the_missing_request_and_the_turn_stays_recorded() {
    let d = tempfile::tempdir().unwrap();
    let cassette = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/cassettes/prose-demo");
    let dir = cassette.to_str().unwrap();
    let o =
        mnemo(d.path(), &[("MNEMO_REPLAY", dir)], &["-n", "clinic", "remember", "Something that was never recorded."]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("model client: replay"), "{err}");
    assert!(err.contains("replay miss") && err.contains("Something that was never recorded."), "{err}");
    // Re-extracted by the fake (prose yields nothing offline, but the extraction succeeds).
    let o = mnemo(d.path(), &[], &["-n", "clinic", "reextract"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = mnemo(d.path(), &[], &["-n", "clinic", "reextract"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("no unextracted turns"));
}
