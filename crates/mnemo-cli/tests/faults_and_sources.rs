//! Bounded faults on the command line: free source labels count once, declared sources count
//! apart, `--at` more than the configured skew ahead is refused unless asked, a recall before
//! the last turn is refused, an idempotency key makes a retry write nothing, non-finite
//! importance gets a note, opposite statements are not merged, a bad lock timeout is an error,
//! a foreign file is never echoed by a config error, and an index path of any shape is moved
//! aside and rebuilt.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::Path;

mod cli_run;
use cli_run::{command, mnemo, ok_stdout};

fn sources_of(dir: &Path, args: &[&str], q: &str) -> Vec<String> {
    let out = ok_stdout(&mnemo(dir, &[args, &["recall", q, "--raw", "--json", "--full"]].concat()));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["items"][0]["memory"]["sources"].as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

#[test]
fn free_labels_count_once_and_declared_sources_count_apart() {
    let d = tempfile::tempdir().unwrap();
    for s in ["s1", "s2", "s3"] {
        let out = ok_stdout(&mnemo(d.path(), &["remember", "--source", s, "[SEM] Vault | owner | Ana"]));
        assert!(out.contains("not declared"), "{out}");
    }
    assert_eq!(sources_of(d.path(), &[], "Vault owner"), vec!["user"]);

    let e = tempfile::tempdir().unwrap();
    let cfg = e.path().join("sources.toml");
    std::fs::write(&cfg, "[sources]\ndeclared = [\"erp\", \"crm\"]\n").unwrap();
    let c = ["--config", cfg.to_str().unwrap()];
    for s in ["erp", "crm", "erp"] {
        ok_stdout(&mnemo(e.path(), &[&c[..], &["remember", "--source", s, "[SEM] Vault | owner | Ana"]].concat()));
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
    ok_stdout(&mnemo(d.path(), &["remember", "[SEM] A | b | c"]));
    ok_stdout(&mnemo(d.path(), &["--at", "9999-12-31T00:00:00Z", "--allow-future", "remember", "[SEM] A | b | d"]));
}

#[test]
fn an_idempotency_key_makes_a_retry_write_nothing() {
    let d = tempfile::tempdir().unwrap();
    let first =
        ok_stdout(&mnemo(d.path(), &["remember", "--idempotency-key", "k1", "[SEM] Order | qty | 5", "--json"]));
    let again =
        ok_stdout(&mnemo(d.path(), &["remember", "--idempotency-key", "k1", "[SEM] Order | qty | 5", "--json"]));
    let (a, b): (serde_json::Value, serde_json::Value) =
        (serde_json::from_str(&first).unwrap(), serde_json::from_str(&again).unwrap());
    assert_eq!(a["turn"]["id"], b["turn"]["id"]);
    assert_eq!((&a["status"], &b["status"]), (&serde_json::json!("extracted"), &serde_json::json!("already_recorded")));
    assert!(b["outcomes"].as_array().unwrap().is_empty());
    assert!(b["notes"][0].as_str().unwrap().contains("idempotency key already used"));
    let m = ok_stdout(&mnemo(d.path(), &["recall", "Order qty", "--raw", "--json", "--full"]));
    let v: serde_json::Value = serde_json::from_str(&m).unwrap();
    assert_eq!(v["items"][0]["memory"]["reinforcements"], 0, "the retry reinforced the memory");
    // The same key with another text is a mistake, not a retry: refused, nothing written.
    let clash = mnemo(d.path(), &["remember", "--idempotency-key", "k1", "[SEM] Order | qty | 7", "--json"]);
    assert!(!clash.status.success());
    let err: serde_json::Value = serde_json::from_slice(&clash.stdout).unwrap();
    assert_eq!(err["error"]["kind"], "conflict", "{err}");
    assert!(err["error"]["message"].as_str().unwrap().contains("another text"), "{err}");
    let m = ok_stdout(&mnemo(d.path(), &["recall", "Order qty", "--json"]));
    assert!(!m.contains("qty | 7"), "{m}");
}

#[test]
fn out_of_range_numbers_get_a_note_and_opposites_are_not_merged() {
    let d = tempfile::tempdir().unwrap();
    for v in ["inf", "1e309"] {
        let out = ok_stdout(&mnemo(d.path(), &["remember", &format!("[SEM imp={v}] A{v} | b | c")]));
        assert!(out.contains("out of range") && out.contains(v), "{out}");
    }
    ok_stdout(&mnemo(d.path(), &["remember", "[EPI] The man bit the dog."]));
    let out = ok_stdout(&mnemo(d.path(), &["remember", "[EPI] The dog bit the man."]));
    assert!(out.contains("inserted") && !out.contains("reinforced"), "{out}");
}

/// `secs` after the Unix epoch as RFC 3339 (UTC).
fn rfc3339(secs: u64) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs()
}

/// A turn an hour (or 23) ahead of the clock needs --allow-future now (the default skew is five
/// minutes); a minute ahead does not; the skew is configured in `[time] max_future_skew_secs`.
#[test]
fn a_turn_more_than_the_skew_ahead_needs_allow_future() {
    let d = tempfile::tempdir().unwrap();
    for ahead in [3_600, 23 * 3_600] {
        let at = rfc3339(now_secs() + ahead);
        let o = mnemo(d.path(), &["--at", &at, "remember", "[SEM] A | b | c"]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && e.contains("--allow-future") && e.contains(&at), "{e}");
        assert!(e.contains("max_future_skew_secs"), "{e}");
    }
    ok_stdout(&mnemo(d.path(), &["--at", &rfc3339(now_secs() + 60), "remember", "[SEM] A | b | c"]));
    let cfg = d.path().join("time.toml");
    std::fs::write(&cfg, "[time]\nmax_future_skew_secs = 7200\n").unwrap();
    let at = rfc3339(now_secs() + 3_600);
    ok_stdout(&mnemo(d.path(), &["--config", cfg.to_str().unwrap(), "--at", &at, "remember", "[SEM] A | b | d"]));
    std::fs::write(&cfg, "[time]\nmax_future_skew_secs = -1\n").unwrap();
    let o = mnemo(d.path(), &["--config", cfg.to_str().unwrap(), "recall", "A"]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("max_future_skew_secs"));
}

/// `recall --at 1970-01-01` over a memory of today: refused naming both times, and its access
/// time does not move back.
#[test]
fn a_recall_before_the_memories_existed_is_refused() {
    let d = tempfile::tempdir().unwrap();
    ok_stdout(&mnemo(d.path(), &["remember", "[SEM] Ben | phone | 555"]));
    let accessed = |d: &Path| {
        let v: serde_json::Value =
            serde_json::from_str(&ok_stdout(&mnemo(d, &["recall", "Ben phone", "--raw", "--json", "--full"]))).unwrap();
        v["items"][0]["memory"]["last_accessed_at"].clone()
    };
    let before = accessed(d.path());
    for args in [&["recall", "Ben phone"][..], &["recall", "Ben phone", "--raw", "--json"]] {
        let o = mnemo(d.path(), &[&["--at", "1970-01-01"][..], args].concat());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
        assert!(e.contains("1970-01-01T00:00:00Z") && e.contains("last turn") && e.contains("as-of recall"), "{e}");
    }
    let after = accessed(d.path());
    assert!(after.as_str() >= before.as_str(), "{before} → {after}");
    assert_ne!(after, serde_json::json!("1970-01-01T00:00:00Z"));
    // A stated time is exact: a minute before the last turn is refused too; at it, fine.
    let e = tempfile::tempdir().unwrap();
    ok_stdout(&mnemo(e.path(), &["--at", "2026-01-02T00:00:00Z", "remember", "[SEM] Ben | phone | 555"]));
    let o = mnemo(e.path(), &["--at", "2026-01-01T23:59:00Z", "recall", "Ben phone"]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("as-of recall"));
    assert!(
        ok_stdout(&mnemo(e.path(), &["--at", "2026-01-02T00:00:00Z", "recall", "Ben phone", "--raw"])).contains("555")
    );
}

/// A lock wait that is not a whole number of seconds is an error naming the variable and the
/// value, not a silent 30 s.
#[test]
fn a_bad_lock_timeout_is_an_error_naming_it() {
    let d = tempfile::tempdir().unwrap();
    for v in ["abc", "-1", "1e9"] {
        let o =
            command(d.path()).args(["remember", "[SEM] A | b | c"]).env("MNEMO_LOCK_TIMEOUT_SECS", v).output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && e.contains("MNEMO_LOCK_TIMEOUT_SECS") && e.contains(v), "{e}");
        assert!(e.contains("whole number of seconds"), "{e}");
    }
}

