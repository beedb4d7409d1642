//! End to end: tenant B's recall output (scores, trace, everything on stdout) is byte-identical
//! whether or not tenant A's memories hold B's query words, and whatever A writes in between
//! (ids are per namespace; no store-wide counter is shown).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;

mod cli_run;
use cli_run::{command, ok_stdout};

/// What `mnemo ARGS…` printed in namespace `ns`, every run at the same time.
fn mnemo(dir: &Path, ns: &str, args: &[&str]) -> String {
    ok_stdout(&command(dir).args(["--namespace", ns, "--at", "2026-07-01T09:00:00Z"]).args(args).output().unwrap())
}

/// A copy of `template` (one store, with its secret id key), where B and A write in turns.
fn world(template: &Path, a_word: &str) -> Vec<String> {
    let d = tempfile::tempdir().unwrap();
    for f in ["mnemo.db", "mnemo.db-wal"] {
        if template.join(f).exists() {
            std::fs::copy(template.join(f), d.path().join(f)).unwrap();
        }
    }
    mnemo(d.path(), "b", &["remember", "[SEM] Vault | owner password | hunter2\n[EPI] Lunch with Ana at the harbour."]);
    // A writes in between: more when it holds the word, so B's ids would move with a shared counter.
    let a_writes = if a_word == "hunter2" { 3 } else { 1 };
    for i in 0..a_writes {
        mnemo(d.path(), "a", &["remember", &format!("[SEM] Box{i} | secret | {a_word} owner {a_word}")]);
    }
    mnemo(d.path(), "b", &["remember", "[SEM] Vault | owner | Ana"]);
    ["owner hunter2", "vault owner", "hunter2"]
        .iter()
        .flat_map(|q| {
            [
                mnemo(d.path(), "b", &["recall", q, "--json", "--mode", "lexical"]),
                mnemo(d.path(), "b", &["recall", q, "--json", "--full", "--mode", "lexical"]),
                mnemo(d.path(), "b", &["recall", q]),
            ]
        })
        .collect()
}

#[test]
fn tenant_b_output_does_not_depend_on_tenant_a_words() {
    // One store (created by a first command), copied for each world.
    let template = tempfile::tempdir().unwrap();
    mnemo(template.path(), "init", &["recall", "nothing"]);
    let with = world(template.path(), "hunter2");
    let without = world(template.path(), "zebra");
    assert!(with[0].contains("hunter2"), "B recalls its own memory: {}", with[0]);
    for (w, wo) in with.iter().zip(&without) {
        assert_eq!(w, wo);
    }
}
