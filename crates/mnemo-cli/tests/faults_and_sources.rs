//! Bounded faults on the command line: free source labels count once, declared sources count
//! apart, far-future `--at` is refused unless asked, an idempotency key makes a retry write
//! nothing, non-finite importance gets a note, and opposite statements are not merged.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;
use std::process::{Command, Output};

fn mnemo(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mnemo"))
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .env_remove("MNEMO_DATA_DIR")
        .env_remove("MNEMO_NAMESPACE")
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "{}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn sources_of(dir: &Path, args: &[&str], q: &str) -> Vec<String> {
    let out = ok(&mnemo(dir, &[args, &["recall", q, "--raw", "--json", "--full"]].concat()));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["items"][0]["memory"]["sources"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

#[test]
fn free_labels_count_once_and_declared_sources_count_apart() {
    let d = tempfile::tempdir().unwrap();
    for s in ["s1", "s2", "s3"] {
        let out = ok(&mnemo(d.path(), &["remember", "--source", s, "[SEM] Vault | owner | Ana"]));
        assert!(out.contains("not declared"), "{out}");
    }
    assert_eq!(sources_of(d.path(), &[], "Vault owner"), vec!["user"]);

    let e = tempfile::tempdir().unwrap();
    let cfg = e.path().join("sources.toml");
    std::fs::write(&cfg, "[sources]\ndeclared = [\"erp\", \"crm\"]\n").unwrap();
    let c = ["--config", cfg.to_str().unwrap()];
    for s in ["erp", "crm", "erp"] {
        ok(&mnemo(e.path(), &[&c[..], &["remember", "--source", s, "[SEM] Vault | owner | Ana"]].concat()));
    }
    let mut got = sources_of(e.path(), &c, "Vault owner");
    got.sort();
    assert_eq!(got, vec!["crm", "erp"]);
    std::fs::write(&cfg, "[sources]\nallowed = [\"erp\"]\n").unwrap();
    let o = mnemo(e.path(), &[&c[..], &["recall", "x"]].concat());
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("sources.allowed"));
}

#[test]
fn far_future_at_is_refused_unless_asked() {
    let d = tempfile::tempdir().unwrap();
    let o = mnemo(d.path(), &["--at", "9999-12-31T00:00:00Z", "remember", "[SEM] A | b | c"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--allow-future"));
    // Nothing was written: a normal turn still goes in.
    ok(&mnemo(d.path(), &["remember", "[SEM] A | b | c"]));
    ok(&mnemo(d.path(), &["--at", "9999-12-31T00:00:00Z", "--allow-future", "remember", "[SEM] A | b | d"]));
}

#[test]
fn an_idempotency_key_makes_a_retry_write_nothing() {
    let d = tempfile::tempdir().unwrap();
    let first = ok(&mnemo(d.path(), &["remember", "--idempotency-key", "k1", "[SEM] Order | qty | 5", "--json"]));
    let again = ok(&mnemo(d.path(), &["remember", "--idempotency-key", "k1", "[SEM] Order | qty | 5", "--json"]));
    let (a, b): (serde_json::Value, serde_json::Value) =
        (serde_json::from_str(&first).unwrap(), serde_json::from_str(&again).unwrap());
    assert_eq!(a["turn"]["id"], b["turn"]["id"]);
    assert_eq!((&a["status"], &b["status"]), (&serde_json::json!("extracted"), &serde_json::json!("already_recorded")));
    assert!(b["outcomes"].as_array().unwrap().is_empty());
    assert!(b["notes"][0].as_str().unwrap().contains("idempotency key already used"));
    let m = ok(&mnemo(d.path(), &["recall", "Order qty", "--raw", "--json", "--full"]));
    let v: serde_json::Value = serde_json::from_str(&m).unwrap();
    assert_eq!(v["items"][0]["memory"]["reinforcements"], 0, "the retry reinforced the memory");
    // The same key with another text is a mistake, not a retry: refused, nothing written.
    let clash = mnemo(d.path(), &["remember", "--idempotency-key", "k1", "[SEM] Order | qty | 7", "--json"]);
    assert!(!clash.status.success());
    let err: serde_json::Value = serde_json::from_slice(&clash.stdout).unwrap();
    assert_eq!(err["error"]["kind"], "conflict", "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("another text"), "{err}");
    let m = ok(&mnemo(d.path(), &["recall", "Order qty", "--json"]));
    assert!(!m.contains("qty | 7"), "{m}");
}

#[test]
fn out_of_range_numbers_get_a_note_and_opposites_are_not_merged() {
    let d = tempfile::tempdir().unwrap();
    for v in ["inf", "1e309"] {
        let out = ok(&mnemo(d.path(), &["remember", &format!("[SEM imp={v}] A{v} | b | c")]));
        assert!(out.contains("out of range") && out.contains(v), "{out}");
    }
    ok(&mnemo(d.path(), &["remember", "[EPI] The man bit the dog."]));
    let out = ok(&mnemo(d.path(), &["remember", "[EPI] The dog bit the man."]));
    assert!(out.contains("inserted") && !out.contains("reinforced"), "{out}");
}