/// A csv grounder pointed at a file that is not its own (`/etc/shadow`), through `..` or a
/// symlink: the error names the file and line, never its text.
#[test]
fn a_config_error_never_echoes_a_foreign_file() {
    let d = tempfile::tempdir().unwrap();
    let secret = d.path().join("shadow");
    std::fs::write(&secret, "root:*:20228:0:99999:7:::\n").unwrap();
    let conf = d.path().join("conf");
    std::fs::create_dir(&conf).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, conf.join("link.csv")).unwrap();
    let cfg = conf.join("g.toml");
    for path in ["../shadow", "link.csv", secret.to_str().unwrap()] {
        std::fs::write(&cfg, format!("[[grounders]]\nkind = \"csv\"\nsource = \"erp\"\npath = {path:?}\n")).unwrap();
        let o = mnemo(d.path(), &["--config", cfg.to_str().unwrap(), "recall", "x"]);
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success() && e.contains("line 1"), "{e}");
        assert!(!e.contains("root") && !e.contains("20228"), "{e}");
    }
    // The file as the config itself.
    let o = mnemo(d.path(), &["--config", secret.to_str().unwrap(), "recall", "x"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && e.contains("line 1, column"), "{e}");
    assert!(!e.contains("root") && !e.contains("20228"), "{e}");
}

