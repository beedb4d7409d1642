//! End to end: tenant B's recall output (scores, trace, everything on stdout) is byte-identical
//! whether or not tenant A's memories hold B's query words.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;
use std::process::Command;

fn mnemo(dir: &Path, ns: &str, args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--data-dir")
        .arg(dir)
        .args(["--namespace", ns, "--at", "2026-07-01T09:00:00Z"])
        .args(args)
        .env_remove("MNEMO_DATA_DIR")
        .env_remove("MNEMO_NAMESPACE")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn world(a_word: &str) -> Vec<String> {
    let d = tempfile::tempdir().unwrap();
    mnemo(d.path(), "b", &["remember", "[SEM] Vault | owner password | hunter2\n[EPI] Lunch with Ana at the harbour."]);
    mnemo(d.path(), "b", &["remember", "[SEM] Vault | owner | Ana"]);
    for i in 0..3 {
        mnemo(d.path(), "a", &["remember", &format!("[SEM] Box{i} | secret | {a_word} owner {a_word}")]);
    }
    ["owner hunter2", "vault owner", "hunter2"]
        .iter()
        .flat_map(|q| {
            [mnemo(d.path(), "b", &["recall", q, "--json", "--mode", "lexical"]), mnemo(d.path(), "b", &["recall", q])]
        })
        .collect()
}

#[test]
fn tenant_b_output_does_not_depend_on_tenant_a_words() {
    let with = world("hunter2");
    let without = world("zebra");
    assert!(with[0].contains("hunter2"), "B recalls its own memory: {}", with[0]);
    for (w, wo) in with.iter().zip(&without) {
        assert_eq!(w, wo);
    }
}
