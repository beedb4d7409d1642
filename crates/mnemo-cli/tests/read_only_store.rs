//! A data directory that cannot be written (a mounted backup) still answers `recall` and
//! `why`; `remember` fails clearly, naming the read-only store. As root, permissions do not
//! stop writes, so the directory is put on a tmpfs mounted read-only; otherwise the
//! directory and its files lose their write permission.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod cli_run;
use cli_run::{command, ok_stdout};

/// `mnemo --data-dir DIR --at 2026-07-01T09:00:00Z ARGS…`: every run at the same time.
fn mnemo(dir: &Path, args: &[&str]) -> Output {
    command(dir).args(["--at", "2026-07-01T09:00:00Z"]).args(args).output().unwrap()
}

fn sh(args: &[&str]) -> bool {
    Command::new(args[0]).args(&args[1..]).status().is_ok_and(|s| s.success())
}

/// Whether a file can be created in `dir` (true as root whatever the permissions).
fn writable(dir: &Path) -> bool {
    let probe = dir.join(".probe");
    let ok = std::fs::write(&probe, "x").is_ok();
    let _ = std::fs::remove_file(&probe);
    ok
}

/// Undoes the read-only state when the test ends (pass or fail).
struct ReadOnly {
    dir: PathBuf,
    mounted: bool,
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        if self.mounted {
            sh(&["umount", self.dir.to_str().unwrap()]);
        } else {
            sh(&["chmod", "-R", "u+w", self.dir.to_str().unwrap()]);
        }
    }
}

/// Copy `from` into a place that cannot be written and return it.
fn read_only_copy(from: &Path, parent: &Path) -> ReadOnly {
    let dir = parent.join("ro");
    std::fs::create_dir(&dir).unwrap();
    let copy = |to: &Path| {
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            assert!(sh(&["cp", "-a", e.path().to_str().unwrap(), to.to_str().unwrap()]));
        }
    };
    sh(&["chmod", "a-w", dir.to_str().unwrap()]);
    if !writable(&dir) {
        sh(&["chmod", "u+w", dir.to_str().unwrap()]);
        copy(&dir);
        assert!(sh(&["chmod", "-R", "a-w", dir.to_str().unwrap()]));
        return ReadOnly { dir, mounted: false };
    }
    // Root: a read-only mount.
    sh(&["chmod", "u+w", dir.to_str().unwrap()]);
    assert!(
        sh(&["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", dir.to_str().unwrap()]),
        "running as root, the test needs to mount a tmpfs to get a read-only directory"
    );
    let guard = ReadOnly { dir: dir.clone(), mounted: true };
    copy(&dir);
    assert!(sh(&["mount", "-o", "remount,ro", dir.to_str().unwrap()]));
    assert!(!writable(&dir), "the mount is read-only");
    guard
}

#[test]
fn a_read_only_data_directory_serves_reads_and_refuses_writes_clearly() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    ok_stdout(&mnemo(&src, &["remember", "[SEM] Vault | owner | Ana\n[EPI] Lunch with Bob at the harbour."]));
    let before = ok_stdout(&mnemo(&src, &["recall", "vault owner", "--raw", "--json", "--full", "--mode", "lexical"]));
    let v: serde_json::Value = serde_json::from_str(&before).unwrap();
    let id = v["items"][0]["memory"]["id"].as_str().unwrap().to_string();

    let ro = read_only_copy(&src, d.path());
    // The index on disk is current: it is searched as it is, not rebuilt in memory.
    let logged = mnemo(&ro.dir, &["-v", "recall", "vault owner", "--raw", "--mode", "lexical"]);
    ok_stdout(&logged);
    let log = String::from_utf8_lossy(&logged.stderr);
    assert!(log.contains("cannot be written") && !log.contains("the index is built in memory"), "{log}");
    let after = mnemo(&ro.dir, &["recall", "vault owner", "--raw", "--json", "--full", "--mode", "lexical"]);
    let out = ok_stdout(&after);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["items"][0]["memory"]["content"], "Vault | owner | Ana", "{out}");
    let notes = v["notes"].to_string();
    assert!(notes.contains("recall times not recorded") && notes.contains("read-only"), "the pack says so: {notes}");
    // The agent turn (assessed recall) and why work too.
    ok_stdout(&mnemo(&ro.dir, &["recall", "vault owner"]));
    let why = ok_stdout(&mnemo(&ro.dir, &["why", &id]));
    assert!(why.contains("Vault | owner | Ana"), "{why}");

    let w = mnemo(&ro.dir, &["remember", "[SEM] Vault | owner | Eve"]);
    assert!(!w.status.success(), "a write to a read-only store must fail");
    let err = String::from_utf8_lossy(&w.stderr);
    assert!(err.contains("read-only") && err.contains("mnemo.db"), "says why, naming the store: {err}");
    // Nothing was written: the copy still recalls the old owner only.
    let out =
        ok_stdout(&mnemo(&ro.dir, &["recall", "vault owner Eve", "--raw", "--json", "--full", "--mode", "lexical"]));
    assert!(!out.contains("Eve"), "{out}");
}

#[test]
fn a_read_only_directory_whose_index_is_gone_builds_one_in_memory() {
    let d = tempfile::tempdir().unwrap();
    let src = d.path().join("src");
    ok_stdout(&mnemo(&src, &["remember", "[SEM] Vault | owner | Ana"]));
    std::fs::remove_dir_all(src.join("index")).unwrap();
    let ro = read_only_copy(&src, d.path());
    let o = mnemo(&ro.dir, &["-v", "recall", "vault owner", "--raw", "--json", "--full", "--mode", "lexical"]);
    let out = ok_stdout(&o);
    let log = String::from_utf8_lossy(&o.stderr);
    assert!(log.contains("the index is built in memory"), "{log}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["items"][0]["memory"]["content"], "Vault | owner | Ana", "{out}");
}
