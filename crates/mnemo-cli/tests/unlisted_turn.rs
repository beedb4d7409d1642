//! A turn recorded but not extracted, whose entry in the unextracted-turn ledger cannot be
//! written either (here the ledger path is a directory; in practice a full disk), is said in
//! full: recorded, not extracted, and not listed for `mnemo reextract`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod cli_run;
use cli_run::{command_without_model_env, repo_root};

#[test]
fn a_turn_that_cannot_be_listed_for_reextract_says_so() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("unextracted.json")).unwrap();
    let cassette = repo_root().join("bench/cassettes/prose-demo");
    let o = command_without_model_env(d.path())
        .args(["-n", "clinic", "remember", "Something that was never recorded."])
        .env("MNEMO_REPLAY", &cassette)
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("was recorded but not extracted"), "{err}");
    assert!(err.contains("could not be listed for `mnemo reextract`") && err.contains("unextracted.json"), "{err}");
}