/// Whatever is put at the index path (a file, a dangling link, a directory of junk,
/// `index/tantivy` as a file) is moved aside and the index rebuilt from the store, by `reindex`
/// and by any command; recall works after.
#[test]
fn an_index_path_of_any_shape_is_moved_aside_and_rebuilt() {
    type Make = fn(&Path);
    let shapes: [(&str, Make); 4] = [
        ("a regular file", |i| std::fs::write(i, "x\n").unwrap()),
        ("a symbolic link to nothing", |i| {
            #[cfg(unix)]
            std::os::unix::fs::symlink(i.with_extension("gone"), i).unwrap();
            #[cfg(not(unix))]
            std::fs::write(i, "x\n").unwrap();
        }),
        ("not Mnemo's index", |i| {
            std::fs::create_dir_all(i.join("junk")).unwrap();
            std::fs::write(i.join("notes.txt"), "x").unwrap();
        }),
        ("tantivy is not a directory", |i| {
            std::fs::create_dir_all(i).unwrap();
            std::fs::write(i.join("tantivy"), "x").unwrap();
        }),
    ];
    for (said, make) in shapes {
        for first in [&["reindex"][..], &["recall", "Ben phone", "--raw"]] {
            let d = tempfile::tempdir().unwrap();
            ok_stdout(&mnemo(d.path(), &["remember", "[SEM] Ben | phone | 555"]));
            let index = d.path().join("index");
            std::fs::remove_dir_all(&index).unwrap();
            make(&index);
            let o = mnemo(d.path(), first);
            ok_stdout(&o);
            let e = String::from_utf8_lossy(&o.stderr);
            if !(cfg!(not(unix)) && said.contains("link")) {
                assert!(e.contains(said) && e.contains("moved aside"), "{said} by {first:?}: {e}");
            }
            let out = ok_stdout(&mnemo(d.path(), &["recall", "Ben phone", "--raw"]));
            assert!(out.contains("555"), "{said} by {first:?}: {out}");
            assert!(index.join("tantivy").join("meta.json").is_file(), "{said}: rebuilt on disk");
        }
    }
}
