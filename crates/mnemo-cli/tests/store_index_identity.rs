//! The index is a view of ONE store: an emptied, replaced, restored or forked `mnemo.db` never
//! serves the old index, and a damaged index heals itself from the store (the CLI says so).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
use std::path::{Path, PathBuf};

mod cli_run;
use cli_run::{mnemo, ok};

/// Contents of the lexical recall of `q`.
fn recalled(dir: &Path, q: &str) -> Vec<String> {
    let (out, _) = ok(&mnemo(dir, &["recall", q, "--mode", "lexical", "--raw", "--json", "--full"]));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["items"].as_array().unwrap().iter().map(|i| i["memory"]["content"].as_str().unwrap().to_string()).collect()
}

fn remember(dir: &Path, text: &str) {
    ok(&mnemo(dir, &["remember", text]));
}

fn db(dir: &Path) -> PathBuf {
    dir.join("mnemo.db")
}

fn remove_store(dir: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("mnemo.db{suffix}")));
    }
}

#[test]
fn an_emptied_store_file_is_refused_clearly() {
    let d = tempfile::tempdir().unwrap();
    remember(d.path(), "[SEM] Old1 | color | red");
    std::fs::write(db(d.path()), b"").unwrap(); // `: > D/mnemo.db`
    let o = mnemo(d.path(), &["remember", "[SEM] Zed | q | r"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("truncated") && e.contains("empty"), "{e}");
    // Refused before anything was written into it.
    assert_eq!(std::fs::metadata(db(d.path())).unwrap().len(), 0);
}

#[test]
fn a_cut_off_store_file_is_refused_clearly() {
    let d = tempfile::tempdir().unwrap();
    for i in 0..40 {
        remember(d.path(), &format!("[SEM] Item{i} | note | {}", "x".repeat(200)));
    }
    // A clean close checkpoints the WAL into the file; cut it in half.
    let len = std::fs::metadata(db(d.path())).unwrap().len();
    assert!(len > 8192, "store file has {len} bytes");
    let f = std::fs::OpenOptions::new().write(true).open(db(d.path())).unwrap();
    f.set_len(len / 2).unwrap();
    let o = mnemo(d.path(), &["recall", "Item1"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("truncated") && e.contains("pages"), "{e}");
}

#[test]
fn a_new_store_under_an_old_index_rebuilds_it_and_says_so() {
    let d = tempfile::tempdir().unwrap();
    remember(d.path(), "[SEM] Old1 | color | red");
    remember(d.path(), "[SEM] Old2 | color | blue");
    remove_store(d.path());
    let (_, err) = ok(&mnemo(d.path(), &["remember", "[SEM] Zed | q | r"]));
    assert!(err.contains("index was rebuilt"), "{err}");
    assert_eq!(recalled(d.path(), "Zed"), vec!["Zed | q | r"]);
    assert!(recalled(d.path(), "Old1 color").iter().all(|c| !c.contains("Old")), "old index served");
}

#[test]
fn an_older_backup_restored_never_serves_the_old_index() {
    let d = tempfile::tempdir().unwrap();
    remember(d.path(), "[SEM] Old1 | color | red");
    let backup = d.path().join("backup.db");
    std::fs::copy(db(d.path()), &backup).unwrap();
    remember(d.path(), "[SEM] Later | color | green");
    remove_store(d.path());
    std::fs::copy(&backup, db(d.path())).unwrap();
    let (_, err) = ok(&mnemo(d.path(), &["remember", "[SEM] Zed | q | r"]));
    assert!(err.contains("restored from an older backup"), "{err}");
    assert_eq!(recalled(d.path(), "Zed"), vec!["Zed | q | r"]);
    assert!(recalled(d.path(), "Later green").iter().all(|c| !c.contains("Later")), "index kept a lost memory");
    assert_eq!(recalled(d.path(), "Old1"), vec!["Old1 | color | red"]);
}

#[test]
fn backup_restore_moves_the_generation_and_the_old_index_is_never_served() {
    let d = tempfile::tempdir().unwrap();
    remember(d.path(), "[SEM] Old1 | color | red");
    let backup = d.path().join("b1.db");
    let (out, _) = ok(&mnemo(d.path(), &["backup", "create", backup.to_str().unwrap(), "--json"]));
    let made: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(made["memories"], 1);
    assert_eq!(made["identity"]["generation"], 1);
    // A backup file is self-contained (no -wal/-shm beside it) and never overwritten.
    assert!(!d.path().join("b1.db-wal").exists());
    let again = mnemo(d.path(), &["backup", "create", backup.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("never overwrites"));

    remember(d.path(), "[SEM] Later | color | green");
    let (out, _) = ok(&mnemo(d.path(), &["backup", "restore", backup.to_str().unwrap()]));
    assert!(out.contains("store generation 2"), "{out}");
    assert!(out.contains("index rebuilt") && out.contains("generation 1 of this store"), "{out}");
    assert!(recalled(d.path(), "Later green").iter().all(|c| !c.contains("Later")), "index kept a lost memory");
    assert_eq!(recalled(d.path(), "Old1"), vec!["Old1 | color | red"]);
    // New writes after the restore are found.
    remember(d.path(), "[SEM] Zed | q | r");
    assert_eq!(recalled(d.path(), "Zed"), vec!["Zed | q | r"]);

    // Restoring the same backup again moves the generation again (3), even with nothing to
    // tell the contents apart by revision.
    let (out, _) = ok(&mnemo(d.path(), &["backup", "restore", backup.to_str().unwrap()]));
    assert!(out.contains("store generation 3") && out.contains("index rebuilt"), "{out}");
    assert!(recalled(d.path(), "Zed").iter().all(|c| !c.contains("Zed")));
}

#[test]
fn a_bad_backup_is_refused_and_the_store_is_untouched() {
    let d = tempfile::tempdir().unwrap();
    remember(d.path(), "[SEM] Keep | color | red");
    let junk = d.path().join("junk.db");
    std::fs::write(&junk, b"not a database at all, just some bytes that are long enough").unwrap();
    for (file, says) in [(junk.clone(), "not a SQLite database"), (d.path().join("missing.db"), "no such backup file")]
    {
        let o = mnemo(d.path(), &["backup", "restore", file.to_str().unwrap()]);
        assert!(!o.status.success());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(says), "{e}");
    }
    assert_eq!(recalled(d.path(), "Keep"), vec!["Keep | color | red"]);
    assert!(!d.path().join("mnemo.db.restore-staging").exists());
}

#[test]
fn a_different_copy_at_the_same_revision_is_told_apart_by_its_history() {
    // Two stores of the same identity (a copy) diverge; the index of one at revision 2 must
    // not serve the other, also at revision 2.
    let d = tempfile::tempdir().unwrap();
    remember(d.path(), "[SEM] Base | color | red");
    let fork = d.path().join("fork.db");
    std::fs::copy(db(d.path()), &fork).unwrap();
    remember(d.path(), "[SEM] Mine | color | blue");
    // Build the fork's history elsewhere: same identity, another change at revision 2.
    let other = tempfile::tempdir().unwrap();
    std::fs::copy(&fork, db(other.path())).unwrap();
    remember(other.path(), "[SEM] Theirs | color | green");
    remove_store(d.path());
    std::fs::copy(db(other.path()), db(d.path())).unwrap();
    let (_, err) = ok(&mnemo(d.path(), &["recall", "Theirs"]));
    assert!(err.contains("not the one the index was built from"), "{err}");
    assert_eq!(recalled(d.path(), "Theirs green"), vec!["Theirs | color | green"]);
    assert!(recalled(d.path(), "Mine blue").iter().all(|c| !c.contains("Mine")));
}

fn segment_files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir.join("index").join("tantivy"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect()
}

#[test]
fn a_missing_or_damaged_segment_file_heals_from_the_store() {
    for (ext, damage) in [("term", "remove"), ("idx", "garble"), ("fast", "garble"), ("store", "remove")] {
        let d = tempfile::tempdir().unwrap();
        for i in 0..3 {
            remember(d.path(), &format!("[SEM] Item{i} | color | c{i}"));
        }
        let files = segment_files(d.path(), ext);
        assert!(!files.is_empty(), "no .{ext} files");
        for f in files {
            if damage == "remove" {
                std::fs::remove_file(&f).unwrap();
            } else {
                let mut bytes = std::fs::read(&f).unwrap();
                let mid = bytes.len() / 2;
                for b in bytes.iter_mut().skip(mid.saturating_sub(4)).take(8) {
                    *b ^= 0xA5;
                }
                std::fs::write(&f, bytes).unwrap();
            }
        }
        let (_, err) = ok(&mnemo(d.path(), &["recall", "Item1"]));
        assert!(err.contains("index was rebuilt"), ".{ext} {damage}: {err}");
        assert_eq!(recalled(d.path(), "Item1 c1"), vec!["Item1 | color | c1"], ".{ext} {damage}");
    }
}

#[test]
fn reindex_never_needs_the_old_index_to_open() {
    let d = tempfile::tempdir().unwrap();
    remember(d.path(), "[SEM] Item | color | red");
    std::fs::write(d.path().join("index").join("tantivy").join("meta.json"), b"\xff\xfe garbage").unwrap();
    let (out, _) = ok(&mnemo(d.path(), &["reindex"]));
    assert!(out.contains("1 memories indexed"), "{out}");
    assert_eq!(recalled(d.path(), "Item"), vec!["Item | color | red"]);
}
